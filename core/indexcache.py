"""Big logs' indexes, kept between runs: `$XDG_CACHE_HOME/turnline/index/`.

Indexing a log of a million events reads and checks every one of its 130 MB
(`core.index`): about half a second of two cores, every time `turnline show` or the
app opens it. The index it ends with is small (the turns, the counts, the anchors,
about 1 MB), so it is kept, one file per log, and used again:

- **unchanged** (same device, inode and inode generation, size, mtime and ctime, the
  same last 4 KiB before the indexed end, and last modified at least `RACY_NS` before
  the read that kept it): the index as it was, without reading the log;
- **grown** (same device, inode and generation, larger, the same last 4 KiB before the
  indexed end, and an index that did not stop at a bad line): the indexer resumes
  where it stopped (a zstd log: at its next whole frame) and reads only the appended
  bytes, as the app's live refresh does. dsh only ever appends to a log and creates a
  log whole (a new file, linked into place), the rule the catalog relies on too. A new
  file that got a freed inode number back has another generation (`core.inodes`);
- anything else (another file, a shorter one, a log that stopped at a bad line and
  grew, an entry from another version of turnline's code or
  one that does not decode): indexed again from the start, and the entry replaced.

The answer is the one a fresh `index_log` gives: the entry holds the indexer's whole
state (`_Entry`), the resumed indexer is the serial one at that offset, and
`tests/core/test_indexcache.py` compares the two field by field, for every real log and
its V5 twin, unchanged and grown from five cuts, and for bad, rewritten, truncated,
replaced and racy logs.

An entry is written atomically (a temporary file renamed over the old one); only the
`MAX_ENTRIES` most recently used are kept. A cache that cannot be read or written
(a read-only home, a full disk) is skipped: the log is indexed as before.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import threading
import time
from pathlib import Path
from typing import Final

import msgspec

from .index import (
    BLOCK_SIZE,
    IndexedSession,
    Progress,
    _index_raw_lines,
    _index_zstd,
    _Indexer,
    _result,
    indexed_with_state,
)
from .inodes import generation as _generation
from .logfile import Encoding, blake2b
from .model import LogProblem, ProblemKind
from .timeline import BuilderState, TimelineBuilder
from .xdg import cache_dir

#: Entries kept (the least recently used go first).
MAX_ENTRIES: Final = 64
#: A temporary file this old was left by a writer that died (ns).
STALE_TMP_NS: Final = 3600 * 10**9
#: Bytes before the indexed end compared with the entry's copy.
TAIL_CHECK: Final = 4096
#: An unchanged log is taken from its entry only if it was last modified this long
#: before the read that made the entry (ns): a log written again within the same tick
#: of the file system's clock, with the same size, would otherwise look unchanged
#: (git's "racy" rule). A log modified later is read again (an append is still
#: resumed: its size differs).
RACY_NS: Final = 1_000_000_000
#: The entry's own layout; the code's fingerprint (`_code_fingerprint`) covers the rest.
SCHEMA: Final = 1


class _Entry(msgspec.Struct, array_like=True):
    """One log's index: the file it was taken from and the indexer's whole state."""

    schema: int
    code: str
    #: The log's absolute path, as the file system spells it.
    path: bytes
    #: (device, inode, size, mtime ns, ctime ns) of the log, taken before it was read.
    identity: tuple[int, int, int, int, int]
    #: The inode's generation (`core.inodes`), None where the file system has none.
    generation: int | None
    block_size: int
    #: When the read began (ns since the epoch; see `RACY_NS`).
    read_at: int
    encoding: str
    tail: bytes
    header_line: bytes
    #: The header's seed length as the indexer left it (V2+: cut at an inherited marker).
    seed_length: int | None
    problems: list[LogProblem]
    tail_problem: LogProblem | None
    counts: tuple[int, int, int | None, int, int, int]
    builder: BuilderState
    end_offsets: list[tuple[int, int]]
    anchor_seqs: list[int]
    anchor_pos: list[int]
    anchor_skip: list[int]
    increasing: bool
    utf8: bool
    stopped: bool
    last_line: bytes | None


_encode: Final = msgspec.msgpack.Encoder().encode
_decode: Final = msgspec.msgpack.Decoder(_Entry).decode


def index_dir() -> Path:
    """`$XDG_CACHE_HOME/turnline/index` (not created here)."""
    return cache_dir() / "index"


@functools.cache
def _code_fingerprint() -> str:
    """A hash of the core package's sources: an entry written by other code is not used
    (the indexer's state and its rules change with it)."""
    digest = blake2b(digest_size=16)
    folder = Path(__file__).parent
    for source in sorted(folder.glob("*.py")):
        digest.update(source.name.encode())
        digest.update(source.read_bytes())
    return digest.hexdigest()


def _path_bytes(path: Path) -> bytes:
    return os.fsencode(os.path.abspath(path))


def _entry_file(path: Path) -> Path:
    key = blake2b(_path_bytes(path), digest_size=16).hexdigest()
    return index_dir() / f"{key}.idx"


def _identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _tail(fd: int, end: int) -> bytes:
    start = max(0, end - TAIL_CHECK)
    return os.pread(fd, end - start, start)


def cached_index(
    path: Path,
    *,
    session_id: str | None = None,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    block_size: int = BLOCK_SIZE,
) -> IndexedSession:
    """`index.index_log(path, ...)`, from the cache where the log allows (see the module
    docstring); the entry is written or refreshed after any read."""
    entry_file = _entry_file(path)
    entry = _read_entry(entry_file, path, block_size)
    read_at = time.time_ns()
    if entry is not None:
        reused = _reuse(entry, path, session_id, progress, cancel, block_size)
        if reused is not None:
            indexed, ix, st = reused
            if ix is not None:
                _store(entry_file, path, ix, st, read_at)
            else:
                _touch(entry_file)
            return indexed
    indexed, last, stat = indexed_with_state(path, session_id, progress, cancel, block_size)
    if last is not None and stat is not None:
        _store(entry_file, path, last, stat, read_at)
    return indexed


def _read_entry(entry_file: Path, path: Path, block_size: int) -> _Entry | None:
    try:
        data = entry_file.read_bytes()
    except OSError:
        return None
    try:
        entry = _decode(data)
    except (msgspec.DecodeError, ValueError):
        return None
    if (
        entry.schema != SCHEMA
        or entry.code != _code_fingerprint()
        or entry.path != _path_bytes(path)
        or entry.block_size != block_size
    ):
        return None
    return entry


def _reuse(
    entry: _Entry,
    path: Path,
    session_id: str | None,
    progress: Progress | None,
    cancel: threading.Event | None,
    block_size: int,
) -> tuple[IndexedSession, _Indexer | None, os.stat_result] | None:
    """The index from `entry`: (the index, the indexer if it read on, the log's stat);
    None if the entry does not fit the log as it is now."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        identity = _identity(st)
        old = entry.identity
        offset = entry.counts[3]
        if identity[:2] != old[:2] or st.st_size < old[2] or offset > old[2]:
            return None
        generation = _generation(fd)
        if generation != entry.generation or _tail(fd, offset) != entry.tail:
            return None
        if identity == old:
            if old[3] + RACY_NS > entry.read_at:
                return None  # modified too close to the read: maybe again since
            ix = _restored(entry, path, None, None, block_size)
            if ix is None:
                return None
            if progress is not None:
                progress(1.0)
            return _result(ix, path, session_id, st.st_mtime), None, st
        if (
            st.st_size == old[2]  # the same size, yet changed: not an append
            or entry.stopped  # the stop's line and problem hold only at the end
        ):
            return None
        ix = _restored(entry, path, progress, cancel, block_size)
        if ix is None:
            return None
        ix.tail_problem = None  # a torn last line (frame) may be whole now: read it again
        if ix.encoding is Encoding.ZSTD:
            _index_zstd(ix, fd, st.st_size, start=ix.offset)  # from the next whole frame
        else:
            ix._size = max(st.st_size, 1)
            _index_raw_lines(ix, fd, ix.offset, st.st_size)
    except OSError:
        return None
    finally:
        os.close(fd)
    if progress is not None:
        progress(1.0)
    return _result(ix, path, session_id, st.st_mtime), ix, st


def _restored(
    entry: _Entry,
    path: Path,
    progress: Progress | None,
    cancel: threading.Event | None,
    block_size: int,
) -> _Indexer | None:
    """An indexer in the state `entry` holds; None if its header no longer reads."""
    ix = _Indexer(path, progress, cancel, block_size)
    if ix.encoding.value != entry.encoding or not ix.take_header(entry.header_line):
        return None
    if ix.header is not None and ix.header.seed_length != entry.seed_length:
        ix.header = dataclasses.replace(ix.header, seed_length=entry.seed_length)
    ix.problems = list(entry.problems)
    ix.tail_problem = entry.tail_problem
    (
        ix.event_count,
        ix.contiguous,
        ix.last_seq,
        ix.offset,
        ix.line,
        ix.seq_problems,
    ) = entry.counts
    ix.builder = TimelineBuilder.from_state(entry.builder)
    ix.end_offsets = dict(entry.end_offsets)
    ix.anchor_seqs = list(entry.anchor_seqs)
    ix.anchor_pos = list(entry.anchor_pos)
    ix.anchor_skip = list(entry.anchor_skip)
    ix.increasing = entry.increasing
    ix.utf8 = entry.utf8
    ix.stopped = entry.stopped
    ix.last_line = entry.last_line
    return ix


def _store(entry_file: Path, path: Path, ix: _Indexer, st: os.stat_result, read_at: int) -> None:
    """Keep `ix` (the indexer that read `path`, as `st` stats it) as its entry, if the
    file at `path` is still that one."""
    if any(p.kind is ProblemKind.UNREADABLE for p in ix.problems):
        return  # a read failed part way: the state is not the log's
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            now = os.fstat(fd)
            if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
                return  # replaced since it was read
            generation = _generation(fd)
            tail = _tail(fd, ix.offset)
        finally:
            os.close(fd)
    except OSError:
        return
    entry = _Entry(
        SCHEMA,
        _code_fingerprint(),
        _path_bytes(path),
        _identity(st),
        generation,
        ix.block_size,
        read_at,
        ix.encoding.value,
        tail,
        ix.header_line,
        None if ix.header is None else ix.header.seed_length,
        list(ix.problems),
        ix.tail_problem,
        (ix.event_count, ix.contiguous, ix.last_seq, ix.offset, ix.line, ix.seq_problems),
        ix.builder.state(),
        list(ix.end_offsets.items()),
        ix.anchor_seqs,
        ix.anchor_pos,
        ix.anchor_skip,
        ix.increasing,
        ix.utf8,
        ix.stopped,
        ix.last_line,
    )
    try:
        data = _encode(entry)
    except (UnicodeEncodeError, msgspec.EncodeError, OverflowError):
        return  # text msgpack cannot hold: a lone surrogate (a \ud83d escape alone)
    _write_atomic(entry_file, data)


def _write_atomic(entry_file: Path, data: bytes) -> None:
    import tempfile  # (here: a command that only reads pays no load for it)

    folder = entry_file.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, entry_file)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return
    _prune(folder)


def _touch(entry_file: Path) -> None:
    """Mark an entry used (the least recently used are pruned first)."""
    with contextlib.suppress(OSError):
        os.utime(entry_file)


def _prune(folder: Path) -> None:
    """Keep the `MAX_ENTRIES` most recently used entries."""
    entries: list[tuple[int, str]] = []
    now = time.time_ns()
    try:
        for item in os.scandir(folder):
            with contextlib.suppress(OSError):
                used = item.stat().st_mtime_ns
                if item.name.endswith(".idx"):
                    entries.append((used, item.path))
                elif item.name.startswith(".tmp-") and now - used > STALE_TMP_NS:
                    os.unlink(item.path)  # left by a writer that died
    except OSError:
        return
    if len(entries) <= MAX_ENTRIES:
        return
    entries.sort(reverse=True)
    for _, stale in entries[MAX_ENTRIES:]:
        with contextlib.suppress(OSError):
            os.unlink(stale)
