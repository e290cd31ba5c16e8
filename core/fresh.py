"""Whether a root's catalog is current, told by one file read and a `stat` per entry.

When the catalog (`core.catalog`) has just been found current, it stores its *fresh
state*: the (mtime, size, inode, device) of every folder its last walk listed and of
every log it holds. While each entry still stats the same, nothing changed that the
catalog would notice: no folder gained, lost or renamed an entry (its mtime would
differ), so a walk would find the same logs, and no log grew, shrank or was replaced.

The state lives in a file beside the catalog (`fresh_file`), under a random
generation id that the catalog's `fresh` row names too. Both are written in one of
the catalog's write transactions (the file first), and every other write deletes the
row in its own. So the state is the catalog's only while its row names the file's
generation, and two connections that read that one row read the same catalog.

This module is what a warm `turnline search` loads before anything else: the standard
library's `os`, `marshal` and `array` (not `sqlite3`, not even `typing`). It forks the
stats off to a child process (`FreshCheck`), which can also do a first task for the
parent (the whole query: `core.search.snapshot_search`), while the parent stats.
"""

from __future__ import annotations

import os

from .xdg import cache_dir_str

TYPE_CHECKING = False  # `typing` costs a warm search more than this module does
if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable
    from typing import Any, Final

#: The catalog's schema: a catalog of another one is rebuilt. (10: a snapshot corpus
#: child's newer generation `session.K.vN.jsonl` supersedes its `session.K.jsonl`, so
#: the logs a catalog's walk kept for an unchanged folder may be one too many.)
SCHEMA: Final = 10
#: The catalog's `meta` value `linked` once its parent links are current and were
#: resolved by this version's rule (`lineage.link_sessions`). A new rule gets a new
#: value, so a catalog another version linked is linked again, and no fresh state
#: answers from its links meanwhile (`same_generation`). ("4": a child seeded from an
#: older generation of its parent has its seed placed in the generation catalogued,
#: and the links in and below such a family credit inherited hits by turn.)
LINKED: Final = "4"
#: The generation a catalog's `fresh` row names, while its links are `LINKED`.
FRESH_ROW: Final = (
    "SELECT gen FROM fresh WHERE k=0 AND (SELECT value FROM meta WHERE key='linked') IS ?"
)


def _builtin_sha256() -> Any:
    """The interpreter's own SHA-256: `hashlib` loads OpenSSL first, which costs a
    tenth of a warm query. Same digests either way."""
    import importlib

    for name in ("_sha256", "_sha2"):  # Python 3.11; 3.12 and later
        try:
            return importlib.import_module(name).sha256
        except (ImportError, AttributeError):
            continue
    import hashlib

    return hashlib.sha256


_sha256: Final = _builtin_sha256()


def catalog_file(resolved_root: str) -> str:
    """Where the catalog of an already resolved root lives: one file per root path."""
    key = _sha256(os.fsencode(resolved_root)).hexdigest()[:24]
    return os.path.join(cache_dir_str(), f"catalog-{key}.sqlite")


def fresh_file(catalog: str) -> str:
    """Where the fresh state of the catalog at path `catalog` lives (`write_fresh`)."""
    return catalog.removesuffix(".sqlite") + ".fresh"


#: The length of a generation id (random bytes).
GEN_BYTES: Final = 8
#: Entries per chunk of a state (at least), and the most chunks a state has.
CHECK_CHUNK: Final = 256
CHECK_CHUNKS: Final = 4096
#: A fresh-state file starts so.
MAGIC: Final = b"turnline-fresh\n\0"
#: The header after it: schema, entries per chunk, entries (native 64-bit integers),
#: and the generation id.
_HEADER: Final = len(MAGIC) + 3 * 8 + GEN_BYTES


class FreshState:
    """The (mtime, size, inode, device) of every folder the catalog's last walk listed
    and of every log it holds, as they were when it was last found current, under a
    generation id. While each entry still stats the same, `changes` would find
    nothing: no folder gained or lost an entry, so the walk would find the same logs,
    and no log changed. This is the very comparison `changes` makes, minus reading its
    tables row by row.

    It is kept as its file's bytes (`state_bytes`): a header, the offset of each chunk,
    then the chunks. A chunk is the stats of up to `size` entries, as (mtime, size,
    inode, device) in native 64-bit integers, then their paths, joined by NUL (which
    no path holds). A check reads and splits only the chunks it stats, one read each
    (`os.pread` when the state is an open file), so loading a state costs nothing per
    entry, and two processes sharing a check share that cost too. (Read through
    `memoryview.cast`: the `array` module would cost a warm search a load.)

    Attributes:
        gen: The generation id.
        entries: How many entries it has.
        size: Entries per chunk (the last chunk may have fewer).
        chunks: How many chunks it has.
    """

    __slots__ = ("chunks", "data", "entries", "fd", "gen", "offsets", "size")

    def __init__(self, head: bytes, data: bytes | None, fd: int, end: int) -> None:
        """A state from its file's first bytes `head` (the header and chunk offsets at
        least), and either all of them (`data`) or an open file `fd` of `end` bytes.
        Raises ValueError unless they are a state this version wrote."""
        if head[: len(MAGIC)] != MAGIC or len(head) < _HEADER:
            raise ValueError("not a fresh state")
        schema, size, entries = memoryview(head)[len(MAGIC) : _HEADER - GEN_BYTES].cast("q")
        if schema != SCHEMA or size < 1 or entries < 0:
            raise ValueError("a fresh state of another version")
        chunks = -(-entries // size)
        table = head[_HEADER : _HEADER + 8 * (chunks + 1)]
        if len(table) != 8 * (chunks + 1):
            raise ValueError("a fresh state cut short")
        offsets = memoryview(table).cast("q").tolist()
        if offsets[0] != _HEADER + len(table) or offsets[-1] != end or offsets != sorted(offsets):
            raise ValueError("a fresh state of mismatched parts")
        self.gen = head[_HEADER - GEN_BYTES : _HEADER]
        self.entries, self.size, self.chunks = entries, size, chunks
        self.offsets, self.data, self.fd = offsets, data, fd

    @classmethod
    def of_bytes(cls, data: bytes) -> FreshState:
        """The state of a file's whole bytes (ValueError if they are not one)."""
        return cls(data, data, -1, len(data))

    def chunk(self, k: int) -> bytes:
        """Chunk `k`'s bytes (short if its file was cut since)."""
        start, end = self.offsets[k], self.offsets[k + 1]
        if self.data is not None:
            return self.data[start:end]
        return os.pread(self.fd, end - start, start)

    def holds(self, k: int) -> bool:
        """True if every entry of chunk `k` stats as recorded."""
        n = min(self.size, self.entries - k * self.size)
        record = self.chunk(k)
        paths = record[32 * n :].split(b"\0")
        if len(paths) != n:
            return False
        got: list[int] = []
        add = got.append
        try:
            for st in map(os.stat, paths):
                add(st.st_mtime_ns)
                add(st.st_size)
                add(st.st_ino)
                add(st.st_dev)
        except OSError:
            return False
        return got == memoryview(record)[: 32 * n].cast("q").tolist()

    def check(self) -> bool:
        """True if every entry stats as recorded."""
        return all(self.holds(k) for k in range(self.chunks))

    def paths(self) -> list[bytes]:
        """Every entry's path (file-system bytes), folders first."""
        out: list[bytes] = []
        for k in range(self.chunks):
            n = min(self.size, self.entries - k * self.size)
            out += self.chunk(k)[32 * n :].split(b"\0")
        return out


def state_bytes(rows: list[tuple[str, int, int, int, int]], gen: bytes) -> bytes:
    """The file of the state of (path, mtime_ns, size, inode, device) rows, under
    generation id `gen` (OverflowError for a stat that 64 signed bits cannot hold)."""
    from array import array

    entries = len(rows)
    size = max(CHECK_CHUNK, -(-entries // CHECK_CHUNKS))
    records: list[bytes] = []
    for a in range(0, entries, size):
        stats = array("q")
        part = rows[a : a + size]
        for _path, mtime, length, ino, dev in part:
            stats.extend((mtime, length, ino, dev))
        names = b"\0".join(os.fsencode(r[0]) for r in part)
        records.append(stats.tobytes() + names)
    at = _HEADER + 8 * (len(records) + 1)
    offsets = array("q", [at])
    for record in records:
        at += len(record)
        offsets.append(at)
    head = MAGIC + array("q", [SCHEMA, size, entries]).tobytes() + gen
    return head + offsets.tobytes() + b"".join(records)


def write_fresh(path: str, rows: list[tuple[str, int, int, int, int]], gen: bytes) -> None:
    """Publish the state of `rows` (`state_bytes`) under generation `gen` as the file
    `path`, atomically (a temporary file in the same folder, then renamed over it).
    Raises OSError (or OverflowError)."""
    import contextlib  # (the catalog's writers have it loaded already)

    data = state_bytes(rows, gen)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def read_fresh(path: str, whole: bool = True) -> FreshState | None:
    """The state in the file `path` (`write_fresh`), or None if there is none or it is
    not one this version wrote. Whose state it is, only the catalog's `fresh` row can
    say (`same_generation`). `whole=False` reads only its header and chunk table now
    and keeps the file open for the chunks (a warm search: each of its processes then
    reads only the chunks it stats); the open file lasts as long as the process."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        end = os.fstat(fd).st_size
        if whole:
            data = os.read(fd, end)
            return FreshState(data, data, -1, len(data))
        head = os.pread(fd, _HEADER + 8 * (CHECK_CHUNKS + 1), 0)
        state = FreshState(head, None, fd, end)
        fd = -1  # the state's now
        return state
    except (OSError, ValueError):
        return None
    finally:
        if fd >= 0:
            os.close(fd)


class FreshCheck:
    """`FreshState.check` shared with a forked child process, for a command that has
    other work meanwhile (a warm search runs its query): the stats take most of a warm
    query's time, and on two cores they need not wait for it.

    Both processes take chunk numbers from one pipe, written whole before the fork, so
    whoever is free does the next chunk (a 2-byte read from a pipe is never split). The
    child writes whether all of its chunks held and exits; `finish` does what is left
    here and reads that verdict. Where a fork is not possible it all happens in
    `finish`. Only for a process with no other threads (the fork copies just this one).

    `task`: work the child does first, for the parent. It writes its output with the
    function it is given and returns True, or returns False for no output. The output
    goes to an anonymous memory file (Linux; elsewhere no child takes the task, `split`
    is False, and `handoff` returns None), which `output` reads and `send` copies. The
    task must not use a database connection of the parent's (SQLite forbids it): the
    parent should have none open at the fork.

    Used as a context manager: its files are closed, and its child reaped, at the end.
    """

    def __init__(
        self, state: FreshState, task: Callable[[Callable[[bytes], object]], bool] | None = None
    ) -> None:
        self.state = state
        self.pid = 0
        self.verdict = -1
        self.memo = -1
        self.held = True
        self.pending = False  # a task's output waits for `handoff`
        self.size = 0  # of the task's output
        self.split = False  # the task went to a child
        tokens, filling = os.pipe()
        try:
            os.write(filling, b"".join(k.to_bytes(2, "little") for k in range(state.chunks)))
        finally:
            os.close(filling)
        self.tokens = tokens
        fork = getattr(os, "fork", None)
        memfd = getattr(os, "memfd_create", None)
        if fork is None or (state.chunks < 2 and task is None):
            return
        if task is not None and memfd is not None:
            try:
                self.memo = memfd("turnline-handoff", getattr(os, "MFD_CLOEXEC", 0))
            except OSError:
                task = None
        else:
            task = None
        verdict, telling = os.pipe()
        try:
            pid = fork()
        except OSError:
            os.close(verdict)
            os.close(telling)
            return
        if pid == 0:  # the child: check, tell, and leave without any cleanup of the parent's
            try:
                os.close(verdict)
                _quiet()  # whoever reads this process's output need not wait for the child
                if task is not None:
                    os.write(telling, b"t" if self._hand(task) else b"n")
                os.write(telling, b"1" if self._drain() else b"0")
            finally:
                os._exit(0)
        os.close(telling)
        self.pid, self.verdict = pid, verdict
        self.pending = self.split = task is not None

    def _hand(self, task: Callable[[Callable[[bytes], object]], bool]) -> bool:
        """Run `task` here (the child), its output going to the memory file."""
        try:
            with open(self.memo, "wb", buffering=1 << 16, closefd=False) as out:
                return task(out.write)
        except Exception:
            return False

    def handoff(self) -> int | None:
        """The size of the child's task's output, once it is made (`output`, `send`);
        None if there was no task or it had no output. While the child works on it,
        this process takes chunks of the stats."""
        if self.pid == 0 or not self.pending:
            return None
        import select

        self.pending = False
        while not select.select([self.verdict], [], [], 0)[0]:
            took = self._take()
            if took is None:
                break  # no chunk left: the child's word is next
            if not took:
                self.held = False
                break
        if os.read(self.verdict, 1) != b"t":
            return None
        self.size = os.fstat(self.memo).st_size
        return self.size

    def output(self) -> bytes:
        """The output `handoff` told of."""
        parts: list[bytes] = []
        at = 0
        while at < self.size:
            part = os.pread(self.memo, self.size - at, at)
            if not part:
                raise OSError(f"the task's output was cut short at {at} of {self.size} bytes")
            parts.append(part)
            at += len(part)
        return b"".join(parts)

    def send(self, out: int) -> None:
        """Copy the output `handoff` told of to the file descriptor `out`, in the
        kernel where it can (`os.sendfile`). Raises OSError (BrokenPipeError...)."""
        import errno

        at = 0
        try:
            while at < self.size:
                sent = os.sendfile(out, self.memo, at, self.size - at)
                if sent == 0:
                    raise OSError(f"the task's output was cut short at {at} of {self.size} bytes")
                at += sent
        except OSError as exc:
            if at or exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                raise
            view = memoryview(self.output())  # no sendfile here: the plain way
            while view:
                view = view[os.write(out, view) :]

    def __enter__(self) -> FreshCheck:
        return self

    def __exit__(self, *_exc: object) -> None:
        for fd in (self.memo, self.tokens, self.verdict):
            if fd >= 0:
                os.close(fd)
        self.memo = self.tokens = self.verdict = -1
        if self.pid:
            os.waitpid(self.pid, 0)
            self.pid = 0

    def _take(self) -> bool | None:
        """Stat the next chunk: whether it held, or None when none is left. After a
        change no chunk is left for either process."""
        token = os.read(self.tokens, 2)
        if not token:
            return None
        if self.state.holds(int.from_bytes(token, "little")):
            return True
        while os.read(self.tokens, 1 << 16):
            pass
        return False

    def _drain(self) -> bool:
        while (took := self._take()) is not None:
            if not took:
                return False
        return True

    def finish(self, reap: bool = True) -> bool:
        """True if every entry stats as recorded (waits for the child's word, and then,
        unless not `reap`, for its exit: a process about to exit leaves that to init)."""
        if self.pending:
            self.handoff()  # its word comes first
        try:
            held = self.held and self._drain()
        finally:
            os.close(self.tokens)
            self.tokens = -1
        if not self.pid:
            return held
        try:
            told = os.read(self.verdict, 1)
        finally:
            os.close(self.verdict)
            self.verdict = -1
            if reap:
                os.waitpid(self.pid, 0)
            self.pid = 0
        return held and told == b"1"


def _quiet() -> None:
    """Point standard output and error at the null device (a forked child's)."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)


def same_generation(db: sqlite3.Connection, gen: bytes) -> bool:
    """True if `db`'s snapshot names generation `gen` in its `fresh` row (so it is the
    catalog of the state of that generation: any write since would have removed it),
    and its links are this version's (`LINKED`)."""
    row = db.execute(FRESH_ROW, (LINKED,)).fetchone()
    return row is not None and row[0] == gen
