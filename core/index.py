"""A sparse index over one big log: exact timeline and counts without decoding every event.

A full read (`LogReader`) turns every line into `SessionEvent` objects: for a log of a
million events that is seconds of CPU and gigabytes of memory. The timeline only needs
the few structural events (`timeline.TIMELINE_TYPES`), the counts need only each
line's seq and size, and a turn's events are wanted only when a user opens it. So the
index (after toolong's newline index, built in timed batches and read with `os.pread`):

- reads the file in blocks of whole lines (a zstd log frame by frame, streaming, so
  memory stays bounded by the block size, not the file size);
- finds every record start with one regular expression,
  `}\\n{"type":"<type>","seq":<n>` (or `"seq0":<n>` for a packed chunk row). A match
  proves the line starts the way dsh writes records *and* that the previous line ended
  with `}`; the number of matches is compared with the number of newlines, so a block
  in which every line has that shape is checked without touching its lines in Python;
- fully parses (orjson + `codec.expand_record`) only the lines that matter or look
  suspicious: structural events (fed to `TimelineBuilder` in file order, which gives
  exactly the full-read timeline), packed rows (to count and validate their members),
  and any line the pattern does not match (a blank line, another key order, a
  truncated or garbage line, a non-integer seq);
- reads a clean batch in bulk (`_Indexer._consume_bulk`): msgspec validates all of
  its lines in one call (`decode_lines`, in C) into a Struct per record kind (a
  tagged union: a plain event keeps only its seq, a packed row its member counts, a
  structural line only the fields the timeline reads; a V2+ `assistant/message`
  holds its whole stream, which is validated, not built), and their seqs are
  checked at once. A batch holding a type the union does not name takes three calls
  (the heads, then its packed rows, then its structural lines). Any batch that is
  not clean (a blank line, a seq break, a line that is not one record) is read line
  by line instead, which names exactly what is wrong, so both paths give the same
  result;
- keeps every seq check of `LogReader` (contiguity, gaps, duplicates, the first seq),
  the `turn/end` reason check, and its torn-tail-versus-corruption rule, with the same
  problem messages and line numbers;
- remembers *anchors* (first seq and file position of structural lines, and of some
  line at least every `ANCHOR_SPACING` bytes) so `events_between` reads only the byte
  range of the rows asked for.

What the cheap checks do not prove: that a line which starts and ends like a record
and carries the expected seq is valid JSON inside, and that it has no second `seq`
key. Such a line is found (as a problem of that read) when its events are read on
demand; every other corruption is found while indexing, exactly as a full read finds
it. (Bytes that are not UTF-8 are: a batch that holds any is read line by line, and
each such line decoded whole, as the full reader decodes it.)
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import mmap
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, compress
from operator import attrgetter
from pathlib import Path
from typing import Any, Final, Union, overload

import msgspec
import orjson
import zstandard

from . import formats
from .codec import PACKED_TAGS, RecordError, expand_record, packed_count, parse_header
from .logfile import (
    Encoding,
    bad_record_problem,
    encoding_of,
    read_log,
    seq_break_problem,
    torn_frame_message,
    torn_line_message,
    turn_end_problem,
    unseeded_problem,
)
from .longline import LONG_LINE, LinePlace, LongRecord, zstd_inflates_past
from .longline import lines as long_lines
from .model import TURN_END, LogProblem, ProblemKind, SessionEvent, SessionHeader
from .parallel import discard_broken, task_runner
from .records import INDEX_THRESHOLD as INDEX_THRESHOLD  # re-exported
from .records import (
    MAX_HEADER_LINE,
    MAX_SEQ_PROBLEMS,
    RECORD_TYPES,
    TURN_END_LINE,
    TURN_END_OVERLAP,
    HeadError,
    PackedData,
    RecordHead,
    Seq,
    decode_head,
    has_turn_end,
    loads,
    packed_members,
    record_last_time,
    seq_step,
)
from .records import ZSTD_INDEX_THRESHOLD as ZSTD_INDEX_THRESHOLD  # re-exported
from .summary import SessionSummary, activity_of, counted_turns, from_contents, valid_utf8
from .timeline import TIMELINE_TYPES, Timeline, TimelineBuilder

#: Bytes of whole lines handled per batch (bounded memory; progress granularity).
BLOCK_SIZE: Final = 8 << 20
#: At most this many bytes between two anchors, so a range read stays small.
ANCHOR_SPACING: Final = 256 << 10
#: Bytes of a line longer than a block that `_prefix_error` decodes to tell junk early
#: (orjson on the whole block would build a string of up to 4x its size).
PREFIX_CHECK: Final = 64 << 10
#: Bytes read at a time while looking for the end of a line longer than a block.
NEWLINE_WINDOW: Final = 1 << 20
#: Seconds between two progress reports.
PROGRESS_INTERVAL: Final = 0.05

#: Decodes a batch of record lines into `RecordHead`s in one call (see `_consume_bulk`).
_decode_head_lines: Final = msgspec.json.Decoder(RecordHead).decode_lines
_STRUCTURAL_STR: Final = frozenset(TIMELINE_TYPES)
_PACKED_STR: Final = frozenset(PACKED_TAGS)
_SPECIAL: Final = _STRUCTURAL_STR | _PACKED_STR
_TURN_TYPES_STR: Final = frozenset(("turn/start", "turn/end"))
_TYPE: Final = attrgetter("type")
_SEQ: Final = attrgetter("seq")
_PLUS_ONE: Final = (1).__add__
_NO_TAGS: Final = frozenset[str]()
_OPEN: Final = {ord("{")}
_CLOSE: Final = {ord("}")}
_MINUS_TWO: Final = (-2).__add__


def _starts_of(data: bytes) -> list[int]:
    """Where each of `data`'s lines starts (whole lines, each ending with a newline),
    then `len(data)`: its newlines found, nothing copied."""
    starts = [0]
    add = starts.append
    find = data.find
    at = find(b"\n")
    while at >= 0:
        at += 1
        add(at)
        at = find(b"\n", at)
    return starts


class _BlockLines:
    """A raw block's lines as `block.split(b"\\n")` gives them (the empty piece after
    its last newline left out), each sliced only when asked for.

    A bulk batch looks at few of its lines one by one (the timeline's few that are
    not read from the batch's Structs); the others, a big log's tool results above
    all, need only where they start. Finding the newlines copies nothing, where a
    split copies the whole block: 12 against 29 ms for half the bench's V5 log.
    """

    __slots__ = ("block", "starts")

    def __init__(self, block: bytes) -> None:
        self.block = block
        #: Where each line starts, and where the next would (the block's length).
        self.starts = _starts_of(block)

    def __len__(self) -> int:
        return len(self.starts) - 1

    def __getitem__(self, index: int) -> bytes:
        starts = self.starts
        return self.block[starts[index] : starts[index + 1] - 1]

    def shaped(self) -> bool:
        """Every line starts with `{` and ends with `}` (a blank one does neither)."""
        byte = self.block.__getitem__
        starts = self.starts
        return (
            set(map(byte, starts[:-1])) == _OPEN
            and set(map(byte, map(_MINUS_TWO, starts[1:]))) == _CLOSE
        )


class _FrameLines:
    """A zstd batch's lines, frame by frame (its frames are not joined): as
    `_BlockLines`, each line sliced out of its frame only when asked for. `starts`
    are offsets in the frames' contents joined, as the batch's `_Frame`s count them."""

    __slots__ = ("_first", "_last", "_part_at", "_part_lines", "parts", "starts")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        #: Where each line starts, and where the next would (the contents' length).
        self.starts = [0]
        self._part_lines: list[int] = []  # each frame's first line
        self._part_at: list[int] = []  # each frame's offset
        self._first: set[int] = set()  # every line's first byte
        self._last: set[int] = set()  # every line's last byte

    def add(self, content: bytes) -> None:
        """Take the next frame's contents (whole lines)."""
        starts = self.starts
        at = starts[-1]
        self._part_lines.append(len(starts) - 1)
        self._part_at.append(at)
        self.parts.append(content)
        local = _starts_of(content)
        byte = content.__getitem__
        self._first.update(map(byte, local[:-1]))
        self._last.update(map(byte, map(_MINUS_TWO, local[1:])))
        starts += map(at.__add__, local[1:])

    def __len__(self) -> int:
        return len(self.starts) - 1

    def __getitem__(self, index: int) -> bytes:
        k = bisect.bisect_right(self._part_lines, index) - 1
        at = self._part_at[k]
        starts = self.starts
        return self.parts[k][starts[index] - at : starts[index + 1] - at - 1]

    def shaped(self) -> bool:
        """Every line starts with `{` and ends with `}` (a blank one does neither)."""
        return self._first == _OPEN and self._last == _CLOSE


#: Where a bulk batch's lines are: in the raw block, or in the frames they are in.
_Lines = _BlockLines | _FrameLines


def worth_indexing(path: Path) -> bool:
    """True for a log big enough that `SessionRoot` should index it, not read it whole."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return False
    if encoding_of(path) is not Encoding.ZSTD:
        return size >= INDEX_THRESHOLD
    # A small zstd log can still hold a huge field (repeated text compresses 10,000:1).
    return size >= ZSTD_INDEX_THRESHOLD or zstd_inflates_past(path, INDEX_THRESHOLD)


# -- structural lines, decoded for the timeline only -----------------------------------


class _LightData(msgspec.Struct, gc=False):
    """The fields of a `step/start`, `tool/call` or `assistant/message` event's data
    that `TimelineBuilder` reads (`formats.assistant_message` included); the rest of
    the data (a tool's arguments, a V2+ message's stream and usage) is only checked."""

    turn: Any = msgspec.UNSET
    name: Any = msgspec.UNSET
    message: Any = msgspec.UNSET
    content: Any = msgspec.UNSET
    provenance: Any = msgspec.UNSET


class _LightRecord(msgspec.Struct, gc=False):
    type: str
    seq: Seq
    time: Any = 0
    data: _LightData | None = None


_decode_light: Final = msgspec.json.Decoder(_LightRecord).decode
_decode_light_lines: Final = msgspec.json.Decoder(_LightRecord).decode_lines
_fields_of: Final = msgspec.structs.astuple
#: The structural types that are many, and large, in a big log.
_LIGHT_TYPES: Final = frozenset(("step/start", "tool/call", "assistant/message"))
_LIGHT_FIELDS: Final = _LightData.__struct_fields__
_UNSET: Final = msgspec.UNSET
#: Integers orjson (hence `records.loads`) keeps as integers; others become floats.
_ORJSON_INTS: Final = range(-(1 << 63), 1 << 64)

#: A structural line decoded: the fields `TimelineBuilder.feed_fields` takes (type,
#: seq, time, data), or the whole event where a check reads more of it.
_Structural = tuple[str, int, int | float, Any] | SessionEvent


def _type_of(item: _Structural) -> str:
    return item.type if isinstance(item, SessionEvent) else item[0]


def _light_fields(kind: str, light: Any) -> tuple[str, int, int | float, Any] | None:
    """What `expand_record(loads(line))` gives the timeline of a light record's line:
    its type, seq, time and a data dict holding every key the timeline reads; None
    where orjson would read a number of those differently (past 64 bits). `light`
    is a `_LightRecord` or a `_LightKind` of type `kind`."""
    time = _light_time(light.time)
    if time is None:
        return None
    data: Any = light.data
    if data is not None:
        data = _light_dict(data)
        turn = data.get("turn")
        if type(turn) is int and turn not in _ORJSON_INTS:
            return None
    return kind, light.seq, time, data


def _light_time(time: Any) -> int | float | None:
    """A light record's time as `expand_record` takes it (one that is not a number is
    0); None where orjson would read it differently (an integer past 64 bits)."""
    if type(time) is int:
        return time if time in _ORJSON_INTS else None
    return time if type(time) is float else 0


def _light_dict(data: _LightData) -> dict[str, Any]:
    """The keys a light record's data has, as `loads` gives them (the timeline's)."""
    values = zip(_LIGHT_FIELDS, _fields_of(data), strict=True)
    return {k: v for k, v in values if v is not _UNSET}


#: Light types the timeline only counts while a turn is open (`_light_item`).
_COUNTED_TYPES: Final = frozenset(("step/start", "tool/call"))


def _light_item(kind: str, light: Any) -> tuple[str, int, int | float, Any] | None:
    """`_light_fields`, but the data of a `step/start` or a `tool/call` is left a
    `_LightData`: while a turn is open the timeline counts the step, or takes the
    tool's name, and reads nothing else (`_Indexer._feed`); its dict is made only
    for one outside a turn. None in the same cases."""
    if kind not in _COUNTED_TYPES:
        return _light_fields(kind, light)
    time = _light_time(light.time)
    if time is None:
        return None
    data = light.data
    if data is not None:
        turn = data.turn
        if type(turn) is int and turn not in _ORJSON_INTS:
            return None
    return kind, light.seq, time, data


def _structural(line: bytes, kind: str, packed_rows: bool) -> _Structural | None:
    """One structural line whose head decoded (type `kind`, an integer seq): its light
    fields (`_LIGHT_TYPES`), else its event as the full reader decodes it; None if
    it does not decode after all (then the batch is read line by line)."""
    if kind in _LIGHT_TYPES:
        try:
            fields = _light_fields(kind, _decode_light(line))
        except HeadError:
            fields = None  # e.g. data that is not an object: decoded whole below
        if fields is not None:
            return fields
    try:
        events = expand_record(loads(line), packed_rows=packed_rows)
    except (orjson.JSONDecodeError, RecordError):
        return None
    return events[0] if len(events) == 1 else None


def _light_batch(
    light: list[int],
    lines: _Lines,
    decoded: dict[int, _Structural],
    kind_of: dict[int, str],
    records: list[Any] | None,
) -> bool:
    """Decode the `_LIGHT_TYPES` lines `light` (indices into `lines`, each one JSON
    object) into `decoded`: from `records` (the batch's `_LightKind`s) if given, else
    in one msgspec call when every one decodes so; False if one does not decode."""
    if records is not None:
        light_records: list[Any] | None = [records[i] for i in light]
    else:
        try:
            light_records = _decode_light_lines(b"\n".join([lines[i] for i in light]))
        except HeadError:
            light_records = None
    for k, i in enumerate(light):
        kind = kind_of[i]
        item: _Structural | None = None
        if light_records is not None:
            item = _light_item(kind, light_records[k])
        if item is None:
            item = _structural(lines[i], kind, packed_rows=True)  # (not a packed tag)
            if item is None:
                return False
        decoded[i] = item
    return True


class _PackedRow(msgspec.Struct, gc=False):
    seq0: Seq
    data: PackedData


_decode_packed_lines: Final = msgspec.json.Decoder(_PackedRow).decode_lines


def _packed_rows(
    packed: list[int], kind_of: dict[int, str], lines: _Lines, records: list[Any] | None
) -> list[tuple[int, int]] | None:
    """(seq0, member count) of each packed row line in `packed`, checked as
    `records.packed_members` checks one: from `records` (the batch's `_PackedKind`s)
    if given, else in one msgspec call; None if a row is not one that check takes
    (then the batch is read line by line)."""
    if records is not None:
        rows: list[Any] = [records[i] for i in packed]
    else:
        try:
            rows = _decode_packed_lines(b"\n".join([lines[i] for i in packed]))
        except HeadError:
            return None
    out: list[tuple[int, int]] = []
    for i, row in zip(packed, rows, strict=True):
        data = row.data
        if data is None or type(row.seq0) is not int:
            return None
        members = data.args if PACKED_TAGS[kind_of[i]][1] == "args" else data.texts
        if not members or len(data.dt) != len(members) - 1:
            return None
        out.append((row.seq0, len(members)))
    return out


# -- a batch in one msgspec call: a Struct per record kind ------------------------------

#: Record types read in one call with the structural ones (`_batch_decoder`): dsh's
#: types that the timeline does not read (`records.RECORD_TYPES`). A batch holding
#: any other type is decoded in three calls instead (same result).
_PLAIN_TYPES: Final = tuple(t for t in RECORD_TYPES if t not in TIMELINE_TYPES)


class _Record(msgspec.Struct, tag_field="type", gc=False):
    """Any record of the batch union: its tag is its type."""

    seq: Seq | None = None
    #: UNSET without a `seq0` key (see `RecordHead.seq0`).
    seq0: Seq | msgspec.UnsetType | None = msgspec.UNSET


class _LightKind(_Record, tag_field="type", gc=False):
    time: Any = 0
    data: _LightData | None = None


class _PackedKind(_Record, tag_field="type", gc=False):
    data: PackedData | None = None


def _kinds(base: type[_Record], names: Iterable[str]) -> list[type[msgspec.Struct]]:
    """A subclass of `base` tagged with each type of `names`."""
    return [
        msgspec.defstruct(f"_{base.__name__}{k}", [], bases=(base,), tag=name, gc=False)
        for k, name in enumerate(names)
    ]


_STRUCTURAL_KINDS: Final = _kinds(_LightKind, sorted(_LIGHT_TYPES)) + _kinds(
    _Record, sorted(set(TIMELINE_TYPES) - _LIGHT_TYPES)
)
_PACKED_KINDS: Final = _kinds(_PackedKind, sorted(PACKED_TAGS))
_PLAIN_KINDS: Final = _kinds(_Record, _PLAIN_TYPES)
_UNPACKED_KINDS: Final = _kinds(_Record, sorted(PACKED_TAGS))


@functools.cache
def _batch_decoder(packed_rows: bool) -> Callable[[bytes], list[Any]]:
    """Decodes a batch of V0/V1 lines (packed rows) or of V2+ lines, a Struct per
    record kind. Made on first use: building the union costs a few milliseconds that
    a process which never indexes a big log should not pay."""
    kinds = _STRUCTURAL_KINDS + (_PACKED_KINDS if packed_rows else _UNPACKED_KINDS)
    union: Any = Union[tuple(kinds + _PLAIN_KINDS)]  # noqa: UP007
    return msgspec.json.Decoder(union).decode_lines


def _not_utf8(line: bytes) -> bool:
    return not valid_utf8(line)


#: A batch of lines: bytes, or (zstd) the decoded frames holding them, in order.
Block = bytes | list[bytes]


def _decoded_block(decode: Callable[[bytes], list[Any]], block: Block) -> list[Any]:
    """`decode` (a `decode_lines`) of `block`'s lines: of its frames one by one, for a
    list of them (each ends at a line's end, so the values are the same)."""
    if not isinstance(block, list):
        return decode(block)
    out: list[Any] = []
    for part in block:
        out += decode(part)
    return out


#: The type of each record class of the unions.
_TYPE_OF_KIND: Final[dict[type[msgspec.Struct], str]] = {
    kind: str(kind.__struct_config__.tag)
    for kind in _STRUCTURAL_KINDS + _PACKED_KINDS + _PLAIN_KINDS + _UNPACKED_KINDS
}
#: The record classes of the unions whose type is structural or a packed row's tag.
_SPECIAL_KINDS: Final = frozenset(k for k, t in _TYPE_OF_KIND.items() if t in _SPECIAL)


class IndexCancelled(Exception):
    """Indexing stopped because the caller set its `cancel` event."""


Progress = Callable[[float], None]


class _Frame(msgspec.Struct):
    """Where one zstd frame's lines sit in a batch (for LogReader's line numbers)."""

    first_line: int  # index (in the batch) of the frame's first line
    line_base: int  # LogReader's line counter before the frame
    content_end: int  # end of the frame's content in the batch
    file_end: int  # compressed offset just past the frame
    shift: int = 0  # bytes of the frame's content before the batch (the header line)


def _frame_of(frames: list[_Frame], index: int) -> int:
    """Which frame holds the batch's line `index`."""
    lo, hi = 0, len(frames) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if frames[mid].first_line <= index:
            lo = mid
        else:
            hi = mid - 1
    return lo


class _Stop(msgspec.Struct):
    message: str
    kind: ProblemKind
    torn_possible: bool = True


class _Halt(msgspec.Struct):
    """Where a batch stopped: the bad line's block offset and batch line index."""

    at: int
    index: int
    stop: _Stop


class _Indexer:
    """The state of one indexing pass; mirrors `LogReader`'s counters exactly."""

    def __init__(
        self,
        path: Path,
        progress: Progress | None,
        cancel: threading.Event | None,
        block_size: int = BLOCK_SIZE,
    ) -> None:
        self.path = path
        self.block_size = block_size
        self.encoding = encoding_of(path) or Encoding.RAW
        self.progress = progress
        self.cancel = cancel
        self.header: SessionHeader | None = None
        self.header_line = b""  # the header's line, as `take_header` took it
        self.problems: list[LogProblem] = []
        self.tail_problem: LogProblem | None = None
        self.offset = 0
        self.event_count = 0
        self.contiguous = 0
        self.last_seq: int | None = None
        self.line = 0
        self.seq_problems = 0
        self.builder = TimelineBuilder()
        self.end_offsets: dict[int, int] = {}
        self.anchor_seqs: list[int] = []
        self.anchor_pos: list[int] = []  # raw: line start; zstd: frame start
        self.anchor_skip: list[int] = []  # zstd: line start inside the frame content
        self.increasing = True
        self.utf8 = True  # every batch so far is UTF-8 (a full read fails on any byte that is not)
        self.stopped = False
        #: What the header's version makes of the rows (`formats`): packed chunk rows
        #: (V0, V1), the seed cut by the last inherited marker (V2+).
        self.packed_rows = True
        self.marker_cut = False
        self.batch_file_start = 0  # zstd: compressed offset of the batch's first frame
        self._first_seq: int | None = None  # first seq of the line last decoded
        self.last_line: bytes | None = None  # the last non-blank record line consumed
        self._ended = False  # the line last decoded ends with a turn/end event
        self._frame_hint: tuple[list[_Frame] | None, int] = (None, 0)  # see `_line_no`
        self._last_report = time.monotonic()
        self._size = 1

    # -- progress --------------------------------------------------------------------

    def _tick(self, done: int) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise IndexCancelled(str(self.path))
        if self.progress is not None:
            now = time.monotonic()
            if now - self._last_report >= PROGRESS_INTERVAL:
                self._last_report = now
                self.progress(min(1.0, done / self._size))

    # -- seq bookkeeping (LogReader._check_seq, for a run of consecutive seqs) -------

    def _check_run(self, seq: int, n: int, line: int) -> None:
        prev = self.last_seq
        if prev is not None and seq <= prev:
            self.increasing = False
        self.contiguous, broken = seq_step(self.event_count, self.contiguous, prev, seq, n)
        self.event_count += n
        self.last_seq = seq + n - 1
        if not broken:
            return
        self.seq_problems += 1
        if self.seq_problems > MAX_SEQ_PROBLEMS:
            return
        self.problems.append(seq_break_problem(prev, seq, line))

    def _check_events(self, events: list[SessionEvent], line: int) -> None:
        for event in events:
            self._check_run(event.seq, 1, line)
            if event.type == TURN_END:
                self._check_turn_end(event, line)

    def _check_turn_end(self, event: SessionEvent, line: int) -> None:
        problem = turn_end_problem(event, line)
        if problem is not None:
            self.problems.append(problem)

    # -- one line, fully decoded (structural, packed or suspicious) -------------------

    def _full_line(self, line: bytes, line_no: int) -> list[SessionEvent] | _Stop | None:
        """Decode one line as LogReader does; None for a blank line."""
        if not line.strip():
            return None
        try:
            obj = loads(line)
        except orjson.JSONDecodeError as exc:
            return _Stop(f"line {line_no} is not valid JSON ({exc})", ProblemKind.CORRUPT)
        try:
            events = expand_record(obj, packed_rows=self.packed_rows)
        except RecordError as exc:
            return _Stop(f"line {line_no}: {exc}", exc.kind)
        return events

    def _anchor(self, seq: int, pos: int, skip: int) -> None:
        self.anchor_seqs.append(seq)
        self.anchor_pos.append(pos)
        self.anchor_skip.append(skip)

    # -- a batch of whole lines -------------------------------------------------------

    def consume(
        self,
        block: Block,
        base: int,
        frames: list[_Frame] | None,
        lines: _FrameLines | None = None,
    ) -> _Halt | None:
        """Index a batch of whole `\\n`-terminated lines.

        Args:
            block: The lines: raw bytes, or decoded zstd frame contents, joined or
                as a list of them in order (each ends with a newline: not joining
                them saves a copy of the whole log).
            base: Raw: file offset of `block[0]`. Zstd: unused.
            frames: Zstd: where each frame's lines are; None for raw.
            lines: Zstd: where `block`'s lines are, if the caller found them already.

        Returns:
            None when every line was consumed, else where and why reading stops;
            the counters then stand just before that line (`at` is an offset in
            the contents joined).
        """
        utf8 = all(map(valid_utf8, block)) if isinstance(block, list) else valid_utf8(block)
        self.utf8 = self.utf8 and utf8
        halt = self._consume(block, base, frames, utf8, lines)
        if isinstance(block, list):
            if halt is None:
                for part in reversed(block):  # the last non-blank line is in the last
                    if self._note_last(part, len(part)):  # part that has one
                        break
                return None
            block = b"".join(block)
        self._note_last(block, len(block) if halt is None else halt.at)
        return halt

    def _consume(
        self,
        block: Block,
        base: int,
        frames: list[_Frame] | None,
        utf8: bool,
        found: _FrameLines | None,
    ) -> _Halt | None:
        size = sum(map(len, block)) if isinstance(block, list) else len(block)
        if utf8:
            # Only where each line starts, for the bulk path: the lines are copied out
            # of the block only if it must read them one by one.
            view: _Lines
            if found is not None:
                view = found
            elif isinstance(block, list):
                view = _FrameLines()
                for part in block:
                    view.add(part)
            else:
                view = _BlockLines(block)
            if self._consume_bulk(block, view, base, frames):
                self._advance(size, len(view), frames)
                return None
            del view
        if isinstance(block, list):
            lines = [line for part in block for line in part.split(b"\n")[:-1]]
        else:
            lines = block.split(b"\n")
            lines.pop()  # the block ends with a newline
        try:
            # Every line is one JSON value with a string type and integer seqs: the
            # common case, checked in C (msgspec) line by line without a Python loop.
            heads = list(map(decode_head, lines))
        except HeadError:
            heads = None  # some line is blank, odd or broken: see `_consume_lines`
        halt = self._consume_lines(lines, heads, base, frames, utf8)
        if halt is None:
            self._advance(size, len(lines), frames)
        return halt

    # -- a batch at once: the common case, with no Python loop over its lines -----------

    def _consume_bulk(
        self,
        block: Block,
        lines: _Lines,
        base: int,
        frames: list[_Frame] | None,
    ) -> bool:
        """Index a batch of UTF-8 lines in which every line is one record with a string
        type and integer seqs, every seq follows the last one, and every structural line
        decodes: True when it did (`_consume_lines` would have given the same state);
        False, having changed nothing, for any other batch (then `_consume_lines`
        indexes it line by line and finds what is wrong, with its exact message).

        msgspec validates the whole batch in one call (`decode_lines`, in C); the seqs
        are checked for the batch at once; only structural lines (the timeline's) and
        packed rows are looked at one by one, and the structural lines that are many
        and large (`step/start`, `tool/call`, `assistant/message`: a V2+ message holds
        its whole stream) decode only the fields the timeline reads.
        """
        n = len(lines)
        # One record per line: `decode_lines` reads values, not lines, so every line
        # must start with `{` and end with `}`. Inside one JSON value a `}` followed by
        # (whitespace and) `{` is a syntax error that `decode_lines` raises, and a
        # newline is never inside a string: each line break is then between two
        # values, and as many values as lines means one per line.
        if not lines.shaped():
            return False
        # A Struct per record kind, in one call; a batch with a type the union does not
        # name is decoded in three (the heads, then its packed rows and light lines).
        records: list[Any] | None
        try:
            records = _decoded_block(_batch_decoder(self.packed_rows), block)
        except HeadError:
            records = None
        heads: list[Any]
        if records is not None:
            heads = records
        else:
            try:
                heads = _decoded_block(_decode_head_lines, block)
            except HeadError:
                return False
        if len(heads) != n:
            return False
        seqs = list(map(_SEQ, heads))
        types: dict[int, str]  # of the special lines only
        if records is not None:
            # Only the special lines (structural, packed) are looked at one by one: the
            # union's kinds tell them apart in C, and only their types are looked up.
            kinds = list(map(type, records))
            odd = list(compress(range(n), map(_SPECIAL_KINDS.__contains__, kinds)))
            types = dict(
                zip(odd, map(_TYPE_OF_KIND.__getitem__, map(kinds.__getitem__, odd)), strict=True)
            )
            if None in seqs and seqs.count(None) != [seqs[i] for i in odd].count(None):
                return False  # a plain line with no integer seq: read line by line
        else:
            every = list(map(_TYPE, heads))
            odd = [
                i
                for i, t, q in zip(range(n), every, seqs, strict=True)
                if q is None or t in _SPECIAL
            ]
            types = {i: every[i] for i in odd}
        packed: list[int] = []
        if self.packed_rows:
            tagged = [i for i in odd if types[i] in _PACKED_STR]
            packed = [i for i in tagged if type(heads[i].seq0) is int]
            if len(tagged) - [heads[i].seq0 for i in tagged].count(msgspec.UNSET) != len(packed):
                # A packed row's tag with a `seq0` that is no integer (null): a packed
                # row to the full reader, which refuses it; the line-by-line path says
                # so. (A `seq0` key on a line of any other type is ignored, by that
                # reader too.)
                return False
        rest = odd
        if packed:
            skip = set(packed)
            rest = [i for i in odd if i not in skip]
        if any(seqs[i] is None for i in rest):
            return False
        # The other odd lines are structural, or plain after all (a packed tag in a
        # version whose rows are not packed).
        structural = [i for i in rest if types[i] in _STRUCTURAL_STR]
        decoded: dict[int, _Structural] = {}
        light = [i for i in structural if types[i] in _LIGHT_TYPES]
        if light and not _light_batch(light, lines, decoded, types, records):
            return False
        for i in structural:
            if i not in decoded:
                item = _structural(lines[i], types[i], self.packed_rows)
                if item is None:
                    return False
                decoded[i] = item
        # Every seq follows the one before it (else `_consume_lines` names the break).
        firsts: list[int] = seqs  # (no None left in it)
        total = n
        if packed:
            rows = _packed_rows(packed, types, lines, records)
            if rows is None:
                return False
            firsts = list(firsts)
            sizes = [1] * n
            for i, (seq0, size) in zip(packed, rows, strict=True):
                firsts[i] = seq0
                sizes[i] = size
            total = sum(sizes)
            sizes.pop()
            if firsts != list(accumulate(sizes, initial=firsts[0])):
                return False
        elif firsts != list(range(firsts[0], firsts[0] + n)):
            return False
        first = firsts[0]
        count = self.event_count
        if first == count and self.contiguous == count:
            self.contiguous = count + total
        elif self.last_seq is None or first != self.last_seq + 1:
            return False
        # Checked: from here on the batch is taken.
        self.event_count = count + total
        self.last_seq = first + total - 1
        self._feed(structural, decoded, frames)
        if odd:
            last = odd[-1]
            item = decoded.get(last)
            self._first_seq = firsts[last]
            self._ended = item is not None and _type_of(item) == TURN_END
        self._bulk_anchors(structural, types, firsts, lines, base, frames)
        return True

    def _feed(
        self, structural: list[int], decoded: dict[int, _Structural], frames: list[_Frame] | None
    ) -> None:
        """Feed a bulk batch's structural lines to the timeline, in file order, with
        the checks `_decoded` makes of a `turn/end` and of an inherited seed marker."""
        builder = self.builder
        feed = builder.feed_fields
        for i in structural:
            item = decoded[i]
            if type(item) is tuple:
                data = item[3]
                if type(data) is _LightData:  # a step/start or tool/call (`_light_item`)
                    if item[0] == "step/start":
                        if builder.count_step():
                            continue
                    elif builder.add_tool(data.name):
                        continue
                    item = (item[0], item[1], item[2], _light_dict(data))  # outside a turn
                feed(*item)
                continue
            assert isinstance(item, SessionEvent)
            if item.type == TURN_END:
                self._check_turn_end(item, self._line_no(i, frames))
            self.builder.feed_one(item)
            if self.marker_cut and formats.is_inherited_marker(item.type, item.data):
                self._inherited_marker(item.seq)

    def _bulk_anchors(
        self,
        structural: list[int],
        types: dict[int, str],
        firsts: list[int],
        lines: _Lines,
        base: int,
        frames: list[_Frame] | None,
    ) -> None:
        """Anchors as `_consume_lines` sets them: at each turn/start and turn/end line,
        and (raw logs) at the first line at least `ANCHOR_SPACING` bytes past the last;
        the offset past each `turn/end` line of a raw log."""
        turn_lines = [i for i in structural if types[i] in _TURN_TYPES_STR]
        starts = lines.starts
        if frames is not None:
            last = self._first_seq
            for i in turn_lines:
                self._first_seq = firsts[i]
                self._anchor_line(base, starts[i], frames, i)
            self._first_seq = last
            return
        # From one turn line to the next, the lines that start an anchor by spacing
        # are found by bisection: most such stretches of a big log hold none.
        n = len(lines)
        next_anchor = self.anchor_pos[-1] + ANCHOR_SPACING if self.anchor_pos else 0
        lo = 0
        for stop in (*turn_lines, n):
            while True:
                j = bisect.bisect_left(starts, next_anchor - base, lo, stop)
                if j >= stop:
                    break
                at = base + starts[j]
                self._anchor(firsts[j], at, 0)
                next_anchor = at + ANCHOR_SPACING
                lo = j + 1
            if stop == n:
                break
            at = base + starts[stop]
            self._anchor(firsts[stop], at, 0)
            next_anchor = at + ANCHOR_SPACING
            if types[stop] == TURN_END and lines[stop].startswith(TURN_END_LINE):
                self.end_offsets[firsts[stop]] = base + starts[stop + 1]
            lo = stop + 1

    def _line_starts(self, lines: list[bytes]) -> list[int]:
        """Block offset of each line's start, and the block's length last."""
        return [0, *accumulate(map(_PLUS_ONE, map(len, lines)))]

    def _consume_lines(
        self,
        lines: list[bytes],
        heads: list[RecordHead] | None,
        base: int,
        frames: list[_Frame] | None,
        utf8: bool = True,
    ) -> _Halt | None:
        """Index the batch's lines. `heads` are their decoded `RecordHead`s, or None
        when some line did not decode into one (then each line is decoded alone).
        Unless the batch is `utf8`, a line that is not is decoded whole, as the full
        reader decodes it (msgspec does not check the strings it skips)."""
        n = len(lines)
        starts = self._line_starts(lines)
        raw = frames is None
        bad = frozenset() if utf8 else frozenset(compress(range(n), map(_not_utf8, lines)))
        if heads is not None:
            types = list(map(_TYPE, heads))
            seqs = list(map(_SEQ, heads))
            # The lines that need more than a seq check: structural events (the
            # timeline's), packed rows (their members are counted) and any line
            # without a plain seq. The others are checked run by run.
            odd = [
                i
                for i, t, q in zip(range(n), types, seqs, strict=True)
                if q is None or t in _SPECIAL or i in bad
            ]
        else:
            types, seqs, odd = [], [], list(range(n))
        next_anchor = self.anchor_pos[-1] + ANCHOR_SPACING if self.anchor_pos else 0
        prev = 0
        for i in (*odd, n):
            if i > prev:
                next_anchor = self._plain_run(seqs, prev, i, starts, base, raw, next_anchor, frames)
            if i == n:
                break
            prev = i + 1
            line = lines[i]
            at = starts[i]
            line_no = self._line_no(i, frames)
            head = heads[i] if heads is not None else None
            if head is None:
                if not line.strip():
                    continue  # a blank line: LogReader skips it
                try:
                    head = decode_head(line)
                except HeadError:
                    head = None
            if i in bad:
                stop = self._decoded(self._full_line(line, line_no), line_no)
            elif (
                self.packed_rows
                and head is not None
                and head.seq0 is not msgspec.UNSET
                and head.type in _PACKED_STR
            ):
                stop = self._packed(line, line_no, head.type)
            elif head is not None and head.type not in _STRUCTURAL_STR:
                # A plain event alone (a batch with an odd line in it).
                if head.seq is None:
                    stop = self._decoded(self._full_line(line, line_no), line_no)
                else:
                    self._first_seq = head.seq
                    self._check_run(head.seq, 1, line_no)
                    stop = None
                    if raw and base + at >= next_anchor:
                        self._anchor(head.seq, base + at, 0)
                        next_anchor = base + at + ANCHOR_SPACING
                    continue
            else:
                stop = self._decoded(self._full_line(line, line_no), line_no)
            if stop is not None:
                return _Halt(at, i, stop)
            if self._first_seq is None:
                continue
            kind = head.type if head is not None else None
            if kind in _TURN_TYPES_STR or (raw and base + at >= next_anchor):
                self._anchor_line(base, at, frames, i)
                if raw:
                    next_anchor = base + at + ANCHOR_SPACING
            if raw and self._ended and line.startswith(TURN_END_LINE):
                self._turn_end_offset(base + starts[i + 1])
        return None

    def _plain_run(
        self,
        seqs: list[int | None],
        lo: int,
        hi: int,
        starts: list[int],
        base: int,
        raw: bool,
        next_anchor: int,
        frames: list[_Frame] | None,
    ) -> int:
        """Check the seqs of the plain lines `lo` to `hi` (exclusive), one event each;
        anchor a raw log's lines every `ANCHOR_SPACING` bytes. Returns the next anchor
        position."""
        count = self.event_count
        n = hi - lo
        run = seqs[lo:hi]
        if run[0] == count and self.contiguous == count and run == list(range(count, count + n)):
            self.event_count = self.contiguous = count + n
            self.last_seq = count + n - 1
        elif (
            self.last_seq is not None
            and run[0] == self.last_seq + 1
            and run == list(range(run[0], run[0] + n))
        ):
            self.event_count = count + n  # still consecutive after an earlier break
            self.last_seq = run[-1]
        else:
            for k in range(lo, hi):
                seq = seqs[k]
                assert seq is not None
                self._check_run(seq, 1, self._line_no(k, frames))
        if raw:
            while True:
                target = next_anchor - base
                k = bisect.bisect_left(starts, target, lo, hi)
                if k >= hi:
                    break
                seq = seqs[k]
                assert seq is not None
                self._anchor(seq, base + starts[k], 0)
                next_anchor = base + starts[k] + ANCHOR_SPACING
                lo = k + 1
        return next_anchor

    def _note_last(self, block: bytes, end: int) -> bool:
        """Keep the last non-blank line of `block[:end]` (whole lines consumed): the
        log's last event is in it, for `SessionSummary.last_activity`. False if it
        has none."""
        while end > 0:
            start = block.rfind(b"\n", 0, end - 1) + 1
            line = block[start : end - 1]
            if line.strip():
                self.last_line = line
                return True
            end = start
        return False

    @property
    def last_time(self) -> float | None:
        """Epoch ms of the last event consumed, None if there is none."""
        if not self.event_count or self.last_line is None:
            return None
        try:
            return record_last_time(loads(self.last_line), packed_rows=self.packed_rows)
        except orjson.JSONDecodeError:
            return None

    def _line_no(self, index: int, frames: list[_Frame] | None) -> int:
        """LogReader's line number of the batch's line `index` (0-based)."""
        if frames is None:
            return self.line + index + 1
        # Asked in increasing order within a batch: walk on from the last frame found
        # instead of searching (every structural line of a zstd batch asks).
        hint_frames, k = self._frame_hint
        if hint_frames is not frames or frames[k].first_line > index:
            k = _frame_of(frames, index)
        else:
            while k + 1 < len(frames) and frames[k + 1].first_line <= index:
                k += 1
        self._frame_hint = (frames, k)
        frame = frames[k]
        return frame.line_base + (index - frame.first_line) + 1

    def _advance(self, size: int, lines: int, frames: list[_Frame] | None) -> None:
        if frames is None:
            self.offset += size
            self.line += lines
        else:
            self.offset = frames[-1].file_end
            self.line = frames[-1].line_base + 1

    def _anchor_line(self, base: int, at: int, frames: list[_Frame] | None, index: int) -> None:
        """Anchor the line just decoded (at block offset `at`, batch line `index`)."""
        first = self._first_seq
        if first is None:
            return
        if frames is None:
            self._anchor(first, base + at, 0)
            return
        k = _frame_of(frames, index)
        frame_start = frames[k - 1].file_end if k else self.batch_file_start
        content_start = frames[k - 1].content_end if k else 0
        self._anchor(first, frame_start, at - content_start + frames[k].shift)

    def _turn_end_offset(self, end: int) -> None:
        if self.last_seq is not None:
            self.end_offsets[self.last_seq] = end

    def _packed(self, line: bytes, line_no: int, tag: str) -> _Stop | None:
        quick = packed_members(line, tag)
        if quick is not None:
            self._first_seq = quick[0]
            self._ended = False
            self._check_run(quick[0], quick[1], line_no)
            return None
        try:
            obj = loads(line)
        except orjson.JSONDecodeError as exc:
            return _Stop(f"line {line_no} is not valid JSON ({exc})", ProblemKind.CORRUPT)
        n = packed_count(obj)
        if n is None:
            try:
                events = expand_record(obj)
            except RecordError as exc:
                return _Stop(f"line {line_no}: {exc}", exc.kind)
            return self._decoded(events, line_no)
        seq0 = obj["seq0"]
        self._first_seq = seq0
        self._ended = False
        self._check_run(seq0, n, line_no)
        return None

    def _decoded(self, result: list[SessionEvent] | _Stop | None, line_no: int) -> _Stop | None:
        """Take a fully decoded line: check its seqs, feed the timeline."""
        if isinstance(result, _Stop):
            return result
        if not result:
            self._first_seq = None
            return None
        self._first_seq = result[0].seq
        self._ended = result[-1].type == TURN_END
        self._check_events(result, line_no)
        self.builder.feed(result)
        if self.marker_cut:
            for event in result:
                if formats.is_inherited_marker(event.type, event.data):
                    self._inherited_marker(event.seq)
        return None

    def _inherited_marker(self, seq: int) -> None:
        """A V2+ `session/end-seed {"inherited": true}` (LogReader._inherited_marker)."""
        header = self.header
        if header is None or not header.is_seeded:
            return  # the full reader names the odd marker; the summary has it too
        self.header = dataclasses.replace(header, seed_length=seq)
        self.builder.seed_length = seq

    def consume_long(self, pos: int, line_end: int, first: bytes) -> _Stop | None:
        """Index the one raw line at `pos`–`line_end` (its newline), too long to hold:
        decoded bounded (`longline`: its long strings cut to a prefix, everything the
        index needs exact). `first` is its first bytes."""
        place = LinePlace(self.path, False, pos)
        record = next(long_lines(place, line_end + 1), None)
        if not isinstance(record, LongRecord):
            record = LongRecord(None, "unreadable")
        stop = self.consume_record(record, (pos, 0))
        if stop is not None:
            return stop
        if self._first_seq is not None and self._ended and first.startswith(TURN_END_LINE):
            self._turn_end_offset(line_end + 1)
        self.offset = line_end + 1
        self.line += 1
        return None

    def consume_record(self, record: LongRecord, anchor: tuple[int, int]) -> _Stop | None:
        """Take one long line decoded bounded (the next line, `self.line + 1`); anchor
        it at `anchor` (file offset; zstd: frame offset and the line's place in it)."""
        line_no = self.line + 1
        if record.error is not None:
            return _Stop(f"line {line_no} is not valid JSON ({record.error})", ProblemKind.CORRUPT)
        try:
            events = expand_record(record.value, packed_rows=self.packed_rows)
        except RecordError as exc:
            return _Stop(f"line {line_no}: {exc}", exc.kind)
        stop = self._decoded(events, line_no)
        if stop is not None:
            return stop
        if self._first_seq is not None:
            self._anchor(self._first_seq, *anchor)
        # The last line for `last_time`: the bounded value says the same of its time.
        self.last_line = orjson.dumps(record.value)
        return None

    # -- stopping (LogReader._stop_at / _classify_stuck) ------------------------------

    def stop(self, stop: _Stop, line_no: int, rest_has_turn_end: bool) -> None:
        self.stopped = True
        self.line = line_no
        seq = self.last_seq + 1 if self.last_seq is not None else 0
        problem = bad_record_problem(
            stop.message,
            stop.kind,
            torn_possible=stop.torn_possible,
            turn_end_follows=rest_has_turn_end,
            next_seq=seq,
            line=line_no,
        )
        if problem.kind is ProblemKind.TORN_TAIL:
            self.tail_problem = problem
            return
        self.problems = [p for p in self.problems if p.kind is not stop.kind or p.line != line_no]
        self.problems.append(problem)

    def set_tail(self, message: str | None) -> None:
        if message is None:
            self.tail_problem = None
            return
        seq = self.last_seq + 1 if self.last_seq is not None else 0
        self.tail_problem = LogProblem(ProblemKind.TORN_TAIL, message, seq=seq, line=self.line + 1)

    # -- the header -------------------------------------------------------------------

    def take_header(self, line: bytes) -> bool:
        """LogReader._consume_header: False if the log cannot be read as a session."""
        self.line += 1
        self.header_line = line
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
        self.problems.extend(problems)
        self.header = header
        if header is None or not formats.known(header.version):
            self.stopped = True  # no session, or a version whose rows are not read
            return False
        self.packed_rows = formats.packed_rows(header.version)
        self.marker_cut = formats.seeded_by_marker(header.version)
        self.builder = TimelineBuilder(header.seed_length or 0)
        return True


# -- reading the file ----------------------------------------------------------------


def _scan_rest_for_turn_end(fd: int, start: int, size: int) -> bool:
    """True if the file from `start` holds a `turn/end` record marker."""
    pos = start
    overlap = TURN_END_OVERLAP
    while pos < size:
        chunk = os.pread(fd, BLOCK_SIZE, pos)
        if not chunk:
            return False
        if has_turn_end(chunk):
            return True
        if len(chunk) <= overlap:
            return False
        pos += len(chunk) - overlap
    return False


def _index_raw(ix: _Indexer, fd: int, size: int, *, split: bool = True) -> bool:
    """Index a raw log; False when a split's halves did not meet (`ix` is then spent:
    index again with a fresh one and `split=False`)."""
    ix._size = max(size, 1)
    # At most a header's worth (see `records.MAX_HEADER_LINE`): a longer first line
    # is a bad header, which the full reader names (`_from_full_read`).
    first = _pread_all(fd, min(size, MAX_HEADER_LINE + 1), 0)
    nl = first.find(b"\n")
    if nl < 0 and len(first) > MAX_HEADER_LINE:
        return True
    if size == 0:
        ix.problems.append(LogProblem(ProblemKind.EMPTY, "the log file is empty"))
        return True
    if nl < 0:
        # Only a header line in progress: LogReader keeps it as a torn tail.
        ix.set_tail(torn_line_message(len(first)))
        return True
    if not ix.take_header(first[:nl]):
        return True
    ix.offset = nl + 1
    if split:
        joined = _index_raw_split(ix, fd, size, first[:nl])
        if joined is not None:
            return joined
    _index_raw_lines(ix, fd, nl + 1, size)
    return True


def _index_raw_lines(
    ix: _Indexer, fd: int, pos: int, size: int, *, limit: int | None = None
) -> None:
    """Index the records from file offset `pos` (a line start) to the end, or only to
    `limit` (a line start too: the lines before it, with no tail check)."""
    end_at = size if limit is None else limit
    while pos < end_at:
        ix._tick(pos)
        chunk = os.pread(fd, min(ix.block_size, end_at - pos), pos)
        if not chunk:
            break
        end = chunk.rfind(b"\n") + 1
        if end == 0:
            if pos + len(chunk) < size:
                # A single line longer than a block: find its end in bounded windows,
                # and read it whole only if its first block could begin a record
                # (a run of NULs after a crash, or other junk, is not held in memory).
                # Its first block is not held meanwhile: only the head checked.
                head, read = chunk[:PREFIX_CHECK], len(chunk)
                del chunk
                line_end = _find_newline(fd, pos + read, end_at)
                if line_end < 0:
                    ix.set_tail(torn_line_message(size - pos))
                    return
                why = _prefix_error(head)
                if why is not None:
                    bad_line = ix.line + 1
                    rest = _scan_rest_for_turn_end(fd, line_end + 1, size)
                    ix.offset = pos
                    stop = _Stop(f"line {bad_line} is not valid JSON ({why})", ProblemKind.CORRUPT)
                    ix.stop(stop, bad_line, rest)
                    return
                if line_end - pos >= LONG_LINE:
                    refused = ix.consume_long(pos, line_end, head)
                    if refused is not None:
                        bad_line = ix.line + 1
                        rest = _scan_rest_for_turn_end(fd, line_end + 1, size)
                        ix.offset = pos
                        ix.stop(refused, bad_line, rest)
                        return
                    pos = line_end + 1
                    continue
                chunk = _pread_all(fd, line_end + 1 - pos, pos)
                end = len(chunk)
            if end == 0:
                ix.set_tail(torn_line_message(len(chunk)))
                return
        block = chunk[:end]
        halt = ix.consume(block, pos, None)
        if halt is not None:
            bad_line = ix.line + halt.index + 1
            # LogReader's "rest" is everything after the bad line, torn tail included.
            line_end = block.find(b"\n", halt.at) + 1
            rest = _scan_rest_for_turn_end(fd, pos + line_end, size)
            ix.offset = pos + halt.at
            ix.stop(halt.stop, bad_line, rest)
            return
        pos += end
        del chunk, block  # before the next block is read: one block held at a time
    if limit is not None:
        return
    ix.set_tail(None)
    if pos < size:
        ix.set_tail(torn_line_message(size - pos))


#: Raw logs from this size are indexed in two halves at once, the second half in the
#: process pool, when the pool can be used (a headless command, or the app's pool
#: started before Textual).
SPLIT_THRESHOLD: Final = 32 << 20


def _split_point(fd: int, start: int, size: int) -> tuple[int, int] | None:
    """(offset just past the first `turn/end` line at or after `start`, that line's
    seq), or None if there is none (as dsh writes one) or it does not decode."""
    pos = start
    marker = b"\n" + TURN_END_LINE
    while pos < size:
        chunk = os.pread(fd, 1 << 20, pos)
        if not chunk:
            return None
        k = chunk.find(marker)
        if k >= 0:
            data = _read_line(fd, pos + k + 1, size)  # from the line's start, past its end
            nl = data.find(b"\n")
            if nl < 0:
                return None
            line = data[: nl + 1]
            try:
                seq = orjson.loads(line).get("seq")
            except (orjson.JSONDecodeError, AttributeError):
                return None
            if type(seq) is not int:
                return None
            return pos + k + 1 + len(line), seq
        pos += max(len(chunk) - len(marker), 1)
    return None


def _read_line(fd: int, pos: int, size: int) -> bytes:
    """Bytes from `pos` through the first newline after it (or to the end)."""
    parts: list[bytes] = []
    while pos < size:
        chunk = os.pread(fd, BLOCK_SIZE, pos)
        if not chunk:
            break
        parts.append(chunk)
        pos += len(chunk)
        if b"\n" in chunk:
            break
    return b"".join(parts)


def _index_raw_split(ix: _Indexer, fd: int, size: int, header_line: bytes) -> bool | None:
    """Index a big raw log's records (`ix` has taken its header, `ix.offset` is past
    it) with a pool worker taking the second half: True when `ix` holds the result;
    None when the log is not split (`ix` is untouched: index on serially); False when
    the halves do not meet (the caller then indexes it again with a fresh `_Indexer`).

    The worker starts after a `turn/end` line past the middle, assuming the first
    half is clean: the seq after that line comes next and no turn is open. The halves
    are joined only when both are free of problems and the first half ends exactly as
    the worker assumed, so the result is always the serial one.
    """
    if size < SPLIT_THRESHOLD:
        return None
    pool = task_runner()
    if pool is None:
        return None
    found = _split_point(fd, size // 2, size)
    if found is None or found[0] >= size:
        return None
    split, end_seq = found
    task = (str(ix.path), header_line, split, end_seq, ix.block_size)
    try:
        future = pool.submit(_second_half_state, task)
    except Exception:  # a broken or stopped pool: index serially
        return None
    header_problems = list(ix.problems)  # e.g. a missing version: both halves have them
    try:
        ix._size = max(split, 1)
        _index_raw_lines(ix, fd, ix.offset, size, limit=split)
    except BaseException:  # cancelled (or worse): the second half is not waited for
        future.cancel()  # (a task that has started runs on; its answer is dropped)
        raise
    if not _first_half_clean(ix, split, end_seq, header_problems):
        future.cancel()  # the halves cannot be joined: do not wait for the second
        return False
    try:
        state = future.result()
    except Exception:  # a dead worker, a broken pool: index serially
        discard_broken(pool)
        return False
    return _join(ix, state, split, end_seq, header_problems)


#: What a pool worker sends back of the second half's `_Indexer` (see `_half_state`).
_HalfState = tuple[Any, ...]


def _second_half_state(task: tuple[str, bytes, int, int, int]) -> _HalfState | None:
    """In a pool worker: index the records of `path` from `split` on, as a clean first
    half ending with the `turn/end` of seq `end_seq` would leave the indexer."""
    path, header_line, split, end_seq, block_size = task
    later = _later_half(path, header_line, split, end_seq, block_size)
    if later is None:
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        _index_raw_lines(later, fd, split, os.fstat(fd).st_size)
    finally:
        os.close(fd)
    return _half_state(later)


def _later_half(
    path: str, header_line: bytes, split: int, end_seq: int, block_size: int
) -> _Indexer | None:
    """An indexer for the records from `split` on, set as a clean first half ending with
    the `turn/end` of seq `end_seq` would leave it; None if the header does not parse."""
    later = _Indexer(Path(path), None, None, block_size)
    if not later.take_header(header_line):
        return None
    later.offset = split
    later.line = 0  # its lines are counted from the split (the header was counted there)
    later.event_count = later.contiguous = end_seq + 1
    later.last_seq = end_seq
    later.builder = later.builder.starting_at(end_seq + 1)
    return later


def _half_state(ix: _Indexer) -> _HalfState:
    """What the joining process needs of a half's `_Indexer` (picklable)."""
    return (
        ix.builder,
        (ix.event_count, ix.contiguous, ix.last_seq, ix.offset, ix.line),
        (ix.anchor_seqs, ix.anchor_pos, ix.anchor_skip),
        ix.end_offsets,
        (ix.increasing, ix.utf8),
        ix.tail_problem,
        ix.problems,
        ix.stopped,
        ix.last_line,
    )


def _first_half_clean(
    ix: _Indexer, split: int, end_seq: int, header_problems: list[LogProblem]
) -> bool:
    """True if the first half ends where the second half assumed: no problem beyond
    the header's, read to `split`, seq `end_seq` last and every seq contiguous."""
    return (
        ix.problems == header_problems
        and not ix.stopped
        and ix.tail_problem is None
        and ix.offset == split
        and (ix.event_count, ix.contiguous, ix.last_seq) == (end_seq + 1, end_seq + 1, end_seq)
    )


def _join(
    ix: _Indexer,
    state: _HalfState | None,
    split: int,
    end_seq: int,
    header_problems: list[LogProblem],
) -> bool:
    """Take the second half's state into `ix` (the first half, read up to `split`),
    if the two meet exactly: both free of problems beyond the header's, and the
    first half ending where the second assumed (seq `end_seq` last, no turn open)."""
    if not isinstance(state, tuple) or len(state) != 9:
        return False
    if not _first_half_clean(ix, split, end_seq, header_problems):
        return False
    builder, counts, anchors, end_offsets, flags, tail, problems, stopped, last_line = state
    if ix.marker_cut and builder.seed_length == 0:
        # V2+: the later half starts past the seed, so it met no inherited marker: the
        # cut is the one the first half read (a marker past the split keeps its own
        # cut, which differs, and the halves are not joined)
        builder.seed_length = ix.builder.seed_length
    if problems != header_problems or stopped or not ix.builder.continue_with(builder):
        return False
    ix.event_count, ix.contiguous, ix.last_seq, ix.offset, lines = counts
    ix.anchor_seqs.extend(anchors[0])
    ix.anchor_pos.extend(anchors[1])
    ix.anchor_skip.extend(anchors[2])
    ix.end_offsets.update(end_offsets)
    ix.increasing = ix.increasing and flags[0]
    ix.utf8 = ix.utf8 and flags[1]
    if tail is not None:
        tail = LogProblem(tail.kind, tail.message, seq=tail.seq, line=tail.line + ix.line)
    ix.tail_problem = tail
    ix.line += lines
    if last_line is not None:
        ix.last_line = last_line
    return True


def _pread_all(fd: int, n: int, pos: int) -> bytes:
    """`n` bytes from `pos` (fewer only at the end of the file)."""
    parts: list[bytes] = []
    while n > 0:
        chunk = os.pread(fd, min(n, BLOCK_SIZE), pos)
        if not chunk:
            break
        parts.append(chunk)
        pos += len(chunk)
        n -= len(chunk)
    return b"".join(parts)


def _find_newline(fd: int, pos: int, end: int) -> int:
    """File offset of the first newline in `[pos, end)`, -1 if none (bounded reads)."""
    while pos < end:
        chunk = os.pread(fd, min(NEWLINE_WINDOW, end - pos), pos)
        if not chunk:
            return -1
        k = chunk.find(b"\n")
        if k >= 0:
            return pos + k
        pos += len(chunk)
    return -1


def _prefix_error(prefix: bytes) -> str | None:
    """The error orjson gives for any line that starts with `prefix`, when the prefix
    alone proves it (an error well before the prefix ends, which no later byte can
    undo); None when the whole line must be decoded to tell."""
    try:
        orjson.loads(prefix)
    except orjson.JSONDecodeError as exc:
        why = str(exc)
        chars = len(prefix.decode("utf-8", "ignore"))  # orjson counts characters
        if exc.pos < chars - 8 and not any(
            word in why
            for word in ("end of data", "UTF-8", "surrogate", "infinity", "depth", "allocate")
        ):  # ("failed to allocate memory": orjson's word for a cut-off deep nesting)
            return why
    return None


#: The longest frame header zstd writes (magic included).
_FRAME_HEAD_MAX: Final = 18
#: The most content `_FrameReader` decodes in one call (a bigger frame goes a window at
#: a time: its header's size could be a lie, and the buffer is allocated up front).
WHOLE_FRAME_MAX: Final = 1 << 24


class _FrameReader:
    """Reads one zstd frame at a time from a file, with a bounded window."""

    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.size = size
        self.dctx = zstandard.ZstdDecompressor()
        self.buf = b""
        self.buf_pos = 0  # file offset of buf[0]
        #: Bytes read at a time: from 64 KB (a turn's read needs a frame or two), doubled
        #: to 1 MiB while the reads go on (a whole log's pass).
        self.chunk = 1 << 16

    def _ensure(self, pos: int, want: int) -> memoryview:
        """A view of the file from `pos`, at least `want` bytes if the file has them."""
        have = self.buf_pos + len(self.buf) - pos
        if pos < self.buf_pos or have < want:
            self.buf = os.pread(self.fd, max(want, self.chunk), pos)
            self.buf_pos = pos
            self.chunk = min(self.chunk * 2, 1 << 20)
        return memoryview(self.buf)[pos - self.buf_pos :]

    def frame(self, pos: int, cap: int | None = None) -> tuple[bytes, int] | _BigFrame | str | None:
        """`(content, compressed size)` of the frame at `pos`; a `_BigFrame` (its content
        not kept) when that content passes `cap` bytes; an error message for a frame
        that does not decode; None for an incomplete last frame."""
        whole = self._whole_frame(pos, cap)
        if whole is not None:
            return whole
        dobj = self.dctx.decompressobj()
        parts: list[bytes] = []
        kept = 0
        last = b""
        big = False
        # Compressed bytes fed at a time: from 1 KB, doubled while the output stays
        # small, halved once it passes 1 MiB (repeated text inflates 10,000:1: a whole
        # 4 MiB window could come out as gigabytes at once).
        window = 1 << 10
        start = pos
        while True:
            view = self._ensure(pos, window)[:window]
            if not len(view):
                return None
            try:
                got = dobj.decompress(view)
            except zstandard.ZstdError as exc:
                return self._error_text(start, exc)
            if got:
                last = got[-1:]
                if not big:
                    parts.append(got)
                    kept += len(got)
                    if cap is not None and kept > cap:
                        big, parts = True, []  # too big to hold: only find where it ends
            if dobj.eof:
                used = pos - start + len(view) - len(dobj.unused_data)
                if big:
                    return _BigFrame(used, last == b"\n")
                return b"".join(parts), used
            pos += len(view)
            if pos >= self.size:
                return None
            grow = len(got) <= 1 << 20
            window = min(window * 2, 1 << 22) if grow else max(256, window // 2)

    def _stated_size(self, pos: int) -> int | None:
        """The content size the header of the frame at `pos` states (-1: none stated);
        None when there is no frame header there (a header cut off by the end of the
        file too)."""
        try:
            return int(
                zstandard.frame_content_size(
                    bytes(self._ensure(pos, _FRAME_HEAD_MAX)[:_FRAME_HEAD_MAX])
                )
            )
        except zstandard.ZstdError:
            return None

    def _error_text(self, pos: int, exc: zstandard.ZstdError) -> str:
        """What is wrong with the frame at `pos`, in the words the full reader gives
        (`records.zstd_frames`): it feeds the decoder every byte from the frame on in
        one call, and fed a window at a time the same bad frame can fail with other
        words ("Destination buffer is too small" for "Data corruption detected"). The
        file is mapped, not read; a frame with no content size, or one bigger than
        `WHOLE_FRAME_MAX`, keeps the windowed words (its output would be unbounded)."""
        stated = self._stated_size(pos)
        if stated is None or not 0 <= stated <= WHOLE_FRAME_MAX:
            return str(exc)
        try:
            with (
                mmap.mmap(self.fd, self.size, access=mmap.ACCESS_READ) as mapped,
                memoryview(mapped) as rest,
            ):
                self.dctx.decompressobj().decompress(rest[pos:])
        except zstandard.ZstdError as again:
            return str(again)
        except (OSError, ValueError):
            pass  # (a file that cannot be mapped)
        return str(exc)

    def _whole_frame(self, pos: int, cap: int | None) -> tuple[bytes, int] | None:
        """The frame at `pos` decoded in one call, as `frame` would give it, when its
        header states a content size of at most `cap` (or `WHOLE_FRAME_MAX`) and its
        blocks' headers say where it ends within the file; None otherwise, and for any
        frame that does not decode exactly so (`frame` then reads it a window at a
        time, and says what is wrong the usual way). dsh writes every frame with its
        content size: one call of the decoder per frame, into a buffer of that size,
        takes about a tenth less than feeding it windows (145 against 159 ms for the
        bench's 40 MB V5 log, the minimum of 11 runs)."""
        limit = WHOLE_FRAME_MAX if cap is None else min(cap, WHOLE_FRAME_MAX)
        content = self._stated_size(pos)
        if content is None or not 0 < content <= limit:
            return None
        end = _frame_end(self, pos)  # (its blocks' headers walked, nothing decoded)
        if end is None:
            return None
        at = end - pos
        view = self._ensure(pos, at)
        try:
            out = self.dctx.decompress(view[:at])
        except zstandard.ZstdError:
            return None
        return (out, at) if len(out) == content else None


class _BigFrame(msgspec.Struct, frozen=True):
    """A zstd frame whose content is too big to hold (`_FrameReader.frame`)."""

    used: int  # its compressed size
    ends_with_newline: bool


def _frame_has_turn_end(path: Path, pos: int, end: int, start: int) -> bool:
    """True if the content of the zstd frame at compressed offsets `pos`–`end`, from
    content offset `start` on, holds a `turn/end` member (`has_turn_end`): decoded a
    window at a time (`LinePlace.windows`: a frame can inflate to hundreds of MB)."""
    tail = b""  # the end of the window before (a member cut between two)
    for window in LinePlace(path, True, pos, 0).windows(start, limit=end):
        if has_turn_end(tail + window):
            return True
        tail = window[-TURN_END_OVERLAP:]
    return False


def _index_big_frame(ix: _Indexer, fd: int, pos: int, used: int, size: int) -> bool:
    """Index the lines of the frame at `pos` without holding its content: batches of
    short lines as `_Indexer.consume` takes them, a long line decoded bounded
    (`longline`). False if reading stopped."""
    frame_no = ix.line
    end = pos + used
    ix.batch_file_start = pos
    block: list[bytes] = []
    block_len = 0
    block_start = 0  # offset in the frame's content of the block's first line
    done = 0  # lines of the frame consumed before the block

    def flush() -> bool:
        nonlocal block, block_len, block_start, done
        if not block:
            return True
        data = b"".join(block)
        lines = len(block)
        frames = [_Frame(0, frame_no + done, len(data), end, block_start)]
        halt = ix.consume(data, 0, frames)
        if halt is not None:
            line_end = data.find(b"\n", halt.at) + 1
            # LogReader's "rest": the frame's later lines (this block's, then the
            # frame's past it), then the compressed bytes after the frame.
            rest = (
                has_turn_end(data, line_end)
                or _frame_has_turn_end(ix.path, pos, end, block_start + len(data))
                or _scan_rest_for_turn_end(fd, end, size)
            )
            ix.offset = pos
            ix.stop(halt.stop, frame_no + done + halt.index + 1, rest)
            return False
        done += lines
        block_start += len(data)
        block, block_len = [], 0
        return True

    for item in long_lines(LinePlace(ix.path, True, pos, 0), end):
        if isinstance(item, bytes):
            block.append(item + b"\n")
            block_len += len(item) + 1
            if block_len >= ix.block_size and not flush():
                return False
            continue
        if not flush():
            return False
        ix.line = frame_no + done
        stop = ix.consume_record(item, (pos, block_start))
        if stop is not None:
            after = block_start + item.length + 1  # the frame's lines past the long one
            rest = _frame_has_turn_end(ix.path, pos, end, after) or _scan_rest_for_turn_end(
                fd, end, size
            )
            ix.offset = pos
            ix.stop(stop, frame_no + done + 1, rest)
            return False
        done += 1
        block_start += item.length + 1
    if not flush():
        return False
    ix.line = frame_no + 1
    ix.offset = end
    return True


def _index_zstd(
    ix: _Indexer, fd: int, size: int, *, start: int = 0, split_at: int | None = None
) -> tuple[int, int] | None:
    """Index a zstd log's frames from compressed offset `start` (0: the header frame).

    With `split_at`, stop after the first frame that ends at or past it with a
    `turn/end` line (see `_index_zstd_split`) and return (where it ends, that line's
    seq); otherwise (and if reading stops before) return None.
    """
    ix._size = max(size if split_at is None else split_at, 1)  # progress: of this half
    if size == 0:
        ix.problems.append(LogProblem(ProblemKind.EMPTY, "the log file is empty"))
        return None
    reader = _FrameReader(fd, size)
    pos = start
    frames: list[_Frame] = []
    # Where the batch's lines are, found a frame at a time (each frame's line count
    # comes with them); the frames are not joined (`_Indexer.consume`).
    lines = _FrameLines()
    batch = lines.parts
    batch_bytes = 0

    def flush() -> bool:
        """Index the collected frames; False if reading stopped."""
        nonlocal batch, frames, lines, batch_bytes
        if not batch:
            return True
        halt = ix.consume(batch, 0, frames, lines)
        if halt is not None:
            block = b"".join(batch)
            k = _frame_of(frames, halt.index)
            frame = frames[k]
            bad_line = frame.line_base + halt.index - frame.first_line + 1
            line_end = block.find(b"\n", halt.at) + 1
            # LogReader's "rest": the frame's later lines, then the compressed bytes after it.
            rest = has_turn_end(block, line_end, frame.content_end)
            if not rest:
                rest = _scan_rest_for_turn_end(fd, frame.file_end, size)
            ix.offset = frames[k - 1].file_end if k else ix.batch_file_start
            ix.stop(halt.stop, bad_line, rest)
            return False
        lines = _FrameLines()
        batch, frames, batch_bytes = lines.parts, [], 0
        return True

    def corrupt(message: str) -> None:
        ix.stop(_Stop(message, ProblemKind.CORRUPT, False), ix.line + 1, False)

    while pos < size:
        ix._tick(pos)
        got = reader.frame(pos, None if ix.header is None else ix.block_size)
        if isinstance(got, _BigFrame) and got.ends_with_newline:
            # A frame too big to hold (a 200 MB tool result): read it line by line.
            if not flush() or not _index_big_frame(ix, fd, pos, got.used, size):
                return None
            pos += got.used
            continue
        if isinstance(got, _BigFrame):
            if not flush():
                return None
            corrupt(f"zstd frame {ix.line + 1} does not end with a newline")
            return None
        if got is None or isinstance(got, str) or (got[0] and not got[0].endswith(b"\n")):
            if not flush():
                return None
            if got is None:
                ix.set_tail(torn_frame_message(size - pos))
            elif isinstance(got, str):
                corrupt(f"zstd frame {ix.line + 1} does not decode ({got})")
            else:
                corrupt(f"zstd frame {ix.line + 1} does not end with a newline")
            return None
        content, used = got
        if ix.header is None:
            # The header frame (LogReader numbers zstd lines by frame: see _Frame).
            if not content:
                ix.line += 1  # an empty frame still counts
                pos += used
                ix.offset = pos
                continue
            frame_no = ix.line
            nl = content.find(b"\n")
            if not ix.take_header(content[:nl]):
                return None
            if nl + 1 < len(content):
                rest_lines = content[nl + 1 :]
                ix.batch_file_start = pos
                lines.add(rest_lines)
                frames = [_Frame(0, frame_no + 1, len(rest_lines), pos + used, nl + 1)]
                if not flush():
                    return None
            ix.line = frame_no + 1
            pos += used
            ix.offset = pos
            continue
        if not batch:
            ix.batch_file_start = pos
            line_base = ix.line
        frames.append(_Frame(len(lines), line_base, batch_bytes + len(content), pos + used))
        lines.add(content)  # (the frame ends with a newline)
        batch_bytes += len(content)
        line_base += 1
        pos += used
        if split_at is not None and split_at <= pos < size:
            seq = _turn_end_seq_at_end(content)
            if seq is not None:
                return (pos, seq) if flush() else None
        if batch_bytes >= ix.block_size and not flush():
            return None
    if flush():
        ix.set_tail(None)
    return None


def _turn_end_seq_at_end(content: bytes) -> int | None:
    """The seq of `content`'s last line if it is a `turn/end` record (as dsh writes one)."""
    last = content[content.rfind(b"\n", 0, len(content) - 1) + 1 :]
    if not last.startswith(TURN_END_LINE):
        return None
    try:
        seq = orjson.loads(last).get("seq")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return seq if type(seq) is int else None


_ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"


def _frame_end(reader: _FrameReader, pos: int) -> int | None:
    """Where the zstd frame at `pos` ends, from its frame and block headers (nothing
    decompressed); None if the bytes there are not a whole plain zstd frame."""
    head = reader._ensure(pos, _FRAME_HEAD_MAX)
    if len(head) < 6 or bytes(head[:4]) != _ZSTD_MAGIC:
        return None
    try:
        at = pos + zstandard.frame_header_size(bytes(head[:_FRAME_HEAD_MAX]))
    except zstandard.ZstdError:
        return None
    checksum = 4 if head[4] & 0x04 else 0
    while True:
        block = reader._ensure(at, 3)
        if len(block) < 3:
            return None
        h = block[0] | block[1] << 8 | block[2] << 16
        kind, length = (h >> 1) & 3, h >> 3
        if kind == 3:
            return None
        at += 3 + (1 if kind == 1 else length)
        if h & 1:
            end = at + checksum
            return end if end <= reader.size else None


def _zstd_split_point(fd: int, size: int, split_at: int) -> tuple[int, int, bytes] | None:
    """Where `_index_zstd(split_at=...)` stops, found without indexing: frames before
    the middle are skipped by their headers, the ones after decoded until one ends
    with a turn/end. (offset, that line's seq, the header line), or None."""
    reader = _FrameReader(fd, size)
    pos = 0
    header: bytes | None = None
    while pos < size:
        if header is not None:
            end = _frame_end(reader, pos)
            if end is None:
                return None
            if end < split_at:
                pos = end
                continue
        got = reader.frame(pos)
        if got is None or isinstance(got, (str, _BigFrame)):
            return None
        content, used = got
        pos += used
        if header is None:
            if content:
                nl = content.find(b"\n")
                if nl < 0:
                    return None
                header = content[:nl]
            continue
        if split_at <= pos < size:
            seq = _turn_end_seq_at_end(content)
            if seq is not None:
                return pos, seq, header
    return None


#: zstd logs from this compressed size are indexed in two halves at once.
ZSTD_SPLIT_THRESHOLD: Final = SPLIT_THRESHOLD // 4


def worth_splitting(path: Path) -> bool:
    """True for a log big enough that its index is taken in two halves at once, the
    second in the process pool (when one runs): what a caller that can start the pool
    early (the app, before Textual) asks of a single log."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return False
    if encoding_of(path) is Encoding.ZSTD:
        return size >= ZSTD_SPLIT_THRESHOLD
    return size >= SPLIT_THRESHOLD


def _index_zstd_split(ix: _Indexer, fd: int, size: int) -> bool:
    """`_index_raw_split` for a zstd log: True when `ix` holds the whole result.

    This process indexes frames until the first frame past the middle that ends with
    a `turn/end`; the pool worker finds that same frame by decoding (not indexing) the
    first half, and indexes from there. If this process never gets there (no such
    frame, or it stopped at a problem) it read the whole log: its result stands.
    """
    if size < ZSTD_SPLIT_THRESHOLD:
        return False
    pool = task_runner()
    if pool is None:
        return False
    split_at = size // 2
    try:
        future = pool.submit(_zstd_second_half, (str(ix.path), split_at, ix.block_size))
    except Exception:  # a broken or stopped pool: index serially
        return False
    try:
        stopped_at = _index_zstd(ix, fd, size, split_at=split_at)
    except BaseException:  # cancelled (or worse): the second half is not waited for
        future.cancel()
        raise
    if stopped_at is None:
        future.cancel()
        return True  # no split on the way: this is the serial result
    try:
        reply = future.result()
    except Exception:  # a dead worker, a broken pool: index serially
        discard_broken(pool)
        return False
    if not isinstance(reply, tuple) or len(reply) != 3 or reply[0] != stopped_at[0]:
        return False
    return _join(ix, reply[2], stopped_at[0], stopped_at[1], reply[1])


def _zstd_second_half(task: tuple[str, int, int]) -> tuple[Any, ...] | None:
    """In a pool worker: find where `_index_zstd(split_at=...)` stops and index the
    frames after it; (that offset, the header's problems, the half's state)."""
    path, split_at, block_size = task
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        found = _zstd_split_point(fd, size, split_at)
        if found is None:
            return None
        split, end_seq, header_line = found
        later = _later_half(path, header_line, split, end_seq, block_size)
        if later is None:
            return None
        header_problems = list(later.problems)
        _index_zstd(later, fd, size, start=split)
    finally:
        os.close(fd)
    return split, header_problems, _half_state(later)


# -- the result ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IndexedSession:
    """One big log, indexed: the surface of `root.LoadedSession` without all events.

    Attributes:
        summary: The exact listing entry (as a full read gives it).
        timeline: The turns, exactly as a full read builds them.
        problems: The log's own problems (torn tail last, as `LogReader` orders them).
        contiguous: Leading events with `seq == index`: the forkable prefix.
        event_count: Valid events (packed rows expanded).
        end_offsets: Raw logs: file offset just past each `turn/end` line; key -1 is
            the end of the header line (what a fork copies up to).
        size: Bytes consumed: whole lines (raw) or whole frames (zstd).
    """

    summary: SessionSummary
    timeline: Timeline
    problems: tuple[LogProblem, ...]
    contiguous: int
    event_count: int
    end_offsets: dict[int, int]
    size: int
    _anchor_seqs: tuple[int, ...] = field(repr=False, default=())
    _anchor_pos: tuple[int, ...] = field(repr=False, default=())
    _anchor_skip: tuple[int, ...] = field(repr=False, default=())
    _increasing: bool = field(repr=False, default=True)
    _data_start: int = field(repr=False, default=0)
    _events: tuple[SessionEvent, ...] | None = field(repr=False, default=None)
    _builder: TimelineBuilder | None = field(repr=False, default=None)
    #: True if every indexed byte is UTF-8 (lines the index does not parse included).
    utf8: bool = True

    @property
    def path(self) -> Path:
        """The log file."""
        return self.summary.path

    @property
    def header(self) -> SessionHeader | None:
        """The parsed header."""
        return self.summary.header

    @property
    def turn_ends(self) -> list[int]:
        """Seqs of the `turn/end` events (ascending)."""
        return list(self.timeline.turn_ends)

    def all_events(self) -> list[SessionEvent]:
        """Every valid event in file order (reads the whole log: for small ranges use
        `events_between`)."""
        if self._events is not None:
            return list(self._events)
        return self._read(-1, len(self._anchor_seqs), None, None)

    def timeline_builder(self) -> TimelineBuilder:
        """A `TimelineBuilder` in the state the whole log left it in: feed it appended
        events to extend the timeline, without re-reading the log."""
        return self._builder.copy() if self._builder is not None else TimelineBuilder()

    def events_between(
        self, first_seq: int, last_seq: int | None, *, bounded: bool = False
    ) -> list[SessionEvent]:
        """The events whose seq lies in `[first_seq, last_seq]` (None: to the end).

        Reads only the byte range between the anchors around those seqs (the whole
        valid range if the log's seqs ever step back). Never raises for bad content:
        a line that does not decode here ends the list. `bounded`: a line of
        `longline.LONG_LINE` bytes or more is never held whole; its long strings are
        `clipped.Clipped` prefixes (for display).
        """
        hi = float("inf") if last_seq is None else last_seq
        if self._events is not None:
            return [e for e in self._events if first_seq <= e.seq <= hi]
        if self.event_count == 0 or hi < first_seq:
            return []
        seqs = self._anchor_seqs
        if self._increasing and seqs:
            k = bisect.bisect_right(seqs, first_seq) - 1
            j = bisect.bisect_right(seqs, hi) if last_seq is not None else len(seqs)
        else:
            k, j = -1, len(seqs)
        return self._read(k, j, first_seq, hi, bounded)

    def _read(
        self, k: int, j: int, first_seq: float | None, hi: float | None, bounded: bool = False
    ) -> list[SessionEvent]:
        """Events of the lines from anchor k (-1: the first line) to anchor j (exclusive;
        `len`: the end), those in `[first_seq, hi]` unless both are None."""
        seqs = self._anchor_seqs
        stop = self._anchor_pos[j] if j < len(seqs) else self.size
        header = self.summary.header
        packed = formats.packed_rows(header.version if header is not None else None)
        lines: Iterable[bytes | LongRecord]
        if bounded:
            lines = self._bounded_lines(k, stop)
        elif self.summary.encoding is Encoding.ZSTD:
            if k >= 0:
                lines = _zstd_lines(self.path, self._anchor_pos[k], self._anchor_skip[k], stop)
            else:
                lines = _zstd_lines(self.path, 0, 0, stop)[1:]  # past the header line
        else:
            start = self._anchor_pos[k] if k >= 0 else self._data_start
            lines = _raw_lines(self.path, start, stop)
        out: list[SessionEvent] = []
        everything = first_seq is None or hi is None
        lo = first_seq if first_seq is not None else 0
        top = hi if hi is not None else 0
        # A zstd read to the end takes in the frame that starts at `stop`, where the
        # index stopped: when that frame was refused whole (its content does not end
        # with a newline), its whole lines are no events of the log. Only the log's
        # `event_count` events are taken (past an anchor, its seqs increase: up to
        # its last seq).
        budget: int | None = None
        if self.summary.encoding is Encoding.ZSTD and j >= len(seqs):
            if k < 0:
                budget = self.event_count
            elif self.summary.last_seq is not None:
                top = min(top, self.summary.last_seq)
        for line in lines:
            try:
                if isinstance(line, LongRecord):
                    if line.error is not None:
                        break
                    events = expand_record(line.value, packed_rows=packed)
                elif not line.strip():
                    continue
                else:
                    events = expand_record(loads(line), packed_rows=packed)
            except (orjson.JSONDecodeError, RecordError):
                break
            if budget is not None:
                if budget <= 0:
                    break
                events = events[:budget]
                budget -= len(events)
            if everything:
                out.extend(events)
                continue
            for event in events:
                if lo <= event.seq <= top:
                    out.append(event)
            if self._increasing and events and events[-1].seq > top:
                break
        return out

    def _bounded_lines(self, k: int, stop: int) -> Iterator[bytes | LongRecord]:
        """The lines from anchor k (-1: the first line) on, a long one decoded bounded:
        a raw log's up to `stop`, a zstd log's until the caller stops (whole frames)."""
        if self.summary.encoding is Encoding.ZSTD:
            if k >= 0:
                # Most turns sit in a few small frames: read them as the unbounded path
                # does (each frame decompressed once, capped at a block), unless a frame
                # or a line is big, which the bounded stream below then reads.
                quick = _small_zstd_lines(
                    self.path, self._anchor_pos[k], self._anchor_skip[k], stop
                )
                if quick is not None:
                    yield from quick
                    return
            place = LinePlace(
                self.path,
                True,
                *((self._anchor_pos[k], self._anchor_skip[k]) if k >= 0 else (0, 0)),
            )
            found = long_lines(place, self.size)
            if k < 0:
                next(found, None)  # past the header line
        else:
            start = self._anchor_pos[k] if k >= 0 else self._data_start
            found = long_lines(LinePlace(self.path, False, start), stop)
        try:
            yield from found
        finally:
            found.close()


class LazyEvents(Sequence[SessionEvent]):
    """The events of an indexed log as a read-only sequence, read on demand.

    Positions map to seqs directly when the log is contiguous (`events[i].seq == i`),
    so `len`, `events[i]` and slices cost one range read; otherwise the first access
    reads the whole log once.
    """

    def __init__(self, index: IndexedSession, start: int = 0, stop: int | None = None) -> None:
        self._index = index
        self._start = start
        self._stop = index.event_count if stop is None else stop
        self._all: list[SessionEvent] | None = None

    def __len__(self) -> int:
        return max(0, self._stop - self._start)

    def _everything(self) -> list[SessionEvent]:
        if self._all is None:
            self._all = self._index.all_events()[self._start : self._stop]
        return self._all

    @overload
    def __getitem__(self, i: int) -> SessionEvent: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[SessionEvent]: ...

    def __getitem__(self, i: int | slice) -> SessionEvent | Sequence[SessionEvent]:
        n = len(self)
        if isinstance(i, slice):
            lo, hi, step = i.indices(n)
            if step != 1:
                return list(self)[i]
            return LazyEvents(self._index, self._start + lo, self._start + max(lo, hi))
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("event index out of range")
        if self._index.contiguous == self._index.event_count:
            seq = self._start + i
            return self._index.events_between(seq, seq)[0]
        return self._everything()[i]

    def __iter__(self) -> Iterator[SessionEvent]:
        if self._index.contiguous == self._index.event_count:
            if len(self):
                yield from self._index.events_between(self._start, self._stop - 1)
            return
        yield from self._everything()


def _raw_lines(path: Path, start: int, stop: int) -> list[bytes]:
    try:
        with open(path, "rb") as fh:
            fh.seek(start)
            data = fh.read(max(0, stop - start))
    except OSError:
        return []
    end = data.rfind(b"\n") + 1
    return data[:end].split(b"\n")[:-1]


#: `_small_zstd_lines` takes frames spanning at most this many compressed bytes.
_QUICK_SPAN: Final = 1 << 20
#: Small frames `_small_zstd_lines` keeps, by (path, inode, mtime, offset): each holds
#: less than `LONG_LINE` bytes of content.
_RECENT_FRAMES: Final = 4
_recent_frames: dict[tuple[str, int, int, int], tuple[bytes, int]] = {}
_recent_lock = threading.Lock()


def _small_zstd_lines(path: Path, frame_pos: int, skip: int, stop: int) -> list[bytes] | None:
    """`_zstd_lines` for a short span of small frames holding no long line; None when
    the span, a frame's content (past `LONG_LINE`) or a line is big."""
    if stop - frame_pos > _QUICK_SPAN:
        return None
    data = _frames_content(path, frame_pos, skip, stop, cap=LONG_LINE)
    if data is None:
        return None
    lines = _whole_lines(data)
    if any(len(line) >= LONG_LINE for line in lines):
        return None
    return lines


def _zstd_lines(path: Path, frame_pos: int, skip: int, stop: int) -> list[bytes]:
    """Lines of the frames from `frame_pos` (its first `skip` bytes left out) through
    the frame that starts at or spans offset `stop`."""
    return _whole_lines(_frames_content(path, frame_pos, skip, stop) or b"")


def _whole_lines(data: bytes) -> list[bytes]:
    """The complete lines of `data` (a cut last line left out)."""
    end = data.rfind(b"\n") + 1
    return data[:end].split(b"\n")[:-1]


def _frames_content(
    path: Path, frame_pos: int, skip: int, stop: int, *, cap: int | None = None
) -> bytes | None:
    """The content of the frames from `frame_pos` (its first `skip` bytes left out)
    through the frame that starts at or spans offset `stop`, up to a frame that does
    not decode. With `cap`: None if a frame's content passes `cap` bytes, and such
    small frames are kept (`_recent_frames`: turns share frames, so reading a log's
    turns in order decompresses each frame once); without it, a big frame ends it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return b""
    try:
        st = os.fstat(fd)
        size = st.st_size
        reader = _FrameReader(fd, size)
        parts: list[bytes] = []
        pos = frame_pos
        while pos < size:
            key = (str(path), st.st_ino, st.st_mtime_ns, pos)
            kept = None
            if cap is not None:
                with _recent_lock:
                    kept = _recent_frames.get(key)
            if kept is None:
                got = reader.frame(pos, cap)
                if got is None or isinstance(got, str):
                    break
                if isinstance(got, _BigFrame):
                    if cap is not None:
                        return None
                    break
                kept = got
                if cap is not None:
                    with _recent_lock:  # the app's load and detail workers read at once
                        while len(_recent_frames) >= _RECENT_FRAMES:
                            del _recent_frames[next(iter(_recent_frames))]
                        _recent_frames[key] = kept
            content, used = kept
            parts.append(content[skip:] if pos == frame_pos else content)
            pos += used
            if pos > stop:
                break
        return b"".join(parts)
    finally:
        os.close(fd)


def index_log(
    path: Path,
    *,
    session_id: str | None = None,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    block_size: int = BLOCK_SIZE,
) -> IndexedSession:
    """Index one log; never raises for bad content or I/O errors.

    Args:
        path: The log (raw or multi-frame zstd).
        session_id: The id to use if the header is unreadable (from the folder name).
        progress: Called with the fraction done, at most every `PROGRESS_INTERVAL`
            seconds, from the calling thread.
        cancel: Set it (from another thread) to stop; `index_log` then raises.
        block_size: Bytes of lines per batch (tests use small ones).

    Raises:
        IndexCancelled: `cancel` was set.
    """
    return indexed_with_state(path, session_id, progress, cancel, block_size)[0]


def indexed_with_state(
    path: Path,
    session_id: str | None,
    progress: Progress | None,
    cancel: threading.Event | None,
    block_size: int = BLOCK_SIZE,
) -> tuple[IndexedSession, _Indexer | None, os.stat_result | None]:
    """`index_log`, with the indexer it finished with (None if the log has no usable
    header) and the file's stat taken before it was read (None if it could not be
    opened): what `core.indexcache` keeps."""
    ix = _Indexer(path, progress, cancel, block_size)
    mtime = 0.0
    st: os.stat_result | None = None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        ix.problems.append(
            LogProblem(ProblemKind.UNREADABLE, f"cannot read {path.name}: {exc.strerror or exc}")
        )
    else:
        try:
            st = os.fstat(fd)
            mtime = st.st_mtime
            if ix.encoding is Encoding.ZSTD:
                if not _index_zstd_split(ix, fd, st.st_size):
                    ix = _Indexer(path, progress, cancel, block_size)  # (a split began)
                    _index_zstd(ix, fd, st.st_size)
            elif not _index_raw(ix, fd, st.st_size):
                ix = _Indexer(path, progress, cancel, block_size)  # the halves did not meet
                _index_raw(ix, fd, st.st_size, split=False)
        except OSError as exc:
            ix.problems.append(
                LogProblem(
                    ProblemKind.UNREADABLE, f"cannot read {path.name}: {exc.strerror or exc}"
                )
            )
        finally:
            os.close(fd)
    if progress is not None:
        progress(1.0)
    if ix.header is None:
        # No usable header: nothing to index, and LogReader's rules for a broken or
        # unfinished first line are the ones to show. Such a log holds no events.
        return _from_full_read(path, session_id, mtime), None, st
    return _result(ix, path, session_id, mtime), ix, st


def index_prefix(path: Path, data: bytes) -> IndexedSession | None:
    """Index `data`, the first whole lines of the raw log at `path` (its header line
    included), as `index_log` indexes a file holding just those lines; None if they
    hold any problem. `events_between` of the result reads `path` within `data`'s span.
    """
    ix = _Indexer(path, None, None)
    nl = data.find(b"\n")
    if ix.encoding is not Encoding.RAW or nl < 0 or not data.endswith(b"\n"):
        return None
    # An old header (no delegationDepth) is a warning the full index reports, not a
    # reason to show no preview.
    if not ix.take_header(data[:nl]) or _serious(ix.problems):
        return None
    ix.offset = nl + 1
    if nl + 1 < len(data) and ix.consume(data[nl + 1 :], nl + 1, None) is not None:
        return None
    if _serious(ix.problems):
        return None
    return _result(ix, path, None, 0.0)


def _serious(problems: Iterable[LogProblem]) -> bool:
    """Any problem but the legacy-header warning."""
    return any(p.kind is not ProblemKind.LEGACY_HEADER for p in problems)


def _from_full_read(path: Path, session_id: str | None, mtime: float) -> IndexedSession:
    contents = read_log(path)
    summary = from_contents(contents, session_id if session_id is not None else str(path), mtime)
    builder = TimelineBuilder().feed(contents.events)
    return IndexedSession(
        summary=summary,
        timeline=builder.snapshot(),
        problems=contents.problems,
        contiguous=contents.contiguous,
        event_count=len(contents.events),
        end_offsets={},
        size=contents.size,
        _events=contents.events,
        _builder=builder,
    )


def _result(ix: _Indexer, path: Path, session_id: str | None, mtime: float) -> IndexedSession:
    header = ix.header
    # A V2+ header that says isSeeded with no inherited marker among the rows read:
    # named as `LogReader._check_seed` names it, after the rows' problems. (Worked out
    # here, not kept in `ix`: a log that grows may bring the marker.)
    unseeded = unseeded_problem(header, ix.marker_cut, ix.event_count)
    problems = (
        *ix.problems,
        *([unseeded] if unseeded else []),
        *([ix.tail_problem] if ix.tail_problem else []),
    )
    timeline = ix.builder.snapshot()
    end_offsets = dict(ix.end_offsets)
    if end_offsets and ix.encoding is Encoding.RAW and header is not None:
        end_offsets[-1] = _header_end(path)
    summary = SessionSummary(
        id=header.id if header else (session_id if session_id is not None else str(path)),
        path=path,
        encoding=ix.encoding,
        header=header,
        title=timeline.title,
        events=ix.event_count,
        last_seq=ix.last_seq if ix.event_count else None,
        turns=(counted := counted_turns(timeline.turns))[0],
        open_turn=counted[1],
        problems=problems,
        size=ix.offset,
        mtime=mtime,
        last_activity=None if ix.last_time is None else activity_of(ix.last_time),
    )
    data_start = 0
    if header is not None:
        data_start = _header_end(path) if ix.encoding is Encoding.RAW else 0
    return IndexedSession(
        summary=summary,
        timeline=timeline,
        problems=problems,
        contiguous=ix.contiguous,
        event_count=ix.event_count,
        end_offsets=end_offsets,
        size=ix.offset,
        _anchor_seqs=tuple(ix.anchor_seqs),
        _anchor_pos=tuple(ix.anchor_pos),
        _anchor_skip=tuple(ix.anchor_skip),
        _increasing=ix.increasing,
        _data_start=data_start,
        _builder=ix.builder,
        utf8=ix.utf8,
    )


def _header_end(path: Path) -> int:
    try:
        with open(path, "rb") as fh:
            first = fh.readline()
    except OSError:
        return 0
    return len(first)
