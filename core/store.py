"""The event-sourced session store and its `fork` API (the seed RFC).

`check_boundary` is *the* fork rule: the in-memory store, the on-disk root, the CLI
and the TUI all go through it, so there is one place that decides what is forkable.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Any, Protocol

from .model import END_SEED, TURN_END, SessionEvent, SessionHeader


class ForkErrorCode(StrEnum):
    """The typed failures of `fork` (names as dsh spells them)."""

    SESSION_NOT_FOUND = "SESSION_NOT_FOUND"
    SESSION_NOT_LIVE = "SESSION_NOT_LIVE"
    SESSION_ALREADY_EXISTS = "SESSION_ALREADY_EXISTS"
    INVALID_BOUNDARY = "INVALID_BOUNDARY"
    WRITE_FAILED = "WRITE_FAILED"
    #: The parent's format version is one turnline does not read (`formats.known`).
    UNSUPPORTED_VERSION = "UNSUPPORTED_VERSION"


class SessionForkError(Exception):
    """A fork (or create) that was refused; `code` says why, the message says where."""

    def __init__(self, code: ForkErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def check_boundary(
    session_id: str,
    event_count: int,
    contiguous: int,
    turn_ends: Sequence[int],
    boundary: object,
    type_at: Callable[[int], str] | None = None,
    last_seq: int | None = None,
) -> int:
    """Validate a fork boundary and return the seed length it gives.

    Args:
        session_id: The source session, for messages.
        event_count: How many events the source has.
        contiguous: How many leading events satisfy `events[i].seq == i`.
        turn_ends: Sorted seqs of the source's `turn/end` events.
        boundary: The requested inclusive seq, or None for "the last event".
        type_at: The event type at an index, for a more specific message.
        last_seq: The seq of the source's last event when it differs from
            `event_count - 1` (a log with seq gaps); messages name it.

    Returns:
        The number of events to copy (`boundary + 1`, or 0 for an empty source).

    Raises:
        SessionForkError: INVALID_BOUNDARY, naming the last seq and the nearest
            earlier `turn/end` the user could fork at instead.
    """
    last = event_count - 1 if last_seq is None or event_count == 0 else last_seq
    if boundary is None:
        if event_count == 0:
            return 0
        boundary = last

    def refuse(why: str, at: int | None) -> SessionForkError:
        hint = ""
        if at is not None:
            k = bisect.bisect_left(turn_ends, min(at, contiguous))
            earlier = [s for s in turn_ends[:k] if s < contiguous]
            if earlier:
                hint = f"; the nearest earlier turn/end is seq {earlier[-1]}"
            else:
                hint = "; there is no earlier turn/end to fork at"
        return SessionForkError(
            ForkErrorCode.INVALID_BOUNDARY,
            f"cannot fork session {session_id} at {boundary!r}: {why} (last seq {last}){hint}",
        )

    if isinstance(boundary, bool) or not isinstance(boundary, int):
        raise refuse("the boundary must be an integer seq >= 0", None)
    if boundary < 0:
        raise refuse("the boundary must be >= 0", None)
    if boundary > last:
        what = "the session has no events" if event_count == 0 else "past the last event"
        raise refuse(what, last + 1)
    if boundary >= contiguous:
        raise refuse(
            f"the events are not contiguous past seq {contiguous - 1}, so the prefix is not a "
            "valid seed",
            boundary,
        )
    k = bisect.bisect_left(turn_ends, boundary)
    if type_at is not None:
        # The seed ends with the event *at* index boundary (its seq is boundary, as
        # boundary < contiguous): a turn/end further on that repeats this seq after a
        # seq break does not make it one.
        is_end = type_at(boundary) == TURN_END
    else:
        is_end = k < len(turn_ends) and turn_ends[k] == boundary
    if not is_end:
        kind = type_at(boundary) if type_at else "not a turn/end"
        raise refuse(f"seq {boundary} is {kind}, not a turn/end", boundary)
    return boundary + 1


class Persistence(Protocol):
    """Where a store's sessions live beyond memory (a root on disk, or nothing)."""

    def persist_new(self, header: SessionHeader, events: Sequence[SessionEvent]) -> None:
        """Durably create a new session; raise SessionForkError if it cannot."""

    def persist_append(self, header: SessionHeader, events: Sequence[SessionEvent]) -> None:
        """Durably append events to an existing session."""


class Session:
    """A live session: a header and an append-only list of events.

    `events[i].seq == i` always holds for sessions the store created.
    """

    def __init__(self, store: SessionStore, header: SessionHeader, events: list[SessionEvent]):
        self._store = store
        self._header = header
        self._events = events
        self._turn_ends = [e.seq for e in events if e.type == TURN_END]

    @property
    def id(self) -> str:
        """The session id."""
        return self._header.id

    @property
    def header(self) -> SessionHeader:
        """The immutable header (metadata; never an event)."""
        return self._header

    @property
    def events(self) -> tuple[SessionEvent, ...]:
        """The events, read-only."""
        return tuple(self._events)

    def __len__(self) -> int:
        return len(self._events)

    @property
    def turn_ends(self) -> list[int]:
        """Seqs of this session's `turn/end` events, ascending."""
        return list(self._turn_ends)

    def append(self, type: str, data: Any = None, **extra: Any) -> SessionEvent:
        """Append one event; its seq is the next index, its time is now.

        Raises:
            SessionForkError: SESSION_NOT_LIVE if this object is stale.
        """
        self._store._require_live(self)
        event = SessionEvent(
            type,
            len(self._events),
            int(time.time() * 1000),
            _deep(data if data is not None else {}),
            _deep(extra),
        )
        if self._store._persistence is not None:
            self._store._persistence.persist_append(self._header, [event])
        self._events.append(event)
        if type == TURN_END:
            self._turn_ends.append(event.seq)
        return event

    def __repr__(self) -> str:
        return f"Session(id={self.id!r}, events={len(self._events)})"


def _deep(value: Any) -> Any:
    """A deep copy of JSON-shaped data (the only shape events carry)."""
    if isinstance(value, dict):
        return {k: _deep(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep(v) for v in value]
    return value


def _copy_event(event: SessionEvent) -> SessionEvent:
    return SessionEvent(
        event.type, event.seq, event.time, _deep(event.data), _deep(dict(event.extra))
    )


_META_KEYS = {
    "cwd": "cwd",
    "parentSession": "parent_session",
    "seedLength": "seed_length",
    "origin": "origin",
    "delegationDepth": "delegation_depth",
    "agentPreset": "agent_preset",
    "createdAt": "created_at",
    "version": "version",
}


def _contiguous(events: Sequence[SessionEvent]) -> int:
    """How many leading events satisfy `events[i].seq == i` (all, for a created session;
    an adopted one, loaded from storage, may have a seq break)."""
    for i, event in enumerate(events):
        if event.seq != i:
            return i
    return len(events)


def end_seed_event(seq: int, time_ms: int) -> SessionEvent:
    """The `session/end-seed` marker dsh appends right after a seed (data `{}`)."""
    return SessionEvent(END_SEED, seq, time_ms, {})


def new_session_id() -> str:
    """The store's id policy: a random UUID4 string."""
    import uuid  # here: the module costs a few ms at every start, forks are rare

    return str(uuid.uuid4())


class SessionStore:
    """Sessions by id, with `create` and the RFC's `fork`.

    Args:
        persistence: Optional backend that makes new sessions and appends durable.
        id_policy: Makes a fresh id when `create`/`fork` are given none.
    """

    def __init__(
        self,
        persistence: Persistence | None = None,
        id_policy: Callable[[], str] = new_session_id,
    ) -> None:
        self._sessions: dict[str, Session] = {}
        self._persistence = persistence
        self._id_policy = id_policy

    def create(
        self,
        id: str | None = None,
        *,
        seed: Iterable[SessionEvent] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Session:
        """Create a session, optionally seeded with a contiguous event prefix.

        Args:
            id: The session id; None picks one by the id policy.
            seed: Events to start from (deep-copied); must satisfy `seed[i].seq == i`.
            meta: Header fields by their JSON names (`cwd`, `parentSession`, ...).

        Raises:
            SessionForkError: SESSION_ALREADY_EXISTS if the id is taken.
            ValueError: the seed is not contiguous or meta has an unknown key.
        """
        sid = id if id is not None else self._fresh_id()
        if sid in self._sessions:
            raise SessionForkError(
                ForkErrorCode.SESSION_ALREADY_EXISTS, f"session {sid} already exists"
            )
        events = [_copy_event(e) for e in (seed or ())]
        for i, event in enumerate(events):
            if event.seq != i:
                raise ValueError(f"seed is not contiguous: event {i} has seq {event.seq}")
        now = int(time.time() * 1000)
        if seed is not None and (not events or events[-1].type != END_SEED):
            # As dsh's Session constructor does: a seeded session (an empty seed too)
            # marks where the inherited part ends, unless the seed already ends so.
            events.append(end_seed_event(len(events), now))
        fields: dict[str, Any] = {"created_at": now}
        for key, value in (meta or {}).items():
            if key not in _META_KEYS:
                raise ValueError(f"unknown header field {key!r}")
            fields[_META_KEYS[key]] = value
        header = SessionHeader(id=sid, **fields)
        if self._persistence is not None:
            self._persistence.persist_new(header, events)
        session = Session(self, header, events)
        self._sessions[sid] = session
        return session

    def adopt(self, header: SessionHeader, events: list[SessionEvent]) -> Session:
        """Register a session loaded from storage (no copy, no persistence call).

        A previous live instance with the same id becomes stale.
        """
        session = Session(self, header, events)
        self._sessions[header.id] = session
        return session

    def get(self, id: str) -> Session | None:
        """The live session with this id, or None."""
        return self._sessions.get(id)

    def list(self) -> list[Session]:
        """All live sessions, in creation order."""
        return list(self._sessions.values())

    def drop(self, id: str) -> None:
        """Forget a session (objects that referred to it become stale)."""
        self._sessions.pop(id, None)

    def fork(
        self,
        source: Session | str,
        boundary: int | None = None,
        child_id: str | None = None,
    ) -> Session:
        """Fork `source` at the inclusive `boundary` into a new child session.

        Raises:
            SessionForkError: SESSION_ALREADY_EXISTS (checked first), SESSION_NOT_FOUND,
                SESSION_NOT_LIVE or INVALID_BOUNDARY.
        """
        if child_id is not None and child_id in self._sessions:
            raise SessionForkError(
                ForkErrorCode.SESSION_ALREADY_EXISTS, f"session {child_id} already exists"
            )
        live = self._resolve(source)
        seed_length = check_boundary(
            live.id,
            len(live._events),
            _contiguous(live._events),
            live._turn_ends,
            boundary,
            type_at=lambda i: live._events[i].type,
        )
        meta: dict[str, Any] = {
            "parentSession": live.id,
            "seedLength": seed_length,
            "delegationDepth": 0,  # a user fork, as dsh's fork writes it
        }
        if live.header.cwd is not None:
            meta["cwd"] = live.header.cwd
        return self.create(child_id, seed=live._events[:seed_length], meta=meta)

    def _fresh_id(self) -> str:
        for _ in range(100):
            sid = self._id_policy()
            if sid not in self._sessions:
                return sid
        raise RuntimeError("the id policy keeps returning ids that exist")

    def _resolve(self, source: Session | str) -> Session:
        if isinstance(source, Session):
            live = self._sessions.get(source.id)
            if live is None:
                raise SessionForkError(
                    ForkErrorCode.SESSION_NOT_FOUND, f"session {source.id} is not in this store"
                )
            if live is not source:
                raise SessionForkError(
                    ForkErrorCode.SESSION_NOT_LIVE,
                    f"session object {source.id} is stale: that id is live on another instance",
                )
            return live
        live = self._sessions.get(source)
        if live is None:
            raise SessionForkError(ForkErrorCode.SESSION_NOT_FOUND, f"session {source} not found")
        return live

    def _require_live(self, session: Session) -> None:
        if self._sessions.get(session.id) is not session:
            raise SessionForkError(
                ForkErrorCode.SESSION_NOT_LIVE, f"session object {session.id} is stale"
            )
