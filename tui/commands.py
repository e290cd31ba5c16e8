"""Command palette entries: the app's actions by name, and sessions by title."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.markup import escape

from ._text import one_line

if TYPE_CHECKING:
    from .app import TurnlineApp

ACTIONS: tuple[tuple[str, str, str], ...] = (
    ("Fork at the highlighted turn", "fork", "write a child seeded up to this turn/end"),
    ("Jump to parent", "parent", "open the parent session at the fork boundary"),
    ("Filter sessions", "filter", "by title, id or cwd"),
    ("Toggle raw events", "toggle_raw", "the highlighted turn's events as JSON"),
    ("Reload root", "reload", "rescan the root from disk"),
    ("Help: keys and markers", "help", "what the screen shows"),
)

Command = tuple[str, Callable[[], object], str]


class TurnlineCommands(Provider):
    """turnline's actions, and "Open session <title>" for every session.

    The palette parses names and help as markup, so log-derived text is escaped.
    """

    @property
    def _turnline(self) -> TurnlineApp:
        from .app import TurnlineApp

        app = self.app
        assert isinstance(app, TurnlineApp)
        return app

    def _actions(self) -> list[Command]:
        app = self._turnline
        return [
            (name, partial(app.run_action, action), help_text)
            for name, action, help_text in ACTIONS
            if app.check_action(action, ()) is True
        ]

    def _sessions(self) -> list[Command]:
        app = self._turnline
        snapshot = app.snapshot
        if snapshot is None:
            return []
        out: list[Command] = []
        for path, summary in snapshot.summaries.items():
            title = one_line(summary.display_title(), 60)
            name = escape(f"Open session: {title} ({one_line(summary.id, 12)})")
            out.append((name, partial(app.open_session, path), escape(one_line(summary.cwd or ""))))
        return out

    async def discover(self) -> Hits:
        """Offer the actions before anything is typed."""
        for name, callback, help_text in self._actions():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        """Fuzzy-match actions and session titles."""
        matcher = self.matcher(query)
        for name, callback, help_text in [*self._actions(), *self._sessions()]:
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, text=name, help=help_text)
