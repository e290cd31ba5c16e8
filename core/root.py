"""A root on disk: discovery, listing, loading, and forking persisted sessions.

A root is any directory (or one log file). Sessions are found in the dsh layout
(`--<project>--/<encoded id>/session.jsonl[.zstd]`) and as any other `*.jsonl` /
`*.jsonl.zstd` file whose first record is a session header.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import gc
import marshal
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, cast

import msgspec
import orjson
import zstandard

from .codec import encode_records, parse_header
from .formats import (
    NEWEST_VERSION,
    generation_name,
    parent_generation,
    same_but_minted,
    seeded_by_marker,
    snapshot_form,
    superseded,
)
from .formats import known as known_version
from .ids import short_ids_of
from .layout import layout_id, session_dir
from .lineage import (
    Lineage,
    LineageNode,
    LinkKey,
    Links,
    build_lineage,
    first_project,
    group_projects,
    link_key,
    link_sessions,
    project_order,
)
from .logfile import RAW_SUFFIX, ZSTD_SUFFIX, Encoding, LogContents, LogReader, encoding_of
from .model import (
    END_SEED,
    FORMAT_VERSION,
    LogProblem,
    ProblemKind,
    SessionEvent,
    SessionHeader,
)
from .parallel import (
    MIN_SHARE,
    discard_broken,
    process_pool,
    split_map,
    start_pool,
    usable_cores,
)
from .records import INDEX_THRESHOLD, ZSTD_INDEX_THRESHOLD, loads
from .store import (
    ForkErrorCode,
    SessionForkError,
    check_boundary,
    end_seed_event,
    new_session_id,
)
from .summary import (
    SessionSummary,
    from_contents,
    head_states,
    state_json_bytes,
    state_link_key,
    summarize,
    summarize_small,
    summary_states,
)
from .textsafe import one_line
from .writer import (
    TEMP_PREFIX,
    FaultHook,
    FileRange,
    LogExistsError,
    _no_fault,
    cleanup_root_temporaries,
    encode_new_log,
    write_new_file,
)

# The big-log index and the timeline builder are imported where a log is loaded or
# indexed: a listing of small logs (`ls --json`) never needs them (importing them,
# with `longline`, takes about 10 ms).
if TYPE_CHECKING:
    from concurrent.futures import Future

    from .index import IndexedSession, Progress
    from .timeline import Timeline, TimelineBuilder

#: Folders discovery never enters (the watcher uses the same set).
SKIP_DIRS: Final = frozenset({".git", "node_modules", "__pycache__", ".venv"})


class RootError(Exception):
    """The root itself cannot be used (missing, not a directory or log).

    Attributes:
        code: `ROOT_NOT_FOUND` when the path does not exist, else `ROOT_INVALID`.
    """

    def __init__(self, message: str, code: str = "ROOT_INVALID") -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def no_sessions_message(path: Path) -> str:
    """What the CLI and the app say of a root that holds no session log (one sentence,
    in one place, so both say the same; the path made safe to print)."""
    return f"no sessions under {one_line(str(path))}"


class SessionLookupError(LookupError):
    """A session reference that names no session, or more than one."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def is_log_name(name: str) -> bool:
    """True for file names a log may have."""
    return (name.endswith(RAW_SUFFIX) or name.endswith(ZSTD_SUFFIX)) and not name.startswith(
        TEMP_PREFIX
    )


def has_session_header(path: Path) -> bool:
    """True if the file's first record is a session header (cheap: first line only)."""
    try:
        if encoding_of(path) is Encoding.ZSTD:
            first = _first_frame_line(path)
            if first is None:
                return False
            obj = loads(first)  # (as the readers read it: a lone surrogate, `1e400`)
            return isinstance(obj, dict) and parse_header(obj)[0] is not None
        with open(path, "rb") as fh:
            first = fh.readline(1 << 20)
        obj = loads(first)
    except (OSError, orjson.JSONDecodeError, zstandard.ZstdError):
        return False
    return isinstance(obj, dict) and obj.get("type") == "session"


def _first_frame_line(path: Path) -> bytes | None:
    """The first line of a zstd log, decompressing only its first frame (and at most
    1 MiB of it); None if the frame holds no whole line."""
    with open(path, "rb") as fh:
        frame = zstandard.ZstdDecompressor().decompressobj()
        out = b""
        while b"\n" not in out and len(out) < 1 << 20 and not frame.eof:
            chunk = fh.read(1 << 16)
            if not chunk:
                break
            out += frame.decompress(chunk)
    line, newline, _ = out.partition(b"\n")
    return line if newline else None


def layout_session_id(path: Path) -> str | None:
    """The session id a dsh-layout path implies, or None if not in the layout."""
    return layout_id(path.name, path.parent.name, path.parent.parent.name)


def discover(
    root: Path, on_error: Callable[[Path, OSError], None] | None = None
) -> Iterator[tuple[Path, str | None]]:
    """Yield `(log path, id implied by the layout or None)` for every log under root.

    Follows directory symlinks once (a loop is skipped) when they lead to a folder
    inside the root; one leading out of it (to `/`, say) is not followed and is
    reported to `on_error`. Never raises: a folder that vanishes or cannot be listed
    is reported to `on_error` and passed over.
    """
    root = Path(root)
    top = os.path.realpath(root)
    for item in _walk([(str(root), root.name, root.parent.name, 0)], set(), top=top):
        if item[0] == "log":
            yield Path(item[1]), item[2]
        elif item[0] == "error" and on_error is not None:
            on_error(Path(item[1]), item[2])


#: A folder to walk: (path, its name, its parent's name, depth below the root).
#: Names are kept as strings so ten thousand session folders cost no Path arithmetic.
_Folder = tuple[str, str, str, int]
#: What `_walk` yields, in discovery order: ("log", path, layout id),
#: ("error", folder, OSError), or with a cutoff ("folder", path, name, parent name).
_Found = (
    tuple[Literal["log"], str, str | None]
    | tuple[Literal["error"], str, OSError]
    | tuple[Literal["folder"], str, str, str]
)


def _walk(
    stack: list[_Folder],
    seen: set[tuple[int, int]],
    *,
    cutoff: int | None = None,
    walked: list[tuple[int, int]] | None = None,
    top: str | None = None,
    listing: list[tuple[str, os.stat_result]] | None = None,
    crowded: set[str] | None = None,
) -> Iterator[_Found]:
    """Depth-first, sorted walk of folders (the one order `discover` gives).

    A folder at depth `cutoff` is yielded unwalked instead, in the place its logs
    would have had. `walked` collects the (device, inode) of every folder walked, and
    a directory symlink adds (-1, -1), so a caller can tell whether separate walks
    could have met the same folder. With `top` (the root's real path), a directory
    symlink whose target lies outside it is not followed: it is yielded as an error.
    `listing` collects the stat of every folder listed and of every file whose header
    decided whether it is a log: while none of them changes, the walk finds the same
    logs (the catalog's freshness check, `core.catalog`). `crowded` collects every log
    found in a folder that holds other entries too: a log in a folder of its own has
    no other generation beside it (`formats.generation_files`), which a listing then
    knows without listing its folder again.
    """
    while stack:
        folder, folder_name, parent_name, depth = stack.pop()
        if depth == cutoff:
            yield ("folder", folder, folder_name, parent_name)
            continue
        try:
            st = os.stat(folder)
            key = (st.st_dev, st.st_ino)
            if key in seen:
                continue
            seen.add(key)
            with os.scandir(folder) as it:
                entries = list(it)
            if len(entries) > 1:  # a session folder holds one entry: skip the key calls
                entries.sort(key=_entry_name)
        except OSError as exc:
            yield ("error", folder, exc)
            continue
        if walked is not None:
            walked.append(key)
        if listing is not None:
            listing.append((folder, st))
        subdirs: list[_Folder] = []
        # One session per folder: the highest generation is the log, older ones its
        # history (a session folder holds one entry, or two with dsh's session.lock).
        older = superseded([e.name for e in entries]) if len(entries) > 1 else None
        for entry in entries:
            name = entry.name
            if older and name in older:
                continue
            try:
                if entry.is_dir():
                    if name in SKIP_DIRS:
                        continue
                    if entry.is_symlink():
                        outside = _outside(entry.path, top)
                        if outside is not None:
                            yield ("error", entry.path, outside)
                            continue
                        if walked is not None:
                            walked.append((-1, -1))
                    subdirs.append((entry.path, name, folder_name, depth + 1))
                    continue
                if not is_log_name(name) or not entry.is_file():
                    continue
            except OSError:
                continue
            implied = layout_id(name, folder_name, parent_name)
            if listing is not None and implied is None and not name.startswith("session"):
                try:
                    listing.append((entry.path, os.stat(entry.path)))
                except OSError:
                    listing.append((entry.path, st))  # unknown: never matches again
            if (
                implied is not None
                or name.startswith("session")
                or has_session_header(Path(entry.path))
            ):
                if crowded is not None and len(entries) > 1:
                    crowded.add(entry.path)
                yield ("log", entry.path, implied)
        stack.extend(reversed(subdirs))


def _outside(link: str, top: str | None) -> OSError | None:
    """Why the directory symlink `link` is not followed (its target lies outside the
    root's real path `top`), or None to follow it."""
    if top is None:
        return None
    target = os.path.realpath(link)
    try:
        inside = os.path.commonpath([top, target]) == top
    except ValueError:  # different drives
        inside = False
    if inside:
        return None
    return OSError(errno.EXDEV, f"a directory symlink to {target}, outside the root: not followed")


def _entry_name(entry: os.DirEntry[str]) -> str:
    return entry.name


@dataclass(frozen=True, slots=True)
class LoadedSession:
    """One session read whole, with its timeline and every problem (seed check included).

    Attributes:
        summary: The listing entry, exact (from this full read).
        events: All valid events in file order.
        contiguous: Leading events with `seq == index`: the forkable prefix.
        timeline: The turns.
        problems: This log's problems plus cross-session ones.
        parent_path: The resolved parent log, if any.
        end_offsets: For raw logs, the file offset just past each `turn/end` line.
    """

    summary: SessionSummary
    events: Sequence[SessionEvent]
    contiguous: int
    timeline: Timeline
    problems: tuple[LogProblem, ...]
    parent_path: Path | None = None
    end_offsets: dict[int, int] = field(default_factory=dict)
    #: Set for a big log (see `index.INDEX_THRESHOLD`): `events` is then a lazy view
    #: and `events_between` reads only the byte range it needs.
    index: IndexedSession | None = None
    #: The builder the load fed (taken by the first `timeline_builder` call).
    builder: TimelineBuilder | None = field(default=None, repr=False, compare=False)

    def timeline_builder(self) -> TimelineBuilder:
        """A builder holding this timeline's state, to extend it with appended events
        (the load's own the first time: the events are not fed twice)."""
        if self.index is not None:
            return self.index.timeline_builder()
        builder = self.builder
        if builder is not None:
            object.__setattr__(self, "builder", None)  # handed over: one owner
            return builder
        from .timeline import TimelineBuilder

        return TimelineBuilder(self.timeline.seed_length).feed(self.events)

    @property
    def turn_ends(self) -> list[int]:
        """Seqs of the `turn/end` events (ascending)."""
        return list(self.timeline.turn_ends)

    def boundary_error(self, boundary: object) -> SessionForkError | None:
        """Why forking this session at `boundary` would be refused, or None if it would not.

        The same rule `SessionRoot.fork` applies (`check_boundary`), so a view can mark
        forkable rows without re-implementing it (a `turn/end` past a seq gap is not).
        """
        header = self.summary.header
        try:
            check_boundary(
                header.id if header is not None else self.summary.id,
                len(self.events),
                self.contiguous,
                self.timeline.turn_ends,
                boundary,
                type_at=lambda i: self.events[i].type,
                last_seq=self.events[-1].seq if self.events else None,
            )
        except SessionForkError as exc:
            return exc
        return None

    def events_between(
        self, first_seq: int, last_seq: int | None, *, bounded: bool = False
    ) -> list[SessionEvent]:
        """The events whose seq lies in `[first_seq, last_seq]` (None: to the end).

        The UI reads a turn's events through this, never through `events` directly,
        so a large log can serve them on demand. `bounded` (for display): a big log's
        line of `longline.LONG_LINE` bytes or more is read in windows, its long strings
        cut to `clipped.Clipped` prefixes (a log read whole holds its lines already).
        """
        if self.index is not None:
            return self.index.events_between(first_seq, last_seq, bounded=bounded)
        hi = float("inf") if last_seq is None else last_seq
        return [e for e in self.events if first_seq <= e.seq <= hi]


class ForkResult(msgspec.Struct, frozen=True):
    """A persisted fork: the child's summary, its parent and the boundary used."""

    child: SessionSummary
    parent_id: str
    boundary: int | None
    bytes_written: int


#: A log a scan found: (path, layout id, `SessionSummary.to_state()` values, or None
#: for a log big enough to index).
_FoundLog = tuple[str, str | None, tuple[Any, ...] | None]

_gc_lock = threading.Lock()
_gc_holds = 0


@contextlib.contextmanager
def no_gc(*, freeze: bool = False) -> Iterator[None]:
    """Pause the cyclic garbage collector (process-wide, nestable across threads).

    Building ten thousand summaries creates no reference cycles, but allocating them
    triggers collections that walk every object the process holds (in the app: all
    of Textual's), for nothing. With `freeze`, everything alive when the pause ends
    is moved out of the collector's sight (`gc.freeze`): the summaries are long-lived
    and freed by reference counting, and the first collections after the pause would
    otherwise walk all of them again (a fifth of a second for ten thousand).
    """
    global _gc_holds
    with _gc_lock:
        if _gc_holds == 0 and not gc.isenabled():
            _gc_holds = -1  # the caller had it off: leave it off
        elif _gc_holds >= 0:
            _gc_holds += 1
            gc.disable()
    try:
        yield
    finally:
        with _gc_lock:
            if freeze:
                gc.freeze()
            if _gc_holds == -1:
                _gc_holds = 0
            elif _gc_holds > 0:
                _gc_holds -= 1
                if _gc_holds == 0:
                    gc.enable()


class BackgroundScan:
    """`SessionRoot.scan` running in the process pool while the caller works on.

    The root's top two levels are walked here (a few ms); the folders below go to
    the pool (`parallel.start_pool`, started before any thread) in batches of
    `BATCH`, and `result` takes the batches in, in discovery order, building each
    one's summaries while the workers still scan the later ones. A one-log root, or
    one whose top levels hold a directory symlink, is scanned whole by one worker
    (the serial scan). Without a pool, if a task fails, or if two walks could have
    met the same folder, `result` scans in this process instead: the outcome is
    always the one `scan` gives. Nothing here forks.

    A root with a search catalog (`core.catalog`, built by the first search) is
    listed from the catalog's summary cache instead, in one task: each entry is
    checked against its log's (device, inode, size, mtime) and whatever changed is
    re-read, so the result is still the scan's.

    With `preview` (the app's scan), a root of `PREVIEW_UNITS` session folders or
    more, none of its top folders holding most of them, is scanned in two passes:
    headers first (`_head_batch_marshalled`), then the first screen worked out on one
    worker (`_preview_plan`) while the others summarize the rest (`_states_marshalled`);
    `result` hands the first screen to its `on_preview` (a `ScanPreview`) before it
    installs the summaries, which are the one-pass scan's.
    """

    #: Folders per task.
    BATCH: Final = 400
    #: A root of fewer session folders than this is not previewed: the session tree
    #: opens every project of a root that small, so its first screen needs every log.
    PREVIEW_UNITS: Final = 1000

    def __init__(self, root: SessionRoot, *, preview: bool = False) -> None:
        self.root = root
        #: The batches' tasks, in discovery order.
        self.tasks: list[Future[bytes]] = []
        #: The previewed scan's first pass (`_head_batch_marshalled`), in discovery order.
        self.heads: list[Future[bytes]] = []
        #: The serial scan's task (a one-log root, a directory symlink near the top).
        self.whole: Future[tuple[list[_FoundLog], list[tuple[str, str]]]] | None = None
        self._walked: list[tuple[int, int]] = []
        self._pool = process_pool()
        #: The scan from the root's search catalog (`_cached_states`), when it has one,
        #: marshalled (three times faster to take in than the pool's pickle).
        self.cached: Future[bytes | None] | None = None
        self._use_cache = root.single is None and _has_catalog(root.path)
        if self._pool is None:
            return
        if self._use_cache:
            try:
                self.cached = self._pool.submit(_cached_states_packed, str(root.path))
                return
            except Exception:  # a broken or stopped pool: `result` scans here
                self.cached = None
        seen: set[tuple[int, int]] = set()
        units: list[_Found] = []
        if root.single is None:
            path = root.path
            units = list(
                _walk(
                    [(str(path), path.name, path.parent.name, 0)],
                    seen,
                    cutoff=2,
                    walked=self._walked,
                    top=str(path),
                )
            )
        try:
            if root.single is not None or (-1, -1) in self._walked:
                self.whole = self._pool.submit(_serial_states, str(root.single or root.path))
                return
            frozen = frozenset(seen)
            top = str(root.path)
            first_pass = _head_batch_marshalled if preview and _previewable(units) else None
            for k in range(0, len(units), self.BATCH):
                chunk = units[k : k + self.BATCH]
                if first_pass is not None:
                    whole = k == 0  # (see `_head_batch_marshalled`)
                    self.heads.append(self._pool.submit(first_pass, frozen, chunk, top, whole))
                else:
                    self.tasks.append(self._pool.submit(_scan_batch_marshalled, frozen, chunk, top))
        except Exception:  # a broken or stopped pool: `result` scans here
            self._cancel()

    def _cancel(self) -> None:
        for task in (*self.tasks, *self.heads):
            task.cancel()
        if self.whole is not None:
            self.whole.cancel()
        self.tasks, self.heads, self.whole = [], [], None

    def result(
        self, on_preview: Callable[[ScanPreview], None] | None = None
    ) -> list[SessionSummary]:
        """The scan's summaries, now the root's own (waits for the pool's tasks).

        Args:
            on_preview: For a scan started with `preview`, called (in this thread)
                with the `ScanPreview` once the first project's logs are summarized,
                before the others are.
        """
        tasks, whole, heads = self.tasks, self.whole, self.heads
        self.tasks, self.whole, self.heads = [], None, []
        try:
            if heads:
                return self._previewed(heads, on_preview)
            if self._use_cache:
                self._use_cache = False
                cached, self.cached = self.cached, None
                got: _Listing | None
                links: Links | None = None
                try:
                    if cached is not None:
                        packed = cached.result()
                        got, links = (None, None) if packed is None else _unpack_cached(packed)
                    else:
                        got = _cached_states(str(self.root.path))
                except Exception:  # a dead worker, an unreadable catalog: scan as usual
                    got = None
                if got is None:
                    return self.root.scan()
                return self.root._install(*got, links=links)
            if whole is not None:
                try:
                    found, problems = whole.result()
                except Exception:  # the worker died: scan here
                    return self.root.scan()
                return self.root._install(found, problems)
            if not tasks:
                return self.root.scan()
            with no_gc():
                taken = self._take(tasks)
                if taken is None:
                    return self.root.scan()
                logs, problems, keys = taken
                summaries = self.root._install_summaries(logs, problems)
                if keys is not None:
                    # The lineage's links from the plain values the batches brought
                    # (their keys taken while the later batches were still scanned):
                    # what `build_lineage` would work out from the summaries.
                    self.root._install_links(summaries, link_sessions(keys))
                return summaries
        finally:
            if self._pool is not None:
                discard_broken(self._pool)

    def _take(self, tasks: list[Future[bytes]]) -> _Taken | None:
        """Take every batch in order as it is done; None if any task failed or two
        walks met one folder (only the serial walk is right then). With the logs, the
        lineage's keys of them (`state_link_key`), or None when a log has no state yet
        (one to index) or a path `Path` would spell otherwise (`_links_of`'s rule)."""
        logs: list[tuple[Path, str | None, SessionSummary | None]] = []
        problems: list[tuple[str, str]] = []
        link_keys: list[LinkKey] | None = []
        keys = set(self._walked)
        for k, task in enumerate(tasks):
            try:
                found_logs, errors, walked, _entries = _unmarshalled((), task.result())
            except Exception:  # a crashed worker, a broken pool, a reply that does not load
                for later in tasks[k + 1 :]:
                    later.cancel()
                return None
            if (-1, -1) in walked or not keys.isdisjoint(walked):
                for later in tasks[k + 1 :]:
                    later.cancel()
                return None
            keys.update(walked)
            problems.extend(errors)
            for path_str, sid, state in found_logs:
                path = Path(path_str)
                summary = None if state is None else SessionSummary.from_state(path, state)
                logs.append((path, sid, summary))
                if link_keys is not None:
                    if state is None or not _plain_path(path_str):
                        link_keys = None
                    else:
                        link_keys.append(state_link_key(path_str, state))
        return logs, problems, link_keys

    def _previewed(
        self, heads: list[Future[bytes]], on_preview: Callable[[ScanPreview], None] | None
    ) -> list[SessionSummary]:
        """`result` of a previewed scan. Its first pass is taken in as each batch is
        done (every log's state, most of them provisional: `summary.head_states`);
        then, first in the pool's queue, one worker works out the preview from the
        parts of the replies meant for it (`_preview_plan`) while the others summarize every
        provisional log; the preview is shown (`on_preview`) as soon as it is back,
        and the summaries installed once all are. Whatever fails, the serial scan
        answers."""
        with no_gc():
            taken = _take_heads(heads, set(self._walked))
            if taken is None:
                return self.root.scan()
            parts, paths, sids, states, provisional, problems = taken
            pool = self._pool
            assert pool is not None  # (the heads were submitted to it)
            try:
                plan = pool.submit(_preview_plan, parts) if on_preview is not None else None
                tasks = [
                    (part, pool.submit(_states_marshalled, [(paths[i], sids[i]) for i in part]))
                    for part in (
                        provisional[k : k + self.BATCH]
                        for k in range(0, len(provisional), self.BATCH)
                    )
                ]
            except Exception:  # a broken or stopped pool
                return self.root.scan()
            links: Links | None = None
            if plan is not None and on_preview is not None:
                try:
                    planned = marshal.loads(plan.result())
                except Exception:  # a crashed worker: no preview, the scan goes on
                    planned = None
                if planned is not None:
                    links = _unpack_links(planned[0])
                    on_preview(_preview_of(planned, links, paths, states, self.root.path))
            heads_keys = _plain_keys(paths, states)
            summaries: list[SessionSummary | None] = [None] * len(paths)
            later = set(provisional)
            _summarize_states(
                (i for i in range(len(paths)) if i not in later), paths, states, summaries
            )
            if not _take_states(tasks, paths, states, summaries):
                return self.root.scan()
            found = [
                (summary.path if summary is not None else Path(path), sid, summary)
                for path, sid, summary in zip(paths, sids, summaries, strict=True)
            ]
            installed = self.root._install_summaries(found, problems)
            keys = _plain_keys(paths, states)
            if keys is not None:
                # The second pass read the logs again: link again if a header changed.
                if links is None or keys != heads_keys:
                    links = link_sessions(keys)
                self.root._install_links(installed, links)
            return installed


def _plain_keys(paths: list[str], states: list[Any]) -> list[LinkKey] | None:
    """The lineage keys of logs given as plain values (`state_link_key`); None when a
    log has no state (one to index) or a path is not plain (`_plain_path`)."""
    if None in states or not all(map(_plain_path, paths)):
        return None
    return list(map(state_link_key, paths, states))


def _take_heads(
    tasks: list[Future[bytes]], walked: set[tuple[int, int]]
) -> (
    tuple[
        list[bytes],
        list[str],
        list[str | None],
        list[Any],
        list[int],
        list[tuple[str, str]],
    ]
    | None
):
    """A previewed scan's first pass taken in, in order, each batch as it is done: the
    parts of its replies for `_preview_plan`, the logs' paths, layout ids and states,
    the indices of the provisional states, and the folders that could not be listed;
    None if a task failed or two walks met one folder (`BackgroundScan._take`'s
    rules)."""
    parts: list[bytes] = []
    paths: list[str] = []
    sids: list[str | None] = []
    states: list[Any] = []
    provisional: list[int] = []
    problems: list[tuple[str, str]] = []
    for k, task in enumerate(tasks):
        try:
            mine, theirs = marshal.loads(task.result())
            logs, errors, batch_walked, batch_provisional = marshal.loads(mine)
        except Exception:  # a crashed worker, a broken pool, a reply that does not load
            logs = None
        if logs is None or (-1, -1) in batch_walked or not walked.isdisjoint(batch_walked):
            for later in tasks[k + 1 :]:
                later.cancel()
            return None
        walked.update(batch_walked)
        problems.extend(errors)
        provisional.extend(len(paths) + i for i in batch_provisional)
        parts.append(theirs)
        for path, sid, state in logs:
            paths.append(path)
            sids.append(sid)
            states.append(state)
    return parts, paths, sids, states, provisional, problems


def _take_states(
    tasks: list[tuple[list[int], Future[bytes]]],
    paths: list[str],
    states: list[Any],
    summaries: list[SessionSummary | None],
) -> bool:
    """Take second-pass replies (`_states_marshalled`), each as it is done, of the
    logs at the indices each task names: their states into `states`, their summaries
    into `summaries` (`_summarize_states`). False if a task failed (the later ones are
    cancelled)."""
    for k, (indices, task) in enumerate(tasks):
        try:
            got = marshal.loads(task.result())
        except Exception:  # a crashed worker, a broken pool
            for _, later in tasks[k + 1 :]:
                later.cancel()
            return False
        for i, state in zip(indices, got, strict=True):
            states[i] = state
        _summarize_states(indices, paths, states, summaries)
    return True


def _summarize_states(
    indices: Iterable[int],
    paths: list[str],
    states: list[Any],
    summaries: list[SessionSummary | None],
) -> None:
    """The summaries of the logs at `indices` from their states (None for a log to
    index), into `summaries`."""
    from_state = SessionSummary.from_state
    for i in indices:
        state = states[i]
        summaries[i] = None if state is None else from_state(Path(paths[i]), state)


def _preview_plan(parts: list[bytes]) -> bytes:
    """The first screen of a previewed scan, worked out in a pool worker from what its
    first pass's batches gave for it (`_head_batch_marshalled`), on plain values: the
    links of every log (`_pack_links`), every project in the session tree's order with
    its count of root sessions (`lineage.group_projects`), the first project's logs
    (`first_project`: what the tree opens unfolded), the exact states of those that
    were provisional (summarized here), their short ids, and how many logs there are.
    Marshalled; None when the logs cannot be linked from plain values, a log of the
    first project is to be indexed, or the first project is most of the root (a
    preview would show little sooner)."""
    keys: list[LinkKey] = []
    cwds: list[str | None] = []
    sids: list[str | None] = []
    provisional: set[int] = set()
    for part in parts:
        batch_keys, batch_cwds, batch_sids, batch_provisional = marshal.loads(part)
        if batch_keys is None:
            return marshal.dumps(None)
        provisional.update(len(keys) + i for i in batch_provisional)
        keys.extend(batch_keys)
        cwds.extend(batch_cwds)
        sids.extend(batch_sids)
    links = link_sessions(keys)
    in_missing = {i for kids in links.missing.values() for i in kids}
    roots = [i for i in links.order if i not in links.parent and i not in in_missing]
    rank = {i: r for r, i in enumerate(links.order)}
    children: dict[int, list[int]] = {}
    for child, parent in links.parent.items():
        children.setdefault(parent, []).append(child)
    for kids in children.values():
        kids.sort(key=rank.__getitem__)  # as `build_lineage` orders them
    by_project = group_projects(roots, links.missing.items(), cwds.__getitem__)
    first = first_project(by_project, lambda i: children.get(i, ()))
    if 2 * len(first) > len(keys):
        return marshal.dumps(None)
    projects = [
        (cwd, sum(1 for kind, _ in by_project[cwd] if kind == "session"))
        for cwd in sorted(by_project, key=project_order)
    ]
    paths = [key[3] for key in keys]
    asked = [i for i in first if i in provisional]
    scanned = summary_states([(paths[i], sids[i], _index_limit(paths[i])) for i in asked])
    if None in scanned:
        return marshal.dumps(None)
    shorts = short_ids_of([key[0] for key in keys], paths, first)
    states = dict(zip(asked, scanned, strict=True))
    return marshal.dumps((_pack_links(links), projects, first, states, shorts, len(keys)))


def _preview_of(
    planned: Any, links: Links, paths: list[str], states: list[Any], root: Path
) -> ScanPreview:
    """The `ScanPreview` of a `_preview_plan` answer (`links`: its links unpacked;
    `states`: the first pass's): the first project's summaries and their lineage
    (`build_lineage` of those logs alone, linked as among all)."""
    _, projects, first, scanned, shorts, total = planned
    local = {i: k for k, i in enumerate(first)}
    summaries = [
        SessionSummary.from_state(Path(paths[i]), scanned[i] if i in scanned else states[i])
        for i in first
    ]
    own = Links(
        [local[i] for i in links.order if i in local],
        {local[c]: local[p] for c, p in links.parent.items() if c in local and p in local},
        {
            pid: [local[i] for i in kids if i in local]
            for pid, kids in links.missing.items()
            if any(i in local for i in kids)
        },
        {local[i]: found for i, found in links.problems.items() if i in local},
    )
    return ScanPreview(
        build_lineage(summaries, own),
        {s.path: s for s in summaries},
        projects,
        {summaries[local[i]].path: short for i, short in shorts.items()},
        total,
        root,
    )


class ScanPreview(NamedTuple):
    """A big root's session tree before its scan ends (`BackgroundScan.result`'s
    `on_preview`): every project, and the first one's sessions (the one the tree opens
    unfolded) summarized exactly, linked as among all the root's logs (their headers,
    which the scan reads first)."""

    #: The first project's sessions: their lineage (its roots and missing parents).
    lineage: Lineage
    #: Their summaries.
    summaries: dict[Path, SessionSummary]
    #: Every project in the tree's order (`lineage.project_order`): its cwd (or
    #: `lineage.NO_CWD`) and how many root sessions it holds.
    projects: list[tuple[str, int]]
    #: The first project's sessions' short ids (`ids.short_ids` among every log).
    shorts: dict[Path, str]
    #: How many logs the root holds.
    total: int
    #: The root's folder.
    root: Path


def _previewable(units: Sequence[_Found]) -> bool:
    """Whether a scan of these units is worth previewing: a root big enough for the
    session tree to open folded, whose first project is not most of it (the session
    folders of no one project folder are the majority)."""
    if len(units) < BackgroundScan.PREVIEW_UNITS:
        return False
    counts: dict[str, int] = {}
    for unit in units:
        parent = os.path.dirname(unit[1])
        counts[parent] = counts.get(parent, 0) + 1
    return 2 * max(counts.values()) <= len(units)


#: What `BackgroundScan._take` gathers: (path, layout id, summary or None for a log
#: to index) in discovery order, the folders that could not be listed, and the
#: lineage's keys of the logs (None when they cannot be had from plain values).
_Taken = tuple[
    list[tuple[Path, str | None, "SessionSummary | None"]],
    list[tuple[str, str]],
    "list[LinkKey] | None",
]


class PlainListing(NamedTuple):
    """`SessionRoot.scan_plain`'s logs, in discovery order, as columns (one entry per
    log in each)."""

    #: The logs' paths.
    paths: list[str]
    #: Their summaries as `SessionSummary.to_state` values.
    states: list[tuple[Any, ...]]
    #: Their `ls --json` entries without cross-session problems
    #: (`summary.state_json_bytes`) where the process that scanned them wrote them;
    #: None for the caller to write.
    entries: list[bytes | None]


#: A scan's plain result: every log as (path, layout id, summary state or None for a
#: log to index) in discovery order, and the folders that could not be listed.
_Listing = tuple[list["_FoundLog"], list[tuple[str, str]]]


def _has_catalog(path: Path) -> bool:
    """Whether a search catalog was built for this (resolved) root."""
    from .fresh import catalog_file

    try:
        return os.path.exists(catalog_file(str(path)))
    except OSError:
        return False


def _cached_states(path: str) -> _Listing | None:
    """The scan of a root from its search catalog's summary cache, each entry checked
    against its log's (device, inode, size, mtime) and a changed log re-read
    (`Catalog.listing_states`); None if there is no usable catalog (scan then)."""
    from .catalog import Catalog

    catalog = Catalog.existing(path)
    if catalog is None:
        return None
    try:
        return catalog.listing_states()
    finally:
        catalog.close()


def _cached_states_packed(path: str) -> bytes | None:
    """`_cached_states`, marshalled (a `BackgroundScan` task), with the lineage's links
    worked out here too (`_links_of`), off the process that will draw them."""
    got = _cached_states(path)
    if got is None:
        return None
    links = _links_of(got[0])
    return marshal.dumps((got[0], got[1], None if links is None else _pack_links(links)))


def _pack_links(links: Links) -> tuple[Any, ...]:
    """`Links` as plain values (`marshal`-able); `_unpack_links` takes them back."""
    problems = {
        i: [(p.kind.value, p.message, p.seq, p.line) for p in found]
        for i, found in links.problems.items()
    }
    return (links.order, links.parent, links.missing, problems)


def _unpack_links(plain: tuple[Any, ...]) -> Links:
    """The `Links` `_pack_links` gave."""
    order, parent, missing, problems = plain
    return Links(
        order,
        parent,
        missing,
        {
            i: [LogProblem(ProblemKind(k), m, q, n) for k, m, q, n in found]
            for i, found in problems.items()
        },
    )


def _links_of(found: list[_FoundLog]) -> Links | None:
    """`link_sessions` of a listing's logs, as `build_lineage` would link their
    summaries; None if a log has no state yet (it is indexed by the caller) or a path
    is not in the form `Path` keeps it in (then `str(summary.path)` could differ)."""
    keys = []
    for path, _sid, state in found:
        if state is None or not _plain_path(path):
            return None
        keys.append(state_link_key(path, state))
    return link_sessions(keys)


def _plain_path(path: str) -> bool:
    """True if `str(Path(path)) == path` for this absolute POSIX path (no empty or `.`
    part, no trailing separator): what a walk from a resolved root gives."""
    return (
        path.startswith("/")
        and "//" not in path
        and "/./" not in path
        and not path.endswith(("/", "/."))
        and os.sep == "/"
    )


def _unpack_cached(packed: bytes) -> tuple[_Listing, Links | None]:
    """What `_cached_states_packed` sent: the listing and its links, if any."""
    found, problems, plain = marshal.loads(packed)
    return (found, problems), None if plain is None else _unpack_links(plain)


def _serial_states(path: str) -> tuple[list[_FoundLog], list[tuple[str, str]]]:
    """The serial scan of a root, as plain values (a `BackgroundScan` task)."""
    return SessionRoot(Path(path))._scan_states()


class SessionRoot:
    """The sessions under one directory (or one log file).

    Args:
        path: A directory, or a single log file.

    Attributes:
        path: The folder shown: the directory, or the single log's folder.
        single: The single log, or None for a directory.
        write_root: Where `fork` writes children: the directory; for a single log in
            dsh's layout (`<sessions root>/--<project>--/<encoded id>/session*.jsonl`)
            its sessions root, where dsh looks for sessions; for any other single
            log, its folder.
    """

    def __init__(self, path: Path) -> None:
        path = Path(path)
        try:
            st = path.stat()
        except FileNotFoundError as exc:
            raise RootError(f"{path} does not exist", "ROOT_NOT_FOUND") from exc
        except OSError as exc:
            raise RootError(f"{path} cannot be opened: {exc.strerror or exc}") from exc
        # Resolved once, here: every log is keyed by this one canonical path (the scan,
        # the watcher, which reports absolute paths, and the app), so `turnline .`
        # never shows one log under two names.
        with contextlib.suppress(OSError, RuntimeError):
            path = path.resolve()
        if stat.S_ISDIR(st.st_mode):
            self.path = path
            self.single: Path | None = None
            self.write_root = path
        elif stat.S_ISREG(st.st_mode) and is_log_name(path.name):
            self.path = path.parent
            self.single = path
            in_layout = layout_session_id(path) is not None
            self.write_root = path.parent.parent.parent if in_layout else path.parent
        else:
            raise RootError(f"{path} is neither a directory nor a .jsonl/.jsonl.zstd log")
        self._summaries: dict[Path, SessionSummary] = {}
        self._indexes: dict[Path, IndexedSession] = {}
        self._lineage: Lineage | None = None
        #: The cached lineage's nodes by log path (built on the first `update`).
        self._nodes: dict[Path, LineageNode] | None = None
        self._scanned = False
        # The watcher thread updates summaries while the UI thread builds lineages:
        # a lineage built from an older generation is never stored as current.
        self._lock = threading.RLock()
        self._generation = 0
        self.scan_problems: list[tuple[Path, str]] = []

    # -- listing ---------------------------------------------------------------------

    def log_paths(self) -> list[tuple[Path, str | None]]:
        """Every log this root shows."""
        if self.single is not None:
            return [(self.single, layout_session_id(self.single))]
        self.scan_problems = []
        return list(
            discover(self.path, lambda p, e: self.scan_problems.append((p, e.strerror or str(e))))
        )

    def scan(self) -> list[SessionSummary]:
        """Discover and summarize every log (header + byte scan, no full parse).

        A big root is walked and summarized on all cores (see `_scan_states`).
        Logs big enough to index are indexed here afterwards, so their index is
        kept for a `load` that follows.
        """
        cleanup_root_temporaries(self.path)  # leftovers of killed forks (dead pids, old)
        found = self._scan_states()
        return self._install(found[0], found[1])

    def _install(
        self,
        found: list[_FoundLog],
        problems: list[tuple[str, str]],
        links: Links | None = None,
    ) -> list[SessionSummary]:
        """Take a scan's results (from `_scan_states`) as this root's summaries (and
        `links`, their `link_sessions` if a pool worker worked them out, as its
        lineage)."""
        with no_gc():  # ten thousand summaries and no cycles: nothing to collect
            built: list[tuple[Path, str | None, SessionSummary | None]] = []
            for path_str, sid, state in found:
                path = Path(path_str)
                built.append(
                    (path, sid, None if state is None else SessionSummary.from_state(path, state))
                )
            summaries = self._install_summaries(built, problems)
            if links is not None:
                self._install_links(summaries, links)
            return summaries

    def _install_links(self, summaries: list[SessionSummary], links: Links) -> None:
        """Take `links` (`link_sessions` of `summaries`' link keys, in their order,
        worked out from plain values) as the lineage of the summaries just installed."""
        if len(links.order) == len(summaries) == len(self._summaries):
            lineage = build_lineage(summaries, links)
            with self._lock:
                if self._lineage is None and list(self._summaries.values()) == summaries:
                    self._lineage, self._nodes = lineage, None

    def _install_summaries(
        self,
        found: list[tuple[Path, str | None, SessionSummary | None]],
        problems: list[tuple[str, str]],
    ) -> list[SessionSummary]:
        """Take summaries as this root's own, indexing the logs that have none yet."""
        with no_gc():
            summaries = [
                summary if summary is not None else self._summarize(path, sid)
                for path, sid, summary in found
            ]
            with self._lock:
                self.scan_problems = [(Path(folder), why) for folder, why in problems]
                self._summaries = {s.path: s for s in summaries}
                self._scanned = True
                self._changed()
        return summaries

    def scan_plain(self) -> tuple[PlainListing, list[tuple[str, str]]]:
        """`scan` as plain values, for a caller that only prints them (`ls --json`):
        the logs as a `PlainListing`, and the folders that could not be listed. Builds
        no summary objects and leaves the root as it was (a big log is still indexed,
        and its index kept).

        A parallel scan also writes each log's `ls --json` entry in the process that
        scanned it, so the caller's own work after the scan (alone on one core) is
        only the lineage and the joining of the entries."""
        found, problems, entries = self._scan_listing(render=True)
        if not found:
            return PlainListing([], [], []), problems
        paths, sids, maybe = (list(column) for column in zip(*found, strict=True))
        k = -1
        for _ in range(maybe.count(None)):  # logs big enough to index (few)
            k = maybe.index(None, k + 1)
            maybe[k] = self._summarize(Path(paths[k]), sids[k]).to_state()
        states = cast(list[tuple[Any, ...]], maybe)
        return PlainListing(paths, states, entries or [None] * len(paths)), problems

    def _scan_states(self) -> tuple[list[_FoundLog], list[tuple[str, str]]]:
        """Every log as (path, layout id, summary state or None for a log to index),
        and the folders that could not be listed, as plain values."""
        found, problems, _ = self._scan_listing(render=False)
        return found, problems

    def _scan_listing(
        self, render: bool = False
    ) -> tuple[list[_FoundLog], list[tuple[str, str]], list[bytes | None] | None]:
        """`_scan_states`, and with `render` each log's `ls --json` entry as
        `_scan_batch` writes it, when the scan was parallel (else None)."""
        if self.single is None:
            found = self._scan_parallel(render=render)
            if found is not None:
                return found
        paths = self.log_paths()
        limit = {Encoding.ZSTD: ZSTD_INDEX_THRESHOLD, Encoding.RAW: INDEX_THRESHOLD}
        asked = [(str(path), sid, limit[encoding_of(path) or Encoding.RAW]) for path, sid in paths]
        got = summary_states(asked)
        states = [(name, sid, state) for (name, sid, _), state in zip(asked, got, strict=True)]
        return states, [(str(p), why) for p, why in self.scan_problems], None

    def _scan_parallel(
        self, render: bool = False
    ) -> tuple[list[_FoundLog], list[tuple[str, str]], list[bytes | None] | None] | None:
        """`_scan_listing`, walked on all cores; None when the root is too small to
        gain from it or the walks could have overlapped.

        Each folder below the root's top two levels (a session folder in dsh's
        layout) is one unit; batches of them are walked and summarized in processes
        (`_split_walk`, `_scan_batch`). Units keep discovery order, so the result is
        the serial one; whenever separate walks could disagree, the serial walk runs.
        """
        results: list[_UnitResult] | None = _split_walk(
            self.path, functools.partial(_scan_batch, render=render)
        )
        if results is None:
            return None
        found: list[_FoundLog] = []
        problems: list[tuple[str, str]] = []
        entries: list[bytes | None] = []
        for logs, errors, _walked, batch_entries in results:
            problems.extend(errors)
            found.extend(logs)
            entries.extend(batch_entries)
        return found, problems, entries if render else None

    def start_before_ui(self) -> BackgroundScan | None:
        """Start, while this process has one thread, what the app then takes in: for
        a root, the process pool and the scan in it (`scan_in_background`); for one
        log big enough to be indexed in two halves (`index.worth_splitting`), the pool
        alone, so its load takes the second half there as a headless command does.
        Returns the scan started, if any (for a big root, previewed: `BackgroundScan`).
        Nothing starts with fewer than two cores (`parallel.start_pool`).
        """
        if self.single is None:
            if start_pool() is None:
                return None
            return self.scan_in_background(preview=True)
        from .index import worth_splitting

        if worth_splitting(self.single):
            start_pool()
        return None

    def scan_in_background(self, *, preview: bool = False) -> BackgroundScan:
        """Start `scan` in the process pool; `BackgroundScan.result()` takes it in.

        For a caller with other work first (the CLI imports the app meanwhile): start
        the pool first (`parallel.start_pool`, before any thread), else `result`
        scans in the calling process. Nothing is forked here.

        With `preview`, a big root is scanned in two passes, so that `result` can show
        its first project before the rest is summarized (`BackgroundScan`).
        """
        return BackgroundScan(self, preview=preview)

    def _changed(self) -> None:
        self._generation += 1
        self._lineage = None
        self._nodes = None

    def _summarize(self, path: Path, sid: str | None) -> SessionSummary:
        """`summarize`, or for a big log its index (kept for a `load` that follows)."""
        limit = ZSTD_INDEX_THRESHOLD if encoding_of(path) is Encoding.ZSTD else INDEX_THRESHOLD
        summary = summarize_small(path, sid, limit)
        if summary is not None:
            return summary
        from .indexcache import cached_index

        indexed = cached_index(path, session_id=sid)
        self._indexes[path] = indexed
        return indexed.summary

    def summaries(self) -> list[SessionSummary]:
        """The summaries (scanning once first if the root was never scanned)."""
        if not self._scanned:
            self.scan()
        with self._lock:
            return list(self._summaries.values())

    def adopt_summaries(self, summaries: Iterable[SessionSummary]) -> None:
        """Take summaries another scan made as this root's own (no rescan).

        A second root over the same folder (the TUI gives its watcher one) starts
        from the first root's scan instead of reading every log again.
        """
        with self._lock:
            self._summaries = {s.path: s for s in summaries}
            self._scanned = True
            self._changed()

    def update(self, summary: SessionSummary) -> None:
        """Replace or add one summary (after a watcher change, a load).

        The cached lineage is dropped only when the summary's lineage fields
        (`lineage.link_key`: id, parentSession, createdAt, path, header presence)
        change; otherwise its node is given the new summary in place, so a selection
        or an append that only changes counts costs no lineage rebuild.
        """
        with self._lock:
            old = self._summaries.get(summary.path)
            self._summaries[summary.path] = summary
            if old is None or link_key(old) != link_key(summary):
                self._changed()
                return
            self._generation += 1  # a lineage being built now holds the old summary
            lineage = self._lineage
            if lineage is None:
                return
            if self._nodes is None:
                self._nodes = _nodes_of(lineage)
            node = self._nodes.get(summary.path)
            if node is None or node.summary is not old:
                self._changed()
                return
            # Nodes are frozen for their readers; only the root swaps their summary.
            msgspec.structs.force_setattr(node, "summary", summary)

    def remove(self, path: Path) -> None:
        """Forget one log (it was deleted)."""
        with self._lock:
            if self._summaries.pop(path, None) is not None:
                self._changed()

    def lineage(self) -> Lineage:
        """The family forest of the current summaries."""
        if not self._scanned:
            self.scan()
        with self._lock:
            if self._lineage is not None:
                return self._lineage
            generation = self._generation
            summaries = list(self._summaries.values())
        lineage = build_lineage(summaries)
        with self._lock:
            if generation == self._generation:
                self._lineage, self._nodes = lineage, None
        return lineage

    def problems_of(self, summary: SessionSummary) -> tuple[LogProblem, ...]:
        """A summary's own problems plus its cross-session ones."""
        return (*summary.problems, *self.lineage().problems.get(summary.path, ()))

    @property
    def encoding(self) -> Encoding:
        """The encoding new logs get: zstd if the root holds zstd logs, else raw."""
        if any(s.encoding is Encoding.ZSTD for s in self.summaries()):
            return Encoding.ZSTD
        return Encoding.RAW

    # -- lookup ----------------------------------------------------------------------

    def resolve(self, ref: str) -> SessionSummary:
        """Find a session by id, unique id prefix, or log path.

        Raises:
            SessionLookupError: SESSION_NOT_FOUND or AMBIGUOUS_SESSION.
        """
        summaries = self.summaries()
        candidate = Path(ref)
        for path in (candidate, self.path / ref):
            try:
                if path.is_file():
                    resolved = path.resolve()
                    for s in summaries:
                        if s.path.resolve() == resolved:
                            return s
            except OSError:
                pass
        exact = [s for s in summaries if s.id == ref]
        if len(exact) == 1:
            return exact[0]
        if len(exact) > 1:
            raise SessionLookupError(
                "AMBIGUOUS_SESSION",
                f"{len(exact)} logs claim session id {ref}; name one by its path: "
                + ", ".join(str(s.path) for s in exact),
            )
        prefixed = [s for s in summaries if s.id.startswith(ref)] if ref else []
        if len(prefixed) == 1:
            return prefixed[0]
        if len(prefixed) > 1:
            ids = sorted({s.id for s in prefixed})
            if len(ids) == 1:
                raise SessionLookupError(
                    "AMBIGUOUS_SESSION",
                    f"{len(prefixed)} logs claim session id {ids[0]}; name one by its path: "
                    + ", ".join(str(s.path) for s in prefixed),
                )
            # Count sessions, not logs: copied logs claim one id several times.
            logs = f" ({len(prefixed)} logs)" if len(prefixed) > len(ids) else ""
            more = f", … {len(ids) - 10} more" if len(ids) > 10 else ""
            raise SessionLookupError(
                "AMBIGUOUS_SESSION",
                f"{ref!r} matches {len(ids)} sessions{logs}: " + ", ".join(ids[:10]) + more,
            )
        raise SessionLookupError("SESSION_NOT_FOUND", f"no session {ref!r} under {self.path}")

    # -- loading ---------------------------------------------------------------------

    def load(
        self,
        summary: SessionSummary,
        *,
        check_seed: bool = True,
        progress: Progress | None = None,
        cancel: threading.Event | None = None,
    ) -> LoadedSession:
        """Read one session whole; check its seed against its parent's prefix.

        A log of `index.INDEX_THRESHOLD` bytes or more is indexed instead (same
        results, events read on demand); `progress` and `cancel` apply to that.

        Raises:
            IndexCancelled: `cancel` was set while a big log was being indexed.
        """
        if _index_worthy(summary.path):
            return self._load_indexed(summary, check_seed, progress, cancel)
        reader = LogReader(summary.path)
        events = reader.read().events
        problems = [*reader.all_problems()]
        header = reader.header
        offsets = dict(reader.turn_end_offsets)
        if offsets:
            offsets[-1] = reader.header_end
        contents = LogContents(
            summary.path,
            reader.encoding,
            header,
            tuple(events),
            tuple(problems),
            reader.contiguous,
            reader.offset,
        )
        seed_length = header.seed_length if header and header.seed_length else 0
        # One pass of the timeline builder serves the summary, the timeline and the
        # view that extends it with live appends.
        from .timeline import TimelineBuilder

        builder = TimelineBuilder(seed_length).feed(events)
        timeline = builder.snapshot()
        exact = from_contents(contents, summary.id, summary.mtime, timeline)
        self.update(exact)
        lineage = self.lineage()
        problems.extend(lineage.problems.get(summary.path, ()))
        parent_path = lineage.parent_of.get(summary.path)
        if check_seed and header is not None and header.seed_length is not None and parent_path:
            parent_log = parent_generation(parent_path, header.version)
            if parent_log is not None:
                problems.extend(self._seed_problems(header, events, parent_log))
        return LoadedSession(
            exact,
            contents.events,
            reader.contiguous,
            timeline,
            tuple(problems),
            parent_path,
            offsets,
            builder=builder,
        )

    def _load_indexed(
        self,
        summary: SessionSummary,
        check_seed: bool,
        progress: Progress | None,
        cancel: threading.Event | None,
    ) -> LoadedSession:
        from .index import LazyEvents
        from .indexcache import cached_index

        indexed = self._indexes.pop(summary.path, None)
        if indexed is None or not _unchanged(indexed):
            indexed = cached_index(
                summary.path, session_id=summary.id, progress=progress, cancel=cancel
            )
        self._indexes[summary.path] = indexed
        self.update(indexed.summary)
        lineage = self.lineage()
        problems = [*indexed.problems, *lineage.problems.get(summary.path, ())]
        parent_path = lineage.parent_of.get(summary.path)
        header = indexed.header
        events = LazyEvents(indexed)
        seeded = header is not None and header.seed_length is not None and parent_path
        parent_log = (
            None
            if header is None or parent_path is None
            else parent_generation(parent_path, header.version)
        )
        if check_seed and seeded and header is not None and parent_log is not None:
            seed = header.seed_length or 0
            if not _same_seed_bytes(indexed, parent_log, seed):
                problems.extend(self._seed_problems(header, events, parent_log))
        return LoadedSession(
            indexed.summary,
            events,
            indexed.contiguous,
            indexed.timeline,
            tuple(problems),
            parent_path,
            indexed.end_offsets,
            indexed,
        )

    def _seed_problems(
        self, header: SessionHeader, events: Sequence[SessionEvent], parent_path: Path
    ) -> list[LogProblem]:
        """The child's seed against its parent's prefix, event by event (`parent_path`
        is the parent's generation in the child's version: `parent_generation`)."""
        seed = header.seed_length or 0
        parent_reader = LogReader(parent_path)
        parent_events = parent_reader.read().events
        pid = header.parent_session
        if seed > len(parent_events):
            return [
                LogProblem(
                    ProblemKind.SEED_MISMATCH,
                    f"seedLength {seed} exceeds the {len(parent_events)} events of parent {pid}",
                )
            ]
        if seed > len(events):
            return [
                LogProblem(
                    ProblemKind.SEED_MISMATCH,
                    f"seedLength {seed} but the log holds only {len(events)} events",
                )
            ]
        # dsh's snapshots (projected rows) keep no real time: compare them as its
        # normalizer leaves them
        projected = any(p.kind is ProblemKind.PROJECTED for p in parent_reader.problems)
        form = snapshot_form if projected else _as_is
        own = header.id
        their_header = parent_reader.header
        their_cut = their_header.seed_length if their_header is not None else None
        for i in range(seed):
            mine = form(events[i].to_json_dict())
            theirs = form(parent_events[i].to_json_dict())
            try:
                same = mine == theirs
            except RecursionError:  # nested deeper than `==` goes: the walk decides
                same = False
            # (a child and its parent that dsh migrated apart hold ids each migration
            # made from its own log's session id: the same row to dsh)
            if not same and not same_but_minted(mine, theirs, own, pid or "", i, their_cut):
                return [
                    LogProblem(
                        ProblemKind.SEED_MISMATCH,
                        f"seed event {i} ({events[i].type}) differs from parent {pid}'s "
                        f"event {i} ({parent_events[i].type})",
                        seq=i,
                    )
                ]
        return []

    def seed_cut(self, summary: SessionSummary) -> int | None:
        """Where a child's seed ends in its parent's log as this root shows it (the
        parent's newest generation): `parent_cut` of the seed length. None for a
        child with no seed or no parent here."""
        if summary.seed_length is None:
            return None
        return self.parent_cut(summary, summary.seed_length)

    def parent_cut(self, summary: SessionSummary, cut: int) -> int | None:
        """A cut of a child's inherited part (at or before its seed) as the same cut
        of its parent's log as this root shows it: the same seq, unless the child's
        seqs are not that log's (a V0 child of a parent dsh migrated to V5, or a child
        dsh migrated by itself), then the same cut by turns (`renumber.same_cut`). None
        without a parent here, or for a cut with no counterpart (inside a turn)."""
        return self._across_generations(summary, cut, up=True)

    def child_cut(self, summary: SessionSummary, cut: int) -> int | None:
        """A cut of a child's parent's log as this root shows it (at or before where
        the child's seed ends there) as the same cut of the child: the inverse of
        `parent_cut`."""
        return self._across_generations(summary, cut, up=False)

    def _across_generations(self, summary: SessionSummary, cut: int, *, up: bool) -> int | None:
        parent = self.lineage().parent_of.get(summary.path)
        if parent is None:
            return None
        header = summary.header
        if parent_generation(parent, header.version if header is not None else None) == parent:
            return cut  # the child's seed is a prefix of the parent's log as shown
        # Else the child's own log is that prefix in its own seqs (seeded from an older
        # generation, or migrated by itself): the same cut by turns.
        from .renumber import same_cut

        with self._lock:
            parent_summary = self._summaries.get(parent)
        if parent_summary is None:
            return None
        shown = self.load(parent_summary, check_seed=False).timeline
        own = self.load(summary, check_seed=False).timeline
        return same_cut(own, shown, cut) if up else same_cut(shown, own, cut)

    # -- forking ---------------------------------------------------------------------

    def fork(
        self,
        source: SessionSummary | str,
        boundary: int | None = None,
        child_id: str | None = None,
        *,
        fault: FaultHook = _no_fault,
    ) -> ForkResult:
        """Fork a persisted session and write the child atomically under `write_root`.

        Raises:
            SessionForkError: the RFC's codes; WRITE_FAILED for I/O errors (nothing
                is left under the child's final name).
            SessionLookupError: the source reference names no session.
        """
        if child_id is not None and not _utf8_encodable(child_id):
            # A lone surrogate (e.g. a non-UTF-8 command-line byte) has a safe folder
            # name, but no UTF-8 JSON header can hold it: refuse before writing anything.
            raise SessionForkError(
                ForkErrorCode.WRITE_FAILED,
                f"child id {child_id!r} is not valid Unicode (a lone surrogate), so no log "
                "can store it; nothing was written",
            )
        summaries = self.summaries()
        if child_id is not None and any(s.id == child_id for s in summaries):
            raise SessionForkError(
                ForkErrorCode.SESSION_ALREADY_EXISTS, f"session {child_id} already exists"
            )
        if isinstance(source, str):
            try:
                source = self.resolve(source)
            except SessionLookupError as exc:
                if exc.code == "SESSION_NOT_FOUND":
                    raise SessionForkError(ForkErrorCode.SESSION_NOT_FOUND, exc.message) from exc
                raise
        loaded = self.load(source, check_seed=False)
        if loaded.summary.header is None:
            raise SessionForkError(
                ForkErrorCode.SESSION_NOT_FOUND,
                f"{source.path} has no readable session header, so it cannot be forked",
            )
        header = loaded.summary.header
        version = header.version
        if not known_version(version):
            raise SessionForkError(
                ForkErrorCode.UNSUPPORTED_VERSION,
                f"{source.path} is in format version {version!r}, which turnline does not "
                f"read (it reads versions 0 to {NEWEST_VERSION}); nothing was written",
            )
        events = loaded.events
        seed_length = check_boundary(
            header.id,
            len(events),
            loaded.contiguous,
            loaded.turn_ends,
            boundary,
            type_at=lambda i: events[i].type,
            last_seq=events[-1].seq if events else None,
        )
        cid = child_id if child_id is not None else new_session_id()
        created = int(time.time() * 1000)
        # The child is written in its parent's version, as dsh's fork of that version
        # writes it (dsh's `fork.ts` / `buildForkSeed`, `format.ts`'s header).
        marker_cut = seeded_by_marker(version)
        if marker_cut:
            # V2+: the closed key set with isSeeded (no seedLength), the parent's cwd and
            # agent preset; the seed's end is the `{"inherited": true}` marker at seq
            # boundary + 1, timed as the boundary's event.
            child = SessionHeader(
                id=cid,
                created_at=created,
                version=version,
                cwd=header.cwd,
                parent_session=header.id,
                seed_length=seed_length,  # the logical count; not written (isSeeded)
                delegation_depth=0,
                agent_preset=header.agent_preset,
                is_seeded=True,
            )
            at = events[seed_length - 1].time if seed_length else created
            marker = SessionEvent(END_SEED, seed_length, at, {"inherited": True})
        else:
            child = SessionHeader(
                id=cid,
                created_at=created,
                version=FORMAT_VERSION if version is None else version,
                cwd=header.cwd,
                parent_session=header.id,
                seed_length=seed_length,
                delegation_depth=0,  # a user fork: dsh's fork writes 0, whatever the parent's
            )
            # dsh's Session constructor appends this right after any seed (an empty one too).
            marker = end_seed_event(seed_length, child.created_at)
        encoding = self.encoding
        name = generation_name(child.version or 0, zstd=encoding is Encoding.ZSTD)
        final = session_dir(self.write_root, cid, header.cwd) / name
        real_root = os.path.realpath(self.write_root)
        real_target = os.path.realpath(final.parent)
        if os.path.commonpath([real_root, real_target]) != real_root:
            # A symlinked project or session folder would put the child elsewhere.
            raise SessionForkError(
                ForkErrorCode.WRITE_FAILED,
                f"{final.parent} resolves to {real_target}, outside the root {real_root}; "
                "nothing was written",
            )
        cleanup_root_temporaries(self.write_root)  # leftovers of killed forks anywhere here
        seed = events[:seed_length]
        copied: FileRange | None = None
        chunks: list[bytes | FileRange]
        if (
            encoding is Encoding.RAW
            and loaded.summary.encoding is Encoding.RAW
            and seed_length
            and (seed_length - 1) in loaded.end_offsets
            # a dsh test snapshot's rows lack seq and time: the child gets them written
            and not any(p.kind is ProblemKind.PROJECTED for p in loaded.problems)
        ):
            # A packed row never holds a turn/end, so the parent's bytes up to the
            # boundary line are exactly the seed: copy them instead of re-encoding.
            start, end = loaded.end_offsets[-1], loaded.end_offsets[seed_length - 1]
            copied = FileRange(source.path, start, end)
            chunks = [child.to_json_line(), copied, *encode_records([marker])]
        else:
            chunks = [encode_new_log(child, [*seed, marker], encoding, pack=not marker_cut)]
        try:
            written = write_new_file(final, chunks, fault=fault)
        except LogExistsError as exc:
            raise SessionForkError(
                ForkErrorCode.SESSION_ALREADY_EXISTS, f"session {cid} already exists at {final}"
            ) from exc
        except OSError as exc:
            raise SessionForkError(
                ForkErrorCode.WRITE_FAILED,
                f"could not write {final}: {exc.strerror or exc}; nothing was written",
            ) from exc
        summary = None
        if copied is not None and loaded.index is not None:
            summary = _copied_child_summary(final, cid, child, copied, loaded)
        if summary is None:
            summary = summarize(final, cid)
        self.update(summary)
        return ForkResult(summary, header.id, seed_length - 1 if seed_length else None, written)


def _as_is(row: dict[str, Any]) -> dict[str, Any]:
    return row


#: One unit's result: its logs as (path, layout id, summary state or None when the
#: log is big enough to index), folder errors as (folder, reason), folders walked,
#: and when asked, each log's `ls --json` entry (else no entries).
_UnitResult = tuple[
    list[tuple[str, str | None, tuple[Any, ...] | None]],
    list[tuple[str, str]],
    list[tuple[int, int]],
    list[bytes | None],
]


#: Units per item of a parallel scan's `split_map` (`_scan_batch`): enough that
#: their system calls are made together, few enough to share the work evenly.
SCAN_BATCH: Final = 50


def _walk_batch(
    seen: frozenset[tuple[int, int]], units: Sequence[_Found], top: str | None
) -> tuple[list[tuple[str, str | None]], list[tuple[str, str]], list[tuple[int, int]], set[str]]:
    """The walk of a batch of units of a parallel scan: its logs as (path, layout id)
    in discovery order, the folders that could not be listed, the folders walked
    (ending with (-1, -1) if two of the units' walks met one folder: only the serial
    walk is right then) and the logs that share their folder with other entries."""
    found: list[tuple[str, str | None]] = []
    errors: list[tuple[str, str]] = []
    walked: list[tuple[int, int]] = []
    crowded: set[str] = set()
    for unit in units:
        if unit[0] == "folder":
            items: Iterable[_Found] = _walk(
                [(unit[1], unit[2], unit[3], 2)], set(seen), walked=walked, top=top, crowded=crowded
            )
        else:
            items = (unit,)
            if unit[0] == "log":
                crowded.add(unit[1])  # found near the top: its folder's entries unknown
        for item in items:
            if item[0] == "log":
                found.append((item[1], item[2]))
            elif item[0] == "error":
                errors.append((item[1], item[2].strerror or str(item[2])))
    if len(set(walked)) != len(walked):
        walked.append((-1, -1))
    return found, errors, walked, crowded


def _scan_batch(
    seen: frozenset[tuple[int, int]],
    units: Sequence[_Found],
    top: str | None = None,
    render: bool = False,
) -> _UnitResult:
    """Walk and summarize units of a parallel scan (in any process), as one result in
    their order; `top` is the root's real path (see `_walk`). The units' folders are
    walked first (`_walk_batch`), then their logs read and summarized
    (`summary_states`: system calls together, scans together). With `render`, also
    write each log's `ls --json` entry (`summary.state_json_bytes`; None for a log to
    index, or one orjson cannot write), the generations of a log alone in its folder
    known from the walk."""
    found, errors, walked, crowded = _walk_batch(seen, units, top)
    states = summary_states(
        (path, sid, ZSTD_INDEX_THRESHOLD if path.endswith(ZSTD_SUFFIX) else INDEX_THRESHOLD)
        for path, sid in found
    )
    logs = [(path, sid, state) for (path, sid), state in zip(found, states, strict=True)]
    entries: list[bytes | None] = []
    if render:
        # A log alone in its folder is its only generation: its folder is not listed
        # again (that was a tenth of a wide root's `ls --json`).
        entries = [
            None
            if state is None
            else state_json_bytes(path, state, generations=None if path in crowded else [path])
            for path, _, state in logs
        ]
    return logs, errors, walked, entries


def map_root_logs(
    path: Path, func: Callable[[list[tuple[str, str | None]]], list[Any]]
) -> tuple[list[tuple[str, str | None]], list[Any]] | None:
    """`func` over the logs under the directory `path`, walked and computed on all
    cores as the listing is (`SessionRoot._scan_parallel`): the logs as (path, layout
    id) in discovery order (`discover`'s) and `func`'s results for them. `func` takes
    one batch's logs and returns one plain value (marshal's types) per log; it must be
    picklable. None when the root is too small to split, or when separate walks could
    have met one folder: walk with `discover` then. Folders that cannot be listed are
    passed over, as `discover` passes them over without `on_error`."""
    results: list[_Mapped] | None = _split_walk(path, functools.partial(_map_batch, func=func))
    if results is None:
        return None
    logs: list[tuple[str, str | None]] = []
    values: list[Any] = []
    for found, got, _walked in results:
        if len(got) != len(found):
            return None
        logs.extend(found)
        values.extend(got)
    return logs, values


def _split_walk(path: Path, batch: Callable[..., Any]) -> list[Any] | None:
    """The parallel walk under the directory `path` (the listing's and
    `map_root_logs`'s): its top two levels walked here, the folders below handed in
    batches of `SCAN_BATCH` units to `parallel.split_map`'s processes as
    `batch(seen, units, top=...)`, whose result's third item is the folders it walked;
    the results come back marshalled, in discovery order. None when the root is too
    small to split, or when a walk met a directory symlink or two walks met one folder
    (only the serial walk is right then: it skips a folder seen twice)."""
    top = str(path)
    seen: set[tuple[int, int]] = set()
    walked: list[tuple[int, int]] = []
    units = list(
        _walk([(top, path.name, path.parent.name, 0)], seen, cutoff=2, walked=walked, top=top)
    )
    if (-1, -1) in walked or len(units) < 2 * MIN_SHARE or usable_cores() < 2:
        return None
    batches = [units[k : k + SCAN_BATCH] for k in range(0, len(units), SCAN_BATCH)]
    results = split_map(
        functools.partial(batch, frozenset(seen), top=top),
        batches,
        pack=marshal.dumps,
        unpack=_unmarshalled,
        min_share=MIN_SHARE // SCAN_BATCH,
    )
    keys = set(walked)
    for result in results:
        batch_walked = result[2]
        if (-1, -1) in batch_walked or not keys.isdisjoint(batch_walked):
            return None
        keys.update(batch_walked)
    return results


_Mapped = tuple[list[tuple[str, str | None]], list[Any], list[tuple[int, int]]]


def _map_batch(
    seen: frozenset[tuple[int, int]],
    units: Sequence[_Found],
    top: str,
    func: Callable[[list[tuple[str, str | None]]], list[Any]],
) -> _Mapped:
    """One batch of `map_root_logs` (in any process)."""
    found, _, walked, _ = _walk_batch(seen, units, top)
    return found, func(found), walked


def _scan_batch_marshalled(
    seen: frozenset[tuple[int, int]], units: Sequence[_Found], top: str | None
) -> bytes:
    """`_scan_batch`, marshalled (a `BackgroundScan` task, in a pool worker)."""
    return marshal.dumps(_scan_batch(seen, units, top))


def _head_batch_marshalled(
    seen: frozenset[tuple[int, int]], units: Sequence[_Found], top: str | None, whole: bool
) -> bytes:
    """The first pass of a previewed scan (a `BackgroundScan` task, in a pool worker):
    the units walked as `_scan_batch` walks them and each log's `summary.head_states`
    state. Two parts, each marshalled, in a marshalled pair: (logs, folders not listed,
    folders walked, indices of the provisional states) for the caller, and what
    `_preview_plan` needs of them (their lineage keys, or None if a path is not plain:
    `_plain_path`; their cwds; their layout ids; the provisional indices), which the
    caller hands on as it is. With `whole`, every log is summarized whole (the first
    batch, in discovery order: most often the first project's, which the preview then
    need not summarize)."""
    found, errors, walked, _ = _walk_batch(seen, units, top)
    asked = [(path, sid, _index_limit(path)) for path, sid in found]
    states, provisional = head_states(asked, whole=whole)
    logs = [(path, sid, state) for (path, sid), state in zip(found, states, strict=True)]
    keys = _plain_keys([path for path, _ in found], states)
    cwds = [None if st is None or st[2] is None else st[2][3] for st in states]  # `.cwd`
    plan = (keys, cwds, [sid for _, sid in found], provisional)
    return marshal.dumps((marshal.dumps((logs, errors, walked, provisional)), marshal.dumps(plan)))


def _states_marshalled(logs: list[tuple[str, str | None]]) -> bytes:
    """The second pass of a previewed scan (a `BackgroundScan` task, in a pool worker):
    `summary_states` of (path, layout id) pairs, marshalled."""
    return marshal.dumps(summary_states([(path, sid, _index_limit(path)) for path, sid in logs]))


def _index_limit(path: str) -> int:
    """The size from which a log is indexed rather than read whole."""
    return ZSTD_INDEX_THRESHOLD if path.endswith(ZSTD_SUFFIX) else INDEX_THRESHOLD


def _unmarshalled(_units: Sequence[_Found], value: object) -> Any:
    """A batch's result as a worker sent it: marshalled (plain values only), which
    takes a third of the time pickle takes both ways (most of a reply's cost)."""
    return marshal.loads(cast(bytes, value))


def _nodes_of(lineage: Lineage) -> dict[Path, LineageNode]:
    """Every node of a lineage by its log path."""
    nodes: dict[Path, LineageNode] = {}
    stack = [*lineage.roots, *(n for group in lineage.missing for n in group.children)]
    while stack:
        node = stack.pop()
        nodes[node.summary.path] = node
        stack.extend(node.children)
    return nodes


def _index_worthy(path: Path) -> bool:
    """True for a log big enough to index rather than read whole."""
    from .index import worth_indexing

    return worth_indexing(path)


def _unchanged(indexed: IndexedSession) -> bool:
    """True if the indexed file is still the one indexed (same size and mtime)."""
    try:
        st = os.stat(indexed.path)
    except OSError:
        return False
    return st.st_mtime == indexed.summary.mtime and st.st_size == indexed.size


def _same_seed_bytes(child: IndexedSession, parent_path: Path, seed: int) -> bool:
    """True if the child's seed records are byte for byte the parent's (both raw).

    A fork written by copying the parent's bytes passes without decoding a million
    events; anything else goes to the event-by-event seed check.
    """
    if seed == 0 or child.summary.encoding is not Encoding.RAW or child.contiguous < seed:
        return False
    child_end = child.end_offsets.get(seed - 1)
    child_start = child.end_offsets.get(-1)
    if child_end is None or child_start is None or encoding_of(parent_path) is not Encoding.RAW:
        return False
    try:
        with open(child.path, "rb") as fh, open(parent_path, "rb") as parent:
            parent_start = len(parent.readline())
            length = child_end - child_start
            fh.seek(child_start)
            parent.seek(parent_start)
            while length > 0:
                n = min(length, 8 << 20)
                a, b = fh.read(n), parent.read(n)
                if a != b or len(a) != n:
                    return False
                length -= n
            # The range ends with the child's turn/end newline, so equal bytes are
            # equal whole lines: the parent's first `seed` events are the seed.
            return True
    except OSError:
        return False


def _utf8_encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _copied_child_summary(
    final: Path, cid: str, child: SessionHeader, copied: FileRange, parent: LoadedSession
) -> SessionSummary | None:
    """The summary `summarize(final)` gives a fork that copied its parent's records,
    taken from the parent instead of re-reading the copy (a big log's fork would
    otherwise scan every byte it just wrote). None if it cannot be taken that way.

    The copied records are the parent's, through a `turn/end` that its index found
    with every seq before it contiguous, so the child holds exactly `seedLength`
    events ending at the boundary, its turns are the parent's turns up to there (the
    timeline closes one at each `turn/end`), and its title is the one the parent's
    timeline had after those records (`Timeline.title_through`).
    """
    index = parent.index
    header, header_problems = parse_header(orjson.loads(child.to_json_line()))
    seed = child.seed_length
    if index is None or header is None or not seed or index.contiguous < seed or not index.utf8:
        return None
    boundary = seed - 1
    try:
        st = os.stat(final)
        with open(copied.path, "rb") as fh:
            fh.seek(copied.start - 1)
            if fh.read(1) != b"\n" or os.fstat(fh.fileno()).st_size < copied.end:
                return None
    except OSError:
        return None
    # From the parent's decoded records, not a search of the copied bytes: a record
    # may spell its type otherwise than dsh does (`session\/title`).
    title = parent.timeline.title_through(boundary)
    return SessionSummary(
        id=cid,
        path=final,
        encoding=Encoding.RAW,
        header=header,
        title=title,
        events=seed + 1,  # the seed, then the end-seed marker at seq `seed`
        last_seq=seed,
        turns=sum(1 for turn in parent.timeline.turns if turn.first_seq <= boundary),
        open_turn=False,
        problems=tuple(header_problems),
        size=st.st_size,
        mtime=st.st_mtime,
        last_activity=child.created_at,  # the end-seed marker's time: the last event
    )
