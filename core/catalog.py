"""The catalog: a per-root SQLite (FTS5) cache of every log's text and summary.

It is only a cache: the logs stay the truth. Each log is known by (device, inode,
size, mtime); a log that changed is re-indexed, one that vanished is dropped, and a
log that only grew since its last complete turn has only its new turns indexed.
Events inside a child's seed are not indexed again: they belong to the session that
wrote them. WAL mode and one transaction per batch of logs let two processes share
it; a catalog that is missing, from another schema, or corrupt is rebuilt.

Checking that it is current costs one `stat` per folder and per log, not a walk:
the `watch` table holds the (device, inode, size, mtime) of every folder the last
walk listed (and of every file whose header decided whether it is a log). While
none of them changed, the walk would find the same logs (a folder's mtime changes
whenever an entry is added, removed or renamed in it), so only the logs themselves
are stat'ed. A folder modified within a second of the walk is recorded as unknown
(its mtime could still change within the same clock tick), and so is a walk that
met an error: the next check walks again. Once a refresh finds the catalog current,
it stores those stats in one file beside the catalog, named by a row (`core.fresh`),
so the next check reads one file instead of two tables, and a warm search does the
stats in one process while its query runs in another.

Each text is kept in its displayed form (`textsafe.flat_line`: one line, unsafe
characters removed, single spaces): a query matches what a user sees, so a phrase
split by a line break is found, and a snippet is cut from it without sanitizing.

Indexing many logs (the first search of a root) reads them in the process pool
(`parallel.pool_for_work`) and this process writes their rows in bulk: documents
first, then one `INSERT ... SELECT` into the full-text index per batch (five times
faster than a trigger per row).

This module imports only the standard library at load time: a warm query (`turnline
search`, a new process each time) never loads the log readers.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import msgspec

from .fresh import (
    FRESH_ROW,
    GEN_BYTES,
    LINKED,
    SCHEMA,
    FreshState,
    catalog_file,
    fresh_file,
    read_fresh,
    write_fresh,
)
from .query import Links, pack_links, read_links
from .textsafe import no_surrogates, utf8_text

if TYPE_CHECKING:
    from .summary import SessionSummary


#: Logs per task when the pool reads them.
BATCH: Final = 64
#: Logs per write transaction while indexing many (each commit flushes a segment of
#: the full-text index: fewer, larger ones merge less).
WRITE_BATCH: Final = 1024
#: `listing_states` re-reads at most this many changed logs (or a quarter of them).
MIN_CACHED: Final = 200
#: A folder whose mtime is this close to the walk is recorded as unknown (ns).
RACY_NS: Final = 1_000_000_000

#: Every write of logs or documents marks the parent links stale (`_relink` redoes
#: them): the generation is the write's time, so a relink that raced a write in
#: another process does not mark them current.
_UNLINKED: Final = (
    "INSERT OR REPLACE INTO meta VALUES ('linked', 'w' || strftime('%f', 'now') || random())"
)

#: Every write of logs, documents or watch rows forgets the fresh state (`quick_current`).
_STALE: Final = "DELETE FROM fresh"

#: (done, total) while indexing.
Progress = Callable[[int, int], None]

_DDL: Final = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);

CREATE TABLE IF NOT EXISTS logs(
    id INTEGER PRIMARY KEY,
    path TEXT UNIQUE NOT NULL,
    layout TEXT, pos INTEGER,
    dev INTEGER, ino INTEGER, size INTEGER, mtime INTEGER,
    session TEXT NOT NULL, title TEXT, created INTEGER,
    parent TEXT, seed INTEGER,
    summary BLOB, listed INTEGER NOT NULL DEFAULT 0,
    resume_offset INTEGER, resume_seq INTEGER, resume_turns INTEGER,
    inode_gen INTEGER
);

CREATE TABLE IF NOT EXISTS watch(
    path TEXT PRIMARY KEY, dev INTEGER, ino INTEGER, size INTEGER, mtime INTEGER
);

CREATE TABLE IF NOT EXISTS fresh(k INTEGER PRIMARY KEY CHECK (k = 0), gen BLOB NOT NULL);

CREATE TABLE IF NOT EXISTS links(k INTEGER PRIMARY KEY CHECK (k = 0), data BLOB NOT NULL);

CREATE TABLE IF NOT EXISTS docs(
    rowid INTEGER PRIMARY KEY,
    log INTEGER NOT NULL, turn INTEGER NOT NULL, seq INTEGER NOT NULL,
    field TEXT NOT NULL, text TEXT NOT NULL
);

CREATE INDEX IF NOT EXISTS docs_log ON docs(log, seq);

CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    text, content='docs', content_rowid='rowid', tokenize='trigram case_sensitive 0',
    detail='none'
);

INSERT INTO fts(fts, rank) VALUES('automerge', 16);
"""


class CatalogError(Exception):
    """The catalog cannot be opened or rebuilt (e.g. the cache folder is unwritable)."""


class LogEntry(msgspec.Struct, frozen=True):
    """One catalogued log, as lineage crediting needs it."""

    id: int
    path: str
    session: str
    title: str | None
    parent: str | None
    seed: int | None


def catalog_path(root: Path | str) -> Path:
    """Where the catalog of `root` lives: one file per resolved root path."""
    return Path(catalog_file(os.path.realpath(root)))


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


#: One log's indexing job: (path, layout id, what the catalog held for it: (dev, ino,
#: size, resume_offset, resume_seq, resume_turns, the inode's generation) or None).
_Job = tuple[str, "str | None", "tuple[int, int, int, int | None, int, int, int | None] | None"]


class _Extracted(msgspec.Struct, frozen=True):
    """What indexing one log produced, as plain values (it crosses processes)."""

    path: str
    layout: str | None
    identity: tuple[int, int, int, int]
    #: `SessionSummary.to_state()` (path left out), marshalled.
    state: bytes
    #: The log is small enough that the root's scan summarizes it this very way.
    listed: bool
    #: None: replace every document of the log; else keep those before this seq.
    keep_before: int | None
    #: (turn, seq, field, text) of each new document.
    rows: list[tuple[int, int, str, str]]
    resume: tuple[int | None, int, int]
    #: The catalog row this was resumed from (None: read from scratch).
    based_on: tuple[int, int, int, int | None, int, int, int | None] | None
    #: The inode's generation (`core.inodes`), None where it cannot be read.
    generation: int | None = None


class Catalog:
    """The catalog of one root.

    Args:
        root: The root folder.
        path: The database file (default: `catalog_path(root)`); ":memory:" for none.
    """

    def __init__(self, root: Path | str, path: Path | str | None = None) -> None:
        # Resolved, as `SessionRoot` resolves a root: logs are keyed by that one path.
        resolved = os.path.realpath(root)
        self.root = Path(resolved)
        self.root_str = resolved
        self.path = catalog_file(resolved) if path is None else str(path)
        self.db = self._open()
        #: The last walk's watch rows and whether it met no error (see `changes`).
        self._pending_watch: list[tuple[str, int, int, int, int]] = []
        self._pending_clean = False
        #: Logs and folders the last walk found whose path, or the session id their
        #: folder names, SQLite cannot hold (not UTF-8: `holdable`; dsh's folder name
        #: `~D83D` is a lone surrogate), so they are not in the catalog: a search says so.
        self.unstorable: list[str] = []

    @classmethod
    def existing(cls, root: Path | str) -> Catalog | None:
        """The root's catalog if one was built and is usable; None otherwise, having
        created, changed or removed nothing (for callers that only read a cache)."""
        resolved = os.path.realpath(root)
        path = catalog_file(resolved)
        if not os.path.exists(path):
            return None
        try:
            db = sqlite3.connect(path, timeout=5.0, isolation_level=None)
        except sqlite3.DatabaseError:
            return None
        try:
            db.execute("PRAGMA busy_timeout=5000")
            row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None or row[0] != str(SCHEMA):
                db.close()
                return None
        except sqlite3.DatabaseError:
            db.close()
            return None
        return cls.wrap(db, resolved)

    @classmethod
    def wrap(cls, db: sqlite3.Connection, resolved_root: str) -> Catalog:
        """The catalog of an already resolved root on a connection opened to its file
        (`fresh.open_fresh`), taken as it is: nothing is checked or created."""
        self = cls.__new__(cls)
        self.root, self.root_str = Path(resolved_root), resolved_root
        self.path = catalog_file(resolved_root)
        self._pending_watch, self._pending_clean = [], False
        self.db = db
        return self

    # -- opening -----------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self.path != ":memory:":
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
        db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        db.execute("PRAGMA busy_timeout=30000")
        if self.path != ":memory:":
            db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA cache_size=-65536")
        return db

    def _open(self) -> sqlite3.Connection:
        try:
            db = self._connect()
            if self._usable(db):
                return db
            db.close()
        except (sqlite3.DatabaseError, OSError):
            pass
        # Missing pieces, another schema, or a corrupt file: start again.
        self._remove_files()
        try:
            db = self._connect()
            self._create(db)
        except (sqlite3.DatabaseError, OSError) as exc:
            raise CatalogError(f"cannot create the search catalog {self.path}: {exc}") from exc
        return db

    def _usable(self, db: sqlite3.Connection) -> bool:
        # A read first: the warm path takes no write lock (a writer elsewhere does not
        # make it wait); only an empty file is created under BEGIN IMMEDIATE.
        try:
            row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        except sqlite3.OperationalError:
            row = None
        except sqlite3.DatabaseError:
            return False
        if row is not None:
            if row[0] != str(SCHEMA):
                return False
            try:
                db.execute("SELECT count(*) FROM logs").fetchone()
                db.execute("SELECT rowid FROM fts WHERE fts MATCH 'xyz' LIMIT 1").fetchall()
                db.execute("SELECT count(*) FROM watch").fetchone()
            except sqlite3.DatabaseError:
                return False
            return True
        db.execute("BEGIN IMMEDIATE")
        try:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
            if not tables:
                self._create_in(db)
                db.execute("COMMIT")
                return True
            db.execute("ROLLBACK")
            return False
        except sqlite3.DatabaseError:
            with contextlib.suppress(sqlite3.DatabaseError):
                db.execute("ROLLBACK")
            return False

    def _create(self, db: sqlite3.Connection) -> None:
        db.execute("BEGIN IMMEDIATE")
        self._create_in(db)
        db.execute("COMMIT")

    @staticmethod
    def _create_in(db: sqlite3.Connection) -> None:
        for statement in _DDL.split("\n\n"):
            db.execute(statement)
        db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(SCHEMA),))

    def _remove_files(self) -> None:
        if self.path == ":memory:":
            return
        for name in (self.path, self.path + "-wal", self.path + "-shm", fresh_file(self.path)):
            try:
                os.unlink(name)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise CatalogError(f"cannot replace the search catalog {self.path}: {exc}") from exc

    def close(self) -> None:
        """Close the database."""
        self.db.close()

    # -- what changed on disk ----------------------------------------------------------

    def _walk_unchanged(self) -> bool:
        """True if the last walk is still what a walk would find (see the module doc)."""
        row = self.db.execute("SELECT value FROM meta WHERE key='walked'").fetchone()
        if row is None or row[0] != "1":
            return False
        # A log catalogued since (the watcher's `index`) has no place in the walk yet.
        if self.db.execute("SELECT 1 FROM logs WHERE pos IS NULL LIMIT 1").fetchone():
            return False
        stat = os.stat
        for path, dev, ino, size, mtime in self.db.execute(
            "SELECT path, dev, ino, size, mtime FROM watch"
        ):
            try:
                st = stat(path)
            except OSError:
                return False
            if (st.st_mtime_ns, st.st_ino, st.st_size, st.st_dev) != (mtime, ino, size, dev):
                return False
        return True

    def _walk(self) -> tuple[dict[str, str | None], list[tuple[str, int, int, int, int]], bool]:
        """Every log under the root (path -> layout id) in discovery order, the watch
        rows of this walk, and whether it met no error."""
        from .root import _walk

        root = self.root_str
        listing: list[tuple[str, os.stat_result]] = []
        started = time.time_ns()
        found: dict[str, str | None] = {}
        clean = True
        top = os.path.realpath(root)
        item_root = (root, self.root.name, self.root.parent.name, 0)  # as `discover` starts
        unstorable: list[str] = []
        for item in _walk([item_root], set(), top=top, listing=listing):
            if item[0] == "log":
                if holdable(item[1]) and (item[2] is None or holdable(item[2])):
                    found[item[1]] = item[2]
                else:
                    unstorable.append(item[1])
            elif item[0] == "error":
                clean = False
        if unstorable or not all(holdable(path) for path, _st in listing):
            # Not clean: the next search walks again (and says so again), and no fresh
            # state is kept that a warm search would take without a word.
            clean = False
            listing = [(path, st) for path, st in listing if holdable(path)]
        self.unstorable = unstorable
        watch = [
            (
                path,
                st.st_dev,
                st.st_ino,
                st.st_size,
                -1 if st.st_mtime_ns > started - RACY_NS else st.st_mtime_ns,
            )
            for path, st in listing
        ]
        return found, watch, clean

    def changes(self) -> tuple[list[_Job], list[str], dict[str, str | None] | None]:
        """What `refresh` would do: the logs to (re-)index, the logs to drop, and the
        walk's logs in discovery order (None when the last walk still holds)."""
        stat = os.stat
        jobs: list[_Job] = []
        gone: list[str] = []
        if self._walk_unchanged():
            changed: list[str] = []
            for path, dev, ino, size, mtime in self.db.execute(
                "SELECT path, dev, ino, size, mtime FROM logs"
            ):
                try:
                    st = stat(path)
                except OSError:
                    gone.append(path)
                    continue
                if (st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev) != (mtime, size, ino, dev):
                    changed.append(path)
            return [self._job(p) for p in changed], gone, None
        known: dict[str, tuple[Any, ...]] = {
            r[0]: r[1:]
            for r in self.db.execute(
                "SELECT path, dev, ino, size, mtime, resume_offset, resume_seq, resume_turns, "
                "inode_gen FROM logs"
            )
        }
        walked, self._pending_watch, self._pending_clean = self._walk()
        for path, layout in walked.items():
            row = known.get(path)
            try:
                st = stat(path)
            except OSError:
                if row is not None:
                    gone.append(path)
                self._pending_clean = False  # listed but unreadable: walk again next time
                continue
            if row is None:
                jobs.append((path, layout, None))
            elif (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) != tuple(row[0:4]):
                based = (row[0], row[1], row[2], row[4], row[5], row[6], row[7])
                jobs.append((path, layout, based))
        gone.extend(p for p in known if p not in walked)
        return jobs, gone, walked

    # -- the fresh state: one read, then a stat per entry --------------------------------

    def fresh_state(self) -> FreshState | None:
        """What the catalog was last found current against (see `FreshState`), or None
        when it has not been found current since its last write (or its file is gone,
        or of another generation: `changes` tells then), or its links are another
        version's (`LINKED`: `refresh` links them again)."""
        row = self.db.execute(FRESH_ROW, (LINKED,)).fetchone()
        if row is None or self.path == ":memory:":
            return None
        state = read_fresh(fresh_file(self.path))
        return state if state is not None and state.gen == row[0] else None

    def quick_current(self) -> bool:
        """True if the catalog is current: `changes` would find nothing to do. Only
        the stored fresh state is read and each of its entries stat'ed; False also
        when there is none (then `changes` must tell)."""
        state = self.fresh_state()
        return state is not None and state.check()

    def _remember_fresh(self) -> None:
        """Store the fresh state, when the catalog is current by every rule `changes`
        and `refresh` apply (its last walk still holds and met no error, every log has
        its place in it, the parent links are done).

        It is made of the catalog's own rows, in the same transaction: the stat each
        log had when it was read, and each folder's as the walk listed it. A folder the
        walk saw within a second of its last change (mtime -1) never matches, so no
        state is stored while one is left. The file is written under a new generation
        id before the row naming it (a rollback leaves a file no row names), and every
        later write deletes the row (`_STALE`)."""
        if self.path == ":memory:":
            return  # no other process ever reads it
        db = self.db
        with _writing(db):
            row = db.execute(
                "SELECT (SELECT value FROM meta WHERE key='walked') IS '1'"
                " AND (SELECT value FROM meta WHERE key='linked') IS ?"
                " AND NOT EXISTS (SELECT 1 FROM logs WHERE pos IS NULL)",
                (LINKED,),
            ).fetchone()
            if row[0]:
                rows = db.execute(
                    "SELECT path, mtime, size, ino, dev FROM watch"
                    " UNION ALL SELECT path, mtime, size, ino, dev FROM logs"
                ).fetchall()
                if any(r[0] == self.root_str for r in rows) and all(r[1] != -1 for r in rows):
                    gen = os.urandom(GEN_BYTES)
                    try:
                        write_fresh(fresh_file(self.path), rows, gen)
                    except (OSError, OverflowError):
                        return  # no state: the next check compares the tables instead
                    db.execute("INSERT OR REPLACE INTO fresh VALUES (0, ?)", (gen,))

    # -- keeping current ---------------------------------------------------------------

    def refresh(self, progress: Progress | None = None) -> int:
        """Bring the catalog in line with the logs on disk.

        Returns:
            How many logs were (re-)indexed.
        """
        if self.quick_current():
            return 0
        jobs, gone, walked = self.changes()
        if gone:
            self.drop_many(gone)
        if jobs:
            self.index_many(jobs, progress)
        if walked is not None:
            self._remember_walk(walked)
        linked = self.db.execute("SELECT value FROM meta WHERE key='linked'").fetchone()
        if jobs or gone or linked is None or linked[0] != LINKED:
            self._relink()  # also after an `index`/`drop` alone (the app's watcher) or a crash
        self._remember_fresh()
        return len(jobs)

    def _remember_walk(self, walked: dict[str, str | None]) -> None:
        """Store the walk's order and watch rows: the next check need not walk."""
        db = self.db
        with _writing(db):
            db.executemany(
                "UPDATE logs SET pos=?, layout=? WHERE path=?",
                [(k, layout, path) for k, (path, layout) in enumerate(walked.items())],
            )
            db.execute(_STALE)
            db.execute("DELETE FROM watch")
            db.executemany("INSERT OR REPLACE INTO watch VALUES (?,?,?,?,?)", self._pending_watch)
            db.execute(
                "INSERT OR REPLACE INTO meta VALUES ('walked', ?)",
                ("1" if self._pending_clean else "0",),
            )

    def drop(self, path: Path) -> None:
        """Forget a log (it was removed)."""
        self.drop_many([str(path)])

    def drop_many(self, paths: Iterable[str | Path]) -> None:
        """Forget several logs, in one transaction."""
        paths = [p for p in map(str, paths) if holdable(p)]  # (the others are not held)
        db = self.db
        with _writing(db):
            db.execute(_UNLINKED)
            db.execute(_STALE)
            # The next check walks: a dropped log still on disk is found again, not
            # missed until some folder changes.
            db.execute("INSERT OR REPLACE INTO meta VALUES ('walked', '0')")
            for path in paths:
                row = db.execute("SELECT id FROM logs WHERE path=?", (str(path),)).fetchone()
                if row is not None:
                    _delete_docs(db, row[0], None)
                    db.execute("DELETE FROM logs WHERE id=?", (row[0],))

    def index(self, path: Path) -> None:
        """(Re-)index one log, in one transaction: appended turns only when the log
        grew in place after the last complete turn indexed, else from scratch."""
        path_str = str(path)
        from .root import layout_session_id

        layout_id = layout_session_id(Path(path_str))
        if not holdable(path_str) or (layout_id is not None and not holdable(layout_id)):
            return  # not held (see `unstorable`)
        row = self.db.execute(
            "SELECT layout, dev, ino, size, resume_offset, resume_seq, resume_turns, inode_gen "
            "FROM logs WHERE path=?",
            (path_str,),
        ).fetchone()
        layout: str | None
        if row is None:
            from .root import layout_session_id

            layout, based = layout_session_id(Path(path)), None
        else:
            layout, based = row[0], tuple(row[1:])
        self._store_all([_extract((path_str, layout, based))])

    def index_many(
        self, jobs: Sequence[_Job] | Iterable[str | Path], progress: Progress | None = None
    ) -> None:
        """(Re-)index many logs: read in the process pool when there are enough of
        them (and a pool can be had), written here in bulk, `BATCH` logs per
        transaction. `jobs` are `changes()` jobs, or plain paths."""
        work = [j if isinstance(j, tuple) else self._job(str(j)) for j in jobs]
        work = [j for j in work if holdable(j[0]) and (j[1] is None or holdable(j[1]))]
        total = len(work)
        done = 0
        if progress is not None:
            progress(0, total)
        pending: list[_Extracted | str] = []
        for batch in _extract_batches(work):
            pending.extend(batch)
            done += len(batch)
            if len(pending) >= WRITE_BATCH:
                self._store_all(pending)
                pending = []
            if progress is not None and done < total:
                progress(done, total)  # read; the last batch counts once it is written
        if pending:
            self._store_all(pending)
        if progress is not None and total:
            progress(total, total)

    def _job(self, path: str) -> _Job:
        row = self.db.execute(
            "SELECT layout, dev, ino, size, resume_offset, resume_seq, resume_turns, inode_gen "
            "FROM logs WHERE path=?",
            (path,),
        ).fetchone()
        if row is None:
            from .root import layout_session_id

            return (path, layout_session_id(Path(path)), None)
        return (path, row[0], tuple(row[1:]))

    def _store_all(self, batch: Sequence[_Extracted | str]) -> None:
        """Write a batch of extracted logs (a str: that log is gone) in one transaction."""
        db = self.db
        redo: list[_Job] = []
        with _writing(db):
            db.execute(_UNLINKED)
            db.execute(_STALE)
            docs: list[tuple[int, int, int, str, str]] = []
            for item in batch:
                if isinstance(item, str):
                    row = db.execute("SELECT id FROM logs WHERE path=?", (item,)).fetchone()
                    if row is not None:
                        _delete_docs(db, row[0], None)
                        db.execute("DELETE FROM logs WHERE id=?", (row[0],))
                    continue
                row = db.execute(
                    "SELECT id, dev, ino, size, mtime, resume_offset, resume_seq, resume_turns, "
                    "inode_gen FROM logs WHERE path=?",
                    (item.path,),
                ).fetchone()
                if row is not None and tuple(row[1:5]) == item.identity:
                    continue  # another process did it meanwhile
                if item.based_on is not None and (
                    row is None or tuple(row[1:4]) + tuple(row[5:9]) != item.based_on
                ):
                    # Resumed from a row another process has changed since: read again.
                    redo.append((item.path, item.layout, None))
                    continue
                log_id = _upsert(db, item, row[0] if row else None)
                if row is not None:
                    _delete_docs(db, log_id, item.keep_before)
                docs.extend((log_id, *r) for r in item.rows)
            # After the deletes: new rows may take the rowids of deleted ones (the last
            # log's, re-read), and the index must get every one of them.
            before = db.execute("SELECT coalesce(max(rowid), 0) FROM docs").fetchone()[0]
            db.executemany("INSERT INTO docs(log, turn, seq, field, text) VALUES (?,?,?,?,?)", docs)
            db.execute(
                "INSERT INTO fts(rowid, text) SELECT rowid, text FROM docs WHERE rowid>?", (before,)
            )
        if redo:
            self._store_all([_extract(job) for job in redo])

    def _relink(self) -> None:
        """Resolve each log's parent log (by path, ids can repeat) and store it."""
        from .lineage import link_sessions
        from .summary import state_link_key

        # The logs as of now; a write meanwhile (another process) leaves `linked` unset.
        self.db.execute("BEGIN")
        rows = self.db.execute("SELECT id, path, summary, seed FROM logs").fetchall()
        got = self.db.execute("SELECT value FROM meta WHERE key='linked'").fetchone()
        self.db.execute("COMMIT")
        generation = got[0] if got is not None else None
        states = [marshal.loads(state) for _id, _path, state, _seed in rows]
        links = link_sessions(
            [state_link_key(row[1], state) for row, state in zip(rows, states, strict=True)]
        )

        def seed(child: int, parent: int) -> int | None:
            # A child seeded from an older generation of its parent than the one
            # catalogued counts its seed in that generation's seqs: the cut of the
            # parent's log is after the same turn (none: it inherits nothing here).
            own: int | None = rows[child][3]
            mine, theirs = _version(states[child]), _version(states[parent])
            if own is None or own < 0 or mine == theirs:
                return own
            from .renumber import seed_in

            cut = seed_in(Path(rows[parent][1]), Path(rows[child][1]), mine, own)
            return -1 if cut is None else cut

        seeds = {c: seed(c, p) for c, p in links.parent.items()}
        data = pack_links(
            ((rows[c][0], rows[p][0], seeds[c]) for c, p in sorted(links.parent.items())),
            _turned(rows, states, links.parent, seeds),
        )
        with _writing(self.db):
            now = self.db.execute("SELECT value FROM meta WHERE key='linked'").fetchone()
            if (now[0] if now is not None else None) == generation:
                # Nothing was written since the read: these links are the logs' own.
                # (Else they may be stale: the writer's own refresh links again.)
                self.db.execute(_STALE)
                self.db.execute("INSERT OR REPLACE INTO links VALUES (0, ?)", (data,))
                self.db.execute("INSERT OR REPLACE INTO meta VALUES ('linked', ?)", (LINKED,))

    # -- reading -----------------------------------------------------------------------

    def entries(self) -> dict[int, LogEntry]:
        """Every catalogued log by id, with its resolved parent log path."""
        parent_of = {c: p for p, kids in read_links(self.db).items() for c, _seed in kids}
        rows = self.db.execute("SELECT id, path, session, title, seed FROM logs").fetchall()
        paths = {r[0]: r[1] for r in rows}
        return {
            r[0]: LogEntry(
                r[0],
                r[1],
                r[2],
                r[3],
                paths.get(parent_of[r[0]]) if r[0] in parent_of else None,
                r[4],
            )
            for r in rows
        }

    def children(self) -> Links:
        """Parent log id -> its children as (child log id, seed length; -1 for none)."""
        return read_links(self.db)

    def query(self, sql: str, params: Iterable[Any] = ()) -> Iterator[tuple[Any, ...]]:
        """Run a read query on the catalog."""
        yield from self.db.execute(sql, tuple(params))

    # -- summaries ---------------------------------------------------------------------

    def summaries(self, paths: Iterable[Path] | None = None) -> list[SessionSummary]:
        """Cached summaries, each checked against its log's (device, inode, size,
        mtime): a log that changed is re-read (and re-catalogued) first."""
        from .summary import SessionSummary

        wanted = None if paths is None else {str(p) for p in paths}
        rows = self.db.execute("SELECT path, dev, ino, size, mtime, summary FROM logs").fetchall()
        out: list[SessionSummary] = []
        for path, dev, ino, size, mtime, state in rows:
            if wanted is not None and path not in wanted:
                continue
            try:
                st = os.stat(path)
            except OSError:
                self.drop(Path(path))
                continue
            if _identity(st) != (dev, ino, size, mtime):
                self.index(Path(path))
                got = self.db.execute("SELECT summary FROM logs WHERE path=?", (path,)).fetchone()
                if got is None:
                    continue
                state = got[0]
            out.append(SessionSummary.from_state(Path(path), marshal.loads(state)))
        return out

    def summary(self, path: Path) -> SessionSummary | None:
        """The cached (validated) summary of one log, None if not catalogued."""
        found = self.summaries([path])
        return found[0] if found else None

    def listing_states(
        self,
    ) -> tuple[list[tuple[str, str | None, tuple[Any, ...] | None]], list[tuple[str, str]]] | None:
        """The root scan's plain result from the cache (`SessionRoot._scan_states`):
        every log as (path, layout id, summary state, or None for a log the scan
        indexes), in discovery order, and the folders that could not be listed.

        Each cached entry is checked against its log's (device, inode, size, mtime);
        a log that changed is summarized again (the catalog itself is left as it was:
        the next search brings it up to date). None when the last walk met an error
        (its folder messages are not kept): the caller scans as usual.
        """
        from .index import INDEX_THRESHOLD, ZSTD_INDEX_THRESHOLD
        from .summary import summary_state

        quick = self._listing_if_current()
        if quick is not None:
            out, stale = quick
        else:
            got = self._listing_checked()
            if got is None:
                return None
            out, stale = got
        if len(stale) > max(MIN_CACHED, len(out) // 4):
            return None  # mostly changed: the scan's own parallel walk is faster
        for k in stale:
            path, layout, _ = out[k]
            limit = ZSTD_INDEX_THRESHOLD if path.endswith(".zstd") else INDEX_THRESHOLD
            out[k] = (path, layout, summary_state(path, layout, limit))
        return out, []

    def _listing_if_current(
        self,
    ) -> tuple[list[tuple[str, str | None, tuple[Any, ...] | None]], list[int]] | None:
        """`listing_states`'s entries when the fresh state holds (one snapshot: the
        state and the rows it vouches for), each log's cached summary unless the scan
        indexes it; None when it does not hold."""
        db = self.db
        if self.path == ":memory:":
            return None
        db.execute("BEGIN")
        try:
            if not self.quick_current():
                return None
            out: list[tuple[str, str | None, tuple[Any, ...] | None]] = []
            stale: list[int] = []
            loads = marshal.loads
            for path, layout, state, listed in db.execute(
                "SELECT path, layout, summary, listed FROM logs ORDER BY pos, path"
            ):
                if listed:
                    out.append((path, layout, loads(state)))
                else:
                    stale.append(len(out))
                    out.append((path, layout, None))
            return out, stale
        finally:
            db.execute("COMMIT")

    def _listing_checked(
        self,
    ) -> tuple[list[tuple[str, str | None, tuple[Any, ...] | None]], list[int]] | None:
        """`listing_states`'s entries, each log stat'ed against its row (and the walk
        redone if a folder changed); None when the walk met an error."""
        known = {
            r[0]: r[1:]
            for r in self.db.execute(
                "SELECT path, layout, dev, ino, size, mtime, summary, listed FROM logs"
            )
        }
        if self._walk_unchanged():
            order = [r[0] for r in self.db.execute("SELECT path FROM logs ORDER BY pos, path")]
            walked = {p: known[p][0] for p in order}
        else:
            walked, _watch, clean = self._walk()
            if not clean:
                return None
        out: list[tuple[str, str | None, tuple[Any, ...] | None]] = []
        stale: list[int] = []
        stat = os.stat
        for path, layout in walked.items():
            row = known.get(path)
            try:
                st = stat(path)
            except OSError:
                row = None
                st = None
            if (
                row is not None
                and st is not None
                and row[6]
                and row[0] == layout
                and (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) == tuple(row[1:5])
            ):
                out.append((path, layout, marshal.loads(row[5])))
            else:
                stale.append(len(out))
                out.append((path, layout, None))
        return out, stale


@contextlib.contextmanager
def _writing(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction (`BEGIN IMMEDIATE`): committed when the block ends, rolled
    back if it (or the commit) raises."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _upsert(db: sqlite3.Connection, item: _Extracted, log_id: int | None) -> int:
    from .summary import SummaryState

    st = SummaryState._make(marshal.loads(item.state))
    header = st.header
    from .summary import HeaderState

    h = None if header is None else HeaderState._make(header)
    values = (
        item.layout,
        *item.identity,
        _storable(st.id),
        _storable(st.title),
        None if h is None else h.created_at,
        None if h is None else _storable(h.parent_session),
        None if h is None else h.seed_length,
        item.state,
        1 if item.listed else 0,
        *item.resume,
        item.generation,
    )
    if log_id is None:
        cur = db.execute(
            "INSERT INTO logs(path, layout, dev, ino, size, mtime, session, title, created, "
            "parent, seed, summary, listed, resume_offset, resume_seq, resume_turns, inode_gen) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (item.path, *values),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid
    db.execute(
        "UPDATE logs SET layout=?, dev=?, ino=?, size=?, mtime=?, session=?, title=?, "
        "created=?, parent=?, seed=?, summary=?, listed=?, resume_offset=?, resume_seq=?, "
        "resume_turns=?, inode_gen=? WHERE id=?",
        (*values, log_id),
    )
    return log_id


def holdable(path: str) -> bool:
    """True if SQLite can hold `path` as text: it is UTF-8 (a file name that is not
    decodes with lone surrogates, which UTF-8 cannot encode)."""
    return utf8_text(path)


def _storable(text: str | None) -> str | None:
    """`text` as SQLite can hold it: a lone surrogate (JSON's "\ud83d" alone, as a
    stream cut inside an emoji leaves it) becomes U+FFFD, as every view shows it
    (`textsafe`). Only a log's id, title and parent id are stored so: shown with a hit
    and matched with each other (the ids alike), never looked up by a caller (the
    log's summary, kept whole, is the exact one)."""
    return text if text is None or utf8_text(text) else no_surrogates(text)


def _delete_docs(db: sqlite3.Connection, log_id: int, keep_before: int | None) -> None:
    """Remove a log's documents (those from `keep_before` on) and their index entries."""
    where, params = (
        ("log=?", (log_id,))
        if keep_before is None
        else (
            "log=? AND seq>=?",
            (log_id, keep_before),
        )
    )
    db.execute(
        f"INSERT INTO fts(fts, rowid, text) SELECT 'delete', rowid, text FROM docs WHERE {where}",
        params,
    )
    db.execute(f"DELETE FROM docs WHERE {where}", params)


# -- indexing one log (in any process) --------------------------------------------------

#: Bytes read before a resume point to find the `turn/end` line that ends there.
_TAIL_READ: Final = 1 << 16

#: The events whose text is indexed (`turn_blocks` makes the blocks of these alone).
_TEXT_EVENTS: Final = frozenset(
    ("user/message", "agent/inbox/spliced", "assistant/message", "tool/call", "tool/result")
)


def _extract(job: _Job, lean_read: bool = True) -> _Extracted | str:
    """Index one log: its summary and documents as plain values; its path if gone.

    A raw log read from the start goes through `_lean_read` when it can (the same
    result; `lean_read=False` forces `LogReader`, for the test that says so)."""
    from .index import INDEX_THRESHOLD, ZSTD_INDEX_THRESHOLD
    from .inodes import generation_of
    from .logfile import Encoding, LogReader
    from .summary import SessionSummary, summary_state
    from .timeline import TimelineBuilder

    path, layout, based = job
    try:
        st = os.stat(path)
    except OSError:
        return path
    generation = generation_of(path)
    state = summary_state(path, layout, None)
    assert state is not None  # no size limit: always a state
    summary = SessionSummary.from_state(Path(path), state)
    limit = ZSTD_INDEX_THRESHOLD if path.endswith(".zstd") else INDEX_THRESHOLD
    listed = st.st_size < limit and summary.size < limit
    seed = summary.seed_length or 0
    resume = None
    if (
        based is not None
        and (based[0], based[1]) == (st.st_dev, st.st_ino)
        and based[6] == generation  # not a new file given the old inode number
        and st.st_size > based[2]  # (changed at the same size: rewritten, not appended)
        and based[3] is not None
        and summary.encoding is Encoding.RAW
        and summary.header is not None
        and _ends_turn_at(path, based[3], based[4] - 1)
    ):
        resume = (based[3], based[4], based[5])
    keep_before: int | None
    lean = None
    if resume is None and lean_read and summary.encoding is Encoding.RAW:
        lean = _lean_read(path)
    if lean is not None:
        events, turn_end_offsets = lean
        contiguous, reset = True, False
        builder = TimelineBuilder(seed)
        lead_in, turns_done = 0, 0
        keep_before = None
    else:
        if resume is not None:
            offset, lead_in, turns_done = resume
            reader = LogReader.resume(
                Path(path), summary.header, offset, lead_in, lead_in - 1, True
            )
            builder = TimelineBuilder(seed).starting_at(lead_in)
            keep_before = lead_in
        else:
            reader = LogReader(Path(path))
            builder = TimelineBuilder(seed)
            lead_in, turns_done = 0, 0
            keep_before = None
        batch = reader.read()
        events, reset = batch.events, batch.reset
        contiguous = reader.contiguous == reader.event_count
        turn_end_offsets = reader.turn_end_offsets
        if reset:
            keep_before = None
            builder = TimelineBuilder(seed)
            turns_done = 0
    builder.feed(events)
    turns = list(builder.snapshot().turns)
    if resume is not None and not reset and not turns and _any_text(events, seed):
        # Text after the last turn and no turn of its own yet (a queued user message):
        # a whole read gives it to the last turn, whose number the resume point does
        # not keep. Read the log whole.
        return _extract((path, layout, None), lean_read)
    rows = _turn_rows(events, turns, seed)
    # Where the next append can start: after the last complete turn, raw logs only.
    new_offset: int | None = None
    new_lead, new_done = lead_in, turns_done
    closed = [t for t in turns if t.end_seq is not None]
    if contiguous and closed:
        last = max(closed, key=lambda t: t.end_seq or 0)
        assert last.end_seq is not None
        offset_at = turn_end_offsets.get(last.end_seq)
        if offset_at is not None and all(t.end_seq is not None for t in turns if t is not last):
            opened = [t for t in turns if t.end_seq is None]
            if not opened or all(t.first_seq > last.end_seq for t in opened):
                new_offset, new_lead = offset_at, last.end_seq + 1
                new_done = turns_done + len(closed)
    if new_offset is None and resume is not None and not reset and not closed:
        new_offset = resume[0]  # still inside the same open turn
    return _Extracted(
        path,
        layout,
        _identity(st),
        marshal.dumps(state),
        listed,
        keep_before,
        rows,
        (new_offset, new_lead, new_done),
        based if resume is not None else None,
        generation,
    )


def _ends_turn_at(path: str, offset: int, seq: int) -> bool:
    """Whether the line that ends at `offset` in the raw log `path` is still the
    `turn/end` of `seq` the catalog resumes after (a log rewritten in place, longer,
    is read again; one whose rewrite keeps that line where it was is not told apart,
    as `LogReader` does not tell it)."""
    from .records import TURN_END_LINE, loads

    try:
        with open(path, "rb") as fh:
            start = max(0, offset - _TAIL_READ)
            fh.seek(start)
            tail = fh.read(offset - start)
    except OSError:
        return False
    if not tail.endswith(b"\n"):
        return False
    line = tail[tail.rfind(b"\n", 0, len(tail) - 1) + 1 : -1]
    if not line.startswith(TURN_END_LINE):
        return False
    try:
        record = loads(line)
    except ValueError:  # (orjson's JSONDecodeError is one)
        return False
    return isinstance(record, dict) and record.get("seq") == seq


def _any_text(events: Sequence[Any], seed: int) -> bool:
    """Whether any of `events` holds text the catalog indexes (`_turn_rows`)."""
    return any(e.type in _TEXT_EVENTS and e.seq >= seed for e in events)


def _lean_read(path: str) -> tuple[list[Any], dict[int, int]] | None:
    """A fresh read of a well-formed raw log, as `LogReader.read` gives it for what
    indexing uses: the events of `TIMELINE_TYPES` and `_TEXT_EVENTS` and the offset
    after each `turn/end` line. None, having decided nothing, if the log is anything
    but plain (a header `LogReader` would refuse, a line that does not start with its
    type, a record `expand_record` refuses, any seq out of order): `LogReader` reads
    it then, with its problems.

    Every other record (the chunk rows, most of a log) is only checked, by
    `codec.record_seqs`, and never expanded into events.
    """
    from .codec import RecordError, expand_record, parse_header, record_seqs
    from .formats import known, name_mismatch, packed_rows
    from .model import TURN_END
    from .records import TURN_END_LINE, loads
    from .timeline import TIMELINE_TYPES

    wanted = TIMELINE_TYPES | _TEXT_EVENTS
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    lines = data[: data.rfind(b"\n") + 1].split(b"\n")
    lines.pop()  # after the last newline: nothing, or a torn tail LogReader leaves too
    if not lines:
        return None
    try:
        header, _problems = parse_header(loads(lines[0]))
    except Exception:  # anything odd: LogReader's business
        return None
    if (
        header is None
        or not known(header.version)
        or name_mismatch(os.path.basename(path), header.version) is not None
    ):
        return None
    packed = packed_rows(header.version)
    offset = len(lines[0]) + 1
    expected = 0
    events: list[Any] = []
    ends: dict[int, int] = {}
    prefix = b'{"type":"'
    for line in lines[1:]:
        offset += len(line) + 1
        if not line.strip():
            continue
        if not line.startswith(prefix):
            return None
        quote = line.find(b'"', 9)
        try:
            obj = loads(line)
        except Exception:  # not JSON (or too deep for it): LogReader says what it is
            return None
        rtype = obj.get("type") if type(obj) is dict else None
        if type(rtype) is not str or line[9:quote] != rtype.encode("utf-8", "surrogatepass"):
            return None  # (a type holding a lone surrogate differs too: LogReader reads it)
        if not packed and "seq0" in obj:
            return None  # no packed rows from V2 on: LogReader names the row
        if rtype in wanted:
            try:
                got = expand_record(obj, packed_rows=packed)
            except RecordError:
                return None
            for event in got:
                if event.seq != expected:
                    return None
                expected += 1
            events.extend(got)
            if got and got[-1].type == TURN_END and line.startswith(TURN_END_LINE):
                ends[got[-1].seq] = offset
            continue
        seqs = record_seqs(obj)
        if seqs is None or seqs[0] != expected or seqs[1] < seqs[0]:
            return None
        expected = seqs[1] + 1
    return events, ends


def _turn_rows(
    events: Sequence[Any], turns: Sequence[Any], seed: int
) -> list[tuple[int, int, str, str]]:
    """(turn, seq, field, text) of every indexed text of `events`, seed left out.
    Each text is kept as `textsafe.flat_line` gives it (what a query matches and a
    snippet shows); one with nothing left is not kept."""
    from .content import turn_blocks
    from .textsafe import flat_line

    rows: list[tuple[int, int, str, str]] = []
    by_first = iter(sorted(turns, key=lambda t: t.first_seq))
    current = next(by_first, None)
    following = next(by_first, None)
    group: list[Any] = []
    text_events = _TEXT_EVENTS

    def flush(number: int) -> None:
        for block in turn_blocks(group):
            for s, f, t in _block_docs(block, seed):
                line = flat_line(t)
                if line:
                    rows.append((number, s, f, line))

    for event in events:
        while following is not None and event.seq >= following.first_seq:
            if current is not None and group:
                flush(current.number)
            group = []
            current, following = following, next(by_first, None)
        if event.seq >= seed and event.type in text_events:
            group.append(event)
    if current is not None and group:
        flush(current.number)
    return rows


def _block_docs(block: object, seed: int) -> Iterator[tuple[int, str, str]]:
    from .content import AssistantText, Reasoning, ToolCall, UserText

    if isinstance(block, UserText):
        if block.text and block.seq >= seed:
            yield block.seq, "user", block.text
    elif isinstance(block, AssistantText):
        if block.text:
            yield block.seq, "assistant", block.text
    elif isinstance(block, Reasoning):
        if block.text:
            yield block.seq, "reasoning", block.text
    elif isinstance(block, ToolCall):
        if block.arguments_text and block.name != "?":
            yield block.seq, "tool", block.arguments_text
        if block.result is not None and block.result.text:
            yield block.result.seq, "tool", block.result.text


def _extract_all(jobs: list[_Job]) -> list[_Extracted | str]:
    """One pool task: index a batch of logs."""
    return [_extract(job) for job in jobs]


def _extract_batches(jobs: list[_Job]) -> Iterator[list[_Extracted | str]]:
    """The jobs' results in batches of `BATCH`, in order: read in the process pool
    when there are enough of them, else here. A failed task is redone here."""
    from .parallel import discard_broken, pool_for_work

    batches = [jobs[k : k + BATCH] for k in range(0, len(jobs), BATCH)]
    pool = pool_for_work() if len(batches) >= 4 else None
    if pool is None:
        for batch in batches:
            yield _extract_all(batch)
        return
    futures: list[Any] = []
    try:
        for batch in batches:
            futures.append(pool.submit(_extract_all, batch))
    except Exception:  # a broken or stopped pool: the rest is read here
        pass
    try:
        for k, batch in enumerate(batches):
            got = None
            if k < len(futures):
                try:
                    got = futures[k].result()
                except Exception:  # a crashed worker: this batch is read here
                    got = None
            yield got if got is not None else _extract_all(batch)
    finally:
        for future in futures:
            future.cancel()
        discard_broken(pool)


def now_ms() -> int:
    """Wall-clock milliseconds (for progress pacing)."""
    return int(time.time() * 1000)


def _version(state: tuple[Any, ...]) -> int:
    """A summary state's format version (`HeaderState.version`; V1 reads as V0, which is
    what `formats.parent_generation` takes it for)."""
    header = state[2]
    version = header[2] if header is not None else None
    if type(version) is not int or version == 1:
        return 0
    return version


def _turned(
    rows: list[Any], states: list[tuple[Any, ...]], parent: dict[int, int], seeds: dict[int, Any]
) -> dict[int, tuple[int, bool]]:
    """The `query.Turned` map of a catalog's links (by log id): for each renumbered link
    (a child of another version than its parent's log) and every link below one, the
    number of the last whole turn of its parent the child inherits. A search hit's seq,
    counted in the log it was found in, says nothing about a seed counted in another
    numbering; its turn does (migrations keep turns). Empty for a root with no such
    family: no log is read."""
    crossed = [c for c, p in parent.items() if _version(states[c]) != _version(states[p])]
    if not crossed:
        return {}
    from .renumber import generation_timeline

    children: dict[int, list[int]] = {}
    for c, p in parent.items():
        children.setdefault(p, []).append(c)
    wanted: dict[int, bool] = {}
    stack = list(crossed)
    while stack:
        c = stack.pop()
        if c in wanted:
            continue
        wanted[c] = _version(states[c]) != _version(states[parent[c]])
        stack.extend(children.get(c, ()))
    timelines: dict[int, Any] = {}
    out: dict[int, tuple[int, bool]] = {}
    for c, cross in wanted.items():
        p, cut = parent[c], seeds[c]
        last = 0
        if cut is not None and cut > 0:
            timeline = timelines.get(p)
            if timeline is None:
                timeline = timelines[p] = generation_timeline(Path(rows[p][1]))
            for k, turn in enumerate(timeline.turns):
                end = timeline.last_seq_of(k)
                if end is None or end >= cut:
                    break
                last = turn.number
        out[rows[c][0]] = (last, cross)
    return out
