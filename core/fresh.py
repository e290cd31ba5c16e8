"""Whether a root's catalog is current, told by one read and a `stat` per entry.

When the catalog (`core.catalog`) has just been found current, it stores its *fresh
state*: the (mtime, size, inode, device) of every folder its last walk listed and of
every log it holds. While each entry still stats the same, nothing changed that the
catalog would notice: no folder gained, lost or renamed an entry (its mtime would
differ), so a walk would find the same logs, and no log grew, shrank or was replaced.
Any write to the catalog removes the state first, in the same transaction.

Each stored state has a random generation id (`fresh.gen`): two connections that
read the same one read the same catalog, since any write in between would have
removed it.

This module is what a warm `turnline search` loads before anything else: the standard
library's `os` and `marshal`, and `sqlite3` for `open_fresh` (not even `typing`). It
forks the stats off to a child process (`FreshCheck`), which can also do a first task
for the parent (the query's catalog reads), while the parent loads the rest.
"""

from __future__ import annotations

import marshal
import os
from array import array

from .xdg import cache_dir_str

TYPE_CHECKING = False  # `typing` costs a warm search more than this module does
if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable
    from typing import Any, Final

#: The catalog's schema: a catalog of another one is rebuilt.
SCHEMA: Final = 4


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


#: Entries per chunk a `FreshCheck` hands out, and the most chunks it makes.
CHECK_CHUNK: Final = 256
CHECK_CHUNKS: Final = 4096


class FreshState:
    """The (mtime, size, inode, device) of every folder the catalog's last walk listed
    and of every log it holds, as they were when it was last found current. While each
    entry still stats the same, `changes` would find nothing: no folder gained or lost
    an entry, so the walk would find the same logs, and no log changed. This is the
    very comparison `changes` makes, minus reading its tables row by row.

    Stored as three byte strings (the paths joined by NUL, which no path holds; the
    (mtime, size) pairs as signed and the (inode, device) pairs as unsigned 64-bit
    integers), so loading it is a copy, not 20,000 objects per 10,000 sessions.

    Attributes:
        paths: The entries, folders first (file-system bytes).
        times: (mtime_ns, size) of each entry, flat.
        ids: (inode, device) of each entry, flat.
    """

    __slots__ = ("ids", "paths", "times")

    def __init__(self, paths: list[bytes], times: array[int], ids: array[int]) -> None:
        self.paths = paths
        self.times = times
        self.ids = ids

    @classmethod
    def of_rows(cls, rows: list[tuple[str, int, int, int, int]]) -> FreshState:
        """The state of (path, mtime_ns, size, inode, device) rows."""
        times = array("q")
        ids = array("Q")
        for _path, mtime, size, ino, dev in rows:
            times.extend((mtime, size))
            ids.extend((ino, dev))
        return cls([os.fsencode(r[0]) for r in rows], times, ids)

    @classmethod
    def loads(cls, data: bytes) -> FreshState:
        """The state `dumps` made (ValueError, EOFError or TypeError if it is not one)."""
        names, times_bytes, ids_bytes = marshal.loads(data)
        times = array("q")
        times.frombytes(times_bytes)
        ids = array("Q")
        ids.frombytes(ids_bytes)
        paths = names.split(b"\0") if names else []
        if len(times) != 2 * len(paths) or len(ids) != 2 * len(paths):
            raise ValueError("a fresh state of mismatched parts")
        return cls(paths, times, ids)

    def dumps(self) -> bytes:
        """The state as one byte string."""
        return marshal.dumps((b"\0".join(self.paths), self.times.tobytes(), self.ids.tobytes()))

    def holds(self, start: int, end: int) -> bool:
        """True if entries `start` to `end` (excluded) all stat as recorded."""
        times = array("q")
        ids = array("Q")
        time_of, id_of = times.append, ids.append
        try:
            for st in map(os.stat, self.paths[start:end]):
                time_of(st.st_mtime_ns)
                time_of(st.st_size)
                id_of(st.st_ino)
                id_of(st.st_dev)
        except (OSError, OverflowError):
            return False
        return times == self.times[2 * start : 2 * end] and ids == self.ids[2 * start : 2 * end]

    def check(self) -> bool:
        """True if every entry stats as recorded."""
        return self.holds(0, len(self.paths))


class FreshCheck:
    """`FreshState.check` shared with a forked child process, for a command that has
    other work meanwhile (a warm search runs its query): the stats take most of a warm
    query's time, and on two cores they need not wait for it.

    Both processes take chunk numbers from one pipe, written whole before the fork, so
    whoever is free does the next chunk (a 2-byte read from a pipe is never split). The
    child writes whether all of its chunks held and exits; `finish` does what is left
    here and reads that verdict. Where a fork is not possible it all happens in
    `finish`. Only for a process with no other threads (the fork copies just this one).

    `task`: work the child does first, for the parent, whose bytes (or None) `handoff`
    returns (through an anonymous memory file: Linux; elsewhere there is no task, and
    `handoff` returns None). It must not use a database connection of the parent's
    (SQLite forbids it): the parent should have none open at the fork.
    """

    def __init__(self, state: FreshState, task: Callable[[], bytes | None] | None = None) -> None:
        self.state = state
        n = len(state.paths)
        size = max(CHECK_CHUNK, -(-n // CHECK_CHUNKS))
        self.bounds = [(a, min(a + size, n)) for a in range(0, n, size)]
        self.pid = 0
        self.verdict = -1
        self.memo = -1
        self.held = True
        self.pending = False  # a task's bytes wait for `handoff`
        tokens, filling = os.pipe()
        try:
            os.write(filling, b"".join(k.to_bytes(2, "little") for k in range(len(self.bounds))))
        finally:
            os.close(filling)
        self.tokens = tokens
        fork = getattr(os, "fork", None)
        memfd = getattr(os, "memfd_create", None)
        if fork is None or (len(self.bounds) < 2 and task is None):
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
                if task is not None:
                    os.write(telling, b"t" if self._hand(task) else b"n")
                os.write(telling, b"1" if self._drain() else b"0")
            finally:
                os._exit(0)
        os.close(telling)
        self.pid, self.verdict, self.pending = pid, verdict, task is not None

    def _hand(self, task: Callable[[], bytes | None]) -> bool:
        """Run `task` here (the child) and leave its bytes in the memory file."""
        try:
            data = task()
        except Exception:
            return False
        if data is None:
            return False
        view = memoryview(data)
        while view:
            view = view[os.write(self.memo, view) :]
        return True

    def handoff(self) -> bytes | None:
        """The bytes of the child's task; None if there was none or it had none. While
        the child works on it, this process takes chunks of the stats."""
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
        told = os.read(self.verdict, 1)
        if told != b"t":
            os.close(self.memo)
            return None
        try:
            size = os.fstat(self.memo).st_size
            parts: list[bytes] = []
            at = 0
            while at < size:
                part = os.pread(self.memo, size - at, at)
                if not part:
                    return None  # cut short: the parent does the task itself
                parts.append(part)
                at += len(part)
            return b"".join(parts)
        finally:
            os.close(self.memo)

    def _take(self) -> bool | None:
        """Stat the next chunk: whether it held, or None when none is left. After a
        change no chunk is left for either process."""
        token = os.read(self.tokens, 2)
        if not token:
            return None
        start, end = self.bounds[int.from_bytes(token, "little")]
        if self.state.holds(start, end):
            return True
        while os.read(self.tokens, 1 << 16):
            pass
        return False

    def _drain(self) -> bool:
        while (took := self._take()) is not None:
            if not took:
                return False
        return True

    def finish(self) -> bool:
        """True if every entry stats as recorded (waits for the child)."""
        if self.pending:
            self.handoff()  # its word comes first
        try:
            held = self.held and self._drain()
        finally:
            os.close(self.tokens)
        if not self.pid:
            return held
        try:
            told = os.read(self.verdict, 1)
        finally:
            os.close(self.verdict)
            os.waitpid(self.pid, 0)
        return held and told == b"1"


def open_fresh(resolved_root: str) -> tuple[sqlite3.Connection, FreshState, bytes] | None:
    """The root's catalog, opened inside a read transaction (`BEGIN`: every later read
    sees the same snapshot until `COMMIT`), with its fresh state and that state's
    generation id; None, having created and changed nothing, when there is no catalog,
    it is of another schema, it holds no fresh state, or it cannot be read (the caller
    takes the ordinary way then)."""
    import sqlite3

    path = catalog_file(resolved_root)
    if not os.path.exists(path):
        return None
    db = None
    try:
        db = sqlite3.connect(path, timeout=5.0, isolation_level=None)
        db.execute("PRAGMA busy_timeout=5000")
        db.execute("BEGIN")
        row = db.execute(
            "SELECT (SELECT value FROM meta WHERE key='schema'), state, gen FROM fresh WHERE k=0"
        ).fetchone()
        if row is None or row[0] != str(SCHEMA) or not isinstance(row[2], bytes):
            db.close()
            return None
        return db, FreshState.loads(row[1]), row[2]
    except (sqlite3.Error, ValueError, EOFError, TypeError):
        if db is not None:
            db.close()
        return None


def same_generation(db: sqlite3.Connection, gen: bytes) -> bool:
    """True if `db`'s snapshot holds the fresh state of generation `gen` (so it is the
    catalog of that state: any write since would have removed it)."""
    row = db.execute("SELECT gen FROM fresh WHERE k=0").fetchone()
    return row is not None and row[0] == gen
