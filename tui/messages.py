"""Messages the app's workers post: frozen core values wrapped for the UI thread.

Workers call the core and post one of these; only the UI thread turns them into
widget changes ("attributes down, messages up"). The widgets' own messages live
nested in their classes (`SessionTree.SessionHighlighted`, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from textual.message import Message
from turnline.core.lineage import Lineage
from turnline.core.model import LogProblem, SessionEvent
from turnline.core.preview import HeadPreview
from turnline.core.root import ForkResult, LoadedSession, SessionRoot
from turnline.core.summary import SessionSummary
from turnline.core.timeline import TimelineBuilder


@dataclass(frozen=True)
class RootSnapshot:
    """Everything the session tree shows of a root at one moment.

    Attributes:
        summaries: Every session, by log path.
        lineage: The family forest over `summaries` (cross-session problems included).
    """

    summaries: dict[Path, SessionSummary]
    lineage: Lineage

    def problems_of(self, path: Path) -> tuple[LogProblem, ...]:
        """A session's own problems plus its cross-session ones."""
        summary = self.summaries.get(path)
        own = summary.problems if summary is not None else ()
        return (*own, *self.lineage.problems.get(path, ()))


@dataclass(frozen=True)
class Appended:
    """Events appended to one log since the last batch (from the watcher)."""

    summary: SessionSummary
    events: tuple[SessionEvent, ...]
    reset: bool = False


class RootScanned(Message):
    """A full scan finished (startup or `r`)."""

    def __init__(self, root: SessionRoot, snapshot: RootSnapshot) -> None:
        super().__init__()
        self.root = root
        self.snapshot = snapshot


class RootFailed(Message):
    """The root cannot be used (missing, vanished, not a log)."""

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message


class RootChanged(Message):
    """The watcher saw changes: a fresh snapshot plus the events appended per log.

    Bursts coalesce: a pending `RootChanged` is folded into the next one (the
    appended events are kept, in order; only the older snapshot is dropped).
    """

    def __init__(
        self,
        snapshot: RootSnapshot,
        appended: list[Appended],
        removed: list[Path],
        problems: list[LogProblem],
    ) -> None:
        super().__init__()
        self.snapshot = snapshot
        self.appended = appended
        self.removed = removed
        self.problems = problems

    def can_replace(self, message: Message) -> bool:
        """Fold this batch into a newer pending one so no appended event is lost."""
        if isinstance(message, RootChanged):
            message.appended[:0] = self.appended
            message.removed[:0] = self.removed
            message.problems[:0] = self.problems
            return True
        return False


@dataclass
class SessionView:
    """One loaded session as the timeline shows it, growing with live appends.

    Attributes:
        loaded: The session as the load worker read it.
        builder: The timeline builder fed with every event so far.
        tail: Events appended after the load (the detail pane reads them from here).
        next_seq: The seq the next appended event must have to be new.
    """

    loaded: LoadedSession
    builder: TimelineBuilder
    tail: list[SessionEvent] = field(default_factory=list)
    next_seq: int = 0

    @property
    def path(self) -> Path:
        """The log file."""
        return self.loaded.summary.path

    def events_between(self, first_seq: int, last_seq: int | None) -> list[SessionEvent]:
        """A turn's events, from the loaded log and the live tail."""
        events = self.loaded.events_between(first_seq, last_seq)
        hi = float("inf") if last_seq is None else last_seq
        events.extend(e for e in self.tail if first_seq <= e.seq <= hi)
        return events


class SessionLoaded(Message):
    """A session was read whole and its timeline built."""

    def __init__(self, view: SessionView, snapshot: RootSnapshot) -> None:
        super().__init__()
        self.view = view
        self.snapshot = snapshot


class PreviewRead(Message):
    """The first turns of a big log, read from its head before the core indexes it
    (None: its head holds no turn, or looks unusual)."""

    def __init__(self, preview: HeadPreview | None) -> None:
        super().__init__()
        self.preview = preview


class IndexProgress(Message):
    """How far the core has indexed a big log that is being loaded (0.0 to 1.0).

    Reports arrive in timed batches; a pending one is replaced by the next.
    """

    def __init__(self, path: Path, fraction: float) -> None:
        super().__init__()
        self.path = path
        self.fraction = fraction

    def can_replace(self, message: Message) -> bool:
        """Only the latest fraction of a log matters."""
        return isinstance(message, IndexProgress) and message.path == self.path


class TurnEventsRead(Message):
    """The events of one turn, for the detail pane."""

    def __init__(self, path: Path, turn_index: int, events: list[SessionEvent]) -> None:
        super().__init__()
        self.path = path
        self.turn_index = turn_index
        self.events = events


class Forked(Message):
    """A child log was written; `snapshot` already includes it."""

    def __init__(self, result: ForkResult, snapshot: RootSnapshot) -> None:
        super().__init__()
        self.result = result
        self.snapshot = snapshot
