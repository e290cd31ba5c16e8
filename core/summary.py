"""Fast per-session summaries for listing: header plus a byte scan, no full parse.

dsh writes every record as `{"type":"…",…}` on its own line, so counts, the open
turn and the title can be found by searching bytes for `\\n{"type":"turn/` and
friends and parsing only the few lines that matter. A log that does not have that
shape (another writer's key order) falls back to a full read, so the summary is
exact either way.
"""

from __future__ import annotations

import codecs
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson
import zstandard

from .codec import PACKED_TAGS, RecordError, expand_record, parse_header
from .logfile import Encoding, LogContents, encoding_of, read_log
from .model import LogProblem, ProblemKind, SessionHeader
from .timeline import build_timeline, message_text

_REC: Final = b'\n{"type":"'
_TURN_START: Final = b'\n{"type":"turn/start"'
_TURN_END: Final = b'\n{"type":"turn/end"'
_TITLE: Final = b'\n{"type":"session/title"'
_USER: Final = b'\n{"type":"user/message"'
_PACKED: Final = tuple(b'\n{"type":"' + tag.encode() + b'"' for tag in PACKED_TAGS)


@dataclass(frozen=True, slots=True)
class SessionSummary:
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
    problems: tuple[LogProblem, ...] = field(default=())
    size: int = 0
    mtime: float = 0.0

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

    def display_title(self) -> str:
        """Title, else the id."""
        return self.title or self.id

    def to_json_dict(self, extra_problems: tuple[LogProblem, ...] = ()) -> dict[str, Any]:
        """The CLI's `ls --json` entry."""
        header = self.header
        return {
            "id": self.id,
            "title": self.title,
            "cwd": self.cwd,
            "createdAt": self.created_at,
            "parentSession": self.parent_session,
            "seedLength": self.seed_length,
            "origin": self.origin,
            "delegationDepth": header.delegation_depth if header else None,
            "path": str(self.path),
            "encoding": str(self.encoding),
            "events": self.events,
            "lastSeq": self.last_seq,
            "turns": self.turns,
            "openTurn": self.open_turn,
            "problems": [p.to_json_dict() for p in (*self.problems, *extra_problems)],
        }


def _read_plain(path: Path, encoding: Encoding) -> tuple[bytes, list[LogProblem], bool, int]:
    """Decoded bytes of the log; physical-layer problems; exact?; file bytes consumed.

    For zstd, "consumed" ends after the last complete frame; for raw, the caller
    trims a torn last line itself.
    """
    with open(path, "rb") as fh:
        raw = fh.read()
    if encoding is Encoding.RAW:
        return raw, [], True, len(raw)
    out: list[bytes] = []
    dctx = zstandard.ZstdDecompressor()
    pos = 0
    while pos < len(raw):
        dobj = dctx.decompressobj()
        try:
            content = dobj.decompress(raw[pos:])
        except zstandard.ZstdError:
            return b"".join(out), [], False, pos  # corrupt frame: the full reader says where
        if not dobj.eof:
            problem = LogProblem(
                ProblemKind.TORN_TAIL,
                f"the last zstd frame ({len(raw) - pos} bytes) is incomplete: an unfinished "
                "write, ignored",
            )
            return b"".join(out), [problem], True, pos
        out.append(content)
        pos = len(raw) - len(dobj.unused_data)
    return b"".join(out), [], True, pos


def summarize(path: Path, session_id: str | None = None) -> SessionSummary:
    """Summarize one log; never raises.

    Args:
        path: The log file.
        session_id: The id to use if the header is unreadable (from the folder name).
    """
    encoding = encoding_of(path) or Encoding.RAW
    fallback_id = session_id if session_id is not None else str(path)
    try:
        st = os.stat(path)
        buf, problems, exact, consumed = _read_plain(path, encoding)
    except OSError as exc:
        problem = LogProblem(
            ProblemKind.UNREADABLE, f"cannot read {path.name}: {exc.strerror or exc}"
        )
        return SessionSummary(
            fallback_id, path, encoding, None, None, 0, None, 0, False, (problem,)
        )
    summary = (
        _scan(path, encoding, buf, problems, fallback_id, consumed, st.st_mtime) if exact else None
    )
    if summary is None:
        summary = from_contents(read_log(path), fallback_id, st.st_mtime)
    return summary


def from_contents(contents: LogContents, fallback_id: str, mtime: float = 0.0) -> SessionSummary:
    """A summary from a full read (exact, with every problem)."""
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
        turns=len(timeline.turns),
        open_turn=bool(timeline.turns) and timeline.turns[-1].is_open,
        problems=contents.problems,
        size=contents.size,
        mtime=mtime,
    )


def _line_at(buf: bytes, start: int) -> bytes:
    """The line beginning at `start` (without its newline)."""
    end = buf.find(b"\n", start)
    return buf[start : end if end >= 0 else len(buf)]


def _scan(
    path: Path,
    encoding: Encoding,
    buf: bytes,
    problems: list[LogProblem],
    fallback_id: str,
    size: int,
    mtime: float,
) -> SessionSummary | None:
    """The byte-scan summary, or None when the log's shape needs a full read."""
    if not buf.strip():
        empty = LogProblem(ProblemKind.EMPTY, "the log file is empty")
        return SessionSummary(
            fallback_id, path, encoding, None, None, 0, None, 0, False, (empty,), size, mtime
        )
    end = buf.rfind(b"\n") + 1
    whole, tail = buf[:end], buf[end:]
    if encoding is Encoding.RAW:
        size = len(whole)  # resume after the last whole line
    if tail and encoding is Encoding.RAW:
        problems = [
            LogProblem(
                ProblemKind.TORN_TAIL,
                f"the last line ({len(tail)} bytes) has no newline yet: "
                "an unfinished write, ignored",
            )
        ]
    first_nl = whole.find(b"\n")
    if first_nl < 0:
        return None  # only a torn header line: let the full reader classify it
    try:
        header, header_problems = parse_header(orjson.loads(whole[:first_nl]))
    except orjson.JSONDecodeError:
        return None
    if header is None:
        return None
    body = whole[first_nl:]  # starts with "\n", so every record is preceded by "\n"
    records = body.count(b"\n") - 1
    if body.count(_REC) != records:
        return None  # not dsh's key order everywhere: be exact the slow way
    if body.count(b"}\n") != records or not _valid_utf8(body):
        # A record cut short mid-file (a crash, then more appends) or bytes that are
        # not UTF-8: the counts would include an unreadable record, so read it whole
        # and let the full reader say where the log breaks.
        return None
    events = records
    for tag in _PACKED:
        pos = body.find(tag)
        while pos >= 0:
            dt_start = body.find(b'"dt":[', pos)
            dt_end = body.find(b"]", dt_start)
            line_end = body.find(b"\n", pos + 1)
            if dt_start < 0 or dt_end < 0 or dt_end > line_end:
                return None
            inner = body[dt_start + 6 : dt_end].strip()
            events += body.count(b",", dt_start, dt_end) + (1 if inner else 0)
            pos = body.find(tag, line_end)
    last_seq: int | None = None
    if records:
        last_start = body.rfind(b"\n", 0, len(body) - 1) + 1
        try:
            last_events = expand_record(orjson.loads(_line_at(body, last_start)))
        except (orjson.JSONDecodeError, RecordError):
            return None  # a bad last line: the full reader tells torn from corrupt
        last_seq = last_events[-1].seq
    first_seq: int | None = None
    if records:
        try:
            first_seq = expand_record(orjson.loads(_line_at(body, 1)))[0].seq
        except (orjson.JSONDecodeError, RecordError):
            return None
    if last_seq is not None and (first_seq != 0 or last_seq != events - 1):
        # Not contiguous: a gap, a duplicate, or a packed row whose arrays disagree
        # (its dt count is then not its member count). Only a full read says which.
        return None
    all_problems = [*header_problems, *problems]
    turns, open_turn = _count_turns(body)
    title = _title(body)
    return SessionSummary(
        id=header.id,
        path=path,
        encoding=encoding,
        header=header,
        title=title,
        events=events,
        last_seq=last_seq,
        turns=turns,
        open_turn=open_turn,
        problems=tuple(all_problems),
        size=size,
        mtime=mtime,
    )


def _valid_utf8(buf: bytes) -> bool:
    """True if `buf` is UTF-8 (checked in slices, so a big log is not copied whole)."""
    if buf.isascii():
        return True  # the common case, and ~10x faster than decoding
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(buf)
    step = 1 << 22
    try:
        for start in range(0, len(view), step):
            decoder.decode(view[start : start + step])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def _positions(body: bytes, mark: bytes) -> list[int]:
    out: list[int] = []
    pos = body.find(mark)
    while pos >= 0:
        out.append(pos)
        pos = body.find(mark, pos + 1)
    return out


def _count_turns(body: bytes) -> tuple[int, bool]:
    """Turns and whether the last is open, counted the way the timeline groups them.

    A `turn/start` always opens a turn; a `turn/end` closes the open one, or is a
    turn of its own when none is open (real logs hold such rows).
    """
    marks = sorted(
        [(p, True) for p in _positions(body, _TURN_START)]
        + [(p, False) for p in _positions(body, _TURN_END)]
    )
    turns, is_open = 0, False
    for _, is_start in marks:
        if is_start:
            turns += 1
            is_open = True
        else:
            turns += 0 if is_open else 1
            is_open = False
    return turns, is_open


def _title(body: bytes) -> str | None:
    pos = body.rfind(_TITLE)
    if pos >= 0:
        try:
            data = orjson.loads(_line_at(body, pos + 1)).get("data")
            if isinstance(data, dict) and isinstance(data.get("title"), str):
                return str(data["title"])
        except (orjson.JSONDecodeError, AttributeError):
            pass
    pos = body.find(_USER)
    while pos >= 0:
        try:
            obj = orjson.loads(_line_at(body, pos + 1))
        except orjson.JSONDecodeError:
            return None
        data = obj.get("data") if isinstance(obj, dict) else None
        source = data.get("source") if isinstance(data, dict) else None
        if not isinstance(source, dict) or source.get("kind") in (None, "user"):
            text = message_text(data).strip()
            if text:  # like the timeline: the first user text that is not blank
                return text.splitlines()[0]
        pos = body.find(_USER, pos + 1)
    return None
