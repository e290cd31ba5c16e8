"""The turn timeline of one session: a row per turn, fork points highlighted.

A Line-API widget (`render_line` per screen line, like Textual's `Log`): each row is
rendered once into a `Strip` and cached by (row, width, cursor/hover state), checked
against the turn object it was drawn from. A live append renders only the new row
and the rows whose cursor state changed; every other line is a cache hit. (A
`DataTable` drops every cached cell on any change, so each append re-rendered the
whole visible table.)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import date, datetime, tzinfo
from typing import ClassVar

import msgspec
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from turnline.core.timeline import Turn
from turnline.core.usage import compact_tokens
from turnline.core.view import TurnView

from .._text import line

#: Styles per `turn/end` reason; other kinds are shown plain.
REASON_STYLE: dict[str, str] = {
    "completed": "green",
    "aborted": "yellow",
    "error": "bold red",
    "max-tokens": "magenta",
    "max-steps": "magenta",
    "interrupted": "yellow",
    "blocked": "yellow",
    "forked": "blue",
    "open": "bold cyan",
}

#: (key, header, width); the user column takes whatever width is left.
COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("turn", "turn", 5),
    ("reason", "reason", 11),
    ("steps", "steps", 5),
    ("tools", "tools", 12),
    ("tokens", "tokens", 6),
    ("time", "time", 11),
    ("user", "user", 20),
)
COLUMN_WIDTH = {key: width for key, _, width in COLUMNS}
#: The time column with dates (`06-01 12:05`), and with times of today only.
TIME_WIDTH = 11
TIME_ONLY_WIDTH = 8
#: The columns a narrow timeline gives up, first to last, so that the user text keeps
#: at least `USER_WANT` columns (the turn number and the user text always stay).
DROP_ORDER: tuple[str, ...] = ("steps", "tools", "tokens", "time", "reason")
USER_WANT = 16
USER_MIN = 12
FORK_MARK = "▶"
OPEN_MARK = "●"
GAP_MARK = "✖"
#: A closed turn of a big log still being indexed: the fork rule has not judged it yet.
PENDING_MARK = "…"
CELL_PADDING = 1  # spaces either side of every cell
HEADER_HEIGHT = 1


class Divider(msgspec.Struct, frozen=True):
    """Where a child's seed ends: the parent and the inherited boundary."""

    parent_title: str
    parent_id: str
    boundary: int
    #: The parent's short id as the tree shows it (unique under the root); the id's
    #: first 8 characters when empty.
    parent_short: str = ""
    #: The turn the seed ends inside (a dsh fork cut inside an open turn), if any.
    inside_turn: int | None = None
    #: Which log the boundary's seq is of, when not the parent's log shown
    #: (`formats.seed_seqs_note`: " of its session.jsonl", " in this log's seqs").
    seqs_note: str = ""


#: A time of 0 (a log that records none) is no moment: shown as this, not 1970.
NO_TIME = "—"


def wall_clock() -> float:
    """Now, in epoch seconds: a new timeline's clock (tests replace this function)."""
    return time.time()


def format_time(ms: int | float | None, tz: tzinfo | None, today: date | None = None) -> str:
    """A turn's start time, from the log: `12:05:01` on `today`, `06-01 12:05` on
    another day of the same year, `2025-06-01` in another year (`—` for a time of 0).

    Args:
        ms: Epoch milliseconds from the log.
        tz: The zone to show it in (None: the local one).
        today: The day whose times need no date (None: every time gets its date).
    """
    if ms is None:
        return ""
    if not ms:
        return NO_TIME
    try:
        moment = datetime.fromtimestamp(ms / 1000, tz)
    except (OverflowError, OSError, ValueError):
        return "?"
    if today is not None and moment.date() == today:
        return moment.strftime("%H:%M:%S")
    if today is not None and moment.year == today.year:
        return moment.strftime("%m-%d %H:%M")
    return moment.strftime("%Y-%m-%d")


def format_datetime(ms: int | float | None, tz: tzinfo | None) -> str:
    """A full date and time, from the log only."""
    if ms is None:
        return ""
    if not ms:
        return NO_TIME
    try:
        return datetime.fromtimestamp(ms / 1000, tz).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return "?"


def tools_summary(tools: tuple[str, ...], width: int = 18) -> str:
    """`read×3 bash` style: each tool once, with its count, in first-use order."""
    counts: dict[str, int] = {}
    for name in tools:
        counts[name] = counts.get(name, 0) + 1
    parts = [f"{n}×{c}" if c > 1 else n for n, c in counts.items()]
    return " ".join(parts)


class TurnTimeline(ScrollView, can_focus=True):
    """One row per turn; forkable rows (ending in `turn/end`) marked ▶ and coloured.

    In a fork child, the inherited seed rows are dimmed and a divider row says where
    the child diverged. A header row stays on top; the user column takes the width
    the fixed columns leave, and a narrow timeline drops columns (`DROP_ORDER`) so
    that the user text stays readable. A live update re-renders only the rows that changed and
    appends rows without moving the cursor (unless it was on the last row: then it
    follows the end).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor_up", "Up", show=False),
        Binding("down,j", "cursor_down", "Down", show=False),
        Binding("home", "cursor_home", "First", show=False),
        Binding("end", "cursor_end", "Last", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("enter", "select_cursor", "Select", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "turn-timeline--header",
        "turn-timeline--cursor",
        "turn-timeline--hover",
    }

    # The look of Textual's DataTable, which this widget replaced.
    DEFAULT_CSS = """
    TurnTimeline {
        background: $surface;
        color: $foreground;
        &:focus {
            background-tint: $foreground 5%;
            & > .turn-timeline--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .turn-timeline--header {
                background-tint: $foreground 5%;
            }
        }
        & > .turn-timeline--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .turn-timeline--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .turn-timeline--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .turn-timeline--hover {
            background: $block-hover-background;
        }
    }
    """

    class TurnHighlighted(Message):
        """The cursor moved to a turn (None: to the divider or an empty table).

        Attributes:
            live: The cursor moved because the session grew (it follows the end),
                not because the user moved it.
        """

        def __init__(
            self, timeline: TurnTimeline, turn_index: int | None, *, live: bool = False
        ) -> None:
            super().__init__()
            self.timeline = timeline
            self.turn_index = turn_index
            self.live = live

        @property
        def control(self) -> TurnTimeline:
            """The timeline that sent this."""
            return self.timeline

    class DividerChosen(Message):
        """Enter (or a click) on the seed divider: the user wants the parent at the boundary."""

        def __init__(self, divider: Divider) -> None:
            super().__init__()
            self.divider = divider

    def __init__(
        self, *, tz: tzinfo | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.tz = tz
        self._clock: Callable[[], float] = wall_clock
        self._views: tuple[TurnView, ...] = ()
        self._turns: tuple[Turn, ...] = ()
        self._divider: Divider | None = None
        self._divider_after: int | None = None  # index of the last seed turn
        self._number_width = 5  # the turn column: see `_fit_numbers`
        self._time_width = TIME_WIDTH  # the time column: see `_fit_numbers`
        self._cursor = 0
        self._hover: int | None = None
        # (row, width, cursor, hover, focus) -> (what the row showed, its strip). The
        # turn object is checked on use: closed turns are the same objects in every
        # snapshot, an open turn that changed is a new one.
        self._row_cache: LRUCache[tuple[int, int, bool, bool, bool], tuple[object, Strip]] = (
            LRUCache(1024)
        )
        self._header_cache: LRUCache[tuple[int, bool], Strip] = LRUCache(8)
        self._columns_cache: tuple[tuple[int, int, int], tuple[str, ...]] | None = None

    # -- model ---------------------------------------------------------------------

    @property
    def clock(self) -> Callable[[], float]:
        """The clock that says which day is today (times on other days show their
        date); only the date is read from it, never a turn's time."""
        return self._clock

    @clock.setter
    def clock(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._row_cache.clear()
        self._fit_numbers()
        self.refresh()

    @property
    def turns(self) -> tuple[Turn, ...]:
        """The turns shown."""
        return self._turns

    @property
    def turn_views(self) -> tuple[TurnView, ...]:
        """The turns shown, with the fork rule's verdicts."""
        return self._views

    @property
    def divider(self) -> Divider | None:
        """The seed divider, in a fork child."""
        return self._divider

    @property
    def _divider_row(self) -> int | None:
        """The row the divider is on (it follows the last seed turn)."""
        if self._divider is None or self._divider_after is None:
            return None
        return self._divider_after + 1

    @property
    def row_count(self) -> int:
        """Rows shown: one per turn, plus the divider in a fork child."""
        return len(self._turns) + (self._divider_row is not None)

    def turn_index_at(self, row: int) -> int | None:
        """The turn shown at a row (None for the divider or a row that is not there)."""
        if not 0 <= row < self.row_count:
            return None
        divider_row = self._divider_row
        if divider_row is None or row < divider_row:
            return row
        return None if row == divider_row else row - 1

    def row_of_turn(self, index: int) -> int | None:
        """The row showing a turn index."""
        if not 0 <= index < len(self._turns):
            return None
        divider_row = self._divider_row
        return index if divider_row is None or index < divider_row else index + 1

    @property
    def cursor_row(self) -> int:
        """The row under the cursor (0 in an empty timeline)."""
        return self._cursor

    @cursor_row.setter
    def cursor_row(self, row: int) -> None:
        self.move_cursor(row=row)

    @property
    def current_turn_index(self) -> int | None:
        """The turn under the cursor."""
        return self.turn_index_at(self._cursor)

    @property
    def current_turn(self) -> Turn | None:
        """The turn under the cursor."""
        index = self.current_turn_index
        return self._turns[index] if index is not None else None

    @property
    def current_view(self) -> TurnView | None:
        """The turn under the cursor, with its fork verdict."""
        index = self.current_turn_index
        return self._views[index] if index is not None else None

    @property
    def on_divider(self) -> bool:
        """True when the cursor is on the seed divider row."""
        return self._divider_row is not None and self._cursor == self._divider_row

    def get_row_at(self, row: int) -> list[Text]:
        """The cells of a row, in the order of the columns shown (see `columns`).

        Raises:
            IndexError: There is no such row.
        """
        return self._row_cells(row, None)

    def _row_cells(self, row: int, width: int | None) -> list[Text]:
        if not 0 <= row < self.row_count:
            raise IndexError(f"no row {row}")
        index = self.turn_index_at(row)
        if index is None:
            return self._divider_cells()
        cells = self._cells(self._views[index])
        return [cells[key] for key in self.columns(width)]

    # -- showing -------------------------------------------------------------------

    def show(
        self,
        turns: Sequence[TurnView],
        divider: Divider | None,
        *,
        cursor_turn: int | None,
    ) -> None:
        """Replace the rows with a session's turns.

        Args:
            turns: The turns with the fork rule's verdicts (drawn as they say: ▶ forkable,
                ✖ past a seq gap, ● open, … not judged yet (indexing), dim when inherited).
            divider: Where a fork child's seed ends, if it is one.
            cursor_turn: The turn index to put the cursor on (None: the last row).
        """
        self._set_views(turns)
        self._divider = divider
        self._divider_after = None
        if divider is not None:
            seeds = [i for i, v in enumerate(self._views) if v.inherited]
            self._divider_after = seeds[-1] if seeds else -1
        self._reset_rows()
        target: int | None = None
        if cursor_turn is not None and self._turns:
            target = self.row_of_turn(min(cursor_turn, len(self._turns) - 1))
        self._cursor = max(0, self.row_count - 1) if target is None else target
        self.scroll_to(y=0, animate=False, immediate=True)
        self._scroll_to_cursor()
        self._announce()

    def grow(self, turns: Sequence[TurnView]) -> None:
        """Extend in place with the longer list of turns of the same session.

        Only changed turns (an open turn that closed or gained steps) and new turns
        are rendered again. The cursor stays where the user put it, unless it was on
        the last row: then it follows the end.
        """
        rows = self.row_count
        following = rows > 0 and self._cursor == rows - 1
        before = self.current_turn_index
        before_turn = self.current_view
        self._set_views(turns)
        self._update_virtual_size()
        if following:
            self._cursor = self.row_count - 1
            self._scroll_to_cursor()
        # Unchanged rows are cache hits: repainting the widget costs only them.
        self.refresh()
        # Re-announce only if what is under the cursor changed: the detail pane keeps
        # its scroll position and folds while other turns grow.
        if self.current_turn_index != before or self.current_view != before_turn:
            self._announce(live=True)

    def _set_views(self, turns: Sequence[TurnView]) -> None:
        self._views = tuple(turns)
        self._turns = tuple(v.turn for v in self._views)
        self._fit_numbers()

    def _fit_numbers(self) -> None:
        """Size the turn column for the turns now shown, and the time column for their
        times (`12:05:01` when all are today, room for a date otherwise); every cached
        row is redrawn if that changes a width."""
        digits = max((len(str(turn.number)) for turn in self._turns), default=1)
        width = len(FORK_MARK) + 1 + digits
        today = self._today()
        start = datetime(today.year, today.month, today.day, tzinfo=self.tz).timestamp() * 1000
        end = start + 86_400_000  # (a day with a DST change is near enough)
        dated = any(
            t.started is not None and t.started and not start <= t.started < end
            for t in self._turns
        )
        time_width = TIME_WIDTH if dated else TIME_ONLY_WIDTH
        if width != self._number_width or time_width != self._time_width:
            self._number_width = width
            self._time_width = time_width
            self._row_cache.clear()
            self._header_cache.clear()

    def show_empty(self) -> None:
        """Forget the session: no rows."""
        self._views = ()
        self._turns = ()
        self._divider = None
        self._divider_after = None
        self._reset_rows()

    def clear(self) -> None:
        """No rows (the same as `show_empty`)."""
        self.show_empty()

    def move_cursor(self, *, row: int) -> None:
        """Put the cursor on a row (clamped to the rows there are) and scroll it into view."""
        row = max(0, min(row, self.row_count - 1))
        if row != self._cursor:
            self._cursor = row
            self.refresh()
            self._announce()
        self._scroll_to_cursor()

    def _reset_rows(self) -> None:
        self._cursor = 0
        self._hover = None
        self._row_cache.clear()
        self._update_virtual_size()
        self.refresh()

    def _update_virtual_size(self) -> None:
        size = Size(self._min_width(), self.row_count + HEADER_HEIGHT)
        old = self.virtual_size
        if size == old:
            return
        if size.width != old.width or not self.is_mounted or not self.container_size:
            self.virtual_size = size  # a new width, or not laid out yet: a layout
            return
        # Rows added or removed (a live append): only this widget's scroll range
        # changed, and no other widget moves, so the screen is not laid out again
        # (setting `virtual_size` would: a reflow of every widget on each append, the
        # detail pane's many included). The scrollbars are brought up to date here, as
        # a layout would; one that appears or goes still asks for a layout itself.
        self.set_reactive(TurnTimeline.virtual_size, size)
        self._scroll_update(size)

    # -- scrolling and input -------------------------------------------------------

    @property
    def _page_rows(self) -> int:
        return max(1, self.scrollable_content_region.height - HEADER_HEIGHT)

    def _scroll_to_cursor(self) -> None:
        row, top, page = self._cursor, self.scroll_offset.y, self._page_rows
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + page:
            self.scroll_to(y=row - page + 1, animate=False, immediate=True)

    def on_resize(self) -> None:
        self._update_virtual_size()
        self._scroll_to_cursor()

    def notify_style_update(self) -> None:
        """Styles (focus, theme) changed: every cached row is stale."""
        super().notify_style_update()
        self._row_cache.clear()
        self._header_cache.clear()

    def _keyboard(self, row: int) -> None:
        self._hover = None  # like DataTable: the mouse highlight yields to the keys
        self.move_cursor(row=row)

    def action_cursor_up(self) -> None:
        """Up one row."""
        self._keyboard(self._cursor - 1)

    def action_cursor_down(self) -> None:
        """Down one row."""
        self._keyboard(self._cursor + 1)

    def action_cursor_home(self) -> None:
        """To the first row."""
        self._keyboard(0)

    def action_cursor_end(self) -> None:
        """To the last row."""
        self._keyboard(self.row_count - 1)

    def action_page_up(self) -> None:
        """Up one screenful."""
        self._keyboard(self._cursor - self._page_rows)

    def action_page_down(self) -> None:
        """Down one screenful."""
        self._keyboard(self._cursor + self._page_rows)

    def action_select_cursor(self) -> None:
        """Enter: on the seed divider, ask for the parent."""
        if self.on_divider and self._divider is not None:
            self.post_message(self.DividerChosen(self._divider))

    def _row_at_mouse(self, event: events.MouseEvent) -> int | None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < HEADER_HEIGHT:
            return None
        row = self.scroll_offset.y + offset.y - HEADER_HEIGHT
        return row if 0 <= row < self.row_count else None

    def on_click(self, event: events.Click) -> None:
        """A click selects the row under the mouse (like Enter)."""
        row = self._row_at_mouse(event)
        if row is None:
            return
        event.stop()
        self.move_cursor(row=row)
        self.action_select_cursor()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        row = self._row_at_mouse(event)
        if row != self._hover:
            self._hover = row
            self.refresh()

    def on_leave(self, event: events.Leave) -> None:
        if self._hover is not None:
            self._hover = None
            self.refresh()

    # -- rendering -----------------------------------------------------------------

    def _all_fixed(self) -> dict[str, int]:
        """Widths of the columns other than user: the turn column fits the longest turn
        number with its marker (a session of 2,000 turns shows `▶ 2173`, not `▶ 21…`)."""
        special = {"turn": max(COLUMN_WIDTH["turn"], self._number_width), "time": self._time_width}
        return {key: special.get(key, w) for key, _, w in COLUMNS if key != "user"}

    def columns(self, width: int | None = None) -> tuple[str, ...]:
        """The keys of the columns shown at `width` (default: the widget's), in order:
        the ones `DROP_ORDER` names go first, until the user text has `USER_WANT`."""
        if width is None:
            width = self.scrollable_content_region.width
        cached = self._columns_cache
        shape = (width, self._number_width, self._time_width)
        if cached is not None and cached[0] == shape:
            return cached[1]
        fixed = self._all_fixed()
        shown = [key for key, _, _ in COLUMNS]
        pad = 2 * CELL_PADDING

        def user_room() -> int:
            return width - sum(fixed[k] + pad for k in shown if k != "user") - pad

        for key in DROP_ORDER:
            if user_room() >= USER_WANT:
                break
            shown.remove(key)
        keys = tuple(shown)
        self._columns_cache = (shape, keys)
        return keys

    def _fixed_widths(self, width: int | None = None) -> list[int]:
        fixed = self._all_fixed()
        return [fixed[k] for k in self.columns(width) if k != "user"]

    def _min_width(self) -> int:
        keys = self.columns()
        return sum(self._fixed_widths()) + USER_MIN + 2 * CELL_PADDING * len(keys)

    def _widths(self, width: int) -> list[int]:
        """Column widths: the user column takes whatever the others leave."""
        fixed = self._fixed_widths(width)
        used = sum(w + 2 * CELL_PADDING for w in fixed)
        user = max(USER_MIN, width - used - 2 * CELL_PADDING)
        return [*fixed, user]  # the user column is the last one

    def _strip(
        self, cells: list[Text], width: int, style: Style, over: Style | None = None
    ) -> Strip:
        """One row of cells, padded and cut to their columns, over the row style.

        `over` (the cursor) goes on top of the cells' own styles, as in a DataTable.
        """
        pad = " " * CELL_PADDING
        text = Text(style=style, no_wrap=True, end="")
        widths = self._widths(width)
        if len(cells) == 2:  # the divider: its text spans every column after the turn
            rest = max(width, self._min_width()) - widths[0] - 4 * CELL_PADDING
            widths = [widths[0], rest]
            cells = [cells[0], cells[1].copy()]
            if cells[1].cell_len + 1 < rest:
                cells[1].append(" " + "─" * (rest - cells[1].cell_len - 1), style="cyan")
        for cell, cell_width in zip(cells, widths, strict=True):
            cell = cell.copy()
            cell.truncate(cell_width, overflow="ellipsis")
            cell.align(cell.justify if cell.justify in ("left", "right", "center") else "left",
                       cell_width)  # fmt: skip
            text.append(pad)
            text.append_text(cell)
            text.append(pad)
        if over is not None:
            text.stylize(over)
        segments = list(text.render(self.app.console))
        return Strip(segments).crop_extend(0, max(width, self._min_width()), style)

    def _header_strip(self, width: int) -> Strip:
        key = (width, self.has_focus)
        strip = self._header_cache.get(key)
        if strip is None:
            style = self.rich_style + self.get_component_rich_style("turn-timeline--header")
            keys = self.columns(width)
            cells = [Text(label, style="bold", end="") for key, label, _ in COLUMNS if key in keys]
            strip = self._strip(cells, width, style)
            self._header_cache[key] = strip
        return strip

    def _row_strip(self, row: int, width: int) -> Strip:
        index = self.turn_index_at(row)
        shown: object = self._divider if index is None else self._views[index]
        cursor = row == self._cursor
        key = (row, width, cursor, row == self._hover, self.has_focus)
        cached = self._row_cache.get(key)
        if cached is not None and cached[0] is shown:
            return cached[1]
        style, over = self.rich_style, None
        if cursor:
            over = self.get_component_rich_style("turn-timeline--cursor")
            style += over
        elif row == self._hover:
            style += self.get_component_rich_style("turn-timeline--hover")
        strip = self._strip(self._row_cells(row, width), width, style, over)
        self._row_cache[key] = (shown, strip)
        return strip

    def render_line(self, y: int) -> Strip:
        """Line `y` of the widget: the header, then the rows from the scroll position."""
        width = self.scrollable_content_region.width
        scroll_x, scroll_y = self.scroll_offset
        if y < HEADER_HEIGHT:
            strip = self._header_strip(width)
        else:
            row = scroll_y + y - HEADER_HEIGHT
            if not 0 <= row < self.row_count:
                return Strip.blank(width, self.rich_style)
            strip = self._row_strip(row, width)
        return strip.crop_extend(scroll_x, scroll_x + width, self.rich_style)

    # -- cells ---------------------------------------------------------------------

    def _divider_cells(self) -> list[Text]:
        divider = self._divider
        assert divider is not None
        # The seq and the parent's short id come first: a narrow column cuts the title.
        inside = "" if divider.inside_turn is None else f", inside turn {divider.inside_turn}"
        of = divider.seqs_note
        text = Text(
            f"forked from {divider.parent_short or divider.parent_id[:8]} "
            f"at seq {divider.boundary}{of}{inside} · ",
            style="bold cyan",
            no_wrap=True,
            overflow="ellipsis",
            end="",
        )
        text.append_text(line(divider.parent_title, style="bold cyan"))
        # Two cells: the turn column, then one text across all the others.
        return [Text("⤴ ───", style="bold cyan", end=""), text]

    def _today(self) -> date:
        return datetime.fromtimestamp(self.clock(), self.tz).date()

    def _cells(self, view: TurnView) -> dict[str, Text]:
        turn = view.turn
        seed = view.inherited
        base = "dim" if seed else ""
        number = Text(end="")
        if view.pending:
            number.append(f"{PENDING_MARK} ", style="dim")
            number.append(str(turn.number), style=base)
        elif view.past_gap:
            number.append(f"{GAP_MARK} ", style="red")
            number.append(str(turn.number), style="dim")
        elif view.forkable:
            number.append(f"{FORK_MARK} ", style="dim cyan" if seed else "bold cyan")
            number.append(str(turn.number), style=f"bold {base}".strip())
        else:
            number.append(f"{OPEN_MARK} ", style="bold cyan")
            number.append(str(turn.number))
        reason_style = REASON_STYLE.get(turn.reason, "")
        reason = Text(turn.reason, style=f"{reason_style} {base}".strip(), end="")
        user = line(turn.user, style=base, limit=200) if turn.user else Text("—", style="dim")
        tokens = "" if view.tokens is None else compact_tokens(view.tokens)
        when = format_time(turn.started, self.tz, self._today())
        return {
            "turn": number,
            "reason": reason,
            "steps": Text(str(turn.steps), style=base, justify="right", end=""),
            "tools": line(tools_summary(turn.tools), style=base),
            "tokens": Text(tokens, style=base, justify="right", end=""),
            "time": Text(when, style=base or "dim", end=""),
            "user": user,
        }

    def _announce(self, *, live: bool = False) -> None:
        self.post_message(self.TurnHighlighted(self, self.current_turn_index, live=live))
