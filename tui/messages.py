"""Messages the app's workers post: frozen core values wrapped for the UI thread.

Workers call the core and post one of these (dataclasses: each field says what it
holds); only the UI thread turns them into
widget changes ("attributes down, messages up"). The widgets' own messages live
nested in their classes (`SessionTree.SessionHighlighted`, ...).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
from textual.message import Message
from turnline.core.lineage import Lineage
from turnline.core.model import LogProblem, SessionEvent
from turnline.core.preview import HeadPreview
from turnline.core.root import ForkResult, ScanPreview, SessionRoot
from turnline.core.summary import SessionSummary
from turnline.core.view import SessionView, TurnTokens


class RootSnapshot(msgspec.Struct, frozen=True):
    """Everything the session tree shows of a root at one moment.

    Attributes:
        summaries: Every session, by log path.
        lineage: The family forest over `summaries` (cross-session problems included).
        root: The root folder the logs are under (log paths are shown relative to it).
    """

    summaries: dict[Path, SessionSummary]
    lineage: Lineage
    root: Path | None = None

    def matches(self, summary: SessionSummary, needle: str) -> bool:
        """True if the session's title, id, cwd or log path (relative to the root)
        contains `needle` (already lower-cased; empty matches everything)."""
        if not needle:
            return True
        path = str(summary.path)
        if self.root is not None:
            # String work, not `Path.relative_to`: this runs per session per keystroke.
            path = path.removeprefix(os.path.join(self.root, ""))
        hay = f"{summary.display_title()}\n{summary.id}\n{summary.cwd or ''}\n{path}"
        return needle in hay.lower()

    def problems_of(self, path: Path) -> tuple[LogProblem, ...]:
        """A session's own problems plus its cross-session ones."""
        summary = self.summaries.get(path)
        own = summary.problems if summary is not None else ()
        return (*own, *self.lineage.problems.get(path, ()))


class Appended(msgspec.Struct, frozen=True):
    """Events appended to one log since the last batch (from the watcher)."""

    summary: SessionSummary
    events: tuple[SessionEvent, ...]
    reset: bool = False


@dataclass(eq=False)
class RootScanned(Message):
    """A full scan finished (startup or `r`)."""

    root: SessionRoot
    """The root as scanned."""
    snapshot: RootSnapshot
    """Its sessions and lineage."""


@dataclass(eq=False)
class RootPreviewed(Message):
    """A big root's session tree before its scan ends (`core.root.ScanPreview`)."""

    preview: ScanPreview
    """Every project, and the first one's sessions."""


@dataclass(eq=False)
class RootFailed(Message):
    """The root cannot be used (missing, vanished, not a log)."""

    message: str
    """Why, in words for the user."""


@dataclass(eq=False)
class RootChanged(Message):
    """The watcher saw changes: a fresh snapshot plus the events appended per log.

    A batch that carries nothing but a snapshot gives way to a newer pending one; a
    batch with appended events, removals or problems is always handled, so no appended
    event is lost (and no message is changed once posted).
    """

    snapshot: RootSnapshot
    """The root after the changes."""
    appended: list[Appended]
    """Events appended per log, in order."""
    removed: list[Path]
    """Logs that disappeared."""
    problems: list[LogProblem]
    """Problems the watcher found (shown as warnings)."""
    moved: dict[Path, Path] = field(default_factory=dict)
    """Logs whose folder was renamed in this batch: old path to new path (each is also
    in `removed`, and its new path in `snapshot`)."""

    def can_replace(self, message: Message) -> bool:
        """True when a newer pending batch supersedes this one: only this batch's
        snapshot would be dropped (it has no events, removals or problems of its own)."""
        return isinstance(message, RootChanged) and not (
            self.appended or self.removed or self.problems
        )


@dataclass(eq=False)
class SessionLoaded(Message):
    """A session was read whole and its timeline built."""

    view: SessionView
    """The open session (the core's view)."""
    snapshot: RootSnapshot
    """The root as it was when the load finished."""


@dataclass(eq=False)
class TokensRead(Message):
    """A big log's tokens, read after its load (`SessionView.scan_usage`)."""

    view: SessionView
    """The view they were read for."""
    tokens: TurnTokens
    """What `SessionView.install_usage` takes."""


@dataclass(eq=False)
class PreviewRead(Message):
    """The first turns of a big log, read from its head before the core indexes it."""

    preview: HeadPreview | None
    """The head's turns (None: its head holds no turn, or looks unusual)."""


@dataclass(eq=False)
class IndexProgress(Message):
    """How far the core has indexed a big log that is being loaded.

    Reports arrive in timed batches; a pending one is replaced by the next.
    """

    path: Path
    """The log being indexed."""
    fraction: float
    """How much of it is done, 0.0 to 1.0."""

    def can_replace(self, message: Message) -> bool:
        """Only the latest fraction of a log matters."""
        return isinstance(message, IndexProgress) and message.path == self.path


@dataclass(eq=False)
class Forked(Message):
    """A child log was written."""

    result: ForkResult
    """What the fork wrote."""
    snapshot: RootSnapshot
    """The root with the child already in it."""
