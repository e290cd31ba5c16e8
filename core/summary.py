"""Fast per-session summaries for listing: header plus a byte scan, no full parse.

dsh writes every record as `{"type":"…",…}` on its own line, so counts, the open
turn and the title can be found by searching bytes for `\\n{"type":"turn/` and
friends and parsing only the few lines that matter. A log that does not have that
shape (another writer's key order) falls back to a full read, so the summary is
exact either way.
"""

from __future__ import annotations

import codecs
import functools
import math
import mmap
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import accumulate, compress, repeat
from operator import attrgetter, is_
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeVar

import msgspec
import orjson

from . import formats
from .codec import PACKED_TAGS, parse_header, plain_header_values
from .logfile import (
    ZSTD_SUFFIX,
    Encoding,
    LogContents,
    read_log,
    torn_frame_message,
    torn_line_message,
)
from .model import END_SEED, TURN_END, LogProblem, ProblemKind, SessionHeader
from .records import (
    INDEX_THRESHOLD,
    LISTED_END_SEED,
    LISTED_TITLE,
    LISTED_USER,
    MAX_HEADER_LINE,
    TURN_TYPES,
    HeadError,
    count_turns,
    decode_head,
    decode_listing_heads,
    has_reason_kind,
    has_reason_kind_raw,
    listed_turn_kinds,
    listing_decoder,
    loads,
    packed_members,
    packed_row_counts,
    record_last_time,
    session_title,
    user_title,
    zstd_frames,
)

if TYPE_CHECKING:
    from .timeline import Timeline, Turn

# Plain values of the enums the listing's inner loop writes into summary states.
RAW: Final = Encoding.RAW.value
ZSTD: Final = Encoding.ZSTD.value
EMPTY: Final = ProblemKind.EMPTY.value
TORN_TAIL: Final = ProblemKind.TORN_TAIL.value
UNREADABLE: Final = ProblemKind.UNREADABLE.value

_REC: Final = b'\n{"type":"'
_TITLE: Final = b'\n{"type":"session/title"'
_USER: Final = b'\n{"type":"user/message"'
#: One record ends and the next starts, as dsh writes them.
_JOINT: Final = b'}\n{"type":"'
_TYPE: Final = attrgetter("type")
#: `Encoding` by value (a dict lookup is faster than `Encoding(value)`).
_ENCODINGS: Final = {e.value: e for e in Encoding}
_SEQ: Final = attrgetter("seq")
_DATA: Final = attrgetter("data")
#: Nones without end, to compare a list with item by item (`map(is_, seqs, _NONES)`).
_NONES: Final = repeat(None)

_SEQ0: Final = attrgetter("seq0")

#: How many records of the types the byte searches look for a log holds, by their
#: decoded types: (`session/title`, `user/message`, `session/end-seed`). `_scan`
#: compares them with the lines its searches can find (dsh's own spelling at a line's
#: start): a type spelled otherwise (`session\/title` is the same JSON string) would
#: be missed by them, and is read whole instead.
Tally = tuple[int, int, int]
#: What the listing counts of a log's records: events, the last record decoded, the
#: turn types in order, the `Tally`, and the log's title (`title_between`'s) when the
#: count could take it from the decoded records, else `_SEARCH`.
Counted = tuple[int, Any, list[str], Tally, Any]
#: The title is found by searching the bytes (`title_between`), after `_scan` checks
#: that the searches see every record of the types they look for.
_SEARCH: Final = object()
_NO_RECORDS: Final[Counted] = (0, None, [], (0, 0, 0), None)
#: Each record line's type as spelled: the bytes between `{"type":"` at its start and
#: the next quote (an escape in it makes it differ from the decoded type).
#: The types `_scan`'s byte searches look for (the `Tally`'s).
_SEARCHED: Final = frozenset({b"session/title", b"user/message", END_SEED.encode()})
_SPELLED_TYPE: Final = re.compile(rb'\n\{"type":"([^"]*)"')


class SessionSummary(msgspec.Struct, frozen=True):
    """What a listing shows of one log.

    Attributes:
        id: Session id from the header (from the folder name if the header is bad).
        path: The log file.
        encoding: raw or zstd.
        header: The parsed header, None if unreadable.
        title: Latest `session/title`, else first user text, else None.
        events: How many events the log holds (packed rows expanded).
        last_seq: Seq of the last event, None if there are none.
        turns: How many turns were started (or ended without a start).
        open_turn: True if the last turn has no `turn/end` yet (an agent is mid-turn).
        problems: What is unusual about this log on its own.
        size: Bytes of the file consumed: whole lines (raw) or whole frames (zstd).
            A reader that resumes at this offset sees exactly the appended records.
        mtime: File modification time.
        last_activity: Epoch ms of the log's last event (its `time`), None if the log
            holds no events.
    """

    id: str
    path: Path
    encoding: Encoding
    header: SessionHeader | None
    title: str | None
    events: int
    last_seq: int | None
    turns: int
    open_turn: bool
    problems: tuple[LogProblem, ...] = ()
    size: int = 0
    mtime: float = 0.0
    last_activity: int | None = None

    @property
    def cwd(self) -> str | None:
        """The session's project directory."""
        return self.header.cwd if self.header else None

    @property
    def parent_session(self) -> str | None:
        """Id of the session this one was forked from."""
        return self.header.parent_session if self.header else None

    @property
    def seed_length(self) -> int | None:
        """How many parent events were copied in as the seed."""
        return self.header.seed_length if self.header else None

    @property
    def origin(self) -> str | None:
        """`subagent` for a tool-spawned child."""
        return self.header.origin if self.header else None

    @property
    def created_at(self) -> int:
        """Epoch ms from the header."""
        return self.header.created_at if self.header else 0

    @property
    def broken(self) -> bool:
        """True if the header is unusable: the log cannot be shown as a session."""
        return self.header is None

    def to_state(self) -> tuple[Any, ...]:
        """This summary as plain values (`marshal`-able), path left out: the compact
        form `parallel.split_map` sends between processes (`SummaryState` names them)."""
        header = None if self.header is None else _header_state(self.header)
        problems = _problem_states(self.problems)
        return (
            self.id,
            self.encoding.value,
            header,
            self.title,
            self.events,
            self.last_seq,
            self.turns,
            self.open_turn,
            problems,
            self.size,
            self.mtime,
            self.last_activity,
        )

    @classmethod
    def from_state(cls, path: Path, state: tuple[Any, ...]) -> SessionSummary:
        """The summary `to_state` gave, for the log at `path`."""
        # Unpacked by position (`SummaryState`'s order), not named: a warm start
        # builds ten thousand of these before the tree is drawn.
        (sid, encoding, header, title, events, last_seq, turns, open_turn, problems, size,
         mtime, last_activity) = state  # fmt: skip
        return cls(
            sid,
            path,
            _ENCODINGS.get(encoding) or Encoding(encoding),
            None if header is None else SessionHeader(*header),
            title,
            events,
            last_seq,
            turns,
            open_turn,
            tuple(LogProblem(ProblemKind(k), m, q, n) for k, m, q, n in problems)
            if problems
            else (),
            size,
            mtime,
            last_activity,
        )

    def display_title(self) -> str:
        """Title, else the id."""
        return self.title or self.id

    def to_json_dict(self, extra_problems: tuple[LogProblem, ...] = ()) -> dict[str, Any]:
        """The CLI's `ls --json` entry."""
        return state_json(str(self.path), self.to_state(), extra_problems)


class HeaderState(NamedTuple):
    """A header as plain values: `SessionHeader`'s fields in order."""

    id: str
    created_at: int
    version: Any
    cwd: str | None
    parent_session: str | None
    seed_length: int | None
    origin: str | None
    delegation_depth: int | None
    agent_preset: str | None
    extra: dict[str, Any]
    is_seeded: bool | None


class SummaryState(NamedTuple):
    """Names for the plain values of `SessionSummary.to_state` (and `summary_state`).

    States cross processes as plain tuples (`marshal` takes no tuple subclass):
    readers name them with `SummaryState._make(state)`.
    """

    id: str
    encoding: str
    #: `HeaderState` values, None if the header is unusable.
    header: tuple[Any, ...] | None
    title: str | None
    events: int
    last_seq: int | None
    turns: int
    open_turn: bool
    #: (kind value, message, seq, line) per problem.
    problems: tuple[tuple[Any, ...], ...]
    size: int
    mtime: float
    last_activity: int | None


def counted_problems(
    summary: SessionSummary, problems: Iterable[LogProblem]
) -> tuple[LogProblem, ...]:
    """The problems a session's marker counts (the tree's `⚠n`).

    A torn tail (the last line has no newline yet) on a log whose last turn is open is
    an agent's write in progress, not a problem: it is left out, so the marker of a live
    session does not flicker while the agent writes. On a log whose last turn is closed
    a torn tail still counts. The problem list (the detail pane) keeps every problem.

    Args:
        summary: The session.
        problems: Its problems (its own and the cross-session ones).
    """
    if not summary.open_turn:
        return tuple(problems)
    return tuple(p for p in problems if p.kind is not ProblemKind.TORN_TAIL)


def state_json(
    path: str,
    state: tuple[Any, ...],
    extra_problems: Iterable[LogProblem] = (),
    generations: list[str] | None = None,
) -> dict[str, Any]:
    """The CLI's `ls --json` entry of a summary given as `SessionSummary.to_state`
    values (a listing need not build the summary object); `generations` are the
    log's generations if the caller knows them (else its folder is listed)."""
    # Unpacked by position (`SummaryState`'s and `HeaderState`'s order), not named:
    # `ls --json` of a wide root builds ten thousand of these after the scan, alone.
    (sid, encoding, header, title, events, last_seq, turns, open_turn, problems, _size,
     _mtime, last_activity) = state  # fmt: skip
    _, created_at, version, cwd, parent, seed_length, origin, depth = (header or _NO_HEADER)[:8]
    entries = [{"kind": kind, "message": message, "seq": seq} for kind, message, seq, _ in problems]
    entries.extend(p.to_json_dict() for p in extra_problems)
    return {
        "id": sid,
        "title": title,
        "cwd": cwd,
        "createdAt": created_at,
        "parentSession": parent,
        "seedLength": seed_length,
        "origin": origin,
        "delegationDepth": depth,
        "path": path,
        "format": None if header is None else _format_of(version),
        "generations": _generations(path) if generations is None else generations,
        "encoding": encoding,
        "events": events,
        "lastSeq": last_seq,
        "lastActivity": last_activity,
        "turns": turns,
        "openTurn": open_turn,
        "problems": entries,
    }


def state_json_bytes(
    path: str,
    state: tuple[Any, ...],
    extra_problems: Iterable[LogProblem] = (),
    generations: list[str] | None = None,
) -> bytes | None:
    """`state_json` as `ls --json` prints it inside its list: the text orjson writes
    for it as an element of a list, with two spaces of indent (exactly as orjson
    writes the whole list); None when orjson cannot write it (a lone surrogate, an
    integer past 64 bits), for the caller to write the whole document the way it
    writes those.

    Written by each process of a parallel scan for the logs it scanned: the
    listing's one process then only joins them."""
    try:
        # The entry in a list of its own, the list's brackets cut off: orjson indents
        # it as an element itself, with no second pass over its bytes.
        text = orjson.dumps(
            [state_json(path, state, extra_problems, generations)], option=orjson.OPT_INDENT_2
        )
    except orjson.JSONEncodeError:
        return None
    return text[2:-2]


#: The `HeaderState` values `state_json` shows for a log without a usable header.
_NO_HEADER: Final = (None, 0, None, None, None, None, None, None)


def _generations(path: str) -> list[str]:
    """The paths of a log's generations, newest first (`formats.generation_files`);
    the log alone when its name is not a generation's."""
    return [p for _, p in formats.generation_files(path)] or [path]


def _format_of(version: Any) -> int | None:
    """The format version a log is read as, from its header's `version`: 0 when the
    header has none (as some real V0 logs), None for a version that is no number."""
    if version is None:
        return 0
    return version if type(version) is int else None


def state_link_key(path: str, state: tuple[Any, ...]) -> tuple[str, str | None, int, str, bool]:
    """`lineage.link_key` of a summary given as `SessionSummary.to_state` values."""
    sid, header = state[0], state[2]  # `SummaryState.id`, `.header` (by position: hot)
    if header is None:
        return (sid, None, 0, path, False)
    # `HeaderState.parent_session`, `.created_at`
    return (sid, header[4], header[1], path, True)


def _read_all(fd: int, size: int) -> bytes:
    """The bytes of an open regular file: one `read` of the size `fstat` gave (plus one
    byte, to see growth), and only if the file grew meanwhile, more until EOF."""
    first = os.read(fd, size + 1)
    if len(first) <= size:
        return first  # a short read of a regular file is its end
    parts = [first]
    while chunk := os.read(fd, 1 << 20):
        parts.append(chunk)
    return b"".join(parts)


def _decode_zstd(raw: bytes) -> tuple[bytes, list[LogProblem], bool, int]:
    """Decoded bytes of a zstd log; physical-layer problems; exact?; file bytes consumed
    (up to the end of the last complete frame)."""
    out: list[bytes] = []
    pos = 0
    for frame in zstd_frames(raw):
        if frame.content is None:
            if frame.error is not None:
                return b"".join(out), [], False, pos  # corrupt: the full reader says where
            problem = LogProblem(ProblemKind.TORN_TAIL, torn_frame_message(len(raw) - pos))
            return b"".join(out), [problem], True, pos
        out.append(frame.content)
        pos = frame.end
    return b"".join(out), [], True, pos


def summarize(path: Path, session_id: str | None = None) -> SessionSummary:
    """Summarize one log; never raises.

    Args:
        path: The log file.
        session_id: The id to use if the header is unreadable (from the folder name).
    """
    summary = summarize_small(path, session_id, None)
    assert summary is not None  # no size limit: always a summary
    return summary


def summarize_small(
    path: Path, session_id: str | None, max_size: int | None
) -> SessionSummary | None:
    """`summarize`, or None (having read nothing) if the file holds `max_size` bytes or more.

    One `open`, one `fstat` and one `read` per log: a root of ten thousand small logs
    is listed at about the cost of reading each header line (the caller indexes a log
    that is too big to read whole instead).
    """
    state = summary_state(str(path), session_id, max_size)
    return None if state is None else SessionSummary.from_state(path, state)


def summary_state(
    path: str, session_id: str | None, max_size: int | None
) -> tuple[Any, ...] | None:
    """`summarize_small` as plain values (`SessionSummary.to_state`), from a path string.

    The listing's inner loop: it builds no `Path`, dataclass or enum member per log
    (in a root of ten thousand logs those cost as much as the byte scan).
    """
    got = read_whole(path, max_size)
    return None if got is None else state_of_read(path, session_id, max_size, got)


def summary_states(
    logs: Iterable[tuple[str, str | None, int | None]],
) -> list[tuple[Any, ...] | None]:
    """`summary_state` of each (path, session id, max size), in order, the logs read a
    batch at a time before they are scanned (`read_batches`)."""
    return [
        None if got is None else state_of_read(path, session_id, max_size, got)
        for batch in read_batches(logs, _path_and_limit)
        for (path, session_id, max_size), got in batch
    ]


#: Bytes `head_states` reads from the start of a log: a header line is a few hundred
#: bytes (one longer than this is read whole), and most logs of a wide root fit.
HEAD_READ: Final = 1 << 16


def head_states(
    logs: Sequence[tuple[str, str | None, int | None]], *, whole: bool = False
) -> tuple[list[tuple[Any, ...] | None], list[int]]:
    """For a first screen before a listing ends: each (path, session id, max size)'s
    state as `summary_states` gives it, except that a plain log whose first line is a
    header as dsh writes it (`codec.plain_header_values`) gets a provisional state from
    that line alone; and the indices of the provisional states, in order.

    A provisional state's id, encoding and header are the exact state's (`_scan` and
    the full reader take the same line the same way; the V2+ seed cut, which comes
    from the records, excepted): what `state_link_key` and a project's cwd need. Its
    title and counts are empty, its size and mtime 0: not for showing. Anything else
    (a zstd log, an odd or unreadable first line) is summarized whole here, and with
    `whole` every log is, but one to index (`summary_states` gives it none), which
    gets a provisional state too when it has one."""
    if whole:
        exact = summary_states(logs)
        big = [k for k, state in enumerate(exact) if state is None]
        for k in big:
            path = logs[k][0]
            exact[k] = None if path.endswith(ZSTD_SUFFIX) else _provisional_state(path)
        return exact, [k for k in big if exact[k] is not None]
    states: list[tuple[Any, ...] | None] = []
    provisional: list[int] = []
    odd: list[int] = []
    for k, (path, _sid, _max_size) in enumerate(logs):
        state = None if path.endswith(ZSTD_SUFFIX) else _provisional_state(path)
        states.append(state)
        (odd if state is None else provisional).append(k)
    if odd:
        for k, state in zip(odd, summary_states([logs[k] for k in odd]), strict=True):
            states[k] = state
    return states, provisional


def _provisional_state(path: str) -> tuple[Any, ...] | None:
    """`head_states`' provisional state of a raw log, from its first `HEAD_READ`
    bytes; None when they do not hold a plain header line (or cannot be read)."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            # A page first (a header is a few hundred bytes): copying a whole small log
            # costs a fifth more.
            head = os.read(fd, 4096)
            if len(head) == 4096 and b"\n" not in head:
                head += os.read(fd, HEAD_READ - 4096)
        finally:
            os.close(fd)
    except OSError:
        return None
    first_nl = head.find(b"\n")
    if first_nl < 0:
        return None
    try:
        header = loads(head[:first_nl])
    except orjson.JSONDecodeError:
        return None
    values = plain_header_values(header)
    if values is None or _name_mismatch(os.path.basename(path), values[2]):
        return None
    return (values[0], RAW, values, None, 0, None, 0, False, (), 0, 0.0, None)


def _path_and_limit(log: tuple[str, str | None, int | None]) -> tuple[str, int | None]:
    return log[0], log[2]


#: `read_batches` yields what it has read once it holds this many bytes (besides the
#: last log read, which may be up to the index threshold) or 256 logs.
READ_BATCH: Final = 1 << 20

_T = TypeVar("_T")


def read_batches(
    logs: Iterable[_T], where: Callable[[_T], tuple[str, int | None] | None]
) -> Iterator[list[tuple[_T, tuple[bytes, float] | OSError | None]]]:
    """Each log with `read_whole` of `where(log)` (its path and max size; None for a
    log not to be read, which gets None), in order, a batch at a time: up to
    `READ_BATCH` bytes or 256 logs.

    A caller that scans each batch before the next is read makes the system calls
    together: a log's (open, fstat, read, close) between the scans of two logs cost
    each scan about a fifth more time (caches and branch predictors the kernel left
    cold; measured on a wide root).
    """
    batch: list[tuple[_T, tuple[bytes, float] | OSError | None]] = []
    held = 0
    for log in logs:
        asked = where(log)
        got = None if asked is None else read_whole(*asked)
        batch.append((log, got))
        if type(got) is tuple:
            held += len(got[0])
        if held >= READ_BATCH or len(batch) >= 256:
            yield batch
            batch, held = [], 0
    if batch:
        yield batch


def read_whole(path: str, max_size: int | None) -> tuple[bytes, float] | OSError | None:
    """A log's bytes and mtime for `state_of_read` (one `open`, `fstat` and `read`);
    None when it is at least `max_size` bytes (the caller indexes it instead); the
    error when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            st = os.fstat(fd)
            if max_size is not None and st.st_size >= max_size:
                return None
            return _read_all(fd, st.st_size), st.st_mtime
        finally:
            os.close(fd)
    except OSError as exc:
        return exc


def state_of_read(
    path: str,
    session_id: str | None,
    max_size: int | None,
    got: tuple[bytes, float] | OSError,
) -> tuple[Any, ...] | None:
    """`summary_state` of a log `read_whole` has read (`got`)."""
    encoding = ZSTD if path.endswith(ZSTD_SUFFIX) else RAW
    fallback_id = session_id if session_id is not None else path
    if isinstance(got, OSError):
        problem = (
            UNREADABLE,
            f"cannot read {os.path.basename(path)}: {got.strerror or got}",
            None,
            None,
        )
        return (fallback_id, encoding, None, None, 0, None, 0, False, (problem,), 0, 0.0, None)
    raw, mtime = got
    if encoding == RAW:
        state = _scan(encoding, raw, (), fallback_id, len(raw), mtime, path)
    elif max_size is not None and _inflates_past(raw, INDEX_THRESHOLD):
        return None  # small, but it inflates past what is read whole: index it
    else:
        buf, problems, exact, consumed = _decode_zstd(raw)
        state = (
            _scan(
                encoding,
                buf,
                _problem_states(problems),
                fallback_id,
                consumed,
                mtime,
                path,
            )
            if exact
            else None
        )
    if state is None:
        state = from_contents(read_log(Path(path)), fallback_id, mtime).to_state()
    return state


def _inflates_past(raw: bytes, limit: int) -> bool:
    """`longline.zstd_inflates_past`. It and the timeline builder are imported when a
    log needs them (a zstd log, a full read): a listing of plain logs (`ls --json` of
    a wide root) then never loads them (see `root`'s imports)."""
    from .longline import zstd_inflates_past

    return zstd_inflates_past(raw, limit)


def _problem_states(problems: Iterable[LogProblem]) -> tuple[tuple[Any, ...], ...]:
    return tuple((p.kind.value, p.message, p.seq, p.line) for p in problems)


def _header_state(h: SessionHeader) -> tuple[Any, ...]:
    return (
        h.id,
        h.created_at,
        h.version,
        h.cwd,
        h.parent_session,
        h.seed_length,
        h.origin,
        h.delegation_depth,
        h.agent_preset,
        dict(h.extra),
        h.is_seeded,
    )


def counted_turns(turns: Sequence[Turn]) -> tuple[int, bool]:
    """(turns, open turn?) of a summary from its timeline's turns, as the byte scan and
    `records.count_turns` count them from the turn records: every turn a `turn/start`
    began or a `turn/end` closed. The timeline also shows events after the last
    `turn/end` (a stray `step/start`) as a turn in progress; no turn record says so,
    and the listing does not count it."""
    n = len(turns)
    if n and turns[-1].start_seq is None and turns[-1].end_seq is None:
        n -= 1
    return n, bool(n) and turns[n - 1].is_open


def from_contents(
    contents: LogContents,
    fallback_id: str,
    mtime: float = 0.0,
    timeline: Timeline | None = None,
) -> SessionSummary:
    """A summary from a full read (exact, with every problem); `timeline` is the one
    already built from `contents.events`, if the caller has it."""
    if timeline is None:
        from .timeline import build_timeline  # (see `_inflates_past`)

        timeline = build_timeline(contents.events)
    header = contents.header
    last = contents.events[-1].seq if contents.events else None
    return SessionSummary(
        id=header.id if header else fallback_id,
        path=contents.path,
        encoding=contents.encoding,
        header=header,
        title=timeline.title,
        events=len(contents.events),
        last_seq=last,
        turns=(counted := counted_turns(timeline.turns))[0],
        open_turn=counted[1],
        problems=contents.problems,
        size=contents.size,
        mtime=mtime,
        last_activity=activity_of(contents.events[-1].time) if contents.events else None,
    )


def _line_at(buf: bytes | mmap.mmap, start: int) -> bytes:
    """The line beginning at `start` (without its newline)."""
    end = buf.find(b"\n", start)
    return buf[start : end if end >= 0 else len(buf)]


def _scan(
    encoding: str,
    buf: bytes,
    problems: tuple[tuple[Any, ...], ...],
    fallback_id: str,
    size: int,
    mtime: float,
    path: str = "",
) -> tuple[Any, ...] | None:
    """The byte-scan summary (as `SessionSummary.to_state` values), or None when the
    log's shape needs a full read."""
    if not buf or buf.isspace():
        empty = (EMPTY, "the log file is empty", None, None)
        return (fallback_id, encoding, None, None, 0, None, 0, False, (empty,), size, mtime, None)
    end = buf.rfind(b"\n") + 1
    if encoding == RAW:
        size = end  # resume after the last whole line
        if end < len(buf):
            problems = ((TORN_TAIL, torn_line_message(len(buf) - end), None, None),)
    first_nl = buf.find(b"\n", 0, MAX_HEADER_LINE + 1)
    if first_nl < 0 or first_nl >= end:
        return None  # a torn or overlong header line: let the full reader classify it
    try:
        header_obj = loads(buf[:first_nl])
    except orjson.JSONDecodeError:
        return None
    header_values = plain_header_values(header_obj)
    if header_values is None:
        header, header_problems = parse_header(header_obj)
        if header is None:
            return None
        if not formats.known(header.version):
            return None  # a version this reader does not know: the reader reads no row
        header_values = _header_state(header)
        problems = (*_problem_states(header_problems), *problems)
    version = header_values[2]
    marker_cut = formats.seeded_by_marker(version)
    if _name_mismatch(os.path.basename(path), version):
        return None  # the full reader names the mismatch
    # The records are buf[first_nl:end]: it starts with "\n", so every record is
    # preceded by "\n" (searched in place, not copied).
    records = buf.count(b"\n", first_nl, end) - 1
    if records and (
        # Every record starts like dsh writes one and ends with "}": the first and
        # last by position, the others by counting each "}\n" + record start. Any
        # other key order, or a record cut short mid-file (a crash, then more
        # appends), is read whole so the full reader says where the log breaks.
        not buf.startswith(_REC, first_nl)
        or buf[end - 2 : end] != b"}\n"
        or buf.count(_JOINT, first_nl, end) != records - 1
    ):
        return None
    if not buf.isascii() and not valid_utf8(buf[first_nl:end]):
        return None  # bytes that are not UTF-8: the full reader says which line
    counted = _count_block(buf, first_nl, end, records, not marker_cut) if records else _NO_RECORDS
    if counted is None:
        return None  # a line that is not a plain record in order: read it whole
    events, last_obj, kinds, (titles, users, end_seeds), title = counted
    if title is _SEARCH:
        # The title and the first user message are found by searching bytes for their
        # lines: only when every record of those types is spelled as dsh spells it
        # (else the search would miss one).
        if (titles and buf.count(_TITLE, first_nl, end) != titles) or (
            users and buf.count(_USER, first_nl, end) != users
        ):
            return None
        title = title_between(buf, first_nl, end, titles)
    if marker_cut and header_values[10]:
        if buf.count(_END_SEED, first_nl, end) != end_seeds:
            return None
        cut = inherited_cut_between(buf, first_nl, end)
        if cut is None:
            return None  # seeded with no inherited marker: the full reader says so
        header_values = (*header_values[:5], cut, *header_values[6:])
    turns, open_turn = count_turns(kinds)
    last_seq: int | None = None
    last_activity: int | None = None
    if events:
        last_seq = events - 1
        last_time = record_last_time(last_obj, packed_rows=not marker_cut)
        last_activity = None if last_time is None else activity_of(last_time)
    return (
        header_values[0],
        encoding,
        header_values,
        title,
        events,
        last_seq,
        turns,
        open_turn,
        problems,
        size,
        mtime,
        last_activity,
    )


def _name_mismatch(name: str, version: Any) -> bool:
    """True if `formats.name_mismatch` finds one: remembered for an integer version (a
    listing asks it of each of ten thousand logs, which have a handful of names)."""
    if type(version) is int:
        return _int_name_mismatch(name, version)
    return formats.name_mismatch(name, version) is not None


@functools.lru_cache(maxsize=256)
def _int_name_mismatch(name: str, version: int) -> bool:
    return formats.name_mismatch(name, version) is not None


def _count_block(
    buf: bytes, start: int, end: int, records: int, packed_rows: bool
) -> Counted | None:
    """`_count_records` of the `records` record lines `buf[start + 1 : end - 1]`
    (laid out as for `title_between`): the same answer, with less work per line.

    All lines are decoded in one msgspec call on the buffer itself (no line is cut
    out or decoded twice), each into the Struct of its type (`listing_decoder`): a
    packed row's member lists are decoded for their counts, a `turn/end`'s reason is
    checked, and every other record's data is only checked to be JSON; no record's
    content is built. Lines the union does not take (a type it does not know, a
    record one of its Structs refuses) are counted by `_count_heads` (the same
    answer in two calls); whenever this cannot answer as surely as the line-by-line
    count (a line holds more than one value), that count answers instead, so every
    problem it finds is still found the way it finds it.
    """
    try:
        listed = listing_decoder(packed_rows)(memoryview(buf)[start + 1 : end])
    except HeadError:
        return _count_heads(buf, start, end, records, packed_rows)
    # Each Struct checks what a `ListingHead` checks of its line, and the data that
    # `_count_heads` then reads: what is answered here is its answer.
    if len(listed) != records:
        # (`_count_heads` would read as many values: the lines are the same JSON.)
        return _count_lines(buf, start, end, packed_rows)
    seqs = list(map(_SEQ, listed))
    if packed_rows and _rows_disagree(seqs, listed):
        return None
    if None not in seqs:
        if seqs != list(range(records)):
            return None
        expected = records
    else:
        # Only a packed row has no seq (its width is None for any other record, and
        # for a row `packed_members` would not take); rows are few, found in C.
        if not packed_rows:
            return None
        counts = [1] * records
        i = -1
        for _ in range(seqs.count(None)):
            i = seqs.index(None, i + 1)
            row = listed[i]
            width = row.width()
            if width is None:
                return None
            seqs[i] = row.seq0
            counts[i] = width
        found = _follow_on(seqs, counts)
        if found is None:
            return None
        expected = found
    try:
        last = loads(buf[buf.rfind(b"\n", start, end - 1) + 1 : end - 1])
    except orjson.JSONDecodeError:
        return None
    classes = list(map(type, listed))
    tally = (
        classes.count(LISTED_TITLE),
        classes.count(LISTED_USER),
        classes.count(LISTED_END_SEED),
    )
    try:
        title = _listed_title(listed, classes, tally)
    except orjson.JSONDecodeError:
        return None  # a title's data the full reader refuses (an integer past 4,300 digits)
    return expected, last, listed_turn_kinds(classes), tally, title


def _listed_title(listed: list[Any], classes: list[type], tally: Tally) -> str | None:
    """`title_between`'s title from a log's decoded records: the last `session/title`
    that sets one, else the first user text that is not blank, else None. Each record's
    data is decoded alone, as the search decodes its line (the same value: the record's
    last `data` key)."""
    titles, users, _ = tally
    if titles:
        found = list(compress(listed, map(is_, classes, repeat(LISTED_TITLE))))
        for record in reversed(found):
            title = session_title(loads(bytes(record.data)))
            if title is not None:
                return title
    if users:
        for record in compress(listed, map(is_, classes, repeat(LISTED_USER))):
            title = user_title(loads(bytes(record.data)))
            if title is not None:
                return title
    return None


def _rows_disagree(seqs: list[int | None], records: list[Any]) -> bool:
    """True when a record of a log with packed rows has a `seq0` key beside its `seq`
    (to the full reader a packed row's tag with `seq0` is a packed row, whatever its
    `seq`; to the counts only a line without a seq is one): such a log is read whole.
    Counted in C: the records with a `seq0` key must be exactly those without a seq."""
    without = seqs.count(None)
    return len(records) - list(map(_SEQ0, records)).count(msgspec.UNSET) != without


def _tally(types: list[str]) -> Tally:
    return (types.count("session/title"), types.count("user/message"), types.count(END_SEED))


def _spelled_as_decoded(buf: bytes, start: int, end: int, types: list[str]) -> bool:
    """Whether each record line of `buf[start:end]` (laid out as for `title_between`)
    whose decoded type (`types`, in order) is one the byte searches look for spells it
    at its start as dsh does. A slower count, whose records may hold duplicate `type`
    keys that disagree, checks this before its `Tally` is compared with what the
    searches find (a line spelled like one of them but decoded otherwise then makes
    the counts differ: `_scan`)."""
    spelled = _SPELLED_TYPE.findall(buf, start, end)
    if len(spelled) != len(types):
        return False
    decoded = [t.encode() for t in types]
    return all(a == b for a, b in zip(spelled, decoded, strict=True) if b in _SEARCHED)


def _follow_on(firsts: list[Any], counts: list[int]) -> int | None:
    """How many events lines hold whose first seqs (a packed row's `seq0`) are
    `firsts` and whose event counts are `counts`, when each line's first seq is the
    count of events before it; else None. (The running sum, compared in C.)"""
    running = list(accumulate(counts, initial=0))
    expected = running.pop()
    return expected if firsts == running else None


def _count_heads(
    buf: bytes, start: int, end: int, records: int, packed_rows: bool
) -> Counted | None:
    """`_count_block` of lines that its union does not take (a type it does not know,
    type keys that disagree, data its Struct refuses: a `turn/end` without a reason
    kind, a packed row's tag on a plain event): each line is decoded into a
    `ListingHead` that keeps its `data` undecoded, and only the packed rows' member
    counts (together, in one call) and each `turn/end`'s reason are then read from
    it. Whenever this cannot answer as surely as the line-by-line count (the lines
    do not all decode, a reason does not decode), that count answers instead.

    (It reads a `turn/end`'s reason from its data alone, where the line-by-line count
    decodes the whole line with orjson too: msgspec has just taken the whole line,
    and orjson takes every line msgspec does.)
    """
    try:
        heads = decode_listing_heads(memoryview(buf)[start + 1 : end])
    except HeadError:
        heads = None
    if heads is None or len(heads) != records:
        return _count_lines(buf, start, end, packed_rows)
    seqs = list(map(_SEQ, heads))
    if packed_rows and _rows_disagree(seqs, heads):
        return None
    if None not in seqs:
        if seqs != list(range(records)):
            return None
        expected = records
    else:
        # Packed rows (no seq; V0, V1) hold their members' seqs from `seq0`, their
        # member counts read in one msgspec call.
        if not packed_rows:
            return None
        rows = list(compress(range(records), map(is_, seqs, _NONES)))
        row_counts = packed_row_counts([heads[i] for i in rows])
        if row_counts is None:
            return None
        counts = [1] * records
        for i, count in zip(rows, row_counts, strict=True):
            seqs[i] = heads[i].seq0
            counts[i] = count
        found = _follow_on(seqs, counts)
        if found is None:
            return None
        expected = found
    # (map, filter and compress walk the heads in C: no Python loop per line.)
    types = list(map(_TYPE, heads))
    kinds = list(filter(TURN_TYPES.__contains__, types))
    if TURN_END in kinds and not all(
        map(has_reason_kind_raw, map(_DATA, compress(heads, map(TURN_END.__eq__, types))))
    ):
        return _count_lines(buf, start, end, packed_rows)
    if not _spelled_as_decoded(buf, start, end, types):
        return None
    try:
        last = loads(buf[buf.rfind(b"\n", start, end - 1) + 1 : end - 1])
    except orjson.JSONDecodeError:
        return None
    return expected, last, kinds, _tally(types), _SEARCH


def _count_lines(buf: bytes, start: int, end: int, packed_rows: bool) -> Counted | None:
    """`_count_records` of the record lines `buf[start + 1 : end - 1]`, as
    `_count_block` answers."""
    counted = _count_records(buf[start + 1 : end - 1], packed_rows=packed_rows)
    if counted is None:
        return None
    events, last, kinds, types = counted
    if not _spelled_as_decoded(buf, start, end, types):
        return None
    return events, last, kinds, _tally(types), _SEARCH


def _count_records(
    records: bytes, *, packed_rows: bool = True
) -> tuple[int, Any, list[str], list[str]] | None:
    """(events, the last record decoded, the turn types in order, every type in
    order) of the record
    lines `records` (newline-separated, no final newline), when every line is one
    JSON value with a string type and its seqs follow on from 0 (packed rows
    expanded); None when only a full read can say what the lines hold.

    Every line is decoded (msgspec, in C, into a `RecordHead`): the listing checks
    that each is JSON and reads its type as `JSON.parse` does (the last of duplicate
    keys), so it counts what the full reader counts.
    """
    lines = records.split(b"\n")
    try:
        heads = list(map(decode_head, lines))
    except HeadError:
        return None
    seqs = list(map(_SEQ, heads))
    if packed_rows and _rows_disagree(seqs, heads):
        return None
    # Plain events must carry seqs 0, 1, 2, ... in order; a line without a seq is a
    # packed row (or odd: then read whole), which holds its members' seqs. Runs of
    # plain lines are compared whole, in C.
    expected = 0
    prev = 0
    odd = [i for i, q in enumerate(seqs) if q is None] if None in seqs else []
    for i in (*odd, len(lines)):
        if i > prev:
            if seqs[prev:i] != list(range(expected, expected + i - prev)):
                return None
            expected += i - prev
        if i == len(lines):
            break
        prev = i + 1
        head = heads[i]
        if not packed_rows or type(head.seq0) is not int or head.type not in PACKED_TAGS:
            return None
        quick = packed_members(lines[i], head.type)
        if quick is None or quick[0] != expected:
            return None
        expected += quick[1]
    try:
        last = loads(lines[-1])
        ends = [loads(lines[i]) for i, h in enumerate(heads) if h.type == TURN_END]
    except orjson.JSONDecodeError:
        return None
    if not all(has_reason_kind(end.get("data")) for end in ends):
        return None  # a turn/end without a reason kind: the full reader names the odd event
    types = list(map(_TYPE, heads))
    kinds = [t for t in types if t in TURN_TYPES]
    return expected, last, kinds, types


#: Epoch ms of 0001-01-01 and of 9999-12-31 23:59:59.999: the instants a calendar holds.
_FIRST_MS: Final = -62_135_596_800_000
_LAST_MS: Final = 253_402_300_799_999


def activity_of(time: float) -> int | None:
    """`SessionSummary.last_activity` of an event time (whole epoch ms); None for a time
    that is no instant: not finite (`1e400` reads as infinity, as `JSON.parse` reads
    it) or beyond the calendar's years 1 to 9999 (so it also fits 64 bits)."""
    if not math.isfinite(time) or not _FIRST_MS <= time <= _LAST_MS:
        return None
    return int(time)


def valid_utf8(buf: bytes) -> bool:
    """True if `buf` is UTF-8 (checked in slices, so a big log is not copied whole)."""
    if buf.isascii():
        return True  # the common case, and ~10x faster than decoding
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(buf)
    # A slice of 256 KiB decodes twice as fast as one of 4 MiB (an 8 MB block of CJK
    # text: 8.7 against 16.4 ms): its string stays small, in cache, and needs no new pages.
    step = 1 << 18
    try:
        for start in range(0, len(view), step):
            decoder.decode(view[start : start + step])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


_END_SEED: Final = b'\n{"type":"session/end-seed"'


def inherited_cut_between(buf: bytes | mmap.mmap, start: int, end: int) -> int | None:
    """The seq of the last `session/end-seed {"inherited": true}` among the records
    `buf[start:end]` (laid out as for `title_between`): a V2+ child's inherited count
    (`formats.seeded_by_marker`); None if there is none, or a candidate line does not
    decode (then the full reader decides)."""
    pos = buf.rfind(_END_SEED, start, end)
    while pos >= 0:
        obj = _record_at(buf, pos + 1)
        if obj is None:
            return None
        seq = obj.get("seq")
        if formats.is_inherited_marker(obj.get("type"), obj.get("data")) and type(seq) is int:
            return seq
        pos = buf.rfind(_END_SEED, start, pos)
    return None


def title_between(
    buf: bytes | mmap.mmap, start: int, end: int, titles: int | None = None
) -> str | None:
    """The title `summarize` gives a log whose records are `buf[start:end]`.

    `buf[start]` is the newline that ends the header line and `buf[end - 1]` the
    newline of the last record: a fork that copies a parent's records reads its
    child's title from the parent (an `mmap` of it) instead of the copy.

    `titles` is how many `session/title` records the log holds when every line that
    starts like one is known to be one (the listing's union decoded each line by its
    type), else None. With none there is no line to look at; with one, that line
    (if dsh wrote it) is searched from the start, where a title usually is (a search
    from the end goes over the whole log first).
    """
    if titles is None or titles > 1:
        pos = buf.rfind(_TITLE, start, end)
    else:
        pos = buf.find(_TITLE, start, end) if titles else -1
    while pos >= 0:
        obj = _record_at(buf, pos + 1)
        # (A candidate is confirmed by decoding: a duplicate "type" key names another.)
        if obj is not None and obj.get("type") == "session/title":
            title = session_title(obj.get("data"))
            if title is not None:
                return title
        pos = buf.rfind(_TITLE, start, pos) if titles is None or titles > 1 else -1
    pos = buf.find(_USER, start, end)
    while pos >= 0:
        obj = _record_at(buf, pos + 1)
        if obj is None:
            return None
        if obj.get("type") == "user/message":
            # like the timeline: the first user text that is not blank
            title = user_title(obj.get("data"))
            if title is not None:
                return title
        pos = buf.find(_USER, pos + 1, end)
    return None


def _record_at(buf: bytes | mmap.mmap, start: int) -> dict[str, Any] | None:
    """The record decoded from the line at `start`, None if it is not a JSON object."""
    try:
        obj = loads(_line_at(buf, start))
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None
