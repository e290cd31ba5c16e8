"""Reading one log file, raw or zstd, whole or incrementally from the last offset.

The reader never raises for bad content: everything unusual becomes a `LogProblem`
and the events that are valid are still returned. Only whole lines (whole zstd
frames) are consumed, so a writer appending at the same time is never half-read.
"""

from __future__ import annotations

import dataclasses
import os
from enum import StrEnum
from pathlib import Path
from typing import Final

import msgspec
import orjson
import zstandard

from . import formats
from .codec import RecordError, expand_record, parse_header
from .model import TURN_END, LogProblem, ProblemKind, SessionEvent, SessionHeader, json_line
from .records import (
    MAX_HEADER_LINE,
    TURN_END_LINE,
    has_reason_kind,
    has_turn_end,
    loads,
    long_header_message,
    seq_step,
    zstd_frames,
)
from .records import MAX_SEQ_PROBLEMS as MAX_SEQ_PROBLEMS  # re-exported

try:
    # The interpreter's own BLAKE2: `hashlib` loads OpenSSL first (about 3 ms, paid by
    # every command that reads a log). Same digests.
    from _blake2 import blake2b as blake2b
except ImportError:  # an interpreter built without it
    from hashlib import blake2b as blake2b

RAW_SUFFIX: Final = ".jsonl"
ZSTD_SUFFIX: Final = ".jsonl.zstd"
#: Bytes at the start and before the end of what was read that a reader re-checks
#: when the file's mtime moves (`LogReader._rewritten`).
_MARK_BYTES: Final = 4096


class Encoding(StrEnum):
    """The physical encoding of a log file."""

    RAW = "raw"
    ZSTD = "zstd"


def encoding_of(path: Path) -> Encoding | None:
    """The encoding a file name implies, or None if it is not a log name."""
    name = path.name
    if name.endswith(ZSTD_SUFFIX):
        return Encoding.ZSTD
    if name.endswith(RAW_SUFFIX):
        return Encoding.RAW
    return None


# -- the problem rules, shared by this reader, the big-log index and the listing ---------


def torn_line_message(nbytes: int) -> str:
    """The torn-tail message for a last line without its newline."""
    return f"the last line ({nbytes} bytes) has no newline yet: an unfinished write, ignored"


def torn_frame_message(nbytes: int) -> str:
    """The torn-tail message for an incomplete last zstd frame."""
    return f"the last zstd frame ({nbytes} bytes) is incomplete: an unfinished write, ignored"


def seq_break_problem(prev: int | None, seq: int, line: int | None) -> LogProblem:
    """The problem for an event whose seq does not follow `prev` (None: first event)."""
    if prev is None:
        message = f"the first event has seq {seq}, not 0"
    elif seq <= prev:
        message = f"seq {seq} follows seq {prev}: a duplicate or a step back"
    else:
        message = f"seq jumps from {prev} to {seq} ({seq - prev - 1} missing)"
    return LogProblem(ProblemKind.SEQ_GAP, message, seq=seq, line=line)


def turn_end_problem(event: SessionEvent, line: int | None) -> LogProblem | None:
    """The problem for a `turn/end` without a reason kind, or None if it has one."""
    data = event.data
    if has_reason_kind(data):
        return None
    shown = json_line(data)[:-1].decode("utf-8", "replace")  # (a lone surrogate escaped)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return LogProblem(
        ProblemKind.ODD_EVENT,
        f"turn/end at seq {event.seq} has no reason kind (data: {shown})",
        seq=event.seq,
        line=line,
    )


def unseeded_problem(
    header: SessionHeader | None, marker_cut: bool, events: int
) -> LogProblem | None:
    """The problem of a V2+ log (`marker_cut`) whose header says isSeeded but whose
    `events` rows read hold no inherited marker (`session/end-seed {"inherited":
    true}`, which sets the header's seed length); None when there is none."""
    if (
        header is None
        or not marker_cut
        or not header.is_seeded
        or header.seed_length is not None
        or events == 0
    ):
        return None
    return LogProblem(
        ProblemKind.ODD_EVENT,
        "the header says isSeeded but no session/end-seed says inherited: true; "
        "read as inheriting nothing",
    )


def bad_record_problem(
    message: str,
    kind: ProblemKind,
    *,
    torn_possible: bool,
    turn_end_follows: bool,
    next_seq: int,
    line: int,
) -> LogProblem:
    """Class a record that does not decode: a torn tail or corruption (format doc).

    A bad record with no completed turn after it is an unfinished write and is
    ignored; one before a later `turn/end` makes the log unreadable past it.
    """
    if torn_possible and not turn_end_follows:
        return LogProblem(
            ProblemKind.TORN_TAIL,
            f"{message}; no completed turn follows it, so it is an unfinished write and is ignored",
            seq=next_seq,
            line=line,
        )
    where = f"past seq {next_seq - 1}" if next_seq > 0 else "from its first event on"
    return LogProblem(kind, f"{message}; the log is unreadable {where}", seq=next_seq, line=line)


class ReadBatch(msgspec.Struct):
    """What one `LogReader.read()` call found.

    Attributes:
        events: Events decoded since the previous call, in file order.
        problems: Problems first found by this call.
        reset: The file shrank or was replaced: the caller must drop what it had,
            and `events` starts again from the beginning.
    """

    events: list[SessionEvent] = msgspec.field(default_factory=list)
    problems: list[LogProblem] = msgspec.field(default_factory=list)
    reset: bool = False


class LogReader:
    """Reads one log incrementally, whole records only.

    Call `read()` once for a full read; call it again whenever the file grows to get
    just the appended events. State (offset, expected seq) lives here.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.encoding: Encoding = encoding_of(path) or Encoding.RAW
        self.header: SessionHeader | None = None
        #: Problems found so far that stay true (header, corruption, gaps, odd events).
        self.problems: list[LogProblem] = []
        #: The current torn tail, if any: true only until the writer finishes the line.
        self.tail_problem: LogProblem | None = None
        #: Bytes of the file consumed (whole lines / whole frames).
        self.offset = 0
        #: How many events have been decoded.
        self.event_count = 0
        #: Leading events with `seq == index`: the prefix that can be forked.
        self.contiguous = 0
        self.last_seq: int | None = None
        #: Raw logs: the offset just past each `turn/end` line written as dsh writes one,
        #: by its seq (what a fork copies up to; the index records the same).
        self.turn_end_offsets: dict[int, int] = {}
        #: Raw logs: bytes of the header line, newline included (0 until it is read).
        self.header_end = 0
        self._ended_turn: int | None = None
        self._line = 0
        self._seq_problems = 0
        self._stuck = False
        self._rules = _Rules()
        self._identity: tuple[int, int] | None = None
        #: (mtime_ns, fingerprint of the bytes read so far) after the last read: a log
        #: rewritten in place (same inode, truncated, then longer) is told by it.
        self._mark: tuple[int, bytes | None] | None = None
        self._dctx = zstandard.ZstdDecompressor()

    @classmethod
    def resume(
        cls,
        path: Path,
        header: SessionHeader | None,
        offset: int,
        event_count: int,
        last_seq: int | None,
        contiguous: bool,
    ) -> LogReader:
        """A reader positioned after what a summary already read (for tailing).

        Args:
            path: The log.
            header: The header the summary parsed (None: start from scratch).
            offset: Bytes already consumed (`SessionSummary.size`).
            event_count: Events already decoded.
            last_seq: Seq of the last event decoded.
            contiguous: Whether those events were contiguous.
        """
        reader = cls(path)
        if header is None:
            return reader
        reader.header = header
        reader._rules = _Rules.of(header)
        reader.offset = offset
        reader.event_count = event_count
        reader.last_seq = last_seq
        reader.contiguous = event_count if contiguous else 0
        reader._seq_problems = 0 if contiguous else 1
        try:
            st = os.stat(path)
            reader._identity = (st.st_dev, st.st_ino)
        except OSError:
            pass
        reader._remember()
        return reader

    @property
    def unreadable(self) -> bool:
        """True if reading stopped at corruption (or the file cannot be read)."""
        return self._stuck

    def all_problems(self) -> list[LogProblem]:
        """Lasting problems plus the current torn tail, if any."""
        return [*self.problems, *([self.tail_problem] if self.tail_problem else [])]

    def _reset(self) -> None:
        self.header = None
        self.problems = []
        self.tail_problem = None
        self.offset = 0
        self.event_count = 0
        self.contiguous = 0
        self.last_seq = None
        self.turn_end_offsets = {}
        self.header_end = 0
        self._line = 0
        self._seq_problems = 0
        self._stuck = False
        self._rules = _Rules()

    def read(self) -> ReadBatch:
        """Decode whatever whole records were appended since the last call."""
        batch = ReadBatch()
        try:
            with open(self.path, "rb") as fh:
                st = os.fstat(fh.fileno())
                identity = (st.st_dev, st.st_ino)
                if self._identity is not None and (
                    identity != self._identity
                    or st.st_size < self.offset
                    or self._rewritten(fh.fileno(), st.st_mtime_ns)
                ):
                    self._reset()
                    batch.reset = True
                self._identity = identity
                if self._stuck:
                    # More bytes can turn a "torn tail" into corruption: say so in the batch.
                    known = set(self.all_problems())
                    self._reclassify_stuck(fh)
                    batch.problems.extend(p for p in self.all_problems() if p not in known)
                    return batch
                if st.st_size == self.offset:
                    if st.st_size == 0 and not self.problems:
                        self._add(LogProblem(ProblemKind.EMPTY, "the log file is empty"))
                        batch.problems.extend(self.problems)
                    return batch
                if self.offset == 0 and self.problems:
                    # It was empty when last read; now the writer has begun: start over.
                    self.problems = [p for p in self.problems if p.kind is not ProblemKind.EMPTY]
                fh.seek(self.offset)
                if self.header is None and self.offset == 0:
                    # The header line first, and no more than a header can be: a file
                    # of NULs (a crash) or junk is not read whole to find that out.
                    head = fh.read(MAX_HEADER_LINE + 1)
                    if b"\n" not in head and len(head) > MAX_HEADER_LINE:
                        self._line = 1
                        self._add(LogProblem(ProblemKind.BAD_HEADER, long_header_message(), line=1))
                        self._stuck = True
                        batch.problems.extend(self.problems)
                        return batch
                    chunk = head + fh.read()
                else:
                    chunk = fh.read()
        except OSError as exc:
            problem = LogProblem(
                ProblemKind.UNREADABLE, f"cannot read {self.path.name}: {exc.strerror or exc}"
            )
            if not any(p.kind is ProblemKind.UNREADABLE for p in self.problems):
                self.problems.append(problem)
                batch.problems.append(problem)
            return batch
        before = len(self.problems)
        if self.encoding is Encoding.ZSTD:
            self._consume_zstd(chunk, batch)
        else:
            self._consume_raw(chunk, batch)
        self._check_seed()
        batch.problems.extend(self.problems[before:])
        self._remember()
        return batch

    def _check_seed(self) -> None:
        """A V2+ header that says isSeeded needs an inherited marker once rows are read."""
        rules = self._rules
        problem = unseeded_problem(self.header, rules.marker_cut, self.event_count)
        if problem is None or rules.unseeded_reported:
            return
        rules.unseeded_reported = True
        self._add(problem)

    def _fingerprint(self, fd: int) -> bytes | None:
        """A hash of the first block and of the last block before `offset` (the bytes
        this reader has consumed), None before anything was consumed."""
        if self.offset == 0:
            return None
        head = os.pread(fd, min(_MARK_BYTES, self.offset), 0)
        start = max(0, self.offset - _MARK_BYTES)
        tail = os.pread(fd, self.offset - start, start)
        return blake2b(head + b"\0" + tail, digest_size=16).digest()

    def _remember(self) -> None:
        """Note the file's mtime and the fingerprint of what was consumed."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            self._mark = None
            return
        try:
            self._mark = (os.fstat(fd).st_mtime_ns, self._fingerprint(fd))
        except OSError:
            self._mark = None
        finally:
            os.close(fd)

    def _rewritten(self, fd: int, mtime_ns: int) -> bool:
        """True if the bytes already consumed changed since the last read (the file was
        rewritten in place: truncated, then written again, maybe longer than before).
        Checked only when the mtime moved: an append-only log never trips it."""
        mark = self._mark
        if mark is None or mark[0] == mtime_ns or mark[1] is None:
            return False
        try:
            return self._fingerprint(fd) != mark[1]
        except OSError:
            return False

    # -- raw -------------------------------------------------------------------------

    def _consume_raw(self, chunk: bytes, batch: ReadBatch) -> None:
        end = chunk.rfind(b"\n") + 1
        whole, tail = chunk[:end], chunk[end:]
        pos = 0
        for line in whole.split(b"\n")[:-1] if whole else ():
            line_len = len(line) + 1
            if not self._consume_line(line, batch):
                self._stop_pending(whole[pos + line_len :] + tail)
                return
            pos += line_len
            self.offset += line_len
            if self._line == 1 and self.header is not None:
                self.header_end = self.offset
            elif self._ended_turn is not None and line.startswith(TURN_END_LINE):
                # Where a fork through this turn/end stops copying (as the index records).
                self.turn_end_offsets[self._ended_turn] = self.offset
        if tail and self.header is None and not self.problems and not _may_become_header(tail):
            # A NUL-filled file (a crash on some filesystems) or other junk without a
            # newline is not an unfinished header write: no completed line can fix it.
            self._add(
                LogProblem(
                    ProblemKind.BAD_HEADER,
                    f"the first line ({len(tail)} bytes, no newline) is not a session header",
                    line=1,
                )
            )
            self._stuck = True
            self.tail_problem = None
            return
        self._set_tail(torn_line_message(len(tail)) if tail else None)

    # -- zstd ------------------------------------------------------------------------

    def _consume_zstd(self, chunk: bytes, batch: ReadBatch) -> None:
        for frame in zstd_frames(chunk, self._dctx):
            if frame.content is None:
                if frame.error is None:
                    self._set_tail(torn_frame_message(len(chunk) - frame.start))
                    return
                self._line += 1
                self._stop_at(
                    f"zstd frame {self._line} does not decode ({frame.error})",
                    rest=b"",
                    kind=ProblemKind.CORRUPT,
                    torn_possible=False,
                )
                return
            lines = frame.content.split(b"\n")
            if lines[-1] != b"":
                self._line += 1
                self._stop_at(
                    f"zstd frame {self._line} does not end with a newline",
                    rest=b"",
                    kind=ProblemKind.CORRUPT,
                    torn_possible=False,
                )
                return
            frame_no = self._line
            for k, line in enumerate(lines[:-1]):
                if not self._consume_line(line, batch):
                    self._stop_pending(b"\n".join(lines[k + 1 :]) + chunk[frame.end :])
                    return
            # Line numbers count frames for zstd logs: that is what a user can locate.
            self._line = frame_no + 1
            self.offset += frame.end - frame.start
        self._set_tail(None)

    # -- records ---------------------------------------------------------------------

    def _consume_line(self, line: bytes, batch: ReadBatch) -> bool:
        """Decode one whole line; False if reading must stop here (see `_stop_pending`)."""
        self._line += 1
        self._pending: tuple[str, ProblemKind] | None = None
        self._ended_turn = None
        if self.header is None and not self.problems:
            return self._consume_header(line)
        if self.header is None:
            return False
        rules = self._rules
        if rules.unknown or not line.strip():
            return True  # a version this reader does not know: no row is guessed at
        try:
            obj = loads(line)
        except orjson.JSONDecodeError as exc:
            self._pending = (f"line {self._line} is not valid JSON ({exc})", ProblemKind.CORRUPT)
            return False
        try:
            events = self._decode(obj)
        except RecordError as exc:
            self._pending = (f"line {self._line}: {exc}", exc.kind)
            return False
        for event in events:
            self._check_seq(event)
            if event.type == TURN_END:
                self._check_turn_end(event)
            elif rules.marker_cut and formats.is_inherited_marker(event.type, event.data):
                self._inherited_marker(event)
        if events and events[-1].type == TURN_END:
            self._ended_turn = events[-1].seq
        batch.events.extend(events)
        return True

    def _consume_header(self, line: bytes) -> bool:
        try:
            obj = loads(line)
        except orjson.JSONDecodeError:
            obj = None
        header, problems = parse_header(obj)
        if obj is None:
            problems = [
                LogProblem(ProblemKind.BAD_HEADER, "the first line is not valid JSON", line=1)
            ]
        if header is not None:
            mismatch = formats.name_mismatch(self.path.name, header.version)
            if mismatch is not None:
                problems.append(LogProblem(ProblemKind.BAD_HEADER, mismatch, line=1))
        for problem in problems:
            self._add(problem)
        self.header = header
        if header is None:
            self._stuck = True
            return False
        self._rules = _Rules.of(header)
        return True

    def _decode(self, obj: object) -> list[SessionEvent]:
        """One row's events by the rules of the log's version."""
        rules = self._rules
        if not rules.marker_cut:
            return expand_record(obj)  # V0, V1: a row may be a packed chunk run
        if rules.projected is None:
            rules.projected = formats.projected_row(obj) is not None
            if rules.projected and self.event_count == 0:
                self._add(LogProblem(ProblemKind.PROJECTED, formats.PROJECTED_MESSAGE))
        if rules.projected:
            row = formats.projected_row(obj)
            if row is None:
                raise RecordError(
                    ProblemKind.CORRUPT,
                    "a row with a seq or time among snapshot rows without them "
                    "(a log is all persisted rows or all projected ones)",
                )
            return [SessionEvent(row.type, self.event_count, 0, row.data, row.extra)]
        return expand_record(obj, packed_rows=False)

    def _inherited_marker(self, event: SessionEvent) -> None:
        """A V2+ `session/end-seed {"inherited": true}`: the last one is the seed's end."""
        header = self.header
        if header is None:
            return
        if not header.is_seeded:
            self._add(
                LogProblem(
                    ProblemKind.ODD_EVENT,
                    f"session/end-seed at seq {event.seq} says inherited, but the header's "
                    "isSeeded is false: not taken as a seed",
                    seq=event.seq,
                    line=self._line,
                )
            )
            return
        self.header = dataclasses.replace(header, seed_length=event.seq)

    def _check_seq(self, event: SessionEvent) -> None:
        prev = self.last_seq
        self.contiguous, broken = seq_step(self.event_count, self.contiguous, prev, event.seq)
        self.event_count += 1
        self.last_seq = event.seq
        if not broken:
            return
        self._seq_problems += 1
        if self._seq_problems > MAX_SEQ_PROBLEMS:
            return
        self._add(seq_break_problem(prev, event.seq, self._line))

    def _check_turn_end(self, event: SessionEvent) -> None:
        problem = turn_end_problem(event, self._line)
        if problem is not None:
            self._add(problem)

    def _stop_pending(self, rest: bytes) -> None:
        """Act on the stop `_consume_line` asked for; `rest` is what follows the line."""
        if self._pending is not None:
            message, kind = self._pending
            self._stop_at(message, rest, kind=kind)

    def _stop_at(
        self,
        message: str,
        rest: bytes,
        kind: ProblemKind = ProblemKind.CORRUPT,
        torn_possible: bool = True,
    ) -> None:
        """Stop reading at a bad record, classing it as corruption or a torn tail."""
        self._stuck = True
        self._stuck_message = (message, kind, torn_possible)
        self._classify_stuck(rest)

    def _classify_stuck(self, rest: bytes) -> None:
        message, kind, torn_possible = self._stuck_message
        seq = self.last_seq + 1 if self.last_seq is not None else 0
        self.problems = [p for p in self.problems if p.kind is not ProblemKind.TORN_TAIL]
        self.tail_problem = None
        problem = bad_record_problem(
            message,
            kind,
            torn_possible=torn_possible,
            turn_end_follows=has_turn_end(rest),
            next_seq=seq,
            line=self._line,
        )
        if problem.kind is ProblemKind.TORN_TAIL:
            self.tail_problem = problem
            return
        self.problems = [p for p in self.problems if p.kind is not kind or p.line != self._line]
        self._add(problem)

    def _reclassify_stuck(self, fh: object) -> None:
        if self.header is None or not hasattr(self, "_stuck_message"):
            return
        try:
            with open(self.path, "rb") as again:
                again.seek(self.offset)
                rest = again.read()
        except OSError:
            return
        self._classify_stuck(rest)

    def _set_tail(self, message: str | None) -> None:
        if message is None:
            self.tail_problem = None
            return
        seq = self.last_seq + 1 if self.last_seq is not None else 0
        self.tail_problem = LogProblem(ProblemKind.TORN_TAIL, message, seq=seq, line=self._line + 1)

    def _add(self, problem: LogProblem) -> None:
        self.problems.append(problem)


class _Rules(msgspec.Struct):
    """What the header's version makes of the rows (`formats`)."""

    #: The version is not one this reader knows: rows are not read.
    unknown: bool = False
    #: V2+: one event per row, the seed cut by the inherited marker.
    marker_cut: bool = False
    #: V2+ only: rows without seq/time (a dsh test snapshot); None until the first row.
    projected: bool | None = None
    unseeded_reported: bool = False

    @classmethod
    def of(cls, header: SessionHeader) -> _Rules:
        version = header.version
        if not formats.known(version):
            return cls(unknown=True)
        return cls(marker_cut=formats.seeded_by_marker(version))


def _may_become_header(tail: bytes) -> bool:
    """True if a first line without its newline could still be a header being written."""
    start = tail.lstrip()
    return not start or (start[:1] == b"{" and b"\0" not in tail)


class LogContents(msgspec.Struct, frozen=True):
    """A log read whole: header, valid events and everything unusual."""

    path: Path
    encoding: Encoding
    header: SessionHeader | None
    events: tuple[SessionEvent, ...]
    problems: tuple[LogProblem, ...]
    contiguous: int
    size: int


def read_log(path: Path) -> LogContents:
    """Read a whole log; never raises for bad content or I/O errors."""
    reader = LogReader(path)
    batch = reader.read()
    return LogContents(
        path=path,
        encoding=reader.encoding,
        header=reader.header,
        events=tuple(batch.events),
        problems=tuple(reader.all_problems()),
        contiguous=reader.contiguous,
        size=reader.offset,
    )
