"""The turn timeline of one session: a row per turn, fork points highlighted."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey
from turnline.core.timeline import Timeline, Turn

from .._text import line

DIVIDER_KEY = "divider"

#: Styles per `turn/end` reason; other kinds are shown plain.
REASON_STYLE: dict[str, str] = {
    "completed": "green",
    "aborted": "yellow",
    "error": "bold red",
    "max-tokens": "magenta",
    "interrupted": "yellow",
    "open": "bold cyan",
}

#: (key, header, width); the user column takes whatever width is left.
COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("turn", "turn", 5),
    ("reason", "reason", 11),
    ("steps", "steps", 5),
    ("tools", "tools", 12),
    ("time", "time", 8),
    ("user", "user", 20),
)
USER_MIN = 12
FORK_MARK = "▶"
OPEN_MARK = "●"
GAP_MARK = "✖"


@dataclass(frozen=True)
class Divider:
    """Where a child's seed ends: the parent and the inherited boundary."""

    parent_title: str
    parent_id: str
    boundary: int


def format_time(ms: int | float | None, tz: tzinfo | None) -> str:
    """A turn's start time, from the log only (never the wall clock)."""
    if ms is None:
        return ""
    try:
        moment = datetime.fromtimestamp(ms / 1000, tz)
    except (OverflowError, OSError, ValueError):
        return "?"
    return moment.strftime("%H:%M:%S")


def format_datetime(ms: int | float | None, tz: tzinfo | None) -> str:
    """A full date and time, from the log only."""
    if ms is None:
        return ""
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


class TurnTimeline(DataTable[Text]):
    """One row per turn; forkable rows (ending in `turn/end`) marked ▶ and coloured.

    In a fork child, the inherited seed rows are dimmed and a divider row says where
    the child diverged. Rows are keyed by turn index, so a live update changes cells
    in place and appends rows without moving the cursor.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
    ]

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
        """Enter on the seed divider: the user wants the parent at the boundary."""

        def __init__(self, divider: Divider) -> None:
            super().__init__()
            self.divider = divider

    def __init__(
        self, *, tz: tzinfo | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, id=id, classes=classes)
        self.tz = tz
        self._turns: tuple[Turn, ...] = ()
        self._seed_length = 0
        self._divider: Divider | None = None
        self._divider_after: int | None = None  # index of the last seed turn
        self._keys: list[str] = []  # row keys in display order
        self.seed_limit: int | None = None

    def on_mount(self) -> None:
        for key, label, width in COLUMNS:
            self.add_column(Text(label, style="bold"), key=key, width=width)

    def on_resize(self) -> None:
        """Give the user text every column the others leave, so nothing scrolls sideways."""
        fixed = sum(width + 2 * self.cell_padding for key, _, width in COLUMNS if key != "user")
        avail = self.scrollable_content_region.width - fixed - 2 * self.cell_padding - 1
        column = self.columns.get(ColumnKey("user"))
        if column is not None and column.width != max(USER_MIN, avail):
            column.width = max(USER_MIN, avail)
            # DataTable has no public "column resized" hook; this is what add_column sets.
            self._require_update_dimensions = True
            self.refresh()

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """Recompute the virtual size, without measuring the new rows' cells.

        Every column has a fixed width (`on_resize` sets the user column's) and every
        row is one line high, so DataTable's per-cell measuring of new rows (about
        half a millisecond a row) cannot change the layout: skipping it is what lets a
        session of thousands of turns show at once.
        """
        super()._update_dimensions(())

    # -- model ---------------------------------------------------------------------

    @property
    def turns(self) -> tuple[Turn, ...]:
        """The turns shown."""
        return self._turns

    @property
    def divider(self) -> Divider | None:
        """The seed divider, in a fork child."""
        return self._divider

    def turn_index_at(self, row: int) -> int | None:
        """The turn shown at a row (None for the divider)."""
        if not 0 <= row < len(self._keys):
            return None
        key = self._keys[row]
        return None if key == DIVIDER_KEY else int(key)

    def row_of_turn(self, index: int) -> int | None:
        """The row showing a turn index."""
        try:
            return self._keys.index(str(index))
        except ValueError:
            return None

    @property
    def current_turn_index(self) -> int | None:
        """The turn under the cursor."""
        if not self._keys:
            return None
        return self.turn_index_at(self.cursor_row)

    @property
    def current_turn(self) -> Turn | None:
        """The turn under the cursor."""
        index = self.current_turn_index
        return self._turns[index] if index is not None else None

    @property
    def on_divider(self) -> bool:
        """True when the cursor is on the seed divider row."""
        return bool(self._keys) and self._keys[self.cursor_row] == DIVIDER_KEY

    def past_gap(self, turn: Turn) -> bool:
        """True for a turn/end beyond the contiguous prefix: shown, but not a fork point."""
        limit = self.seed_limit
        return limit is not None and turn.end_seq is not None and turn.end_seq >= limit

    def is_seed(self, turn: Turn) -> bool:
        """True for a turn the child inherited from its parent."""
        return turn.end_seq is not None and turn.end_seq < self._seed_length

    # -- showing -------------------------------------------------------------------

    def show(
        self,
        timeline: Timeline,
        divider: Divider | None,
        *,
        cursor_turn: int | None,
        seed_limit: int | None = None,
    ) -> None:
        """Replace the rows with a session's timeline.

        Args:
            timeline: The turns.
            divider: Where a fork child's seed ends, if it is one.
            cursor_turn: The turn index to put the cursor on (None: the last row).
            seed_limit: Events are contiguous only below this seq (None: all are), so
                turns ending at or past it cannot seed a fork.
        """
        self.seed_limit = seed_limit
        self.clear()
        self._keys = []
        self._turns = timeline.turns
        self._seed_length = timeline.seed_length
        self._divider = divider
        self._divider_after = None
        if divider is not None:
            seeds = [i for i, t in enumerate(self._turns) if self.is_seed(t)]
            self._divider_after = seeds[-1] if seeds else -1
        if self._divider_after == -1:
            self._add_divider()
        for index, turn in enumerate(self._turns):
            self._add_turn(index, turn)
            if index == self._divider_after:
                self._add_divider()
        if self._keys:
            target: int | None = None
            if cursor_turn is not None:
                target = self.row_of_turn(min(cursor_turn, len(self._turns) - 1))
            self.move_cursor(row=target if target is not None else len(self._keys) - 1)
        self._announce()

    def grow(self, timeline: Timeline) -> None:
        """Extend in place with a longer timeline of the same session.

        Changed turns (an open turn that closed or gained steps) are updated cell by
        cell; new turns are appended. The cursor stays where the user put it, unless
        it was on the last row: then it follows the end.
        """
        following = bool(self._keys) and self.cursor_row == len(self._keys) - 1
        old = self._turns
        before = self.current_turn_index
        before_turn = self.current_turn
        self._turns = timeline.turns
        for index, turn in enumerate(self._turns):
            if index < len(old):
                # Closed turns are the same objects in every snapshot: `is` skips them.
                if turn is not old[index] and turn != old[index]:
                    for key, value in zip((c[0] for c in COLUMNS), self._cells(turn), strict=True):
                        self.update_cell(str(index), key, value)
            else:
                self._add_turn(index, turn)
        if following and self._keys:
            self.move_cursor(row=len(self._keys) - 1)
        # Re-announce only if what is under the cursor changed: the detail pane keeps
        # its scroll position and folds while other turns grow.
        if self.current_turn_index != before or self.current_turn != before_turn:
            self._announce(live=True)

    def show_empty(self) -> None:
        """Forget the session: no rows."""
        self.clear()
        self._keys = []
        self._turns = ()
        self._divider = None

    def _add_turn(self, index: int, turn: Turn) -> None:
        key = str(index)
        self.add_row(*self._cells(turn), key=key)
        self._keys.append(key)

    def _add_divider(self) -> None:
        divider = self._divider
        assert divider is not None
        text = Text("forked from ", style="bold cyan", no_wrap=True, end="")
        text.append_text(line(divider.parent_title, style="bold cyan", limit=40))
        text.append(f" at seq {divider.boundary} ", style="bold cyan")
        cells = {key: Text("─" * width, style="cyan") for key, _, width in COLUMNS}
        cells["turn"] = Text("⤴ ───", style="bold cyan")
        cells["user"] = text
        self.add_row(*(cells[key] for key, _, _ in COLUMNS), key=DIVIDER_KEY)
        self._keys.append(DIVIDER_KEY)

    def _cells(self, turn: Turn) -> list[Text]:
        seed = self.is_seed(turn)
        base = "dim" if seed else ""
        number = Text(end="")
        if self.past_gap(turn):
            number.append(f"{GAP_MARK} ", style="red")
            number.append(str(turn.number), style="dim")
        elif turn.forkable:
            number.append(f"{FORK_MARK} ", style="dim cyan" if seed else "bold cyan")
            number.append(str(turn.number), style=f"bold {base}".strip())
        else:
            number.append(f"{OPEN_MARK} ", style="bold cyan")
            number.append(str(turn.number))
        reason_style = REASON_STYLE.get(turn.reason, "")
        reason = Text(turn.reason, style=f"{reason_style} {base}".strip(), end="")
        user = line(turn.user, style=base, limit=200) if turn.user else Text("—", style="dim")
        cells = {
            "turn": number,
            "reason": reason,
            "steps": Text(str(turn.steps), style=base, justify="right"),
            "tools": line(tools_summary(turn.tools), style=base),
            "time": Text(format_time(turn.started, self.tz), style=base or "dim"),
            "user": user,
        }
        return [cells[key] for key, _, _ in COLUMNS]

    def _announce(self, *, live: bool = False) -> None:
        self.post_message(self.TurnHighlighted(self, self.current_turn_index, live=live))

    def _on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._announce()

    def _on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value == DIVIDER_KEY and self._divider is not None:
            self.post_message(self.DividerChosen(self._divider))
