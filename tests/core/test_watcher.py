"""The live watcher: real files in tmp_path, a real `RootWatcher` in a thread.

Every live test runs twice: with kernel notifications (watchfiles' Rust backend)
and in poll mode (size comparison). Tests wait for the changes they expect with a
deadline loop; the deadline is only a guard against hanging, never what is tested.
"""

from __future__ import annotations

import itertools
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import orjson
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st
from turnline.core.codec import encode_records
from turnline.core.index import index_log
from turnline.core.layout import session_dir
from turnline.core.logfile import Encoding, LogReader
from turnline.core.model import LogProblem, ProblemKind, SessionEvent, SessionHeader
from turnline.core.root import SessionRoot
from turnline.core.summary import SessionSummary, summarize
from turnline.core.watcher import (
    EventsAppended,
    RootChange,
    RootGone,
    RootWatcher,
    SessionAdded,
    SessionRemoved,
    advance_summary,
    blank_summary,
)
from turnline.core.writer import TEMP_PREFIX, encode_new_log, write_new_file

from ..conftest import fixture_logs

T = TypeVar("T")

#: A guard against a hung test, not a timing goal: expected changes come in milliseconds.
DEADLINE_S = 20.0
MODES = ["native", "poll"]


# -- building logs -------------------------------------------------------------------------


def event(seq: int, etype: str, data: dict[str, Any] | None = None) -> SessionEvent:
    return SessionEvent(etype, seq, 1_700_000_000_000 + seq, data if data is not None else {})


def turn_events(
    first_seq: int, turn: int, *, text: str = "hello", close: bool = True
) -> list[SessionEvent]:
    """One small turn: user message, turn/start, a packable chunk run, turn/end."""
    rows: list[tuple[str, dict[str, Any]]] = [
        ("user/message", {"role": "user", "content": [{"type": "text", "text": text}]}),
        ("turn/start", {"turn": turn}),
        ("step/start", {"turn": turn, "step": 1}),
    ]
    for piece in ("a", "b", "c", "d"):
        chunk = {"type": "text-delta", "index": 0, "text": piece}
        rows.append(("assistant/chunk", {"turn": turn, "step": 1, "chunk": chunk}))
    rows.append(("step/end", {"turn": turn, "step": 1}))
    if close:
        rows.append(("turn/end", {"turn": turn, "reason": {"kind": "completed"}}))
    return [event(first_seq + i, etype, data) for i, (etype, data) in enumerate(rows)]


def lines(events: Sequence[SessionEvent]) -> bytes:
    """Raw records, one event per line (no packing: each line is one event)."""
    return b"".join(orjson.dumps(e.to_json_dict()) + b"\n" for e in events)


def new_log(
    root: Path,
    session_id: str,
    events: Sequence[SessionEvent] = (),
    encoding: Encoding = Encoding.RAW,
    cwd: str = "/w/app",
) -> Path:
    """A log in the dsh layout, published atomically like a fork child."""
    header = SessionHeader(id=session_id, created_at=1_700_000_000_000, cwd=cwd)
    name = "session.jsonl.zstd" if encoding is Encoding.ZSTD else "session.jsonl"
    path = session_dir(root, session_id, cwd) / name
    write_new_file(path, [encode_new_log(header, events, encoding)])
    return path


def append_bytes(path: Path, data: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(data)


def zstd_frame(events: Sequence[SessionEvent]) -> bytes:
    body = b"".join(encode_records(events))
    return zstandard.ZstdCompressor(write_checksum=True).compress(body)


def as_dicts(events: Sequence[SessionEvent]) -> list[dict[str, Any]]:
    return [e.to_json_dict() for e in events]


def fields(summary: SessionSummary) -> tuple[Any, ...]:
    """What the listing shows, problem kinds included (messages depend on the reader)."""
    return (
        summary.id,
        summary.events,
        summary.last_seq,
        summary.turns,
        summary.open_turn,
        summary.title,
        summary.size,
        sorted(p.kind for p in summary.problems),
    )


# -- a watcher running in a thread ------------------------------------------------------------


class Live:
    """A `RootWatcher` running in its own thread, recording every batch."""

    def __init__(self, root_path: Path, mode: str) -> None:
        self.root = SessionRoot(root_path)
        self.root.summaries()
        self.watcher = RootWatcher(self.root, poll=mode == "poll", poll_interval_ms=20)
        self.stop = threading.Event()
        self.batches: list[list[RootChange]] = []
        self.error: BaseException | None = None
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        # Changes made before priming would be part of the initial state, not changes.
        assert self.watcher.primed.wait(DEADLINE_S), "the watcher did not prime"

    def _run(self) -> None:
        try:
            for batch in self.watcher.watch(self.stop):
                assert batch, "the watcher yielded an empty batch"
                with self._lock:
                    self.batches.append(batch)
        except BaseException as exc:  # surfaced by `wait_for`
            self.error = exc

    def changes(self) -> list[RootChange]:
        with self._lock:
            return [c for batch in self.batches for c in batch]

    def wait_for(self, probe: Callable[[list[RootChange]], T | None], what: str) -> T:
        """Poll `probe(changes)` until it returns something truthy."""
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            if self.error is not None:
                raise AssertionError(f"the watcher raised {self.error!r}") from self.error
            found = probe(self.changes())
            if found:
                return found
            time.sleep(0.005)
        raise AssertionError(f"no {what} within {DEADLINE_S}s; changes: {self.changes()!r}")

    def appended(self, path: Path) -> list[EventsAppended]:
        return [
            c for c in self.changes() if isinstance(c, EventsAppended) and c.summary.path == path
        ]

    def latest(self, path: Path) -> SessionSummary | None:
        summaries = [
            c.summary
            for c in self.changes()
            if isinstance(c, EventsAppended | SessionAdded) and c.summary.path == path
        ]
        return summaries[-1] if summaries else None

    def wait_events(self, path: Path, count: int) -> SessionSummary:
        """Wait until the watcher's summary of `path` counts `count` events."""

        def probe(_: list[RootChange]) -> SessionSummary | None:
            latest = self.latest(path)
            return latest if latest is not None and latest.events >= count else None

        return self.wait_for(probe, f"{count} events in {path.name}")

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=DEADLINE_S)
        assert not self.thread.is_alive(), "watch() did not return after stop.set()"


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def live_factory(mode: str) -> Iterator[Callable[[Path], Live]]:
    started: list[Live] = []

    def start(root: Path) -> Live:
        live = Live(root, mode)
        started.append(live)
        return live

    yield start
    for live in started:
        live.close()


# -- live behaviour ----------------------------------------------------------------------------


def test_appended_lines_arrive_as_exactly_those_events(
    tmp_path: Path, live_factory: Callable[[Path], Live]
) -> None:
    first = turn_events(0, 1)
    path = new_log(tmp_path, "s1", first)
    live = live_factory(tmp_path)
    more = turn_events(len(first), 2, close=False)
    append_bytes(path, lines(more))
    summary = live.wait_events(path, len(first) + len(more))
    got = [e for c in live.appended(path) for e in c.events]
    assert as_dicts(got) == as_dicts(more)
    assert summary.open_turn and summary.turns == 2
    assert fields(summary) == fields(summarize(path, "s1"))
    # The root's own listing was kept current.
    assert {s.path: s for s in live.root.summaries()}[path] == summary
    end = event(len(first) + len(more), "turn/end", {"turn": 2, "reason": {"kind": "error"}})
    append_bytes(path, lines([end]))
    closed = live.wait_events(path, summary.events + 1)
    assert not closed.open_turn  # flips the moment the turn/end lands
    assert fields(closed) == fields(summarize(path, "s1"))


def test_a_torn_line_is_consumed_only_once_complete(
    tmp_path: Path, live_factory: Callable[[Path], Live]
) -> None:
    first = turn_events(0, 1)
    path = new_log(tmp_path, "s1", first)
    live = live_factory(tmp_path)
    extra = event(len(first), "session/title", {"title": "Renamed"})
    line = lines([extra])
    append_bytes(path, line[:10])

    def torn(changes: list[RootChange]) -> EventsAppended | None:
        for c in changes:
            if isinstance(c, EventsAppended) and any(
                p.kind is ProblemKind.TORN_TAIL for p in c.problems
            ):
                return c
        return None

    seen = live.wait_for(torn, "a torn-tail problem")
    assert seen.events == ()
    assert seen.summary.events == len(first)
    append_bytes(path, line[10:])
    done = live.wait_events(path, len(first) + 1)
    got = [e for c in live.appended(path) for e in c.events]
    assert as_dicts(got) == as_dicts([extra])  # once, whole, and only once complete
    assert done.title == "Renamed"
    assert not any(p.kind is ProblemKind.TORN_TAIL for p in done.problems)
    assert fields(done) == fields(summarize(path, "s1"))


def test_new_project_and_session_folders_are_picked_up(
    tmp_path: Path, live_factory: Callable[[Path], Live]
) -> None:
    new_log(tmp_path, "s1", turn_events(0, 1))
    live = live_factory(tmp_path)
    # A new project folder (a cwd not seen before), then a second session in it.
    added = [new_log(tmp_path, "s2", turn_events(0, 1), cwd="/elsewhere")]
    added.append(new_log(tmp_path, "s3", turn_events(0, 1, close=False), cwd="/elsewhere"))
    # A flat dump too: any log with a header, not only the dsh layout.
    flat = tmp_path / "dumps" / "nested" / "export.jsonl"
    flat.parent.mkdir(parents=True)
    header = SessionHeader(id="flat-1", created_at=1)
    flat.write_bytes(header.to_json_line() + lines(turn_events(0, 1)))
    added.append(flat)

    def all_added(changes: list[RootChange]) -> list[SessionAdded] | None:
        found = [c for c in changes if isinstance(c, SessionAdded)]
        return found if {c.summary.path for c in found} >= set(added) else None

    found = live.wait_for(all_added, "three new sessions")
    assert sorted(c.summary.id for c in found) == ["flat-1", "s2", "s3"]
    assert not any(TEMP_PREFIX in str(c.summary.path) for c in found)
    for c in found:
        assert fields(c.summary) == fields(summarize(c.summary.path, c.summary.id))
    assert {s.id for s in live.root.summaries()} == {"s1", "s2", "s3", "flat-1"}
    # The new one is tailed like any other.
    s3 = added[1]
    append_bytes(s3, lines([event(8, "turn/end", {"turn": 1, "reason": {"kind": "aborted"}})]))
    tailed = live.wait_events(s3, 9)
    assert not tailed.open_turn and tailed.problems == ()


def test_a_log_written_in_place_is_added_once_its_header_lands(
    tmp_path: Path, live_factory: Callable[[Path], Live]
) -> None:
    live = live_factory(tmp_path)
    path = session_dir(tmp_path, "s1", "/w/app") / "session.jsonl"
    path.parent.mkdir(parents=True)
    path.touch()  # a writer that creates the file first and writes the header after
    header = SessionHeader(id="s1", created_at=1, cwd="/w/app").to_json_line()
    append_bytes(path, header)
    added = live.wait_for(
        lambda cs: next((c for c in cs if isinstance(c, SessionAdded)), None), "the session"
    )
    assert added.summary.header is not None and added.summary.problems == ()
    events = turn_events(0, 1)
    append_bytes(path, lines(events))
    summary = live.wait_events(path, len(events))
    assert fields(summary) == fields(summarize(path, "s1"))
    assert isinstance(live.changes()[0], SessionAdded)
    assert sum(isinstance(c, SessionAdded) for c in live.changes()) == 1


def test_deleted_log_is_removed(tmp_path: Path, live_factory: Callable[[Path], Live]) -> None:
    keep = new_log(tmp_path, "keep", turn_events(0, 1))
    gone = new_log(tmp_path, "gone", turn_events(0, 1))
    live = live_factory(tmp_path)
    shutil.rmtree(gone.parent)

    def removed(changes: list[RootChange]) -> SessionRemoved | None:
        return next((c for c in changes if isinstance(c, SessionRemoved)), None)

    change = live.wait_for(removed, "a removal")
    assert (change.path, change.session_id) == (gone, "gone")
    assert [s.path for s in live.root.summaries()] == [keep]


def test_replaced_log_resets(tmp_path: Path, live_factory: Callable[[Path], Live]) -> None:
    path = new_log(tmp_path, "s1", turn_events(0, 1) + turn_events(10, 2))
    live = live_factory(tmp_path)
    replacement = turn_events(0, 1, text="other")
    tmp = path.with_name("session.jsonl.new")
    tmp.write_bytes(SessionHeader(id="s1", created_at=2).to_json_line() + lines(replacement))
    os.replace(tmp, path)

    def reset(changes: list[RootChange]) -> EventsAppended | None:
        return next((c for c in changes if isinstance(c, EventsAppended) and c.reset), None)

    change = live.wait_for(reset, "a reset")
    assert as_dicts(change.events) == as_dicts(replacement)
    assert fields(change.summary) == fields(summarize(path, "s1"))
    assert change.summary.header is not None and change.summary.header.created_at == 2


def test_truncated_log_resets(tmp_path: Path, live_factory: Callable[[Path], Live]) -> None:
    events = turn_events(0, 1) + turn_events(10, 2)
    path = new_log(tmp_path, "s1")
    append_bytes(path, lines(events))  # one line per event, so a cut is easy to place
    live = live_factory(tmp_path)
    header_end = path.read_bytes().index(b"\n") + 1
    with open(path, "r+b") as fh:  # same inode, shorter: a rewrite in place
        fh.truncate(header_end + len(lines(events[:4])))

    def reset(changes: list[RootChange]) -> EventsAppended | None:
        return next((c for c in changes if isinstance(c, EventsAppended) and c.reset), None)

    change = live.wait_for(reset, "a reset")
    assert as_dicts(change.events) == as_dicts(events[:4])
    assert fields(change.summary) == fields(summarize(path, "s1"))


def _check_burst(live: Live, path: Path, before: int, total: int) -> None:
    summary = live.wait_events(path, total)
    assert fields(summary) == fields(summarize(path, "s1"))
    got = [e.seq for c in live.appended(path) for e in c.events]
    assert got == list(range(before, total))  # every appended event, once, in order
    for batch in live.batches:  # coalesced: one change per file per batch
        paths = [c.summary.path for c in batch if isinstance(c, EventsAppended)]
        assert len(paths) == len(set(paths))


def test_burst_from_a_writer_thread_loses_nothing(
    tmp_path: Path, live_factory: Callable[[Path], Live]
) -> None:
    first = turn_events(0, 1)
    path = new_log(tmp_path, "s1", first)
    live = live_factory(tmp_path)
    burst = [event(len(first) + i, "tool/output", {"n": i}) for i in range(2000)]

    def write() -> None:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            for e in burst:
                os.write(fd, lines([e]))
        finally:
            os.close(fd)

    writer = threading.Thread(target=write)
    writer.start()
    writer.join()
    _check_burst(live, path, len(first), len(first) + len(burst))
    appended = [c for c in live.appended(path) if c.events]
    assert len(appended) < len(burst)  # bursts were grouped, not one change per line


_WRITER = """
import os, sys, orjson
path, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
for i in range(count):
    seq = first + i
    line = orjson.dumps({"type": "tool/output", "seq": seq, "time": seq, "data": {"n": i}}) + b"\\n"
    # A writer that flushes half a line first: readers must never take the half.
    cut = len(line) // 2 if i % 3 == 0 else len(line)
    os.write(fd, line[:cut])
    if cut < len(line):
        os.write(fd, line[cut:])
os.close(fd)
"""


def test_burst_from_another_process_with_torn_writes(
    tmp_path: Path, live_factory: Callable[[Path], Live]
) -> None:
    first = turn_events(0, 1)
    path = new_log(tmp_path, "s1", first)
    live = live_factory(tmp_path)
    subprocess.run(
        [sys.executable, "-c", _WRITER, str(path), str(len(first)), "2000"],
        check=True,
        timeout=DEADLINE_S,
    )
    _check_burst(live, path, len(first), len(first) + 2000)
    got = [e for c in live.appended(path) for e in c.events]
    assert all(e.type == "tool/output" and e.data == {"n": e.seq - len(first)} for e in got)


def test_zstd_log_gains_frames(tmp_path: Path, live_factory: Callable[[Path], Live]) -> None:
    first = turn_events(0, 1)
    path = new_log(tmp_path, "z1", first, Encoding.ZSTD)
    live = live_factory(tmp_path)
    second = turn_events(len(first), 2)
    frame = zstd_frame(second)  # a packed chunk row inside
    append_bytes(path, frame[:7])  # a frame still being written: nothing yet

    def torn(changes: list[RootChange]) -> EventsAppended | None:
        for c in changes:
            if isinstance(c, EventsAppended) and any(
                p.kind is ProblemKind.TORN_TAIL for p in c.problems
            ):
                return c
        return None

    assert live.wait_for(torn, "a torn zstd frame").events == ()
    append_bytes(path, frame[7:])
    third = turn_events(len(first) + len(second), 3, text="third", close=False)
    append_bytes(path, zstd_frame(third))
    summary = live.wait_events(path, len(first) + len(second) + len(third))
    got = [e for c in live.appended(path) for e in c.events]
    assert as_dicts(got) == as_dicts(second + third)
    assert summary.open_turn and summary.turns == 3
    assert fields(summary) == fields(summarize(path, "z1"))


def test_corruption_is_reported_not_raised(
    tmp_path: Path, live_factory: Callable[[Path], Live]
) -> None:
    first = turn_events(0, 1)
    path = new_log(tmp_path, "s1", first)
    live = live_factory(tmp_path)
    end = event(len(first) + 1, "turn/end", {"turn": 2, "reason": {"kind": "completed"}})
    append_bytes(path, b"{not json\n" + lines([end]))

    def corrupt(changes: list[RootChange]) -> EventsAppended | None:
        for c in changes:
            if isinstance(c, EventsAppended) and any(
                p.kind is ProblemKind.CORRUPT for p in c.problems
            ):
                return c
        return None

    change = live.wait_for(corrupt, "a corruption problem")
    assert change.summary.events == len(first)  # what is valid still counts
    # The watcher goes on: a new session is still seen.
    other = new_log(tmp_path, "s2", turn_events(0, 1))
    live.wait_for(
        lambda cs: any(isinstance(c, SessionAdded) and c.summary.path == other for c in cs),
        "the next session",
    )


def test_root_removed_ends_the_watch(tmp_path: Path, live_factory: Callable[[Path], Live]) -> None:
    root = tmp_path / "root"
    new_log(root, "s1", turn_events(0, 1))
    live = live_factory(root)
    shutil.rmtree(root)
    gone = live.wait_for(
        lambda cs: next((c for c in cs if isinstance(c, RootGone)), None), "RootGone"
    )
    assert gone.path == root
    live.thread.join(timeout=DEADLINE_S)
    assert not live.thread.is_alive()  # watch() returned by itself
    assert isinstance(live.changes()[-1], RootGone)


def test_poll_sees_appends_within_one_mtime_second(tmp_path: Path) -> None:
    first = turn_events(0, 1)
    path = new_log(tmp_path, "s1", first)
    live = Live(tmp_path, "poll")
    try:
        pinned = os.stat(path)
        count = len(first)
        for k in range(5):
            extra = event(count, "tool/output", {"k": k})
            append_bytes(path, lines([extra]))
            # Pin the mtime back: only the size tells the poller something changed.
            os.utime(path, ns=(pinned.st_atime_ns, pinned.st_mtime_ns))
            count += 1
            summary = live.wait_events(path, count)
            assert summary.last_seq == count - 1
        assert os.stat(path).st_mtime_ns == pinned.st_mtime_ns
        got = [e.data for c in live.appended(path) for e in c.events]
        assert got == [{"k": k} for k in range(5)]
    finally:
        live.close()


def test_single_file_root(tmp_path: Path, live_factory: Callable[[Path], Live]) -> None:
    first = turn_events(0, 1)
    path = new_log(tmp_path, "s1", first)
    other = new_log(tmp_path, "s2", first)
    live = live_factory(path)
    append_bytes(path, lines(turn_events(len(first), 2)))
    append_bytes(other, lines(turn_events(len(first), 2)))
    live.wait_events(path, 2 * len(first))
    assert all(
        c.summary.path == path for c in live.changes() if isinstance(c, EventsAppended)
    )  # the root is that one file


def test_watch_on_a_missing_root_reports_it(tmp_path: Path, mode: str) -> None:
    root_path = tmp_path / "r"
    root_path.mkdir()
    root = SessionRoot(root_path)
    root_path.rmdir()
    batches = list(RootWatcher(root, poll=mode == "poll").watch(threading.Event()))
    assert len(batches) == 1 and isinstance(batches[0][0], RootGone)


# -- advance_summary: the incremental summary equals a fresh one --------------------------------

_WORD = st.text(alphabet="abcdefgh xyz\n", min_size=1, max_size=8).filter(lambda s: bool(s.strip()))


@st.composite
def session_events(draw: st.DrawFn) -> list[SessionEvent]:
    """Well-formed turns: user text, chunk runs (packed on disk), titles, an open tail."""
    rows: list[tuple[str, dict[str, Any]]] = []
    turns = draw(st.integers(0, 4))
    open_last = draw(st.booleans())
    for n in range(1, turns + 1):
        if draw(st.booleans()):
            text = draw(_WORD)
            rows.append(
                ("user/message", {"role": "user", "content": [{"type": "text", "text": text}]})
            )
        rows.append(("turn/start", {"turn": n}))
        for step in range(1, draw(st.integers(1, 2)) + 1):
            rows.append(("step/start", {"turn": n, "step": step}))
            kind = draw(st.sampled_from(["text-delta", "reasoning-delta", "tool-call-delta"]))
            for k in range(draw(st.integers(0, 6))):
                chunk: dict[str, Any] = {"type": kind, "index": 0}
                if kind == "tool-call-delta":
                    chunk.update(id="c1", name="bash", argumentsDelta=str(k))
                else:
                    chunk["text"] = draw(_WORD)
                rows.append(("assistant/chunk", {"turn": n, "step": step, "chunk": chunk}))
            rows.append(("step/end", {"turn": n, "step": step}))
        if draw(st.booleans()):
            rows.append(("session/title", {"title": draw(_WORD)}))
        if not (open_last and n == turns):
            kind = draw(st.sampled_from(["completed", "aborted", "error", "interrupted"]))
            rows.append(("turn/end", {"turn": n, "reason": {"kind": kind}}))
    return [event(seq, etype, data) for seq, (etype, data) in enumerate(rows)]


def _follow(path: Path, chunks: Sequence[bytes], session_id: str) -> None:
    """Write `chunks` one by one; after each, the advanced summary equals `summarize`."""
    whole = b"".join(chunks)
    path.write_bytes(b"")
    summary: SessionSummary | None = None
    reader: LogReader | None = None
    for chunk in chunks:
        append_bytes(path, chunk)
        fresh = summarize(path, session_id)
        if summary is None or reader is None:
            if fresh.header is None:
                continue  # the header is not complete yet: nothing to advance from
            summary, reader = (
                fresh,
                LogReader.resume(
                    path, fresh.header, fresh.size, fresh.events, fresh.last_seq, True
                ),
            )
            continue
        before = list(reader.problems)
        batch = reader.read()
        assert not batch.reset
        found = [p for p in reader.problems if p not in before]
        summary = advance_summary(
            summary, batch.events, found, reader.offset, tail=reader.tail_problem, mtime=fresh.mtime
        )
        assert fields(summary) == fields(fresh)
    assert path.read_bytes() == whole


@given(session_events(), st.lists(st.integers(0, 10**9), max_size=12))
def test_advance_summary_matches_summarize_raw(
    tmp_path_factory: pytest.TempPathFactory, events: list[SessionEvent], cuts: list[int]
) -> None:
    path = tmp_path_factory.mktemp("raw") / "session.jsonl"
    header = SessionHeader(id="p1", created_at=5, cwd="/w")
    data = header.to_json_line() + b"".join(encode_records(events))  # packed rows
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    _follow(path, [data[a:b] for a, b in itertools.pairwise(points)], "p1")


@given(session_events(), st.lists(st.integers(0, 10**9), max_size=6), st.integers(0, 10**9))
def test_advance_summary_matches_summarize_zstd(
    tmp_path_factory: pytest.TempPathFactory,
    events: list[SessionEvent],
    cuts: list[int],
    torn: int,
) -> None:
    path = tmp_path_factory.mktemp("zstd") / "session.jsonl.zstd"
    header = SessionHeader(id="p2", created_at=5, cwd="/w")
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    bounds = sorted({c % (len(events) + 1) for c in cuts} | {0, len(events)})
    frames = [cctx.compress(header.to_json_line())]
    frames += [
        cctx.compress(b"".join(encode_records(events[a:b])))
        for a, b in itertools.pairwise(bounds)
        if b > a
    ]
    chunks: list[bytes] = []
    for k, frame in enumerate(frames):
        if k and k == torn % len(frames):
            cut = 1 + torn % (len(frame) - 1)
            chunks += [frame[:cut], frame[cut:]]  # one frame arrives in two writes
        else:
            chunks.append(frame)
    _follow(path, chunks, "p2")


def test_advance_summary_counts_turns_titles_and_problems() -> None:
    base = blank_summary(Path("/x/session.jsonl"), "x", SessionHeader(id="x"))
    tail = LogProblem(ProblemKind.TORN_TAIL, "half a line", seq=3)
    first = advance_summary(base, turn_events(0, 1, close=False), [], 100, tail=tail)
    assert (first.events, first.last_seq, first.turns, first.open_turn) == (8, 7, 1, True)
    assert first.title == "hello" and first.problems == (tail,) and first.size == 100
    end = event(8, "turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    title = event(9, "session/title", {"title": "Named"})
    gap = LogProblem(ProblemKind.SEQ_GAP, "seq jumps", seq=9)
    second = advance_summary(first, [end, title], [gap, gap], 150)
    assert (second.events, second.turns, second.open_turn, second.title) == (10, 1, False, "Named")
    assert second.problems == (gap,)  # the torn tail was completed; no duplicates
    later = advance_summary(second, turn_events(10, 2, text="ignored"), [], 200)
    assert later.title == "Named" and later.turns == 2 and not later.open_turn
    orphan = advance_summary(base, [event(0, "turn/end", {"turn": 1})], [], 10)
    assert (orphan.turns, orphan.open_turn) == (1, False)


def test_tailing_every_real_fixture_matches_summarize(tmp_path: Path) -> None:
    """Real dsh logs (with their warts) fed in pieces at line ends: same summary."""
    rng = random.Random(7)  # fixed: the same cuts every run
    logs = fixture_logs()
    for log in logs:
        data = log.read_bytes()
        ends = [i + 1 for i, byte in enumerate(data) if byte == 0x0A]
        cuts = sorted({*rng.sample(ends, min(4, len(ends))), len(data)})
        chunks = [data[a:b] for a, b in itertools.pairwise([0, *cuts]) if b > a]
        _follow(tmp_path / log.name, chunks, "fixture")
    assert len(logs) == 151


def test_a_renamed_folder_reports_where_its_logs_went(
    tmp_path: Path, live_factory: Callable[[Path], Live]
) -> None:
    """Issue 14 item 10: a project (or session) folder renamed under the watcher is a
    removal and an addition in one batch; the removal names the new path (same file),
    while a log deleted and another written in its place is not taken for a move."""
    kept = new_log(tmp_path, "s1", turn_events(0, 1), cwd="/w/app")
    gone = new_log(tmp_path, "s2", turn_events(0, 1), cwd="/w/other")
    live = live_factory(tmp_path)
    project = kept.parent.parent
    project.rename(project.with_name(project.name + "-moved"))
    moved = project.with_name(project.name + "-moved") / kept.parent.name / kept.name

    def removal(changes: list[RootChange]) -> SessionRemoved | None:
        return next((c for c in changes if isinstance(c, SessionRemoved)), None)

    removed = live.wait_for(removal, "the removal of the renamed log")
    assert (removed.path, removed.session_id, removed.moved_to) == (kept, "s1", moved)
    [batch] = [b for b in live.batches if removed in b]
    assert any(isinstance(c, SessionAdded) and c.summary.path == moved for c in batch)
    # The session folder alone, renamed again: followed too.
    session = moved.parent.rename(moved.parent.with_name("s1-renamed"))
    again = session / moved.name

    def second(changes: list[RootChange]) -> SessionRemoved | None:
        return next((c for c in changes if isinstance(c, SessionRemoved) and c.path == moved), None)

    assert live.wait_for(second, "the second rename").moved_to == again
    # Deleted, and a new log of another session written: a removal, no move.
    shutil.rmtree(gone.parent)
    new_log(tmp_path, "s3", turn_events(0, 1), cwd="/w/other")

    def deleted(changes: list[RootChange]) -> SessionRemoved | None:
        return next((c for c in changes if isinstance(c, SessionRemoved) and c.path == gone), None)

    assert live.wait_for(deleted, "the deleted log").moved_to is None


def test_a_rename_split_across_two_native_batches_is_still_a_move(tmp_path: Path) -> None:
    """inotify reports a folder's rename as two events, and a loaded machine can read
    them either side of a debounce window: the removal first, in a batch of its own.
    That removal waits one batch for its addition and goes out paired with it (the
    app then follows the open session), not as a bare removal that leaves the app
    showing "this session's log was removed". A removal nothing pairs goes out one
    batch later, as a plain removal."""
    kept = new_log(tmp_path, "s1", turn_events(0, 1), cwd="/w/app")
    gone = new_log(tmp_path, "s2", turn_events(0, 1), cwd="/w/lib")
    root = SessionRoot(tmp_path)
    root.scan()
    watcher = RootWatcher(root)
    assert watcher._prime() == []
    project = kept.parent.parent
    renamed = project.rename(project.with_name(project.name + "-moved"))
    moved = renamed / kept.parent.name / kept.name
    first = watcher._apply_native({(3, str(project))})  # the moved-from half alone
    assert [(type(c), c.path) for c in first if isinstance(c, SessionRemoved)] == [
        (SessionRemoved, kept)
    ]
    assert watcher._pair_moves(first) == []  # held for the other half
    second = watcher._pair_moves(watcher._apply_native({(1, str(renamed))}))
    removed = [c for c in second if isinstance(c, SessionRemoved)]
    added = [c.summary.path for c in second if isinstance(c, SessionAdded)]
    assert [(c.path, c.session_id, c.moved_to) for c in removed] == [(kept, "s1", moved)]
    assert added == [moved]
    assert isinstance(second[0], SessionRemoved)  # the removal comes before its addition
    assert watcher._pair_moves([]) == []  # nothing left over

    # A deletion has no other half: it is reported one batch later, unpaired.
    shutil.rmtree(gone.parent.parent)
    assert watcher._pair_moves(watcher._apply_native({(3, str(gone.parent.parent))})) == []
    late = watcher._pair_moves([])
    assert [(type(c), c.path, getattr(c, "moved_to", 0)) for c in late] == [
        (SessionRemoved, gone, None)
    ]
    assert set(watcher.known) == {moved}


def test_a_rename_split_across_two_polls_is_still_a_move(tmp_path: Path) -> None:
    """A poll stats the known logs, then lists the folders that changed. A rename that
    lands between the two is seen as an addition first (the old path was still there
    when it was stat'ed): the addition itself finds the old path gone and names the
    move in the same batch, rather than a removal, unpaired, one poll later (which the
    app showed as "this session's log was removed"). A hard link is not a move."""
    kept = new_log(tmp_path, "s1", turn_events(0, 1), cwd="/w/app")
    root = SessionRoot(tmp_path)
    root.scan()
    watcher = RootWatcher(root, poll=True)
    watcher._register_dirs(tmp_path)
    assert watcher._prime() == []
    assert watcher._sweep_known() == []  # the poll's first half: nothing moved yet
    project = kept.parent.parent
    moved = project.rename(project.with_name(project.name + "-moved")) / kept.parent.name
    moved = moved / kept.name
    changes = watcher._check_dirs()  # its second half, after the rename
    removed = [c for c in changes if isinstance(c, SessionRemoved)]
    added = [c.summary.path for c in changes if isinstance(c, SessionAdded)]
    assert [(c.path, c.session_id, c.moved_to) for c in removed] == [(kept, "s1", moved)]
    assert added == [moved]
    assert set(watcher.known) == {moved}
    assert [s.path for s in root.summaries()] == [moved]
    assert watcher._sweep_known() == []  # nothing left to report a poll later

    # A second name for the same file (a hard link in a new session folder): both stay.
    twin = tmp_path / "--w-app-copy--" / "s1" / kept.name
    twin.parent.mkdir(parents=True)
    os.link(moved, twin)
    changes = watcher._check_dirs()
    assert [type(c) for c in changes] == [SessionAdded]
    assert set(watcher.known) == {moved, twin}


# -- what a fresh load reads, after changes a reader made late cannot see ------------------


def _fresh(root: Path, path: Path) -> SessionSummary:
    return next(s for s in SessionRoot(root).summaries() if s.path == path)


def _settled(live: Live, root: Path, path: Path) -> SessionSummary:
    """Wait until the watcher's root summarizes `path` as a fresh load does."""

    def probe(_: list[RootChange]) -> SessionSummary | None:
        mine = next((s for s in live.root.summaries() if s.path == path), None)
        if mine is not None and fields(mine) == fields(_fresh(root, path)):
            return mine
        return None

    return live.wait_for(probe, f"{path.name} as a fresh load reads it")


def _reset_of(live: Live, path: Path) -> EventsAppended:
    def probe(changes: list[RootChange]) -> EventsAppended | None:
        return next(
            (
                c
                for c in changes
                if isinstance(c, EventsAppended) and c.reset and c.summary.path == path
            ),
            None,
        )

    return live.wait_for(probe, "a reset")


@pytest.mark.parametrize("encoding", [Encoding.RAW, Encoding.ZSTD])
def test_a_log_replaced_by_a_longer_one_before_its_first_change_resets(
    tmp_path: Path, live_factory: Callable[[Path], Live], encoding: Encoding
) -> None:
    """The watcher makes a log's reader on its first change, when the file may
    already be another one: a longer replacement must not be read from the old
    summary's offset (old counts, new lines) but whole, as a reset."""
    path = new_log(tmp_path, "s1", turn_events(0, 1), encoding)
    live = live_factory(tmp_path)
    n = len(turn_events(0, 1))
    other = turn_events(0, 1, text="other") + turn_events(n, 2) + turn_events(2 * n, 3)
    header = SessionHeader(id="s1", created_at=2, cwd="/w/app")
    write_new_file(path.with_name("replacement"), [encode_new_log(header, other, encoding)])
    os.replace(path.with_name("replacement"), path)
    change = _reset_of(live, path)
    assert as_dicts(change.events) == as_dicts(other)
    assert fields(_settled(live, tmp_path, path)) == fields(change.summary)
    assert change.summary.turns == 3 and change.summary.problems == ()


def test_a_log_rewritten_in_place_before_its_first_change_resets(
    tmp_path: Path, live_factory: Callable[[Path], Live]
) -> None:
    """The same inode, truncated and written again longer: the bytes the summary read
    are not there any more (its last line read does not end where it stopped)."""
    path = new_log(tmp_path, "s1", turn_events(0, 1, text="first"))
    live = live_factory(tmp_path)
    header_line = path.read_bytes().split(b"\n", 1)[0] + b"\n"
    other = turn_events(0, 1, text="a longer first message")
    other += turn_events(len(other), 2)
    with open(path, "r+b") as fh:
        fh.truncate(0)
        fh.write(header_line + lines(other))
    change = _reset_of(live, path)
    assert as_dicts(change.events) == as_dicts(other)
    assert change.summary.title == "a longer first message"
    _settled(live, tmp_path, path)


@pytest.mark.parametrize("how", ["truncate", "replace"])
def test_a_log_cut_to_its_header_resets(
    tmp_path: Path, live_factory: Callable[[Path], Live], how: str
) -> None:
    """A log that had events and now has none is a reset (its turns are dropped), not
    a summary quietly set to nothing."""
    path = new_log(tmp_path, "s1", turn_events(0, 1) + turn_events(10, 2))
    live = live_factory(tmp_path)
    append_bytes(path, lines(turn_events(20, 3)))  # a reader is made (the log's first change)
    live.wait_events(path, 3 * len(turn_events(0, 1)))
    header_line = path.read_bytes().split(b"\n", 1)[0] + b"\n"
    if how == "truncate":
        with open(path, "r+b") as fh:
            fh.truncate(len(header_line))
    else:
        path.with_name("replacement").write_bytes(header_line)
        os.replace(path.with_name("replacement"), path)
    change = _reset_of(live, path)
    assert change.events == () and change.summary.events == 0 and change.summary.turns == 0
    _settled(live, tmp_path, path)


def test_the_generation_left_when_the_newest_is_deleted_is_the_session_again(
    tmp_path: Path, live_factory: Callable[[Path], Live]
) -> None:
    """dsh runs a session from its highest generation file; the older ones are history.
    With the newest deleted, the next one down is the session's log again, as a fresh
    load lists it."""
    old = new_log(tmp_path, "s1", turn_events(0, 1, text="old generation"))
    newest = old.with_name("session.v5.jsonl")
    v5 = SessionHeader(id="s1", created_at=1, cwd="/w/app", version=5)
    newest.write_bytes(v5.to_json_line() + lines(turn_events(0, 1, text="new generation")))
    live = live_factory(tmp_path)
    assert [s.path for s in live.root.summaries()] == [newest]
    newest.unlink()

    def added(changes: list[RootChange]) -> SessionAdded | None:
        return next(
            (c for c in changes if isinstance(c, SessionAdded) and c.summary.path == old), None
        )

    assert live.wait_for(added, "the older generation").summary.title == "old generation"
    assert [s.path for s in live.root.summaries()] == [old]


@pytest.mark.parametrize("how", ["rename", "delete"])
def test_a_folder_made_again_in_the_same_native_batch_is_scanned(tmp_path: Path, how: str) -> None:
    """`mv proj proj.bak && mkdir proj` (or a delete) in one burst: inotify reports the
    folder deleted and added in one batch, and its new contents may predate its watch."""
    new_log(tmp_path, "s1", turn_events(0, 1), cwd="/w/app")
    root = SessionRoot(tmp_path)
    root.scan()
    watcher = RootWatcher(root)
    assert watcher._prime() == []
    project = next(tmp_path.iterdir())
    batch = {(3, str(project)), (1, str(project))}
    if how == "rename":
        project.rename(project.with_name(project.name + ".bak"))
        batch.add((1, str(project.with_name(project.name + ".bak"))))
    else:
        shutil.rmtree(project)
    made = new_log(tmp_path, "s2", turn_events(0, 1), cwd="/w/app")
    assert made.parent.parent == project
    changes = watcher._pair_moves(watcher._apply_native(batch))
    changes += watcher._pair_moves([])
    assert made in [c.summary.path for c in changes if isinstance(c, SessionAdded)]
    assert set(watcher.known) == {s.path for s in SessionRoot(tmp_path).summaries()}


@pytest.mark.parametrize("split", [False, True])
def test_a_seed_marker_read_as_appended_rows_sets_the_seed(
    tmp_path: Path, live_factory: Callable[[Path], Live], split: bool
) -> None:
    """A V2+ child written in place: its inherited marker (`session/end-seed`) comes in
    rows the watcher reads as appended. It sets the header's seed length (the seed's
    turns are inherited), and answers the missing-marker problem a read of the rows
    before it reported."""
    v5 = SessionHeader(id="p1", created_at=1, cwd="/w/app", version=5)
    parent = session_dir(tmp_path, "p1", "/w/app") / "session.v5.jsonl"
    seed = turn_events(0, 1, text="the parent's turn")
    write_new_file(parent, [v5.to_json_line() + lines(seed)])
    child = session_dir(tmp_path, "c1", "/w/app") / "session.v5.jsonl"
    child.parent.mkdir(parents=True)
    live = live_factory(tmp_path)
    child_header = SessionHeader(
        id="c1", created_at=2, cwd="/w/app", version=5, parent_session="p1", is_seeded=True
    )
    append_bytes(child, child_header.to_json_line())
    live.wait_for(lambda _: live.latest(child), "the child")
    marker = event(len(seed), "session/end-seed", {"inherited": True})
    own = turn_events(len(seed) + 1, 2, text="the child's own turn")
    if split:
        append_bytes(child, lines(seed))
        live.wait_events(child, len(seed))
        append_bytes(child, lines([marker, *own]))
    else:
        append_bytes(child, lines([*seed, marker, *own]))
    mine = _settled(live, tmp_path, child)
    fresh = _fresh(tmp_path, child)
    assert fresh.seed_length == len(seed) and fresh.problems == ()
    assert (mine.seed_length, mine.problems) == (fresh.seed_length, fresh.problems)


@pytest.mark.parametrize("gap", [False, True])
def test_a_stray_step_after_the_last_turn_end_is_no_turn_of_the_summary(
    tmp_path: Path, gap: bool
) -> None:
    """A summary counts the turns its turn records say (`count_turns`), whichever way
    it was read: a log with a seq gap is read whole and its timeline shows a stray
    `step/start` after the last `turn/end` as a turn in progress, but the byte scan,
    the live view and the full read all count one closed turn."""
    events = turn_events(0, 1)
    stray = event(len(events) + (5 if gap else 0), "step/start", {"turn": 2, "step": 1})
    path = new_log(tmp_path, "s1")
    append_bytes(path, lines([*events, stray]))
    summary = summarize(path, "s1")
    assert (summary.turns, summary.open_turn) == (1, False)
    assert any(p.kind is ProblemKind.SEQ_GAP for p in summary.problems) is gap
    header = SessionHeader(id="s1", created_at=1_700_000_000_000, cwd="/w/app")
    live = advance_summary(blank_summary(path, "s1", header), [*events, stray], [], 0)
    assert (live.turns, live.open_turn) == (1, False)
    indexed = index_log(path, block_size=1 << 10).summary  # a big log's summary
    assert (indexed.turns, indexed.open_turn) == (1, False)
    loaded = SessionRoot(tmp_path).load(summary)
    assert [t.is_open for t in loaded.timeline.turns] == [False, True]  # shown, not counted
