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
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path
from typing import Any, ClassVar, Final

from rich.console import RenderableType
from rich.syntax import Syntax
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Collapsible, Static
from turnline.core.content import (
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
    size_words,
)
from turnline.core.model import LogProblem
from turnline.core.view import TurnView

from .._text import head, line, literal, one_line
from ._timeline import format_datetime

#: A tool call/result longer than this (lines or characters) starts collapsed.
FOLD_LINES: Final = 6
FOLD_CHARS: Final = 400
#: Code (a shell command, a diff) longer than this is shown as plain literal text:
#: highlighting is for reading, not for megabytes.
SYNTAX_CHARS: Final = 16 * 1024
#: What the "… N more" note offers for the rest of a field.
SEE_ALL: Final = "v: raw events, o: open in pager"


def plural(count: int, noun: str) -> str:
    """`1 step`, `2 steps`, `0 steps`."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


@dataclass(frozen=True)
class TurnContent:
    """What a worker read for one turn: core values only.

    Attributes:
        verdict: The turn with the fork rule's verdict on its `turn/end`.
        blocks: The turn's content blocks (`core.content.turn_blocks`).
        raw: The turn's events as bounded JSON text (`core.content.raw_events_text`).
    """

    verdict: TurnView
    blocks: Sequence[Block]
    raw: str


def bounded_text(text: str, style: str = "") -> Text:
    """Multi-line log text as literal `Text`, at most `FIELD_LIMIT` characters of it,
    then a dim note of how much was left off and how to see it all."""
    part = bounded(text)
    out = literal(part.text, style=style)
    _append_more(out, part)
    return out


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


def _code(text: str, lexer: str) -> RenderableType:
    """Code with real newlines: highlighted when small, literal when large or cut."""
    part = bounded(text)
    safe = literal(part.text).plain
    if len(safe) > SYNTAX_CHARS or part.cut:
        out = Text(safe, end="")
        _append_more(out, part)
        return out
    return Syntax(safe, lexer, theme="ansi_dark", word_wrap=True, background_color="default")


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
    status = "…" if result is None else ("✖ error" if result.is_error else "✓")
    shown = call.shell_command
    if shown is None:
        edit = call.file_edit
        shown = edit.path if edit is not None and edit.path else call.arguments_text
    return Content.assemble(
        "⚒ ",
        title_of(call.name, 40),
        "(",
        title_of(shown, 60),
        ") ",
        (status, "bold red" if result is not None and result.is_error else ""),
    )


def tool_body(call: ToolCall) -> list[RenderableType]:
    """A tool call's arguments (a command as code, an edit as a diff) and its result,
    as the pieces the fold stacks."""
    parts: list[RenderableType] = []
    command = call.shell_command
    edit = call.file_edit if command is None else None
    if command is not None:
        parts.append(Text("command", style="bold dim", end=""))
        parts.append(_code(command, "bash"))
    elif edit is not None:
        parts.append(line(f"edit {edit.path or ''}", style="bold dim", limit=200))
        parts.append(_code(edit_diff(edit), "diff"))
    else:
        parts.append(Text("arguments", style="bold dim", end=""))
        parts.append(bounded_text(call.arguments_text))
    result = call.result
    if result is not None:
        style = "red" if result.is_error else ""
        parts.append(Text("result", style="bold red" if result.is_error else "bold dim", end=""))
        parts.append(bounded_text(result.text, style=style))
    return parts


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
    """What happened in the highlighted turn; the log's problems above it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "unfold_all", "Unfold all"),
        Binding("enter", "fold_all", "Fold all"),
    ]

    DEFAULT_CSS = """
    TurnDetail > .role { text-style: bold; margin-top: 1; }
    TurnDetail > .role-user { color: $accent; }
    TurnDetail > .role-assistant { color: $success; }
    TurnDetail > .error { color: $error; }
    TurnDetail > .problems { border-left: thick $warning; padding-left: 1; margin-bottom: 1; }
    TurnDetail > .heading { text-style: bold; }
    TurnDetail > .hint { color: $text-muted; }
    TurnDetail > .usage { color: $text-muted; }
    TurnDetail Collapsible { padding: 0; margin: 0; border: none; }
    TurnDetail Collapsible > Contents { padding-left: 2; }
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
        self.raw = False
        self._problems: tuple[LogProblem, ...] = ()
        self._verdict: TurnView | None = None
        self._blocks: Sequence[Block] = ()
        self._raw_text = ""
        self._note: str | None = None

    # -- folding --------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Enter offers "Unfold all" while a block is folded, "Fold all" once every
        block is open, and nothing in raw view or for a turn without blocks to fold."""
        if action in ("unfold_all", "fold_all"):
            if self.raw:
                return False
            folds = list(self.query(Fold))
            if not folds:
                return False
            folded = any(fold.collapsed for fold in folds)
            return folded if action == "unfold_all" else not folded
        return True

    def action_unfold_all(self) -> None:
        """Unfold every block of the turn."""
        self._set_folds(collapsed=False)

    def action_fold_all(self) -> None:
        """Fold every block of the turn."""
        self._set_folds(collapsed=True)

    def _set_folds(self, *, collapsed: bool) -> None:
        # The pane keeps its scroll position (see Fold.hold_scroll).
        for fold in self.query(Fold):
            if fold.collapsed != collapsed:
                fold.hold_scroll = True
                fold.collapsed = collapsed
        self.call_after_refresh(self.refresh_bindings)

    def _on_collapsible_collapsed(self) -> None:
        self.call_after_refresh(self.refresh_bindings)

    def _on_collapsible_expanded(self) -> None:
        self.call_after_refresh(self.refresh_bindings)

    # -- showing --------------------------------------------------------------------

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
        self._verdict = verdict
        self._blocks = blocks
        self._raw_text = raw
        self._problems = problems
        self._note = note
        self._render_children()

    def toggle_raw(self) -> bool:
        """Switch between the conversation and the raw events; returns the new mode."""
        self.raw = not self.raw
        self._render_children()
        return self.raw

    def _render_children(self) -> None:
        widgets: list[Widget] = []
        if self._problems:
            widgets.append(Static(problem_lines(self._problems), classes="problems"))
        verdict = self._verdict
        if verdict is None:
            if self._note:
                widgets.append(Static(literal(self._note), classes="hint"))
        else:
            widgets.append(Static(self._heading(verdict), classes="heading"))
            if self.raw:
                widgets.append(Static(literal(self._raw_text), classes="raw"))
            else:
                widgets.extend(self._block_widgets())
        with self.app.batch_update():
            self.remove_children()
            self.mount_all(widgets)
            self.scroll_home(animate=False)
        self.call_after_refresh(self.refresh_bindings)

    def _heading(self, verdict: TurnView) -> Text:
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
        mode = "raw events (v: conversation)" if self.raw else "conversation (v: raw events)"
        text.append(f"  ·  {mode}", style="dim")
        return text

    def _block_widgets(self) -> list[Widget]:
        widgets: list[Widget] = []
        if not any(not isinstance(block, StepUsage) for block in self._blocks):
            widgets.append(Static(Text("(no messages in this turn)", style="dim"), classes="hint"))
        for block in self._blocks:
            if isinstance(block, UserText):
                widgets.append(Static(Text("▌ user"), classes="role role-user"))
                widgets.append(Static(bounded_text(block.text)))
            elif isinstance(block, AssistantText):
                widgets.append(Static(Text("▌ assistant"), classes="role role-assistant"))
                widgets.append(Static(bounded_text(block.text)))
            elif isinstance(block, Reasoning):
                widgets.append(
                    Fold(
                        Static(bounded_text(block.text, style="italic")),
                        title=Content("reasoning"),  # type: ignore[arg-type]
                        collapsed=True,
                    )
                )
            elif isinstance(block, ContextText):
                title = Content.assemble("context (", title_of(block.source, 30), ")")
                widgets.append(
                    Fold(
                        Static(bounded_text(block.text, style="dim")),
                        title=title,  # type: ignore[arg-type]
                        collapsed=True,
                    )
                )
            elif isinstance(block, TurnError):
                widgets.append(Static(Text("✖ error", style="bold"), classes="role error"))
                widgets.append(Static(bounded_text(block.message), classes="error"))
            elif isinstance(block, ToolCall):
                widgets.append(self._tool_widget(block))
            elif isinstance(block, StepUsage):
                widgets.append(Static(usage_line(block), classes="usage"))
        return widgets

    def _tool_widget(self, call: ToolCall) -> Widget:
        result = call.result
        collapsed = _long(call.arguments_text) or _long(result.text if result else "")
        return Fold(
            *(Static(part) for part in tool_body(call)),
            title=tool_title(call),  # type: ignore[arg-type]
            collapsed=collapsed,
        )
