"""The first turns of a big log, read from its head while the core indexes the rest.

Indexing a log of a million events takes a second or more; toolong shows a file's first
lines at once and builds its index behind them. This does the same for turns: it decodes
only the first `HEAD_BYTES` of a raw log and builds the turns that *end* there, which are
exactly the first turns of the full timeline (`TimelineBuilder` fed in pieces equals fed
whole). Anything unusual (no header, a fork child whose seed needs its parent, a line
that does not decode, a seq out of order) gives no preview: the app then simply waits
for the real load, which reports every problem.

The head is read by the index itself (`index.index_prefix`: structural lines parsed,
the others checked by shape and seq), so the preview shows exactly what the index of
the whole log will show for those turns, and reads a turn's events the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import msgspec
import orjson

from .codec import parse_header
from .index import IndexedSession, index_prefix, worth_indexing
from .logfile import Encoding, encoding_of
from .model import ProblemKind, SessionEvent
from .records import TURN_END_LINE
from .timeline import Timeline

#: Bytes of the head read: about fifteen turns of a real coding session, a pane full.
HEAD_BYTES: Final = 1 << 20
_TURN_END_LINE: Final = b"\n" + TURN_END_LINE


class HeadPreview(msgspec.Struct, frozen=True):
    """The turns that end within a log's head, and their events.

    Attributes:
        path: The log.
        timeline: The closed turns found (a prefix of the full timeline's turns).
        head: The head indexed (up to its last `turn/end`), which reads their events.
    """

    path: Path
    timeline: Timeline
    head: IndexedSession

    def events_between(self, first_seq: int, last_seq: int | None) -> list[SessionEvent]:
        """The previewed events whose seq lies in `[first_seq, last_seq]`."""
        return self.head.events_between(first_seq, last_seq)


def head_preview(path: Path, head_bytes: int = HEAD_BYTES) -> HeadPreview | None:
    """The first turns of a raw log, or None if its head holds none (or looks unusual).

    Never raises for bad content or I/O errors.
    """
    if encoding_of(path) is not Encoding.RAW:
        return None
    try:
        with open(path, "rb") as fh:
            head = fh.read(head_bytes)
    except OSError:
        return None
    nl = head.find(b"\n")
    if nl < 0:
        return None
    try:
        header, problems = parse_header(orjson.loads(head[:nl]))
    except orjson.JSONDecodeError:
        return None
    # An old header (no delegationDepth) is worth a warning, not a reason to wait for the
    # whole index: the full load reports it.
    problems = [p for p in problems if p.kind is not ProblemKind.LEGACY_HEADER]
    if header is None or problems or header.parent_session is not None or header.seed_length:
        return None
    # Up to the end of the head's last turn/end line (as dsh writes one; a head
    # without one gives no preview).
    last_end = head.rfind(_TURN_END_LINE)
    end = head.find(b"\n", last_end + 1) + 1 if last_end > nl else 0
    if end == 0:
        return None
    indexed = index_prefix(path, head[:end])
    if indexed is None or not indexed.timeline.turns:
        return None
    return HeadPreview(path, indexed.timeline, indexed)


def worth_previewing(path: Path) -> bool:
    """True for a raw log file big enough that the core indexes it rather than read it."""
    return path.is_file() and encoding_of(path) is Encoding.RAW and worth_indexing(path)
