"""The help screen: what the panes show and which keys do what."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ..widgets._footer import KeyFooter

KEYS: tuple[tuple[str, str], ...] = (
    ("↑ ↓  j k", "move in the focused pane"),
    ("Tab / Shift+Tab", "next / previous pane"),
    ("Enter", "open the session; on a seed divider: jump to the parent"),
    ("Enter (detail)", "unfold every block of the turn (Fold all once all are open)"),
    ("f", "fork at the highlighted turn/end (▶ rows)"),
    ("p", "jump to the parent session, at the turn it was forked from"),
    ("v", "toggle the raw events (JSON) of the turn"),
    ("V", "toggle one line per event (seq, time, type, data)"),
    ("/", "filter sessions by title, id, cwd or path (Escape clears)"),
    ("r", "reload the root from disk"),
    ("[ / ]", "narrow / widen the sessions pane"),
    ("a", "sort sessions: lineage order / newest activity first"),
    ("t", "show each session's subtree total (tokens, or cost when priced)"),
    ("u", "usage: tokens, cost and time of the session's subtree"),
    ("w", "the whole conversation: every turn in one scroll"),
    ("s", "search every session's text; Enter opens the turn with the match highlighted"),
    ("Ctrl+F (detail)", "find in the turn, any case; Enter keeps it, Escape clears"),
    ("n / N (detail)", "next / previous match of the find or search in the turn"),
    ("m / d", "mark a session / compare the highlighted one with the marked one"),
    ("e", "export the open session as Markdown or HTML"),
    ("c", "continue the session in the agent (the resume command, in its cwd)"),
    ("y", "copy the highlighted session's id (in the detail pane: the log's path)"),
    ("o / O", "open the highlighted turn as Markdown in $PAGER / $VISUAL ($EDITOR)"),
    ("Ctrl+P", "command palette: the same actions by name"),
    ("?", "this help"),
    ("q", "quit"),
)

MARKERS: tuple[tuple[str, str], ...] = (
    ("▶", "a fork point: the turn ended with turn/end (f forks there)"),
    ("●", "an open turn: an agent is writing it now (not forkable yet)"),
    ("✖", "a turn/end past a seq gap: shown, but it cannot seed a fork"),
    ("…", "a turn of a big log still being indexed: ▶ or ✖ once it is loaded"),
    ("● (tree)", "the session has an open turn: an agent is live in it"),
    ("↳", "a user fork child (seeded from its parent)"),
    ("⚙", "a subagent child (spawned by a tool call)"),
    ("⚠n", "the log has n problems (listed in the detail pane)"),
    ("◆", "the session marked with m (d compares the highlighted one with it)"),
    ("dim rows", "turns a fork child inherited from its parent (its seed)"),
)


def help_table() -> Table:
    """The keys and markers as a Rich table."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    table.add_row(Text("Keys", style="bold underline"), "")
    for key, what in KEYS:
        table.add_row(key, what)
    table.add_row("", "")
    table.add_row(Text("Markers", style="bold underline"), "")
    for mark, what in MARKERS:
        table.add_row(mark, what)
    return table


class HelpScreen(ModalScreen[None]):
    """Keys and markers; any of Escape, q or ? closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("q,question_mark", "close", "Close", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-dialog"):
            yield Static(Text("turnline: sessions, turns, forks", style="bold"), id="help-title")
            yield Static(help_table())
        yield KeyFooter()  # the dialog's own keys, over the main screen's

    def on_mount(self) -> None:
        # The scrolling body has the focus, so ↑ ↓ PageUp PageDown Home End scroll it
        # at once (the Markers are below the fold at 80×24).
        self.query_one("#help-dialog", VerticalScroll).focus()

    def action_close(self) -> None:
        """Close the help."""
        self.dismiss(None)
