"""Live changes of a root: new sessions, appended events, removals, problems.

`RootWatcher.watch` is a blocking generator for one long-lived worker thread per
root. It keeps one `LogReader` per known log, positioned where the root's summary
stopped reading, and on every change reads only the bytes appended since: whole
lines (whole zstd frames); a torn last line is not consumed until it is complete.
Summaries are advanced from the previous summary plus the new events
(`advance_summary`), so a refresh costs what was appended, not what the log holds.

Two ways to learn about changes:

- native (default): the Rust `notify` backend of watchfiles (inotify on Linux),
  recursive, bursts grouped into one batch per debounce window;
- poll (`poll=True`, for filesystems without inotify): every `poll_interval_ms`
  each known log is `stat`ed and its size and inode compared with what was read,
  so appends within one mtime second are not missed; folders are checked by their
  mtime and the whole tree is rescanned about once a second.

Nothing read from disk raises: a bad file is a `LogProblem`, a vanished file a
`SessionRemoved`, a vanished root a `RootGone` (after which `watch` returns).
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from collections.abc import Generator, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Final, TypeAlias, cast

import msgspec
import watchfiles

from .codec import RecordError, expand_record, parse_header
from .formats import generation_role, packed_rows, projected_row
from .logfile import Encoding, LogReader, encoding_of
from .model import LogProblem, ProblemKind, SessionEvent, SessionHeader
from .records import MAX_HEADER_LINE, count_turns, loads, session_title, user_title
from .root import (
    SKIP_DIRS,
    SessionRoot,
    discover,
    has_session_header,
    is_log_name,
    layout_session_id,
)
from .summary import SessionSummary, activity_of, summarize

#: In native mode, how often (seconds) every known log is `stat`ed anyway, as a net
#: for notifications the kernel dropped (an inotify queue overflow).
NATIVE_SWEEP_S: Final = 2.0
#: In poll mode, how often (seconds) the whole tree is rescanned, as a net for
#: folders whose mtime did not change visibly (coarse-mtime filesystems).
POLL_FULL_RESCAN_S: Final = 1.0
#: How long (ms) the native backend waits before returning to check the root.
_NATIVE_TIMEOUT_MS: Final = 250
#: Mirrors `root.discover`: folders it never descends into.


# -- changes ---------------------------------------------------------------------------


class SessionAdded(msgspec.Struct, frozen=True):
    """A log appeared under the root.

    Attributes:
        summary: Its summary (read whole: it is new).
    """

    summary: SessionSummary


class EventsAppended(msgspec.Struct, frozen=True):
    """A known log changed: events were appended, or problems appeared or cleared.

    Attributes:
        summary: The updated summary (counts, open turn, title, problems, offset).
        events: Just the new events, in file order (the whole log when `reset`).
        problems: Problems first found by this change (a torn tail, corruption).
        reset: The file was replaced, shrank, or was re-read from scratch (its
            header became readable): drop what you had, `events` is the whole log.
    """

    summary: SessionSummary
    events: tuple[SessionEvent, ...]
    problems: tuple[LogProblem, ...]
    reset: bool = False


class SessionRemoved(msgspec.Struct, frozen=True):
    """A known log vanished (deleted, or renamed away).

    Attributes:
        path: The log as it was known.
        session_id: Its session id.
        moved_to: Set when the same file (device and inode) turned up at another path
            (its folder or a folder above it was renamed), or when
            a newer generation of the same session (`formats.generations`) appeared
            beside it and became the session's log: that path's `SessionAdded` is in
            the batch too, so a reader can follow it. The kernel may report a
            rename's two halves in two native batches: a removal nothing pairs is
            held for one more batch (at most about `_NATIVE_TIMEOUT_MS`) before it
            is reported as a plain removal.
    """

    path: Path
    session_id: str
    moved_to: Path | None = None


class ProblemFound(msgspec.Struct, frozen=True):
    """A problem that belongs to no session summary (e.g. a folder that cannot be listed).

    Problems of a known log travel in `EventsAppended.problems` with its summary.
    """

    path: Path
    problem: LogProblem


class RootGone(msgspec.Struct, frozen=True):
    """The root folder was removed or replaced; the watch ends after this change."""

    path: Path
    message: str


RootChange: TypeAlias = SessionAdded | EventsAppended | SessionRemoved | ProblemFound | RootGone


# -- incremental summaries ---------------------------------------------------------------


def advance_summary(
    summary: SessionSummary,
    events: Sequence[SessionEvent],
    problems: Iterable[LogProblem],
    offset: int,
    *,
    tail: LogProblem | None = None,
    mtime: float | None = None,
) -> SessionSummary:
    """The summary of a log after `events` were appended to the one `summary` describes.

    Pure: it looks only at its arguments, so the cost is that of the new events.
    It keeps the meaning `summarize` gives each field: `turns` counts turns started
    (a `turn/end` without an open turn counts one too), `open_turn` is whether a
    `turn/start` came after the last `turn/end`, the title is the latest
    `session/title`, else the first line of the first user text.

    Args:
        summary: The summary before the append.
        events: The appended events, in file order.
        problems: Lasting problems found while reading them (duplicates of ones the
            summary already holds are dropped; a `TORN_TAIL` here is taken as `tail`).
        offset: Bytes of the file now consumed (the reader's offset).
        tail: The torn tail as it is now, None if the file ends with a whole record;
            it replaces any torn tail the summary had.
        mtime: The file's modification time, None to keep the summary's.
    """
    count = summary.events
    last_seq = summary.last_seq
    turns = summary.turns
    open_turn = summary.open_turn
    title = summary.title
    turns, open_turn = count_turns((event.type for event in events), turns, open_turn)
    for event in events:
        count += 1
        last_seq = event.seq
        etype = event.type
        if etype == "session/title":
            new_title = session_title(event.data)
            if new_title is not None:
                title = new_title
        elif etype == "user/message" and title is None:
            title = user_title(event.data)
    kept = [p for p in summary.problems if p.kind is not ProblemKind.TORN_TAIL]
    for problem in problems:
        if problem.kind is ProblemKind.TORN_TAIL:
            tail = tail or problem
        elif problem not in kept and not _same_place(problem, kept):
            kept.append(problem)
    if tail is not None:
        kept.append(tail)
    return msgspec.structs.replace(
        summary,
        events=count,
        last_seq=last_seq,
        turns=turns,
        open_turn=open_turn,
        title=title,
        problems=tuple(kept),
        size=offset,
        mtime=summary.mtime if mtime is None else mtime,
        last_activity=activity_of(events[-1].time) if events else summary.last_activity,
    )


def _same_place(problem: LogProblem, known: Sequence[LogProblem]) -> bool:
    """True if `known` already reports this kind of problem at this seq.

    A reader resumed from a summary numbers lines from where it resumed, so the
    same corruption can come back with another message; the seq is stable.
    """
    return problem.seq is not None and any(
        p.kind is problem.kind and p.seq == problem.seq for p in known
    )


def blank_summary(
    path: Path, session_id: str, header: SessionHeader | None, mtime: float = 0.0
) -> SessionSummary:
    """The summary of a log with a header (or none) and nothing after it yet."""
    return SessionSummary(
        id=header.id if header is not None else session_id,
        path=path,
        encoding=encoding_of(path) or Encoding.RAW,
        header=header,
        title=None,
        events=0,
        last_seq=None,
        turns=0,
        open_turn=False,
        problems=(),
        size=0,
        mtime=mtime,
    )


def _resume(summary: SessionSummary) -> LogReader:
    """A reader positioned where the summary stopped reading."""
    contiguous = not any(p.kind is ProblemKind.SEQ_GAP for p in summary.problems)
    return LogReader.resume(
        summary.path,
        summary.header,
        summary.size,
        summary.events,
        summary.last_seq,
        contiguous,
    )


#: How far back from where a summary stopped reading `_consumed_intact` looks for the
#: start of the last line it read.
_LAST_LINE_WINDOW: Final = 1 << 20
_ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"
#: What `_consumed_intact` reads first at each end (a header, a last line, most often).
_PEEK: Final = 64 << 10


def _consumed_intact(summary: SessionSummary) -> bool:
    """Whether the log still holds what `summary` read, as far as its ends tell: its
    header names the same session, and where the summary stopped reading, a raw log's
    last line read still ends holding the last seq read (a zstd log: a frame still
    starts there). A reader is made for a log on its first change only
    (`_Tracked.reader`), so it cannot compare the file with what it was before, as
    it does from then on: a log replaced or rewritten before its first change would
    otherwise be read from the old summary's offset, old counts and new lines mixed.

    A file now shorter than what was read passes: the reader itself sees it shrank.
    """
    size = summary.size
    header = summary.header
    if header is None or size == 0:
        return True
    try:
        fd = os.open(summary.path, os.O_RDONLY)
    except OSError:
        return True  # the reader says what is wrong
    try:
        now = os.fstat(fd).st_size
        if now < size:
            return True
        if summary.encoding is Encoding.ZSTD:
            return now == size or os.pread(fd, 4, size) == _ZSTD_MAGIC
        first = os.pread(fd, min(size, _PEEK), 0)
        if b"\n" not in first:
            first = os.pread(fd, min(size, MAX_HEADER_LINE + 1), 0)
        window = min(size, _PEEK)
        last = os.pread(fd, window, size - window)
        if window < size and last.rfind(b"\n", 0, len(last) - 1) < 0:
            window = min(size, _LAST_LINE_WINDOW)
            last = os.pread(fd, window, size - window)
    except OSError:
        return True
    finally:
        os.close(fd)
    try:
        parsed, _problems = parse_header(loads(first[: first.find(b"\n")]))
    except (ValueError, RecursionError):
        return False
    if parsed is None or (parsed.id, parsed.version) != (header.id, header.version):
        return False
    if not last.endswith(b"\n"):
        return False
    if summary.last_seq is None:
        return True
    lines = last.split(b"\n")
    lines.pop()
    if window < size:
        lines.pop(0)  # (the window may start inside a line)
    packed = packed_rows(header.version)
    for line in reversed(lines):
        if not line.strip():
            continue  # a blank line: the reader skips it
        try:
            record = loads(line)
            if not packed and projected_row(record) is not None:
                # A dsh snapshot's row (no seq, no time): numbered by its place.
                return summary.last_seq == summary.events - 1
            events = expand_record(record, packed_rows=packed)
        except (ValueError, RecursionError, RecordError):
            return False
        return bool(events) and events[-1].seq == summary.last_seq
    return window < size  # its last line longer than the window: not told


# -- one known log ------------------------------------------------------------------------

_StatKey: TypeAlias = tuple[int, int, int, int]


def _stat_key(st: os.stat_result) -> _StatKey:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class _Tracked(msgspec.Struct):
    """What the watcher knows of one log."""

    summary: SessionSummary
    #: Made on the first change: a root of ten thousand logs that mostly sit still
    #: would otherwise build ten thousand readers when the watch starts.
    reader: LogReader | None
    fallback_id: str
    seen: _StatKey | None = None  # the stat taken just before the last read


# -- the watcher ----------------------------------------------------------------------------


class RootWatcher:
    """Watches one `SessionRoot` and yields typed changes in batches.

    Args:
        root: The root to watch. Its summaries are kept current (`root.update` /
            `root.remove`) as changes are found, so its lineage stays right.
        poll: Poll with `stat` instead of kernel notifications (network or FUSE
            filesystems without inotify).
        debounce_ms: Native mode: the longest a burst is grouped before a batch is yielded.
        poll_interval_ms: Poll mode: time between two polls.
    """

    def __init__(
        self,
        root: SessionRoot,
        *,
        poll: bool = False,
        debounce_ms: int = 20,
        poll_interval_ms: int = 100,
    ) -> None:
        self.root = root
        self.poll = poll
        self.debounce_ms = max(1, int(debounce_ms))
        self.poll_interval_ms = max(1, int(poll_interval_ms))
        self._tracked: dict[Path, _Tracked] = {}
        # Files with a log name that discovery does not accept yet (no header so far).
        self._candidates: dict[Path, _StatKey | None] = {}
        # Poll mode: folders and their mtime, to notice new entries without a full walk.
        self._dirs: dict[Path, int] = {}
        self._root_identity: tuple[int, int] | None = None
        # Folders that could not be listed: reported once each, with the next batch.
        self._reported_dirs: set[Path] = set()
        self._folder_problems: list[RootChange] = []
        # Logs dropped since the last batch, by path: their (device, inode), to tell a
        # rename from a removal (`_pair_moves`).
        self._dropped: dict[Path, tuple[int, int]] = {}
        # Each tracked log's (device, inode) as last seen: a file found at a new path
        # whose old path no longer holds it was renamed, even when the poll that saw the
        # new path came before the one that would see the old path gone (`_consider`).
        self._identities: dict[tuple[int, int], Path] = {}
        # Native mode: removals no addition paired yet, with their (device, inode),
        # held back one batch for the other half of a rename (`_pair_moves`).
        self._held: dict[Path, tuple[SessionRemoved, tuple[int, int]]] = {}
        #: Set once `watch` has read the root and is listening: anything written
        #: after this is reported as a change.
        self.primed = threading.Event()

    # -- public --------------------------------------------------------------------------

    def watch(self, stop: threading.Event) -> Iterator[list[RootChange]]:
        """Yield batches of changes until `stop` is set or the root is gone.

        The first batch (if any) holds what changed since the root was scanned.
        Returns within one debounce step / poll interval after `stop.set()`.
        """
        try:
            st = os.stat(self.root.path)
        except OSError as exc:
            yield [RootGone(self.root.path, _gone_message(self.root.path, exc))]
            return
        self._root_identity = (st.st_dev, st.st_ino)
        self.primed.clear()
        batches = self._watch_poll(stop) if self.poll else self._watch_native(stop)
        for batch in batches:
            paired = self._pair_moves(batch)
            if paired:
                yield paired

    @property
    def known(self) -> dict[Path, SessionSummary]:
        """The current summary of every log being watched, by path."""
        return {path: t.summary for path, t in self._tracked.items()}

    def _pair_moves(self, batch: list[RootChange]) -> list[RootChange]:
        """Mark each removal whose file (device, inode) was added at a new path: a
        rename reaches the watcher as a removal and an addition. In native mode the
        kernel's two halves of one rename can land in two batches (inotify's
        moved-from and moved-to, read either side of a debounce window), so a
        removal nothing pairs waits one batch in `_held` before it is reported."""
        dropped, self._dropped = self._dropped, {}
        held, self._held = self._held, {}
        if held:
            batch = [*(removal for removal, _ in held.values()), *batch]
            dropped.update((path, identity) for path, (_, identity) in held.items())
        if not dropped:
            return batch
        added: dict[tuple[int, int], SessionSummary] = {}
        for change in batch:
            if isinstance(change, SessionAdded):
                tracked = self._tracked.get(change.summary.path)
                if tracked is not None and tracked.seen is not None:
                    added[tracked.seen[:2]] = change.summary
        paired: list[RootChange] = []
        for change in batch:
            if isinstance(change, SessionRemoved) and change.moved_to is None:
                identity = dropped.get(change.path)
                summary = added.get(identity) if identity is not None else None
                # The id too: a file deleted and another created may share an inode.
                if summary is not None and summary.id == change.session_id:
                    change = msgspec.structs.replace(change, moved_to=summary.path)
                elif identity is not None and not self.poll and change.path not in held:
                    self._held[change.path] = (change, identity)
                    continue
            paired.append(change)
        return paired

    # -- native --------------------------------------------------------------------------

    def _watch_native(self, stop: threading.Event) -> Iterator[list[RootChange]]:
        batches = self._notify(stop)
        try:
            # The notifier exists once the first (maybe empty) batch is back: created
            # before priming, so nothing written while priming goes unseen.
            pending = next(batches, None)
        except (OSError, RuntimeError):
            pending = None
        if pending is None:
            # No usable notification backend here (or the root just vanished): poll.
            batches.close()
            yield from self._watch_poll(stop)
            return
        with contextlib.closing(batches):
            first = self._prime()
            if first:
                yield first
            next_sweep = time.monotonic() + NATIVE_SWEEP_S
            raw: set[tuple[int, str]] | None = pending
            while not stop.is_set():
                if raw is None:
                    try:
                        raw = next(batches, None)
                        if raw is None:  # watchfiles saw `stop`
                            return
                    except (OSError, RuntimeError):
                        # A backend hiccup: start a new notifier; the sweep catches up.
                        batches.close()
                        batches = self._notify(stop)
                        raw = set()
                if stop.is_set():
                    return
                changes: list[RootChange] = []
                if (3, str(self.root.path)) in raw:
                    # Reported even if a new folder already took the name (and inode).
                    yield [RootGone(self.root.path, f"{self.root.path} was removed")]
                    return
                gone = self._root_gone()
                if gone is not None:
                    yield [gone]
                    return
                if raw:
                    changes.extend(self._apply_native(raw))
                raw = None
                if time.monotonic() >= next_sweep:
                    next_sweep = time.monotonic() + NATIVE_SWEEP_S
                    changes.extend(self._sweep_known())
                changes.extend(self._take_folder_problems())
                if changes or self._held:
                    yield changes  # held removals go out with it (`_pair_moves`)

    def _notify(self, stop: threading.Event) -> Generator[set[tuple[int, str]], None, None]:
        """watchfiles' public `watch` over the root: every change unfiltered (discovery
        decides what counts), an empty batch after each quiet `_NATIVE_TIMEOUT_MS`."""
        step = max(1, min(self.debounce_ms // 2, 10))
        return cast(
            Generator[set[tuple[int, str]], None, None],
            watchfiles.watch(
                self.root.path,
                watch_filter=None,
                debounce=self.debounce_ms,
                step=step,
                stop_event=stop,
                rust_timeout=_NATIVE_TIMEOUT_MS,
                yield_on_timeout=True,
                raise_interrupt=False,
                force_polling=False,
                recursive=self.root.single is None,
                ignore_permission_denied=True,
            ),
        )

    def _apply_native(self, raw: set[tuple[int, str]]) -> list[RootChange]:
        changes: list[RootChange] = []
        paths = sorted({Path(p) for _, p in raw})
        # watchfiles' Change: 1 added, 2 modified, 3 deleted.
        added = {Path(p) for kind, p in raw if kind == 1}
        deleted = {Path(p) for kind, p in raw if kind == 3}
        for path in paths:
            if path in self._tracked:
                changes.extend(self._refresh(path))
                continue
            if self.root.single is not None:
                if path == self.root.single:
                    changes.extend(self._consider(path))
                continue
            if path in deleted:
                # A folder removed or renamed away takes its logs with it, and the
                # kernel may only report the folder.
                for known in [k for k in self._tracked if path in k.parents]:
                    changes.extend(self._refresh(known))
                self._candidates.pop(path, None)
                if path not in added:
                    continue
                # Made again in the same burst (`mv proj proj.bak && mkdir proj`):
                # what is in it now is looked at below.
            try:
                st = os.stat(path)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if path in added:
                    # A new folder may have been filled before its watch was set up.
                    changes.extend(self._scan_tree(path))
            elif stat.S_ISREG(st.st_mode):
                changes.extend(self._consider(path))
        return changes

    # -- poll ----------------------------------------------------------------------------

    def _watch_poll(self, stop: threading.Event) -> Iterator[list[RootChange]]:
        # Folders first: one that changes while priming is then listed again.
        self._register_dirs(self.root.path)
        first = self._prime()
        if first:
            yield first
        interval = self.poll_interval_ms / 1000
        next_full = time.monotonic() + POLL_FULL_RESCAN_S
        while not stop.wait(interval):
            gone = self._root_gone()
            if gone is not None:
                yield [gone]
                return
            changes = self._sweep_known()
            if self.root.single is None:
                if time.monotonic() >= next_full:
                    next_full = time.monotonic() + POLL_FULL_RESCAN_S
                    changes.extend(self._rescan())
                    self._register_dirs(self.root.path)
                else:
                    changes.extend(self._check_dirs())
            changes.extend(self._take_folder_problems())
            if changes:
                yield changes

    def _register_dirs(self, top: Path) -> None:
        """Note the mtime of `top` and every folder below it not noted yet.

        Folders already noted keep their mtime, so a change made since they were
        last listed is still seen by `_check_dirs`.
        """
        if self.root.single is not None:
            return
        seen: set[tuple[int, int]] = set()
        stack = [top]
        while stack:
            folder = stack.pop()
            try:
                st = os.stat(folder)
                if not stat.S_ISDIR(st.st_mode) or (st.st_dev, st.st_ino) in seen:
                    continue
                seen.add((st.st_dev, st.st_ino))
                with os.scandir(folder) as it:
                    subdirs = [Path(e.path) for e in it if e.name not in SKIP_DIRS and e.is_dir()]
            except OSError:
                continue
            self._dirs.setdefault(folder, st.st_mtime_ns)
            stack.extend(subdirs)

    def _check_dirs(self) -> list[RootChange]:
        """List only the folders whose mtime changed; walk the new ones."""
        changes: list[RootChange] = []
        for folder, seen in list(self._dirs.items()):
            mtime = _dir_mtime(folder)
            if mtime is None:
                del self._dirs[folder]  # logs under it go away in `_sweep_known`
                continue
            if mtime == seen:
                continue
            self._dirs[folder] = mtime
            try:
                with os.scandir(folder) as it:
                    entries = [(Path(e.path), e.is_dir()) for e in it]
            except OSError:
                continue
            for path, is_dir in sorted(entries):
                if is_dir:
                    if path not in self._dirs and path.name not in SKIP_DIRS:
                        # Noted before it is walked: what lands in it later is seen.
                        self._register_dirs(path)
                        changes.extend(self._scan_tree(path))
                elif path not in self._tracked and is_log_name(path.name):
                    changes.extend(self._consider(path))
        return changes

    # -- shared --------------------------------------------------------------------------

    def _prime(self) -> list[RootChange]:
        """Track every summary of the root; report what changed since it was scanned."""
        changes: list[RootChange] = []
        for summary in self.root.summaries():
            # The id `SessionRoot.scan` fell back to: the layout's, else the path.
            fallback = layout_session_id(summary.path) or str(summary.path)
            self._tracked[summary.path] = _Tracked(summary, None, fallback)
        for path in list(self._tracked):
            changes.extend(self._refresh(path))
        if self.root.single is None:
            changes.extend(self._rescan())
        elif self.root.single not in self._tracked:
            changes.extend(self._consider(self.root.single))
        changes.extend(self._take_folder_problems())
        self.primed.set()
        return changes

    def _root_gone(self) -> RootGone | None:
        path = self.root.path
        try:
            st = os.stat(path)
        except OSError as exc:
            return RootGone(path, _gone_message(path, exc))
        if not stat.S_ISDIR(st.st_mode) or (st.st_dev, st.st_ino) != self._root_identity:
            return RootGone(path, f"{path} was replaced by another file or folder")
        return None

    def _sweep_known(self) -> list[RootChange]:
        """`stat` every known log (and candidate) and read those that changed."""
        changes: list[RootChange] = []
        for path in list(self._tracked):
            changes.extend(self._refresh(path))
        for path in list(self._candidates):
            changes.extend(self._consider(path))
        single = self.root.single
        if single is not None and single not in self._tracked:
            changes.extend(self._consider(single))  # deleted, then written again
        return changes

    def _rescan(self) -> list[RootChange]:
        """Walk the whole root: add logs not known yet, drop known ones that are gone."""
        changes: list[RootChange] = []
        found: set[Path] = set()
        for path, _sid in discover(self.root.path, self._folder_error):
            found.add(path)
            if path not in self._tracked:
                changes.extend(self._consider(path))
        for path in [p for p in self._tracked if p not in found]:
            changes.extend(self._refresh(path))
        return changes

    def _scan_tree(self, folder: Path) -> list[RootChange]:
        """Add the logs below one (new) folder."""
        changes: list[RootChange] = []
        try:
            parts = folder.relative_to(self.root.path).parts
        except ValueError:
            return changes  # not under the root (a symlinked folder's own path)
        if any(part in SKIP_DIRS for part in parts):
            return changes
        for path, _sid in discover(folder, self._folder_error):
            if path not in self._tracked:
                changes.extend(self._consider(path))
        return changes

    def _folder_error(self, folder: Path, exc: OSError) -> None:
        if folder in self._reported_dirs or not folder.exists():
            return  # a folder vanishing mid-scan is a removal, not a problem
        self._reported_dirs.add(folder)
        self._folder_problems.append(
            ProblemFound(
                folder,
                LogProblem(
                    ProblemKind.UNREADABLE,
                    f"cannot list {folder}: {exc.strerror or exc}",
                ),
            )
        )

    def _take_folder_problems(self) -> list[RootChange]:
        taken, self._folder_problems = self._folder_problems, []
        return taken

    def _consider(self, path: Path) -> list[RootChange]:
        """A file not known yet: start tracking it if discovery would accept it."""
        if path in self._tracked or not is_log_name(path.name):
            return []
        try:
            st = os.stat(path)
        except OSError:
            self._candidates.pop(path, None)
            return []
        if not stat.S_ISREG(st.st_mode):
            return []
        key = _stat_key(st)
        if st.st_size == 0 and path != self.root.single:
            # Just created, nothing written yet: not a session until its header lands
            # (a live view should not flash an "empty log" problem).
            self._candidates[path] = key
            return []
        if path in self._candidates and self._candidates[path] == key:
            return []  # unchanged since it was last found wanting
        layout_id = layout_session_id(path)
        summary: SessionSummary | None = None
        accepted = (
            layout_id is not None or path.name.startswith("session") or path == self.root.single
        )
        if not accepted:
            if encoding_of(path) is Encoding.ZSTD:
                summary = summarize(path)
                accepted = summary.header is not None
            else:
                accepted = has_session_header(path)
        if not accepted:
            # A log name but no header yet (being written, or not a log): look again
            # when it changes.
            self._candidates[path] = key
            return []
        self._candidates.pop(path, None)
        replaced = self._older_generations(path)
        if replaced is None:
            return []  # a newer generation of this session is the log already
        fallback = layout_id if layout_id is not None else str(path)
        if summary is None:
            summary = summarize(path, layout_id)
        moved = self._moved_here(path, key, summary.id)
        tracked = _Tracked(summary, _resume(summary), fallback, key)
        self._tracked[path] = tracked
        self._identities[key[0], key[1]] = path
        self.root.update(summary)
        # dsh wrote a newer generation beside the log (it migrated the session when it
        # opened it for writing): the new file is the session now, the old one history.
        gone = [
            msgspec.structs.replace(self._drop(old, self._tracked[old]), moved_to=path)
            for old in dict.fromkeys([*moved, *replaced])
        ]
        return [*gone, SessionAdded(summary)]

    def _moved_here(self, path: Path, key: _StatKey, session_id: str) -> list[Path]:
        """The tracked log that `path` is, renamed: the same file (device, inode) and
        session id, no longer at its old path. A rename is seen as an addition and a
        removal, and a poll can see the addition first (the rename landed between its
        stat of the old path and its listing of the folders): this pairs them then."""
        old = self._identities.get((key[0], key[1]))
        if old is None or old == path:
            return []
        tracked = self._tracked.get(old)
        if tracked is None or tracked.summary.id != session_id:
            return []
        try:
            st = os.stat(old)
        except FileNotFoundError:
            return [old]
        except OSError:
            return []
        # Still there (a hard link): two paths, not a move.
        return [] if (st.st_dev, st.st_ino) == (key[0], key[1]) else [old]

    def _generation_left(self, gone: Path) -> list[RootChange]:
        """A generation file `gone` was removed: the highest generation left in its
        folder is the session's log again (it was history while `gone` was there; the
        lower ones stay history, as discovery leaves them: `formats.superseded`)."""
        role = generation_role(gone.name)
        if role is None or self.root.single is not None:
            return []
        try:
            with os.scandir(gone.parent) as it:
                roles = [(generation_role(e.name), e.name) for e in it]
        except OSError:
            return []
        left = [(r[1], name) for r, name in roles if r is not None and r[0] == role[0]]
        if not left:
            return []
        return self._consider(gone.parent / max(left)[1])  # (the highest version)

    def _older_generations(self, path: Path) -> list[Path] | None:
        """The tracked logs that the generation file `path` supersedes (same folder,
        lower generation), or None if a tracked one there supersedes `path`."""
        role = generation_role(path.name)
        if role is None:
            return []
        version = role[1]
        older: list[Path] = []
        for other in self._tracked:
            if other.parent != path.parent or other == path:
                continue
            their_role = generation_role(other.name)
            if their_role is None or their_role[0] != role[0]:
                continue
            theirs = their_role[1]
            if theirs > version:
                return None
            if theirs < version:
                older.append(other)
        return older

    def _drop(self, path: Path, tracked: _Tracked) -> SessionRemoved:
        del self._tracked[path]
        if tracked.seen is not None:
            identity = (tracked.seen[0], tracked.seen[1])
            self._dropped[path] = identity
            if self._identities.get(identity) == path:
                del self._identities[identity]
        self.root.remove(path)
        return SessionRemoved(path, tracked.summary.id)

    def _refresh(self, path: Path) -> list[RootChange]:
        """Read what was appended to one known log and report it."""
        tracked = self._tracked[path]
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return [self._drop(path, tracked), *self._generation_left(path)]
        except OSError:
            st = None  # e.g. a folder lost its search permission: the read says so
        if st is not None and not stat.S_ISREG(st.st_mode):
            return [self._drop(path, tracked)]
        key = _stat_key(st) if st is not None else None
        if key is not None and key == tracked.seen:
            return []
        old = tracked.summary
        before = tracked.seen
        first_look = before is None
        tracked.seen = key
        if key is not None:
            self._identities[key[0], key[1]] = path
        if first_look and st is not None and (st.st_size, st.st_mtime) == (old.size, old.mtime):
            return []  # as the scan read it: an append-only log that did not grow
        mtime = st.st_mtime if st is not None else None
        if old.header is None:
            # Nothing usable was read yet (empty, bad or unreadable header): start over,
            # so a header written after the file was created is read.
            return self._reread(tracked, mtime)
        reader = tracked.reader
        if reader is None:
            # The log's first change: a file put in its place since it was last seen
            # (another inode), or one whose bytes read are not there any more, is read
            # from the start (a reader made now knows only the file as it is now).
            replaced = before is not None and key is not None and before[:2] != key[:2]
            if replaced or not _consumed_intact(old):
                return self._reread(tracked, mtime)
            reader = tracked.reader = _resume(old)
        known = list(reader.problems)
        batch = reader.read()
        if batch.reset:
            return self._reread(tracked, mtime, reader=reader, events=batch.events)
        if reader.header != old.header:
            # A V2+ child's inherited marker came in the appended rows: it sets the
            # header's seed length, which changes how the rows before it are counted
            # (own or inherited), and answers a missing-marker problem already
            # reported. Read as a fresh load reads it.
            return self._reread(tracked, mtime)
        found = [p for p in reader.problems if p not in known]
        new = advance_summary(
            old, batch.events, found, reader.offset, tail=reader.tail_problem, mtime=mtime
        )
        return self._publish(tracked, new, tuple(batch.events), reset=False)

    def _reread(
        self,
        tracked: _Tracked,
        mtime: float | None,
        *,
        reader: LogReader | None = None,
        events: list[SessionEvent] | None = None,
    ) -> list[RootChange]:
        """Read a log from the start (replaced, shrunk, or never readable before)."""
        old = tracked.summary
        if reader is None or events is None:
            reader = LogReader(old.path)
            events = reader.read().events
        tracked.reader = reader
        base = blank_summary(old.path, tracked.fallback_id, reader.header, mtime or 0.0)
        new = advance_summary(
            base, events, reader.problems, reader.offset, tail=reader.tail_problem, mtime=mtime
        )
        if not events and not old.events and new.header == old.header:
            # Still nothing to show (e.g. an empty file that stayed empty): an update
            # only if its problems changed. (A log that had events and now has none
            # shrank: a reset, so that what was shown of it is dropped.)
            return self._publish(tracked, new, (), reset=False)
        return self._publish(tracked, new, tuple(events), reset=True)

    def _publish(
        self,
        tracked: _Tracked,
        new: SessionSummary,
        events: tuple[SessionEvent, ...],
        *,
        reset: bool,
    ) -> list[RootChange]:
        old = tracked.summary
        fresh = _fresh_problems(old.problems, new.problems, reset)
        kinds_changed = sorted(p.kind for p in old.problems) != sorted(p.kind for p in new.problems)
        tracked.summary = new
        if new != old:
            self.root.update(new)  # (an update drops the root's lineage: only if needed)
        if not (events or reset or fresh or kinds_changed or new.header != old.header):
            return []
        return [EventsAppended(new, events, fresh, reset)]


def _fresh_problems(
    old: Sequence[LogProblem], new: Sequence[LogProblem], reset: bool
) -> tuple[LogProblem, ...]:
    """Problems of `new` that `old` did not report (a growing torn tail is not new)."""
    if reset:
        return tuple(new)
    had_tail = any(p.kind is ProblemKind.TORN_TAIL for p in old)
    return tuple(
        p
        for p in new
        if p not in old
        and not (p.kind is ProblemKind.TORN_TAIL and had_tail)
        and not _same_place(p, old)
    )


def _dir_mtime(path: Path) -> int | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns if stat.S_ISDIR(st.st_mode) else None


def _gone_message(path: Path, exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return f"{path} was removed"
    return f"{path} cannot be read any more: {exc.strerror or exc}"
