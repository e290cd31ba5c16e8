"""The conversation screen: every turn of the open session in one scroll (issue 23).

Per turn a heading (number, reason, `inherited` for a fork child's seed turns), then
its blocks: user and assistant text, reasoning (dimmed, one line), tool calls (name,
an argument excerpt, status and a result excerpt) and errors. A worker reads the
turns' blocks one turn at a time (`SessionView.blocks`, bounded) and posts them in
timed batches, each turn already drawn as literal `Text`; the screen appends them as
they come, so a 2,000-turn session opens at once and fills in below.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Final

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import Worker, WorkerState, get_current_worker
from turnline.core.content import (
    AssistantText,
    Block,
    ContextText,
    Reasoning,
    ToolCall,
    TurnError,
    UserText,
    bounded,
    size_words,
)
from turnline.core.view import SessionView, TurnView

from .._text import line, literal
from ..widgets._footer import KeyFooter
from ..widgets._turn_detail import (
    ASSISTANT_LABEL,
    USER_LABEL,
    plural,
    tool_argument,
    tool_status,
)

#: At most this many characters of one field (a user's or assistant's text, an error):
#: the screen holds every turn at once, so it keeps less of each than the detail pane.
FIELD_CHARS: Final = 16 * 1024
#: One-line excerpts: reasoning, a tool call's arguments and its result.
EXCERPT_CHARS: Final = 120
#: A batch is posted after this many seconds or this many turns, whichever comes first.
BATCH_SECONDS: Final = 0.05
BATCH_TURNS: Final = 50


def _field(out: Text, text: str, style: str = "") -> None:
    """Append a multi-line log field, literal, at most `FIELD_CHARS` of it."""
    part = bounded(text, FIELD_CHARS)
    out.append_text(literal(part.text, style=style))
    if part.cut:
        out.append(
            f"\n… {size_words(part.more)} more (the detail pane shows more of it)",
            style="dim italic",
        )


def turn_heading(verdict: TurnView) -> Text:
    """`turn 3 · completed · 2 steps · inherited` (the reason is log text: literal)."""
    turn = verdict.turn
    heading = Text(f"── turn {turn.number}", style="bold", end="")
    heading.append(" · ")
    heading.append_text(line(turn.reason, limit=40))
    if turn.steps:
        heading.append(f" · {plural(turn.steps, 'step')}", style="dim")
    if verdict.inherited:
        heading.append(" · inherited", style="dim italic")
    return heading


def turn_text(verdict: TurnView, blocks: Sequence[Block]) -> Text:
    """One turn as the screen draws it: its heading, then its blocks, all literal."""
    out = turn_heading(verdict)
    shown = False
    for block in blocks:
        if isinstance(block, UserText):
            out.append(f"\n{USER_LABEL}\n", style="bold cyan")
            _field(out, block.text)
        elif isinstance(block, AssistantText):
            out.append(f"\n{ASSISTANT_LABEL}\n", style="bold green")
            _field(out, block.text)
        elif isinstance(block, Reasoning):
            out.append("\n∴ reasoning: ", style="dim italic")
            out.append_text(line(block.text, style="dim italic", limit=EXCERPT_CHARS))
        elif isinstance(block, ContextText):
            out.append("\ncontext (", style="dim")
            out.append_text(line(block.source, style="dim", limit=30))
            out.append(")", style="dim")
        elif isinstance(block, ToolCall):
            out.append_text(_tool_lines(block))
        elif isinstance(block, TurnError):
            out.append("\n✖ error\n", style="bold red")
            _field(out, block.message, style="red")
        else:
            continue  # usage samples: the detail pane's header sums them
        shown = True
    if not shown:
        out.append("\n(no messages in this turn)", style="dim")
    return out


def _tool_lines(call: ToolCall) -> Text:
    """`⚒ name(argument excerpt) ✓`, then `  → result excerpt` once it arrived."""
    result = call.result
    failed = result is not None and result.is_error
    out = Text("\n⚒ ", end="")
    out.append_text(line(call.name, style="bold", limit=40))
    out.append("(")
    out.append_text(line(tool_argument(call), limit=EXCERPT_CHARS))
    out.append(") ")
    out.append(tool_status(call), style="bold red" if failed else "dim")
    if result is not None:
        out.append("\n  → ", style="dim")
        out.append_text(line(result.text, style="red" if failed else "dim", limit=EXCERPT_CHARS))
    return out


class ConversationScreen(Screen[None]):
    """Every turn of one session in one scroll; Escape or q goes back."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        # A pushed screen: q goes back to the browser, it does not quit the app.
        Binding("q", "back", "Back", show=False),
    ]

    DEFAULT_CSS = """
    ConversationScreen #conversation-title {
        padding: 0 1; text-style: bold; text-wrap: nowrap; text-overflow: ellipsis;
    }
    ConversationScreen #conversation-status { padding: 0 1; color: $text-muted; }
    ConversationScreen #conversation-body { height: 1fr; padding: 0 1; }
    ConversationScreen .turn { margin-bottom: 1; }
    """

    @dataclass(eq=False)
    class TurnsRead(Message):
        """A batch of turns the worker has drawn, in order."""

        texts: tuple[Text, ...]
        """Each turn's heading and blocks, as literal `Text`."""
        done: bool
        """The last batch: every turn has been read."""

    def __init__(self, view: SessionView, title: str) -> None:
        """Args:
        view: The open session (its turns as they are now are shown).
        title: The session's title (log text: shown literally).
        """
        super().__init__()
        self.view = view
        self.session_title = title
        #: The turns shown, as they were when the screen opened.
        self.turns: tuple[TurnView, ...] = view.turns
        #: How many turns are on the screen so far.
        self.shown = 0
        #: Every turn has been read.
        self.done = False

    def compose(self) -> ComposeResult:
        title = Text("conversation: ", end="")
        title.append_text(line(self.session_title, limit=200))
        # In a Vertical: the app's stylesheet lays every Screen out horizontally.
        with Vertical():
            yield Static(title, id="conversation-title")
            yield Static(id="conversation-status")
            yield VerticalScroll(id="conversation-body")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.body.focus()
        self._show_status()
        self.read_turns(self.view, self.turns)

    @property
    def body(self) -> VerticalScroll:
        """The scroll the turns are appended to."""
        return self.query_one("#conversation-body", VerticalScroll)

    @work(thread=True, exclusive=True, group="conversation", exit_on_error=False)
    def read_turns(self, view: SessionView, turns: tuple[TurnView, ...]) -> None:
        """Read and draw every turn's blocks, posting them in timed batches."""
        worker = get_current_worker()
        batch: list[Text] = []
        last = time.monotonic()
        for verdict in turns:
            if worker.is_cancelled:
                return
            batch.append(turn_text(verdict, view.blocks(verdict.index)))
            now = time.monotonic()
            if len(batch) >= BATCH_TURNS or now - last >= BATCH_SECONDS:
                self.post_message(self.TurnsRead(tuple(batch), done=False))
                batch, last = [], now
        if not worker.is_cancelled:
            self.post_message(self.TurnsRead(tuple(batch), done=True))

    @on(TurnsRead)
    def _append(self, message: TurnsRead) -> None:
        if message.texts:
            self.body.mount_all(Static(text, classes="turn") for text in message.texts)
            self.shown += len(message.texts)
        self.done = message.done
        self._show_status()

    @on(Worker.StateChanged)
    def _worker_changed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR:
            error = event.worker.error
            status = Text(f"could not read the turns: {type(error).__name__}: ", style="red")
            status.append_text(line(str(error), limit=200))
            self.query_one("#conversation-status", Static).update(status)

    def _show_status(self) -> None:
        total = len(self.turns)
        if not total:
            words = "this session has no turns yet"
        elif self.done:
            words = plural(total, "turn")
        else:
            words = f"reading turns: {self.shown}/{total}…"
        self.query_one("#conversation-status", Static).update(Text(words))

    def action_back(self) -> None:
        """Go back to the main screen."""
        self.dismiss(None)
