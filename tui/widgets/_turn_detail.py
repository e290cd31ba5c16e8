"""The detail pane: one turn's content blocks (or its raw events), and log problems.

The pane only draws core values: the turn's verdict (`core.view.TurnView`, the fork
rule's own decision) and its typed blocks (`core.content`), read and built by a worker.
Log text goes into `Text`/`Content` objects, never through a markup parser, and every
field is drawn as a bounded prefix (`core.content.FIELD_LIMIT`) with a note of what was
left off, so a 200 MB tool result costs what a 64 KB one does.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final

import msgspec
from rich.console import RenderableType
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.geometry import Region
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Collapsible, Input, Static
from turnline.core.content import (
    FIELD_LIMIT,
    AssistantText,
    Block,
    Bounded,
    ContextText,
    FileEdit,
    Reasoning,
    StepUsage,
    ToolCall,
    TurnError,
    UserText,
    bounded,
    event_lines_text,
    raw_events_text,
    size_words,
)
from turnline.core.formats import history_text
from turnline.core.model import LogProblem, SessionEvent
from turnline.core.preview import HeadPreview
from turnline.core.root import SessionRoot
from turnline.core.turn_usage import turn_usage, view_turn_usage
from turnline.core.usage import UsageTotals, compact_tokens, format_cost
from turnline.core.view import SessionView, TurnView
from turnline.core.xdg import ConfigError

from .._text import head, line, literal, one_line
from ._timeline import format_datetime

# Loaded when a turn's content is first built or searched, not with the app: the
# highlighter (pygments), the find rules (and through them the search catalog's module)
# and the price table are not on the first screen.
if TYPE_CHECKING:
    from rich.syntax import Syntax
    from turnline.core.find import Finder
    from turnline.core.prices import PriceTable

#: A tool call/result longer than this (lines or characters) starts collapsed.
FOLD_LINES: Final = 6
FOLD_CHARS: Final = 400
#: Code (a shell command, a diff) longer than this is shown as plain literal text:
#: highlighting is for reading, not for megabytes.
SYNTAX_CHARS: Final = 16 * 1024
#: What the "… N more" note offers for the rest of a field.
SEE_ALL: Final = "v: raw events, o: open in pager"
#: Every match of a find, and the current one (Rich styles on `Text`, never markup).
MATCH_STYLE: Final = "black on yellow"
CURRENT_STYLE: Final = "bold black on dark_orange"
#: Below this many rows the pane's header is compact: two lines (the turn, then the
#: fork verdict and the turn's token total), no log path, so the conversation starts
#: on the pane's third row (at 80x24 the pane has about ten).
COMPACT_ROWS: Final = 14
#: What the pane shows: the conversation, the raw events as JSON, or one line per event.
CONVERSATION: Final = "conversation"
RAW: Final = "raw"
LINES: Final = "lines"
#: The role labels in front of a user's and an assistant's text.
USER_LABEL: Final = "▌ user"
ASSISTANT_LABEL: Final = "▌ assistant"


def plural(count: int, noun: str) -> str:
    """`1 step`, `2 steps`, `0 steps`."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


class TurnContent(msgspec.Struct, frozen=True):
    """What a worker read for one turn: core values only.

    Attributes:
        verdict: The turn with the fork rule's verdict on its `turn/end`.
        blocks: The turn's content blocks (`core.content.turn_blocks`).
        raw: The turn's events as bounded JSON text (`core.content.raw_events_text`).
        path: The log the turn was read from.
        usage: The turn's usage by dsh's fold (`core.turn_usage`), None if not read.
        prices: The user's price table, if one is configured.
        prices_error: Why the price table could not be used, if it could not.
        root: The root folder the app was opened on (None: a single log); the header
            shows `path` relative to it.
    """

    verdict: TurnView
    blocks: Sequence[Block]
    raw: str
    path: Path | None = None
    usage: UsageTotals | None = None
    prices: PriceTable | None = None
    prices_error: str | None = None
    root: Path | None = None
    #: The older generations dsh keeps beside the log (`formats.history_text`).
    history: str | None = None
    #: The turn's events one line each (`core.content.event_lines_text`), bounded.
    lines: str = ""

    @property
    def shown_path(self) -> str | None:
        """The log's path as the header shows it: relative to the root folder if it
        lies under it, else whole."""
        if self.path is None:
            return None
        if self.root is not None:
            try:
                return str(self.path.relative_to(self.root))
            except ValueError:
                pass
        return str(self.path)


class Part(msgspec.Struct, frozen=True):
    """One piece of the pane and what a find may match in it.

    Attributes:
        renderable: What the pane draws (`Text`, `Syntax`).
        shown: How many leading characters are log text (a find matches there, never
            in the "… N more" note after them).
        cut: The field is longer than what is shown (matches may lie beyond it).
    """

    renderable: RenderableType
    shown: int = 0
    cut: bool = False


def bounded_part(text: str, style: str = "") -> Part:
    """Multi-line log text as literal `Text`, at most `FIELD_LIMIT` characters of it,
    then a dim note of how much was left off and how to see it all."""
    part = bounded(text)
    out = literal(part.text, style=style)
    shown = len(out)
    _append_more(out, part)
    return Part(out, shown, part.cut)


def turn_content(
    view: SessionView | HeadPreview,
    index: int,
    verdict: TurnView,
    blocks: Sequence[Block],
    events: Sequence[SessionEvent],
    *,
    root: SessionRoot | None = None,
    tz: tzinfo | None = None,
) -> TurnContent:
    """What the pane shows for one turn, read in a worker: the raw text, the turn's
    usage by dsh's fold and the user's price table (if any). The log's path is shown
    relative to `root`'s folder when the app was opened on one."""
    if isinstance(view, SessionView):
        usage = view_turn_usage(view, index, events)
    else:
        usage = turn_usage(events)  # a big log's head: no earlier turns to look back on
    from turnline.core.prices import load_prices

    prices, error = None, None
    try:
        prices = load_prices()
    except ConfigError as exc:
        error = exc.message
    folder = root.path if root is not None and root.single is None else None
    return TurnContent(
        verdict,
        blocks,
        raw_events_text(events),
        view.path,
        usage,
        prices,
        error,
        folder,
        history_text(view.path),
        event_lines_text(events, tz=tz),
    )


def bounded_text(text: str, style: str = "") -> Text:
    """`bounded_part`'s `Text`."""
    out = bounded_part(text, style).renderable
    assert isinstance(out, Text)
    return out


def _label(text: str, style: str = "bold dim") -> Part:
    return Part(Text(text, style=style, end=""))


def _append_more(out: Text, part: Bounded) -> None:
    if part.cut:
        out.append(f"\n… {size_words(part.more)} more ({SEE_ALL})", style="dim italic")


def _long(text: str) -> bool:
    # Only the first FOLD_CHARS matter: never count lines of a 200 MB field.
    head = text[: FOLD_CHARS + 1]
    return len(head) > FOLD_CHARS or head.count("\n") >= FOLD_LINES


def problem_lines(problems: tuple[LogProblem, ...]) -> Text:
    """Problems as `kind  where  message` lines."""
    text = Text(end="")
    text.append(f"⚠ {plural(len(problems), 'problem')} in this log\n", style="bold yellow")
    for problem in problems:
        where = []
        if problem.seq is not None:
            where.append(f"seq {problem.seq}")
        if problem.line is not None:
            where.append(f"line {problem.line}")
        text.append("  ")
        text.append_text(line(str(problem.kind), style="bold yellow", limit=60))
        text.append(f"  {', '.join(where) or '-'}  ", style="dim")
        text.append_text(line(problem.message, limit=400))
        text.append("\n")
    text.rstrip()
    return text


def title_of(text: str, limit: int) -> Content:
    """One line of log text for a title: literal `Content`, never markup."""
    return Content(one_line(head(text, limit), limit))


def usage_line(usage: StepUsage) -> Text:
    """One step's tokens (and model) as a dim line."""
    tokens = usage.usage
    parts = [f"step {usage.step}" if usage.step is not None else "usage"]
    if usage.model:
        parts.append(one_line(usage.model, 60))
    parts.append(f"{tokens.input_tokens:,} in · {tokens.output_tokens:,} out")
    if tokens.cache_read_tokens or tokens.cache_write_tokens:
        parts.append(
            f"cache {tokens.cache_read_tokens:,} read · {tokens.cache_write_tokens:,} write"
        )
    if tokens.reasoning_tokens:
        parts.append(f"{tokens.reasoning_tokens:,} reasoning")
    return Text("Σ " + " · ".join(parts), style="dim", end="")


def middle_cut(text: str, limit: int) -> str:
    """One line of `text`, cut in the middle (`…`) to `limit` characters, so both the
    start and the last part of a path stay readable."""
    text = one_line(text)
    if len(text) <= limit:
        return text
    if limit < 3:
        return text[:limit]
    tail = (limit - 1) // 2 + (limit - 1) % 2
    return text[: limit - 1 - tail] + "…" + text[-tail:]


def _buckets(row: Sequence[int]) -> str:
    text = f"{row[0]:,} in · {row[1]:,} out"
    if row[4]:
        text += f" ({row[4]:,} reasoning)"
    if row[2] or row[3]:
        text += f" · cache {row[2]:,} read · {row[3]:,} write"
    return text + f" · {plural(row[5], 'call')}"


def _cost(usage: UsageTotals, prices: PriceTable | None, model: str | None = None) -> str:
    if prices is None:
        return ""
    cost = usage.cost(prices, model)
    return f" · cost {format_cost(cost)}" if cost is not None else " · unpriced"


def turn_usage_lines(usage: UsageTotals, prices: PriceTable | None) -> Text:
    """The turn's tokens by bucket and by model (with cost when a price table is
    configured), as dim lines: one when a single model answered, else a total line and
    one per model. Reasoning is part of output: shown inside it, never added to a sum."""
    text = Text(end="", style="dim")
    by_model = usage.by_model()
    if not by_model:
        text.append("Σ turn: no usage recorded")
        return text
    if len(by_model) == 1:
        ((model, row),) = by_model.items()
        text.append("Σ turn · ")
        text.append_text(line(model, limit=60))
        text.append(f" · {_buckets(row)}{_cost(usage, prices)}")
        return text
    text.append(f"Σ turn · {_buckets(usage.buckets())}{_cost(usage, prices)}")
    for model, row in sorted(by_model.items()):
        text.append("\n  ")
        text.append_text(line(model, limit=60))
        text.append(f" · {_buckets(row)}{_cost(usage, prices, model)}")
    return text


def _syntax(code: str, lexer: Any) -> Syntax:
    from rich.syntax import Syntax

    return Syntax(code, lexer, theme="ansi_dark", word_wrap=True, background_color="default")


def _code(text: str, lexer: str) -> Part:
    """Code with real newlines: highlighted when small, literal when large or cut."""
    part = bounded(text)
    safe = literal(part.text).plain
    if len(safe) > SYNTAX_CHARS or part.cut:
        out = Text(safe, end="")
        _append_more(out, part)
        return Part(out, len(safe), part.cut)
    return Part(_syntax(safe, lexer), len(safe))


def edit_diff(edit: FileEdit) -> str:
    """An edit's change as a unified diff (a whole-file write: every line added)."""
    name = edit.path or "file"
    old, new = bounded(edit.old).text, bounded(edit.new).text
    lines = difflib.unified_diff(
        old.splitlines(),
        new.splitlines(),
        fromfile=f"a/{name}" if old else "/dev/null",
        tofile=f"b/{name}",
        lineterm="",
    )
    return "\n".join(lines)


def tool_title(call: ToolCall) -> Content:
    """`⚒ name(arguments…) status` as literal Content."""
    result = call.result
    return Content.assemble(
        "⚒ ",
        title_of(call.name, 40),
        "(",
        title_of(tool_argument(call), 60),
        ") ",
        (tool_status(call), "bold red" if result is not None and result.is_error else ""),
    )


def tool_argument(call: ToolCall) -> str:
    """What a tool call's title shows of its arguments: the shell command, the edited
    file's path, else the arguments' text (log text: draw it literally)."""
    shown = call.shell_command
    if shown is None:
        edit = call.file_edit
        shown = edit.path if edit is not None and edit.path else call.arguments_text
    return shown


def tool_status(call: ToolCall) -> str:
    """`…` while the result is pending, `✓`, or `✖ error`."""
    result = call.result
    return "…" if result is None else ("✖ error" if result.is_error else "✓")


def tool_body(call: ToolCall) -> list[Part]:
    """A tool call's arguments (a command as code, an edit as a diff) and its result,
    as the pieces the fold stacks."""
    parts: list[Part] = []
    command = call.shell_command
    edit = call.file_edit if command is None else None
    if command is not None:
        parts.append(_label("command"))
        parts.append(_code(command, "bash"))
    elif edit is not None:
        parts.append(Part(line(f"edit {edit.path or ''}", style="bold dim", limit=200)))
        parts.append(_code(edit_diff(edit), "diff"))
    else:
        parts.append(_label("arguments"))
        parts.append(bounded_part(call.arguments_text))
    result = call.result
    if result is not None:
        style = "red" if result.is_error else ""
        parts.append(_label("result", "bold red" if result.is_error else "bold dim"))
        parts.append(bounded_part(result.text, style=style))
    return parts


def highlighted(part: Part, spans: Sequence[tuple[int, int]], current: int | None) -> Any:
    """`part` with every span styled as a match, span `current` as the current one.

    `Text` gets styled spans (its characters stay literal); `Syntax` gets the same
    styles as ranges on a fresh copy, over its highlighting."""
    from rich.syntax import Syntax

    base = part.renderable
    if isinstance(base, Syntax):
        out = _syntax(base.code, base.lexer)
        code = base.code
        for i, (start, end) in enumerate(spans):
            style = CURRENT_STYLE if i == current else MATCH_STYLE
            out.stylize_range(style, _line_col(code, start), _line_col(code, end))
        return out
    assert isinstance(base, Text)
    text = base.copy()
    for i, (start, end) in enumerate(spans):
        text.stylize(CURRENT_STYLE if i == current else MATCH_STYLE, start, end)
    return text


def _line_col(code: str, offset: int) -> tuple[int, int]:
    """A character offset as Syntax's (1-based line, 0-based column)."""
    line_start = code.rfind("\n", 0, offset) + 1
    return code.count("\n", 0, offset) + 1, offset - line_start


def part_plain(part: Part) -> str:
    """The log text of a part a find matches in (its shown prefix)."""
    from rich.syntax import Syntax

    base = part.renderable
    if isinstance(base, Syntax):
        return base.code[: part.shown]
    if isinstance(base, Text):
        return base.plain[: part.shown]
    return ""


class _Field(msgspec.Struct):
    """A part on screen that a find searches: its Static, and its fold if folded."""

    static: Static
    part: Part
    plain: str
    fold: Fold | None = None


class Match(msgspec.Struct, frozen=True):
    """One match: the field it is in and its character span there."""

    field: int
    start: int
    end: int


class Fold(Collapsible):
    """A folded block of the detail pane: its title is not a Tab stop.

    Tab moves between the three panes; a turn with twenty tool calls would otherwise
    hold twenty stops. The pane's Enter (un)folds every block; a click folds one.
    """

    can_focus_children = False

    #: Set while the pane (un)folds every block at once: a block then does not
    #: scroll itself into view (Collapsible does, after a refresh), so the turn
    #: header stays on top.
    hold_scroll = False

    def scroll_visible(self, *args: Any, **kwargs: Any) -> None:
        """Scroll into view, unless the pane (un)folded every block at once."""
        if self.hold_scroll:
            self.hold_scroll = False
            return
        super().scroll_visible(*args, **kwargs)


class TurnDetail(VerticalScroll):
    """What happened in the highlighted turn; the log's problems above it.

    A find (Ctrl+F here, or Enter on a search hit) highlights its matches in the shown
    text of the turn and keeps doing so as other turns are shown, until Escape; n / N
    move between the matches, unfolding the block that holds one and scrolling to it.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "unfold_all", "Unfold all"),
        Binding("enter", "fold_all", "Fold all"),
        Binding("ctrl+f", "find", "Find", show=False),
        Binding("n", "next_match", "Next match", show=False),
        Binding("N", "previous_match", "Previous match", show=False),
        Binding("escape", "clear_find", "Clear find", show=False),
        Binding("y", "copy_path", "Copy path", show=False),
    ]

    DEFAULT_CSS = """
    TurnDetail > .role { text-style: bold; margin-top: 1; }
    TurnDetail > .role-user { color: $accent; }
    TurnDetail > .role-assistant { color: $success; }
    TurnDetail > .error { color: $error; }
    TurnDetail > .problems { border-left: thick $warning; padding-left: 1; margin-bottom: 1; }
    TurnDetail > .heading { text-style: bold; }
    TurnDetail > .heading.-compact { text-wrap: nowrap; text-overflow: ellipsis; }
    TurnDetail > .lines { text-wrap: nowrap; text-overflow: ellipsis; }
    TurnDetail > .hint { color: $text-muted; }
    TurnDetail > .usage { color: $text-muted; }
    TurnDetail Collapsible { padding: 0; margin: 0; border: none; }
    TurnDetail Collapsible > Contents { padding-left: 2; }
    TurnDetail > #find-bar { dock: bottom; height: auto; display: none; background: $panel; }
    TurnDetail > #find-bar.-active { display: block; }
    TurnDetail #find-input { display: none; height: 1; border: none; padding: 0 1; }
    TurnDetail #find-input.-typing { display: block; }
    TurnDetail #find-status { height: 1; padding: 0 1; color: $text-muted; }
    """

    class ContentRead(Message):
        """A worker read one turn's content for the pane."""

        def __init__(self, path: Path, turn_index: int, content: TurnContent) -> None:
            super().__init__()
            self.path = path
            """The log the turn belongs to."""
            self.turn_index = turn_index
            """The turn's position in the timeline."""
            self.content = content
            """The verdict, the blocks and the raw text."""

    def __init__(self, *, tz: tzinfo | None = None, id: str | None = None) -> None:
        super().__init__(id=id)
        self.tz = tz
        #: What the pane shows: `CONVERSATION`, `RAW` (JSON) or `LINES` (one per event).
        self.mode = CONVERSATION
        #: The heading shown, and whether it was built compact (redrawn on a resize
        #: that changes that).
        self._heading_static: Static | None = None
        self._compact = False
        self._problems: tuple[LogProblem, ...] = ()
        self._verdict: TurnView | None = None
        self._blocks: Sequence[Block] = ()
        self._raw_text = ""
        self._note: str | None = None
        self._content: TurnContent | None = None
        #: The find in force (kept from turn to turn until Escape).
        self.finder: Finder | None = None
        self._fields: list[_Field] = []
        #: The matches of the find in the shown turn, in reading order.
        self.matches: list[Match] = []
        #: Index of the current match in `matches`.
        self.current: int | None = None
        self._bar = Vertical(id="find-bar")
        #: The shown turn's folded blocks (kept here: querying the DOM for them on
        #: every binding check would walk hundreds of widgets).
        self._folds: list[Fold] = []
        self._bindings_due = False

    def compose(self) -> ComposeResult:
        with self._bar:
            yield Input(
                placeholder="find in this turn (Enter: n/N move, Esc clears)", id="find-input"
            )
            yield Static(Text(""), id="find-status")

    @property
    def raw(self) -> bool:
        """The pane shows the turn's raw events as JSON."""
        return self.mode == RAW

    @property
    def path(self) -> Path | None:
        """The log the shown turn comes from."""
        return self._content.path if self._content is not None else None

    # -- folding --------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Enter offers "Unfold all" while a block is folded, "Fold all" once every
        block is open, and nothing in raw view or for a turn without blocks to fold.
        n / N and Escape act while a find is in force."""
        if action in ("unfold_all", "fold_all"):
            if self.mode != CONVERSATION:
                return False
            folds = self._folds
            if not folds:
                return False
            folded = any(fold.collapsed for fold in folds)
            return folded if action == "unfold_all" else not folded
        if action in ("next_match", "previous_match"):
            return bool(self.matches)
        if action == "clear_find":
            return self.finder is not None or self._typing
        if action == "copy_path":
            return self.path is not None
        return True

    def action_unfold_all(self) -> None:
        """Unfold every block of the turn."""
        self._set_folds(collapsed=False)

    def action_fold_all(self) -> None:
        """Fold every block of the turn."""
        self._set_folds(collapsed=True)

    def _set_folds(self, *, collapsed: bool) -> None:
        # The pane keeps its scroll position (see Fold.hold_scroll).
        for fold in self._folds:
            if fold.collapsed != collapsed:
                fold.hold_scroll = True
                fold.collapsed = collapsed
        self._refresh_bindings_soon()

    def _on_collapsible_collapsed(self) -> None:
        self._refresh_bindings_soon()

    def _on_collapsible_expanded(self) -> None:
        self._refresh_bindings_soon()

    def _refresh_bindings_soon(self) -> None:
        # Once per refresh, however many blocks (un)folded: each refresh re-checks every
        # binding, and a turn can hold hundreds of blocks.
        if not self._bindings_due:
            self._bindings_due = True
            self.call_after_refresh(self._refresh_bindings_now)

    def _refresh_bindings_now(self) -> None:
        self._bindings_due = False
        self.refresh_bindings()

    # -- the log's path ---------------------------------------------------------------

    def action_copy_path(self) -> None:
        """Copy the full path of the shown turn's log (Textual's clipboard, OSC 52)."""
        path = self.path
        if path is None:
            return
        self.app.copy_to_clipboard(str(path))
        self.notify(f"copied {one_line(str(path))}", title="Copy path", markup=False)

    # -- find -------------------------------------------------------------------------

    @property
    def _input(self) -> Input:
        return self._bar.query_one("#find-input", Input)

    @property
    def _typing(self) -> bool:
        return self._input.has_class("-typing")

    def action_find(self) -> None:
        """Open the find box (it keeps the current find's text)."""
        box = self._input
        box.add_class("-typing")
        self._bar.add_class("-active")
        if self.finder is not None and box.value != self.finder.query:
            box.value = self.finder.query
        box.focus()
        self._show_status()

    def find(self, query: str | None, *, search: bool = False) -> None:
        """Highlight `query` in the shown turn and the turns shown after it.

        Args:
            query: The text to find (None or blank: no find).
            search: `query` is a search QUERY (`core.search`: words, "a phrase",
                prefix*) rather than a literal string.
        """
        from turnline.core.find import Finder

        self.finder = (
            None
            if query is None
            else (Finder.of_search(query) if search else Finder.literal(query))
        )
        self._bar.set_class(self.finder is not None or self._typing, "-active")
        self._apply_find(scroll=True)

    def action_clear_find(self) -> None:
        """Clear the find and close its box."""
        box = self._input
        refocus = box.has_focus
        box.remove_class("-typing")
        with box.prevent(Input.Changed):
            box.value = ""
        self.find(None)
        if refocus:
            self.focus()

    @on(Input.Changed, "#find-input")
    def _on_find_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self.finder is not None and event.value == self.finder.query:
            return
        self.find(event.value)

    @on(Input.Submitted, "#find-input")
    def _on_find_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.focus()  # n / N now move between the matches

    def action_next_match(self) -> None:
        """Go to the next match (after the last: the first)."""
        self._step(1)

    def action_previous_match(self) -> None:
        """Go to the previous match (before the first: the last)."""
        self._step(-1)

    def _step(self, delta: int) -> None:
        if not self.matches:
            return
        old = self.current
        self.current = ((old if old is not None else -1) + delta) % len(self.matches)
        fields = {self.matches[self.current].field}
        if old is not None:
            fields.add(self.matches[old].field)
        for index in fields:
            self._paint(index)
        self._show_status()
        self._reveal_current()

    def _paint(self, index: int) -> None:
        field = self._fields[index]
        spans: list[tuple[int, int]] = []
        current = None
        for i, match in enumerate(self.matches):
            if match.field == index:
                if i == self.current:
                    current = len(spans)
                spans.append((match.start, match.end))
        field.static.update(
            highlighted(field.part, spans, current) if spans else field.part.renderable
        )

    def _apply_find(self, *, scroll: bool) -> None:
        """Find the matches in the shown fields, paint them, say where we are."""
        had = {m.field for m in self.matches}
        self.matches = []
        self.current = None
        finder = self.finder
        if finder is not None:
            for index, field in enumerate(self._fields):
                self.matches.extend(Match(index, a, b) for a, b in finder.spans(field.plain))
        for index in had | {m.field for m in self.matches}:
            self._paint(index)
        if self.matches:
            self.current = 0
            self._paint(self.matches[0].field)
            if scroll:
                self._reveal_current()
        self._show_status()
        self.refresh_bindings()

    def _show_status(self) -> None:
        status = self._bar.query_one("#find-status", Static)
        finder = self.finder
        text = Text(end="")
        if finder is None:
            text.append("type to find in this turn (any case)", style="dim")
        else:
            text.append("find ")
            text.append_text(line(finder.query, style="bold", limit=40))
            text.append(": ")
            if self.matches and self.current is not None:
                text.append(f"match {self.current + 1}/{len(self.matches)}", style="bold")
                text.append(" · n/N next/previous · Esc clears", style="dim")
            elif self._verdict is None:
                text.append("no turn is shown", style="dim")
            else:
                text.append("no match in this turn", style="bold")
                text.append(" · Esc clears", style="dim")
            if any(field.part.cut for field in self._fields):
                text.append(
                    f" · only the first {size_words(FIELD_LIMIT)} of a field is searched:"
                    " more matches may lie beyond it",
                    style="yellow",
                )
        status.update(text)

    def _reveal_current(self) -> None:
        """Unfold the block holding the current match and scroll the match into view."""
        if self.current is None:
            return
        match = self.matches[self.current]
        field = self._fields[match.field]
        if field.fold is not None and field.fold.collapsed:
            field.fold.hold_scroll = True
            field.fold.collapsed = False
        # After the layout the unfold (or the new turn) causes.
        self.call_after_refresh(self.call_after_refresh, self._scroll_to_match, match)

    def _scroll_to_match(self, match: Match) -> None:
        if self.current is None or self.matches[self.current] != match:
            return  # moved on meanwhile
        static = self._fields[match.field].static
        if not static.is_mounted:
            return
        width = max(static.content_region.width, 1)
        before = Content(self._fields[match.field].plain[: match.start])
        line_offset = max(len(before.wrap(width)) - 1, 0) if match.start else 0
        box = static.virtual_region
        region = Region(box.x, box.y + static.styles.gutter.top + line_offset, box.width, 1)
        # Into the pane's own coordinates, as `Widget.scroll_to_widget` walks up.
        node: Widget = static
        while isinstance(node.parent, Widget) and node.parent is not self:
            container = node.parent
            region = (
                region.translate(container.styles.margin.top_left)
                .translate(container.styles.border.spacing.top_left)
                .translate(container.virtual_region_with_margin.offset)
            )
            node = container
        self.scroll_to_region(region, center=True, animate=False, immediate=True)

    # -- showing --------------------------------------------------------------------

    def show_content(self, content: TurnContent, problems: tuple[LogProblem, ...]) -> None:
        """Show what a worker read for a turn (with the log's problems above it)."""
        self._content = content
        self._show(content.verdict, content.blocks, problems, raw=content.raw, note=None)

    def show_turn(
        self,
        verdict: TurnView | None,
        blocks: Sequence[Block],
        problems: tuple[LogProblem, ...],
        *,
        raw: str = "",
        note: str | None = None,
    ) -> None:
        """Show a turn's verdict and blocks (or only `note` and the problems when
        `verdict` is None). `raw` is the raw view's text, already bounded."""
        self._content = None
        self._show(verdict, blocks, problems, raw=raw, note=note)

    def _show(
        self,
        verdict: TurnView | None,
        blocks: Sequence[Block],
        problems: tuple[LogProblem, ...],
        *,
        raw: str,
        note: str | None,
    ) -> None:
        self._verdict = verdict
        self._blocks = blocks
        self._raw_text = raw
        self._problems = problems
        self._note = note
        self._render_children()

    def toggle_raw(self) -> bool:
        """Switch between the conversation and the raw events; returns the new mode."""
        self.mode = CONVERSATION if self.mode == RAW else RAW
        self._render_children()
        return self.raw

    def toggle_lines(self) -> bool:
        """Switch between the conversation and one line per event (seq, time, type,
        a data excerpt); returns True when the lines are shown."""
        self.mode = CONVERSATION if self.mode == LINES else LINES
        self._render_children()
        return self.mode == LINES

    def _compact_now(self) -> bool:
        height = self.scrollable_content_region.height
        return 0 < height < COMPACT_ROWS

    def on_resize(self) -> None:
        """Redraw the heading when the pane crosses the compact height."""
        static = self._heading_static
        verdict = self._verdict
        if static is None or verdict is None or not static.is_attached:
            return
        if self._compact_now() != self._compact:
            static.update(self._heading(verdict))
            static.set_class(self._compact, "-compact")

    def _field(self, part: Part, classes: str | None = None) -> Static:
        """A Static for a part; a part with log text in it is searched by a find."""
        static = Static(part.renderable, classes=classes)
        if part.shown:
            self._fields.append(_Field(static, part, part_plain(part)))
        return static

    def _render_children(self) -> None:
        self._fields = []
        self._folds = []
        self.matches = []
        self.current = None
        widgets: list[Widget] = []
        if self._problems:
            widgets.append(Static(problem_lines(self._problems), classes="problems"))
        verdict = self._verdict
        if verdict is None:
            if self._note:
                widgets.append(Static(literal(self._note), classes="hint"))
        else:
            self._heading_static = Static(self._heading(verdict), classes="heading")
            self._heading_static.set_class(self._compact, "-compact")
            widgets.append(self._heading_static)
            if self.mode == RAW:
                raw = literal(self._raw_text)
                widgets.append(self._field(Part(raw, len(raw)), classes="raw"))
            elif self.mode == LINES:
                lines = self._content.lines if self._content is not None else ""
                shown = literal(lines or "(no events read for this turn)")
                widgets.append(self._field(Part(shown, len(shown)), classes="lines"))
            else:
                widgets.extend(self._block_widgets())
        with self.app.batch_update():
            self.remove_children([child for child in self.children if child is not self._bar])
            self.mount_all(widgets)
            self.scroll_home(animate=False)
            if self.finder is not None:
                self._apply_find(scroll=True)
            elif self._bar.has_class("-active"):
                self._show_status()
        self.call_after_refresh(self.refresh_bindings)

    def _heading(self, verdict: TurnView) -> Text:
        self._compact = self._compact_now()
        if self._compact:
            return self._compact_heading(verdict)
        turn = verdict.turn
        text = Text(end="")
        text.append(f"turn {turn.number}", style="bold")
        text.append(" · ")
        text.append_text(line(turn.reason, limit=60))
        if turn.detail:
            text.append(" (")
            text.append_text(line(turn.detail, limit=80))
            text.append(")")
        last = turn.end_seq if turn.end_seq is not None else "…"
        text.append(f" · seq {turn.first_seq}–{last} · {plural(turn.steps, 'step')}", style="dim")
        if turn.started is not None:
            text.append(f" · {format_datetime(turn.started, self.tz)}", style="dim")
        if turn.started is not None and turn.ended is not None and turn.ended >= turn.started:
            text.append(f" ({(turn.ended - turn.started) / 1000:.1f}s)", style="dim")
        text.append("\n")
        content = self._content
        shown = content.shown_path if content is not None else None
        if shown is not None:
            # Literal text, cut in the middle: the start and the file name both stay.
            width = self.scrollable_content_region.width or 100
            text.append("log ", style="dim")
            text.append(middle_cut(shown, max(width - 5, 20)), style="dim")
            text.append("\n")
            if content is not None and content.history is not None:
                # Older generations of this session, kept by dsh beside its log.
                text.append("also ", style="dim")
                text.append(middle_cut(content.history, max(width - 6, 20)), style="dim")
                text.append("\n")
        if content is not None and content.usage is not None:
            text.append_text(turn_usage_lines(content.usage, content.prices))
            if content.prices_error:
                text.append("  (")
                text.append_text(line(content.prices_error, style="yellow", limit=120))
                text.append(")")
            text.append("\n")
        if verdict.forkable and verdict.seed_length is not None:
            text.append(
                f"▶ fork point: f forks here (seed = {plural(verdict.seed_length, 'event')})",
                style="cyan",
            )
        elif turn.end_seq is None:
            text.append(
                "● open turn: an agent is still writing it; not a fork point", style="bold cyan"
            )
        else:
            text.append("✖ not a fork point: ", style="bold red")
            text.append_text(line(verdict.refusal or "", style="red", limit=300))
        text.append(f"  ·  {self._mode_words()}", style="dim")
        return text

    def _mode_words(self) -> str:
        if self.mode == RAW:
            return "raw events (v: conversation)"
        if self.mode == LINES:
            return "one line per event (V: conversation)"
        return "conversation (v: raw events)"

    def _compact_heading(self, verdict: TurnView) -> Text:
        """Two lines, each cut to the pane's width: the turn (number, reason, time,
        duration), then the fork verdict, the turn's token total (and cost) and the
        mode. The log's path is left out (y copies it). The heading's `-compact` class
        keeps each line to one row (no wrap, an ellipsis)."""
        turn = verdict.turn
        first = Text(end="")
        first.append(f"turn {turn.number}", style="bold")
        first.append(" · ")
        first.append_text(line(turn.reason, limit=30))
        if turn.started is not None:
            first.append(f" · {format_datetime(turn.started, self.tz)}", style="dim")
        if turn.started is not None and turn.ended is not None and turn.ended >= turn.started:
            first.append(f" ({(turn.ended - turn.started) / 1000:.1f}s)", style="dim")
        first.append(
            f" · seq {turn.first_seq}–{turn.end_seq if turn.end_seq is not None else '…'}",
            style="dim",
        )
        second = Text(end="")
        if verdict.forkable and verdict.seed_length is not None:
            second.append(f"▶ fork point (f: seed {verdict.seed_length})", style="cyan")
        elif turn.end_seq is None:
            second.append("● open turn", style="bold cyan")
        else:
            second.append("✖ ", style="bold red")
            second.append_text(line(verdict.refusal or "not a fork point", style="red", limit=80))
        content = self._content
        if content is not None and content.usage is not None:
            usage = content.usage
            if not usage.by_model():
                second.append(" · no usage", style="dim")
            else:
                second.append(f" · Σ {compact_tokens(usage.total_tokens)} tokens", style="dim")
            if content.prices is not None and usage.by_model():
                second.append(_cost(usage, content.prices), style="dim")
        mode = {RAW: "raw JSON", LINES: "one line per event"}.get(self.mode, "")
        if mode:
            second.append(f" · {mode}", style="dim")
        return Text("\n", end="").join([first, second])

    def _block_widgets(self) -> list[Widget]:
        widgets: list[Widget] = []
        if not any(not isinstance(block, StepUsage) for block in self._blocks):
            widgets.append(Static(Text("(no messages in this turn)", style="dim"), classes="hint"))
        for block in self._blocks:
            if isinstance(block, UserText):
                widgets.append(Static(Text(USER_LABEL), classes="role role-user"))
                widgets.append(self._field(bounded_part(block.text)))
            elif isinstance(block, AssistantText):
                widgets.append(Static(Text(ASSISTANT_LABEL), classes="role role-assistant"))
                widgets.append(self._field(bounded_part(block.text)))
            elif isinstance(block, Reasoning):
                widgets.append(
                    self._folded(
                        [bounded_part(block.text, style="italic")], Content("reasoning"), True
                    )
                )
            elif isinstance(block, ContextText):
                title = Content.assemble("context (", title_of(block.source, 30), ")")
                widgets.append(self._folded([bounded_part(block.text, style="dim")], title, True))
            elif isinstance(block, TurnError):
                widgets.append(Static(Text("✖ error", style="bold"), classes="role error"))
                widgets.append(self._field(bounded_part(block.message), classes="error"))
            elif isinstance(block, ToolCall):
                widgets.append(self._tool_widget(block))
            elif isinstance(block, StepUsage):
                widgets.append(Static(usage_line(block), classes="usage"))
        return widgets

    def _folded(self, parts: list[Part], title: Content, collapsed: bool) -> Fold:
        first = len(self._fields)
        statics = [self._field(part) for part in parts]
        fold = Fold(*statics, title=title, collapsed=collapsed)  # type: ignore[arg-type]
        self._folds.append(fold)
        for field in self._fields[first:]:
            field.fold = fold
        return fold

    def _tool_widget(self, call: ToolCall) -> Widget:
        result = call.result
        collapsed = _long(call.arguments_text) or _long(result.text if result else "")
        return self._folded(tool_body(call), tool_title(call), collapsed)
