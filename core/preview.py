"""The first turns of a big log, read from its head while the core indexes the rest.

Indexing a log of a million events takes a second or more; toolong shows a file's first
lines at once and builds its index behind them. This does the same for turns: it decodes
only the first `HEAD_BYTES` of a raw log and builds the turns that *end* there, which are
exactly the first turns of the full timeline (`TimelineBuilder` fed in pieces equals fed
whole). Anything unusual (no header, a fork child whose seed needs its parent, a line
that does not decode, a seq out of order) gives no preview: the app then simply waits
for the real load, which reports every problem.

It reads the log only through the core's own decoders (`parse_header`,
`expand_record`, `TimelineBuilder`), so the preview can never disagree with a full read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

import orjson

from .codec import RecordError, expand_record, parse_header
from .index import worth_indexing
from .logfile import Encoding, encoding_of
from .model import TURN_END, SessionEvent
from .timeline import Timeline, TimelineBuilder

#: Bytes of the head decoded: about fifteen turns of a real coding session, a pane full.
HEAD_BYTES: Final = 1 << 20


@dataclass(frozen=True)
class HeadPreview:
    """The turns that end within a log's head, and their events.

    Attributes:
        path: The log.
        timeline: The closed turns found (a prefix of the full timeline's turns).
        events: Every event up to the last `turn/end` of the head, in seq order.
    """

    path: Path
    timeline: Timeline
    events: tuple[SessionEvent, ...]

    def events_between(self, first_seq: int, last_seq: int | None) -> list[SessionEvent]:
        """The previewed events whose seq lies in `[first_seq, last_seq]`."""
        # Seqs are contiguous from 0 here (checked while reading): slice, don't scan.
        stop = len(self.events) if last_seq is None else min(last_seq + 1, len(self.events))
        return list(self.events[max(0, first_seq) : stop])


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
    lines = head[: head.rfind(b"\n") + 1].split(b"\n")[:-1]
    if len(lines) < 2:
        return None
    try:
        header, problems = parse_header(orjson.loads(lines[0]))
    except orjson.JSONDecodeError:
        return None
    if header is None or problems or header.parent_session is not None or header.seed_length:
        return None
    events: list[SessionEvent] = []
    last_end = 0  # events up to (and including) the last turn/end read
    for raw in lines[1:]:
        try:
            decoded = expand_record(orjson.loads(raw))
        except (orjson.JSONDecodeError, RecordError):
            break
        if any(e.seq != len(events) + k for k, e in enumerate(decoded)):
            break  # a gap or a repeat: the full read explains it, not a preview
        events.extend(decoded)
        if any(e.type == TURN_END for e in decoded):
            last_end = len(events)
    if last_end == 0:
        return None
    kept = tuple(events[:last_end])
    return HeadPreview(path, TimelineBuilder().feed(kept).snapshot(), kept)


def worth_previewing(path: Path) -> bool:
    """True for a raw log file big enough that the core indexes it rather than read it."""
    return path.is_file() and encoding_of(path) is Encoding.RAW and worth_indexing(path)
