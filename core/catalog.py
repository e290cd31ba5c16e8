"""The catalog: a per-root SQLite (FTS5) cache of every log's text and summary.

It is only a cache: the logs stay the truth. Each log is known by (device, inode,
size, mtime); a log that changed is re-indexed, one that vanished is dropped, and a
log that only grew since its last complete turn has only its new turns indexed.
Events inside a child's seed are not indexed again: they belong to the session that
wrote them. WAL mode and one transaction per log let two processes share it; a
catalog that is missing, from another schema, or corrupt is rebuilt.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import msgspec

from .content import AssistantText, Reasoning, ToolCall, UserText, turn_blocks
from .lineage import link_sessions
from .logfile import Encoding, LogReader
from .model import SessionEvent
from .root import discover
from .summary import SessionSummary, summarize
from .timeline import TimelineBuilder
from .xdg import cache_dir

SCHEMA: Final = 1
FIELDS: Final = ("user", "assistant", "reasoning", "tool")

#: (done, total) while indexing.
Progress = Callable[[int, int], None]

_DDL: Final = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);

CREATE TABLE IF NOT EXISTS logs(
    id INTEGER PRIMARY KEY,
    path TEXT UNIQUE NOT NULL,
    dev INTEGER, ino INTEGER, size INTEGER, mtime INTEGER,
    session TEXT NOT NULL, title TEXT, created INTEGER,
    parent TEXT, seed INTEGER,
    summary BLOB,
    resume_offset INTEGER, resume_seq INTEGER, resume_turns INTEGER
);

CREATE TABLE IF NOT EXISTS docs(
    rowid INTEGER PRIMARY KEY,
    log INTEGER NOT NULL, turn INTEGER NOT NULL, seq INTEGER NOT NULL,
    field TEXT NOT NULL, text TEXT NOT NULL
);

CREATE INDEX IF NOT EXISTS docs_log ON docs(log, seq);

CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    text, content='docs', content_rowid='rowid', tokenize='trigram case_sensitive 0'
);

CREATE TRIGGER IF NOT EXISTS docs_ai AFTER INSERT ON docs BEGIN
    INSERT INTO fts(rowid, text) VALUES (new.rowid, new.text);
END;

CREATE TRIGGER IF NOT EXISTS docs_ad AFTER DELETE ON docs BEGIN
    INSERT INTO fts(fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END;
"""


class CatalogError(Exception):
    """The catalog cannot be opened or rebuilt (e.g. the cache folder is unwritable)."""


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One catalogued log, as lineage crediting needs it."""

    id: int
    path: str
    session: str
    title: str | None
    parent: str | None
    seed: int | None


def catalog_path(root: Path) -> Path:
    """Where the catalog of `root` lives: one file per resolved root path."""
    key = hashlib.sha256(os.fsencode(str(Path(root).resolve()))).hexdigest()[:24]
    return cache_dir() / f"catalog-{key}.sqlite"


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


_STATE_ENCODER: Final = msgspec.msgpack.Encoder()
_STATE_DECODER: Final = msgspec.msgpack.Decoder()


def _tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


class Catalog:
    """The catalog of one root.

    Args:
        root: The root folder.
        path: The database file (default: `catalog_path(root)`); ":memory:" for none.
    """

    def __init__(self, root: Path, path: Path | str | None = None) -> None:
        self.root = Path(root)
        self.path = str(catalog_path(self.root) if path is None else path)
        self.db = self._open()

    # -- opening -----------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        db.execute("PRAGMA busy_timeout=30000")
        if self.path != ":memory:":
            db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
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
        db.execute("BEGIN IMMEDIATE")
        try:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
            if not tables:
                self._create_in(db)
                db.execute("COMMIT")
                return True
            if "meta" not in tables:
                db.execute("ROLLBACK")
                return False
            row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            ok = row is not None and row[0] == str(SCHEMA)
            if ok:
                db.execute("SELECT count(*) FROM logs").fetchone()
                db.execute("SELECT rowid FROM fts WHERE fts MATCH 'xyz' LIMIT 1").fetchall()
            db.execute("COMMIT")
            return ok
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
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(self.path + suffix)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise CatalogError(f"cannot replace the search catalog {self.path}: {exc}") from exc

    def close(self) -> None:
        """Close the database."""
        self.db.close()

    # -- keeping current ---------------------------------------------------------------

    def refresh(self, progress: Progress | None = None) -> int:
        """Bring the catalog in line with the logs on disk.

        Returns:
            How many logs were (re-)indexed.
        """
        found: dict[str, os.stat_result] = {}
        for path, _sid in discover(self.root, lambda p, e: None):
            try:
                found[str(path)] = os.stat(path)
            except OSError:
                continue
        known = {
            r[0]: (r[1], r[2], r[3], r[4])
            for r in self.db.execute("SELECT path, dev, ino, size, mtime FROM logs")
        }
        changed = [p for p, st in found.items() if known.get(p) != _identity(st)]
        gone = [p for p in known if p not in found]
        for p in gone:
            self.drop(Path(p))
        for done, p in enumerate(sorted(changed)):
            if progress is not None:
                progress(done, len(changed))
            self.index(Path(p))
        if progress is not None and changed:
            progress(len(changed), len(changed))
        if changed or gone:
            self._relink()
        return len(changed)

    def drop(self, path: Path) -> None:
        """Forget a log (it was removed)."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute("SELECT id FROM logs WHERE path=?", (str(path),)).fetchone()
            if row is not None:
                db.execute("DELETE FROM docs WHERE log=?", (row[0],))
                db.execute("DELETE FROM logs WHERE id=?", (row[0],))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def index(self, path: Path) -> None:
        """(Re-)index one log, in one transaction: appended turns only when the log
        grew in place after the last complete turn indexed, else from scratch."""
        try:
            st = os.stat(path)
        except OSError:
            self.drop(path)
            return
        summary = summarize(path)
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute(
                "SELECT id, dev, ino, size, mtime, resume_offset, resume_seq, resume_turns "
                "FROM logs WHERE path=?",
                (str(path),),
            ).fetchone()
            if row is not None and _identity(st) == tuple(row[1:5]):
                db.execute("COMMIT")  # another process did it meanwhile
                return
            resume = None
            if (
                row is not None
                and (row[1], row[2]) == (st.st_dev, st.st_ino)
                and st.st_size >= row[3]
                and row[5] is not None
                and summary.encoding is Encoding.RAW
                and summary.header is not None
            ):
                resume = (row[5], row[6], row[7])
            log_id = self._upsert(db, path, st, summary, row[0] if row else None)
            self._index_events(db, log_id, path, summary, resume)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _upsert(
        self,
        db: sqlite3.Connection,
        path: Path,
        st: os.stat_result,
        summary: SessionSummary,
        log_id: int | None,
    ) -> int:
        state = _STATE_ENCODER.encode(summary.to_state())
        values = (
            *_identity(st),
            summary.id,
            summary.title,
            summary.created_at,
            summary.parent_session,
            summary.seed_length,
            state,
        )
        if log_id is None:
            cur = db.execute(
                "INSERT INTO logs(path, dev, ino, size, mtime, session, title, created, "
                "parent, seed, summary) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (str(path), *values),
            )
            assert cur.lastrowid is not None
            return cur.lastrowid
        db.execute(
            "UPDATE logs SET dev=?, ino=?, size=?, mtime=?, session=?, title=?, created=?, "
            "parent=?, seed=?, summary=? WHERE id=?",
            (*values, log_id),
        )
        return log_id

    def _index_events(
        self,
        db: sqlite3.Connection,
        log_id: int,
        path: Path,
        summary: SessionSummary,
        resume: tuple[int, int, int] | None,
    ) -> None:
        seed = summary.seed_length or 0
        if resume is not None:
            offset, lead_in, turns_done = resume
            reader = LogReader.resume(path, summary.header, offset, lead_in, lead_in - 1, True)
            builder = TimelineBuilder(seed).starting_at(lead_in)
            db.execute("DELETE FROM docs WHERE log=? AND seq>=?", (log_id, lead_in))
        else:
            reader = LogReader(path)
            builder = TimelineBuilder(seed)
            lead_in, turns_done = 0, 0
            db.execute("DELETE FROM docs WHERE log=?", (log_id,))
        batch = reader.read()
        events = batch.events
        if batch.reset:
            db.execute("DELETE FROM docs WHERE log=?", (log_id,))
            builder = TimelineBuilder(seed)
            turns_done = 0
        builder.feed(events)
        timeline = builder.snapshot()
        turns = list(timeline.turns)
        rows: list[tuple[int, int, int, str, str]] = []
        by_first = iter(sorted(turns, key=lambda t: t.first_seq))
        current = next(by_first, None)
        following = next(by_first, None)
        group: list[SessionEvent] = []

        def flush(number: int) -> None:
            for block in turn_blocks(group):
                rows.extend((log_id, number, s, f, t) for s, f, t in _block_docs(block, seed))

        for event in events:
            while following is not None and event.seq >= following.first_seq:
                if current is not None and group:
                    flush(current.number)
                group = []
                current, following = following, next(by_first, None)
            if event.seq >= seed:
                group.append(event)
        if current is not None and group:
            flush(current.number)
        db.executemany("INSERT INTO docs(log, turn, seq, field, text) VALUES (?,?,?,?,?)", rows)
        # Where the next append can start: after the last complete turn, raw logs only.
        new_offset: int | None = None
        new_lead, new_done = lead_in, turns_done
        closed = [t for t in turns if t.end_seq is not None]
        if reader.contiguous == reader.event_count and closed:
            last = max(closed, key=lambda t: t.end_seq or 0)
            assert last.end_seq is not None
            offset_at = reader.turn_end_offsets.get(last.end_seq)
            if offset_at is not None and all(t.end_seq is not None for t in turns if t is not last):
                opened = [t for t in turns if t.end_seq is None]
                if not opened or all(t.first_seq > last.end_seq for t in opened):
                    new_offset, new_lead = offset_at, last.end_seq + 1
                    new_done = turns_done + len(closed)
        if new_offset is None and resume is not None and not batch.reset and not closed:
            new_offset = resume[0]  # still inside the same open turn
        db.execute(
            "UPDATE logs SET resume_offset=?, resume_seq=?, resume_turns=? WHERE id=?",
            (new_offset, new_lead, new_done, log_id),
        )

    def _relink(self) -> None:
        """Resolve each log's parent log (by path, ids can repeat) and store it."""
        rows = self.db.execute("SELECT id, session, summary, path FROM logs").fetchall()
        keys = []
        for _id, _sid, state, path in rows:
            s = SessionSummary.from_state(Path(path), _tuples(_STATE_DECODER.decode(state)))
            keys.append((s.id, s.parent_session, s.created_at, str(path), s.header is not None))
        links = link_sessions(keys)
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute("DELETE FROM meta WHERE key LIKE 'parent:%'")
            self.db.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                [(f"parent:{rows[c][0]}", str(rows[p][0])) for c, p in links.parent.items()],
            )
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    # -- reading -----------------------------------------------------------------------

    def entries(self) -> dict[int, LogEntry]:
        """Every catalogued log by id, with its resolved parent log path."""
        parent_of = {
            int(k[7:]): int(v)
            for k, v in self.db.execute("SELECT key, value FROM meta WHERE key LIKE 'parent:%'")
        }
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

    def children(self) -> dict[int, list[int]]:
        """Parent log id -> child log ids."""
        out: dict[int, list[int]] = {}
        for k, v in self.db.execute("SELECT key, value FROM meta WHERE key LIKE 'parent:%'"):
            out.setdefault(int(v), []).append(int(k[7:]))
        return out

    def query(self, sql: str, params: Iterable[Any] = ()) -> Iterator[tuple[Any, ...]]:
        """Run a read query on the catalog."""
        yield from self.db.execute(sql, tuple(params))

    # -- summaries ---------------------------------------------------------------------

    def summaries(self, paths: Iterable[Path] | None = None) -> list[SessionSummary]:
        """Cached summaries, each checked against its log's (device, inode, size,
        mtime): a log that changed is re-read (and re-catalogued) first."""
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
                state = self.db.execute(
                    "SELECT summary FROM logs WHERE path=?", (path,)
                ).fetchone()[0]
            out.append(SessionSummary.from_state(Path(path), _tuples(_STATE_DECODER.decode(state))))
        return out

    def summary(self, path: Path) -> SessionSummary | None:
        """The cached (validated) summary of one log, None if not catalogued."""
        found = self.summaries([path])
        return found[0] if found else None


def _block_docs(block: object, seed: int) -> Iterator[tuple[int, str, str]]:
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


def now_ms() -> int:
    """Wall-clock milliseconds (for progress pacing)."""
    return int(time.time() * 1000)
