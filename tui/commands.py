"""Command palette entries: the app's actions by name, and sessions by title."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.fuzzy import Matcher

from ._text import one_line

if TYPE_CHECKING:
    from .app import TurnlineApp

ACTIONS: tuple[tuple[str, str, str], ...] = (
    ("Fork at the highlighted turn", "fork", "write a child seeded up to this turn/end"),
    ("Jump to parent", "parent", "open the parent session at the fork boundary"),
    ("Filter sessions", "filter", "by title, id, cwd or path"),
    ("Toggle raw events", "toggle_raw", "the highlighted turn's events as JSON"),
    ("Toggle event lines", "toggle_lines", "the highlighted turn's events, one line each"),
    ("Reload root", "reload", "rescan the root from disk"),
    ("Whole conversation", "conversation", "every turn of the open session in one scroll"),
    ("Help: keys and markers", "help", "what the screen shows"),
)

#: A palette entry: the name it is matched by, what it runs, its help line.
Command = tuple[str, Callable[[], object], str]


def highlighted(matcher: Matcher, name: str) -> Content:
    """`name` as literal Content with the matched characters styled.

    `Matcher.highlight` parses its candidate as markup; session titles are log text, so
    the palette never hands it one.
    """
    content = Content(name)
    score, offsets = matcher.fuzzy_search.match(matcher.query, name)
    if not score:
        return content
    for offset in offsets:
        if not name[offset].isspace():
            content = content.stylize(matcher.match_style, offset, offset + 1)
    return content


def prompt(name: Content, help_text: str) -> Content:
    """A hit's prompt: its name, then its help as a dim second line (literal: the
    palette parses a string `help` as markup)."""
    if not help_text:
        return name
    return Content.assemble(name, "\n", (help_text, "dim"))


class TurnlineCommands(Provider):
    """turnline's actions, and "Open session <title>" for every session.

    The palette parses string names and help as markup, so every hit is handed
    literal `Content` instead (a title like `[name=em` would otherwise break it).
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
            title = one_line(summary.display_title()[:1024], 60)
            name = f"Open session: {title} ({one_line(summary.id[:64], 12)})"
            out.append(
                (name, partial(app.open_session, path), one_line((summary.cwd or "")[:4096]))
            )
        return out

    async def discover(self) -> Hits:
        """Offer the actions before anything is typed."""
        for name, callback, help_text in self._actions():
            yield DiscoveryHit(prompt(Content(name), help_text), callback, text=name)

    async def search(self, query: str) -> Hits:
        """Fuzzy-match actions and session titles."""
        matcher = self.matcher(query)
        for name, callback, help_text in [*self._actions(), *self._sessions()]:
            score = matcher.match(name)
            if score > 0:
                shown = prompt(highlighted(matcher, name), help_text)
                yield Hit(score, shown, callback, text=name)
