"""The detail pane: one turn's conversation (or its raw events), and log problems."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any, ClassVar, Final

import orjson
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.markup import escape
from textual.widget import Widget
from textual.widgets import Collapsible, Static
from turnline.core.model import LogProblem, SessionEvent
from turnline.core.timeline import Turn, message_text

from .._text import literal, one_line, safe_text
from ._timeline import format_datetime

#: A tool call/result longer than this (lines or characters) starts collapsed.
FOLD_LINES: Final = 6
FOLD_CHARS: Final = 400
#: The raw view shows at most this many events / characters of one turn.
RAW_EVENTS: Final = 400
RAW_CHARS: Final = 200_000


@dataclass
class ToolBlock:
    """A tool call and, once it arrives, its result."""

    name: str
    call_id: str | None
    arguments: str
    result: str | None = None
    is_error: bool = False


@dataclass
class Block:
    """One thing the conversation shows, in log order."""

    kind: str  # user, context, assistant, reasoning, tool, error
    text: str = ""
    title: str = ""
    tool: ToolBlock | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _pretty_arguments(arguments: Any) -> str:
    if isinstance(arguments, str):
        try:
            arguments = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return str(arguments)
    try:
        return orjson.dumps(arguments, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        return str(arguments)


def _result_text(part: dict[str, Any]) -> str:
    content = part.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            c.get("text", "") if isinstance(c, dict) and isinstance(c.get("text"), str) else ""
            for c in content
        ]
        joined = "\n".join(t for t in texts if t)
        if joined:
            return joined
    return _pretty_arguments(content)


def conversation(events: list[SessionEvent]) -> list[Block]:
    """Group a turn's events into what a reader wants to see, in order."""
    blocks: list[Block] = []
    calls: dict[str, ToolBlock] = {}
    for event in events:
        data = event.data if isinstance(event.data, dict) else {}
        etype = event.type
        if etype == "user/message":
            source = data.get("source")
            kind = source.get("kind") if isinstance(source, dict) else None
            text = message_text(data)
            if kind in (None, "user"):
                blocks.append(Block("user", text))
            else:
                blocks.append(Block("context", text, title=str(kind)))
        elif etype == "assistant/message":
            message = data.get("message")
            reasoning = message_text(message, kinds=("reasoning",))
            if reasoning:
                blocks.append(Block("reasoning", reasoning))
            text = message_text(message)
            if text:
                blocks.append(Block("assistant", text))
        elif etype == "tool/call":
            name = data.get("name")
            call_id = data.get("callId")
            tool = ToolBlock(
                name if isinstance(name, str) else "?",
                call_id if isinstance(call_id, str) else None,
                _pretty_arguments(data.get("arguments")),
            )
            if tool.call_id is not None:
                calls[tool.call_id] = tool
            blocks.append(Block("tool", tool=tool))
        elif etype == "tool/result":
            message = data.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            for part in content if isinstance(content, list) else []:
                if not isinstance(part, dict):
                    continue
                call_id = part.get("toolCallId")
                target = calls.get(call_id) if isinstance(call_id, str) else None
                if target is None:
                    target = ToolBlock("?", call_id if isinstance(call_id, str) else None, "")
                    blocks.append(Block("tool", tool=target))
                target.result = _result_text(part)
                target.is_error = part.get("isError") is True
        elif etype == "turn/end":
            reason = data.get("reason")
            message = None
            if isinstance(reason, dict):
                error = reason.get("error")
                if isinstance(error, dict) and isinstance(error.get("message"), str):
                    message = error["message"]
            elif "error" in data:
                message = str(data["error"])
            if message:
                blocks.append(Block("error", message))
    return blocks


def _long(text: str) -> bool:
    return len(text) > FOLD_CHARS or text.count("\n") >= FOLD_LINES


def raw_json(events: list[SessionEvent]) -> Text:
    """The events as indented JSON (capped), safe to show."""
    out: list[str] = []
    size = 0
    for count, event in enumerate(events):
        if count >= RAW_EVENTS or size > RAW_CHARS:
            out.append(f"… {len(events) - count} more events not shown")
            break
        try:
            chunk = orjson.dumps(event.to_json_dict(), option=orjson.OPT_INDENT_2).decode()
        except TypeError:
            chunk = repr(event)
        size += len(chunk)
        out.append(chunk)
    return literal("\n".join(out))


def problem_lines(problems: tuple[LogProblem, ...]) -> Text:
    """Problems as `kind  where  message` lines."""
    text = Text(end="")
    text.append(
        f"⚠ {len(problems)} problem{'s' if len(problems) != 1 else ''} in this log\n",
        style="bold yellow",
    )
    for problem in problems:
        where = []
        if problem.seq is not None:
            where.append(f"seq {problem.seq}")
        if problem.line is not None:
            where.append(f"line {problem.line}")
        text.append(f"  {problem.kind}", style="bold yellow")
        text.append(f"  {', '.join(where) or '-'}  ", style="dim")
        text.append(one_line(problem.message, 400))
        text.append("\n")
    text.rstrip()
    return text


class Fold(Collapsible):
    """A folded block of the detail pane: its title is not a Tab stop.

    Tab moves between the three panes; a turn with twenty tool calls would otherwise
    hold twenty stops. The pane's Enter (un)folds every block; a click folds one.
    """

    can_focus_children = False


class TurnDetail(VerticalScroll):
    """What happened in the highlighted turn; the log's problems above it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "toggle_folds", "Unfold all"),
    ]

    DEFAULT_CSS = """
    TurnDetail > .role { text-style: bold; margin-top: 1; }
    TurnDetail > .role-user { color: $accent; }
    TurnDetail > .role-assistant { color: $success; }
    TurnDetail > .error { color: $error; }
    TurnDetail > .problems { border-left: thick $warning; padding-left: 1; margin-bottom: 1; }
    TurnDetail > .heading { text-style: bold; }
    TurnDetail > .hint { color: $text-muted; }
    TurnDetail Collapsible { padding: 0; margin: 0; border: none; }
    TurnDetail Collapsible > Contents { padding-left: 2; }
    """

    def __init__(self, *, tz: tzinfo | None = None, id: str | None = None) -> None:
        super().__init__(id=id)
        self.tz = tz
        self.raw = False
        self._problems: tuple[LogProblem, ...] = ()
        self._turn: Turn | None = None
        self._events: list[SessionEvent] = []
        self._note: str | None = None

    def action_toggle_folds(self) -> None:
        """Unfold every block of the turn, or fold them all if none is folded (a turn
        without folded blocks: nothing happens)."""
        folds = list(self.query(Fold))
        unfold = any(fold.collapsed for fold in folds)
        for fold in folds:
            fold.collapsed = not unfold

    def show_turn(
        self,
        turn: Turn | None,
        events: list[SessionEvent],
        problems: tuple[LogProblem, ...],
        *,
        note: str | None = None,
    ) -> None:
        """Show a turn (or only `note` and the problems when `turn` is None)."""
        self._turn = turn
        self._events = events
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
        turn = self._turn
        if turn is None:
            if self._note:
                widgets.append(Static(Text(self._note), classes="hint"))
        else:
            widgets.append(Static(self._heading(turn), classes="heading"))
            if self.raw:
                widgets.append(Static(raw_json(self._events), classes="raw"))
            else:
                widgets.extend(self._conversation_widgets())
        with self.app.batch_update():
            self.remove_children()
            self.mount_all(widgets)
            self.scroll_home(animate=False)

    def _heading(self, turn: Turn) -> Text:
        text = Text(end="")
        text.append(f"turn {turn.number}", style="bold")
        text.append(f" · {turn.reason}")
        if turn.detail:
            text.append(" (")
            text.append(one_line(turn.detail, 80))
            text.append(")")
        last = turn.end_seq if turn.end_seq is not None else "…"
        text.append(f" · seq {turn.first_seq}–{last} · {turn.steps} steps", style="dim")
        if turn.started is not None:
            text.append(f" · {format_datetime(turn.started, self.tz)}", style="dim")
        if turn.started is not None and turn.ended is not None and turn.ended >= turn.started:
            text.append(f" ({(turn.ended - turn.started) / 1000:.1f}s)", style="dim")
        text.append("\n")
        if turn.end_seq is not None:
            text.append(
                f"▶ fork point: f forks here (seed = {turn.end_seq + 1} events)", style="cyan"
            )
        else:
            text.append(
                "● open turn: an agent is still writing it; not a fork point", style="bold cyan"
            )
        mode = "raw events (v: conversation)" if self.raw else "conversation (v: raw events)"
        text.append(f"  ·  {mode}", style="dim")
        return text

    def _conversation_widgets(self) -> list[Widget]:
        widgets: list[Widget] = []
        blocks = conversation(self._events)
        if not blocks:
            widgets.append(Static(Text("(no messages in this turn)", style="dim"), classes="hint"))
        for block in blocks:
            if block.kind == "user":
                widgets.append(Static(Text("▌ user"), classes="role role-user"))
                widgets.append(Static(literal(block.text)))
            elif block.kind == "assistant":
                widgets.append(Static(Text("▌ assistant"), classes="role role-assistant"))
                widgets.append(Static(literal(block.text)))
            elif block.kind == "reasoning":
                widgets.append(
                    Fold(
                        Static(literal(block.text, style="italic")),
                        title="reasoning",
                        collapsed=True,
                    )
                )
            elif block.kind == "context":
                title = escape(f"context ({one_line(block.title, 30)})")
                widgets.append(
                    Fold(Static(literal(block.text, style="dim")), title=title, collapsed=True)
                )
            elif block.kind == "error":
                widgets.append(Static(Text("✖ error", style="bold"), classes="role error"))
                widgets.append(Static(literal(block.text), classes="error"))
            elif block.tool is not None:
                widgets.append(self._tool_widget(block.tool))
        return widgets

    def _tool_widget(self, tool: ToolBlock) -> Widget:
        status = "…" if tool.result is None else ("✖ error" if tool.is_error else "✓")
        args_line = one_line(tool.arguments, 60)
        title = escape(f"⚒ {one_line(tool.name, 40)}({args_line}) {status}")
        body = Text(end="")
        body.append("arguments\n", style="bold dim")
        body.append(safe_text(tool.arguments, keep_newlines=True))
        if tool.result is not None:
            body.append("\nresult\n", style="bold red" if tool.is_error else "bold dim")
            body.append(
                safe_text(tool.result, keep_newlines=True), style="red" if tool.is_error else ""
            )
        collapsed = _long(tool.arguments) or _long(tool.result or "")
        return Fold(Static(body), title=title, collapsed=collapsed)
