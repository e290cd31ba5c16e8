"""Immutable values of the session log: events, headers, problems.

Everything here is a frozen dataclass so that the TUI and the CLI can pass these
objects between threads without copying and without fear of mutation.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

import orjson

#: The header `version` turnline writes for a session it starts itself (a fork is
#: written in its parent's version: `formats`).
FORMAT_VERSION: Final = 0

#: `turn/end` reason kinds named by the format; others are shown as they are.
REASON_KINDS: Final = ("completed", "aborted", "error", "max-tokens", "interrupted")

TURN_START: Final = "turn/start"
TURN_END: Final = "turn/end"
#: The event dsh appends right after a seed: the end of the inherited part (data `{}`
#: in V0 and V1, `{"inherited": true}` from V2 on, where it is what says the cut).
END_SEED: Final = "session/end-seed"


def json_line(value: Any) -> bytes:
    """`value` as one `\\n`-terminated JSON line, as dsh's `JSON.stringify` writes it.

    orjson writes it, unless a string holds a lone surrogate (read from a log's
    `"\\ud83d"`, half an emoji), which UTF-8 cannot hold: then the standard library's
    `json` writes it, each lone surrogate as its escape (lower-case hex, as JavaScript
    writes one), every other character as itself, and a number that is not finite as
    `null` (as orjson and `JSON.stringify` write it)."""
    try:
        return orjson.dumps(value) + b"\n"
    except TypeError:
        import json
        import re

        text = json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"))
        text = re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text)
        return text.encode("utf-8") + b"\n"


def _finite(value: Any) -> Any:
    """`value` with each float that is not finite made None (what orjson writes)."""
    if isinstance(value, float):
        return value if value - value == 0 else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class SessionEvent:
    """One decoded event of a session log.

    Attributes:
        type: The event type, slash-separated (`turn/end`, `assistant/chunk`, ...).
        seq: The event's sequence number; in a healthy log `events[i].seq == i`.
        time: Epoch milliseconds.
        data: The event payload. Treat as read-only: the store deep-copies on fork.
        extra: Any further top-level keys (`surfaceOp`, `sourceEventSeqs`, ...),
            kept so the event round-trips losslessly.
    """

    type: str
    seq: int
    time: int | float
    data: Any
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json_dict(self) -> dict[str, Any]:
        """The event as the dict dsh writes (key order: type, seq, time, data, extras)."""
        out: dict[str, Any] = {"type": self.type, "seq": self.seq, "time": self.time}
        out["data"] = self.data
        out.update(self.extra)
        return out

    def deep_copy(self) -> SessionEvent:
        """A copy that shares no mutable state with this event."""
        return SessionEvent(
            self.type,
            self.seq,
            self.time,
            copy.deepcopy(self.data),
            copy.deepcopy(dict(self.extra)),
        )

    def with_seq(self, seq: int) -> SessionEvent:
        """The same event renumbered."""
        return SessionEvent(self.type, seq, self.time, self.data, self.extra)


#: Header JSON keys and the `SessionHeader` attributes they map to, in dsh's order.
HEADER_FIELDS: Final = (
    ("version", "version"),
    ("id", "id"),
    ("createdAt", "created_at"),
    ("cwd", "cwd"),
    ("parentSession", "parent_session"),
    ("seedLength", "seed_length"),
    ("isSeeded", "is_seeded"),
    ("origin", "origin"),
    ("delegationDepth", "delegation_depth"),
    ("agentPreset", "agent_preset"),
)


@dataclass(frozen=True, slots=True)
class SessionHeader:
    """The first line of a log: session metadata (never an event).

    `version` is None when the header omits it (some real logs do). `extra` keeps
    unknown header keys so a header round-trips.

    `seed_length` is the inherited count whatever the version: V0 and V1 headers
    write it (`seedLength`); from V2 on the header only says `isSeeded` (`is_seeded`,
    None for V0 and V1) and the reader sets `seed_length` from the log's last
    inherited `session/end-seed` (`formats`), so nothing above the reader asks
    which version a log is.
    """

    id: str
    created_at: int = 0
    version: int | None = FORMAT_VERSION
    cwd: str | None = None
    parent_session: str | None = None
    seed_length: int | None = None
    origin: str | None = None
    delegation_depth: int | None = 0
    agent_preset: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    is_seeded: bool | None = None

    @property
    def seeded(self) -> bool:
        """True if the session starts with an inherited seed (V0/V1: it has a
        `seedLength`; V2+: its header says `isSeeded`)."""
        if self.is_seeded is not None:
            return self.is_seeded
        return self.seed_length is not None

    def to_json_dict(self) -> dict[str, Any]:
        """The header line as a dict, `type` first, absent fields omitted, in the order
        and with the keys its version writes (V2+: `isSeeded`, never `seedLength`)."""
        out: dict[str, Any] = {"type": "session"}
        marker_cut = self.is_seeded is not None
        for key, attr in HEADER_FIELDS:
            if marker_cut and key == "seedLength":
                continue
            value = getattr(self, attr)
            if value is not None:
                out[key] = value
        out.update(self.extra)
        return out

    def to_json_line(self) -> bytes:
        """The header as one `\\n`-terminated JSON line."""
        return json_line(self.to_json_dict())


class ProblemKind(StrEnum):
    """What can be wrong with a log. Each is reported, none is fatal to the app."""

    EMPTY = "empty"
    """The file has no bytes (or only whitespace)."""
    BAD_HEADER = "bad-header"
    """The first record is not a session header (or lacks a usable id)."""
    MISSING_VERSION = "missing-version"
    """The header has no `version` (read as version 0)."""
    LEGACY_HEADER = "legacy-header"
    """The header lacks `delegationDepth`, which dsh's current reader requires (read as 0)."""
    FOREIGN_VERSION = "foreign-version"
    """The header's `version` is one this reader does not know (a newer harness)."""
    TORN_TAIL = "torn-tail"
    """A final line without its newline, or an incomplete final zstd frame: ignored."""
    CORRUPT = "corrupt"
    """A record that does not decode before the last `turn/end`: unreadable past it."""
    SEQ_GAP = "seq-gap"
    """Seqs are not contiguous (a gap, a duplicate or a step back)."""
    BAD_PACKED_ROW = "bad-packed-row"
    """A packed chunk row whose parts disagree (`dt` length, missing arrays)."""
    ODD_EVENT = "odd-event"
    """A structural event of an unexpected shape (e.g. a `turn/end` without a reason)."""
    UNREADABLE = "unreadable"
    """The file could not be opened or read (permissions, vanished, I/O error)."""
    DUPLICATE_ID = "duplicate-id"
    """Another log under the root claims the same session id."""
    MISSING_PARENT = "missing-parent"
    """`parentSession` names a session that is not under the root."""
    SEED_MISMATCH = "seed-mismatch"
    """The child's first `seedLength` events differ from its parent's prefix."""
    LINEAGE_CYCLE = "lineage-cycle"
    """Following `parentSession` leads back to this session."""
    PROJECTED = "projected"
    """A V2+ log whose rows carry no seq/time: a dsh test snapshot, read with seq = row."""


@dataclass(frozen=True, slots=True)
class LogProblem:
    """Something unusual about one log, with where it is.

    Attributes:
        kind: What is wrong.
        message: A specific, human sentence (what and where).
        seq: The seq it concerns, if any.
        line: The 1-based physical line (or zstd frame) it concerns, if any.
    """

    kind: ProblemKind
    message: str
    seq: int | None = None
    line: int | None = None

    def to_json_dict(self) -> dict[str, Any]:
        """The problem as the CLI's JSON shape."""
        return {"kind": str(self.kind), "message": self.message, "seq": self.seq}
