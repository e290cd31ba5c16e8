"""`parallel.split_map` and the root scan that uses it: same results as serial, whatever
the children do, and the serial walk whenever separate walks could disagree."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import orjson
import pytest
from turnline.core import parallel
from turnline.core import root as root_module
from turnline.core.parallel import split_map
from turnline.core.root import SessionRoot
from turnline.core.summary import SessionSummary

PARENT = os.getpid()


def _square(x: int) -> int:
    return x * x


def _keep(value: int) -> object:
    return value


def _back(_item: int, value: object) -> int:
    assert isinstance(value, int)
    return value


@pytest.mark.parametrize("n", [0, 1, 7, 100, 1001])
@pytest.mark.parametrize("workers", [1, 2, 3])
def test_split_map_equals_the_list_comprehension(n: int, workers: int) -> None:
    items = list(range(n))
    got = split_map(_square, items, pack=_keep, unpack=_back, workers=workers, min_share=1)
    assert got == [x * x for x in items]


def _dies_in_children(x: int) -> int:
    if os.getpid() != PARENT:
        os._exit(3)  # a crashed child
    return x + 1


def _lies_in_children(x: int) -> object:
    return "not an int" if os.getpid() != PARENT else x


@pytest.fixture(autouse=True)
def _no_stale_pool() -> Iterator[None]:
    """Each test starts its own pool if it needs one (a pool forked before a test's
    monkeypatch would not see it)."""
    parallel.stop_pool()
    yield
    parallel.stop_pool()


def test_a_crashed_child_costs_time_not_results() -> None:
    items = list(range(50))
    got = split_map(_dies_in_children, items, pack=_keep, unpack=_back, workers=3, min_share=1)
    assert got == [x + 1 for x in items]


def test_a_reply_that_does_not_unpack_is_computed_again() -> None:
    items = list(range(50))
    got = split_map(_square, items, pack=_lies_in_children, unpack=_back, workers=2, min_share=1)
    assert got == [x * x for x in items]


def test_summary_state_round_trips(fixtures_root: Path) -> None:
    for summary in SessionRoot(fixtures_root).scan():
        assert SessionSummary.from_state(summary.path, summary.to_state()) == summary


# -- the root scan -------------------------------------------------------------------


def _write_root(root: Path, sessions: int) -> None:
    """A dsh-layout root of small sessions over three projects, with forks."""
    for k in range(sessions):
        folder = root / f"--home-dev-p{k % 3}--" / f"s{k:05d}"
        folder.mkdir(parents=True)
        header = {
            "type": "session",
            "version": 0,
            "delegationDepth": 0,
            "id": f"s{k:05d}",
            "createdAt": k,
        }
        if k % 7 == 3:
            header |= {"parentSession": f"s{k - 1:05d}", "seedLength": 0}
        lines = [
            header,
            {"type": "user/message", "seq": 0, "time": 1, "data": {"content": f"task {k}"}},
            {"type": "turn/start", "seq": 1, "time": 2, "data": {"turn": 1}},
        ]
        if k % 5:
            end = {"turn": 1, "reason": {"kind": "completed"}}
            lines.append({"type": "turn/end", "seq": 2, "time": 3, "data": end})
        body = b"".join(orjson.dumps(line) + b"\n" for line in lines)
        if k % 97 == 5:
            body += b'{"type":"turn/st'  # a torn tail now and then
        (folder / "session.jsonl").write_bytes(body)


def _write_big_root(root: Path) -> None:
    """Enough sessions to be split between processes, and a stray log among them."""
    _write_root(root, 1100)
    (root / "--home-dev-p1--" / "s00004" / "stray.jsonl").write_bytes(b"not a log\n")


def _serial(root: Path) -> tuple[list[SessionSummary], list[tuple[Path, str]]]:
    serial = SessionRoot(root)
    serial._scan_parallel = lambda render=False: None  # type: ignore[method-assign]
    return serial.scan(), serial.scan_problems


@pytest.mark.skipif(parallel.usable_cores() < 2, reason="needs two cores to fork a walk")
def test_a_big_root_scans_in_parallel_to_the_serial_result(tmp_path: Path) -> None:
    _write_big_root(tmp_path)
    root = SessionRoot(tmp_path)
    found = root._scan_parallel()
    assert found is not None  # the parallel walk ran
    summaries = root.scan()
    expected, problems = _serial(tmp_path)
    assert summaries == expected
    assert root.scan_problems == problems
    assert len(summaries) == 1100
    assert sum(1 for s in summaries if s.open_turn) == 220
    assert sum(1 for s in summaries if s.problems) == 12  # the torn tails


def test_a_folder_that_cannot_be_listed_is_reported_in_walk_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_root(tmp_path, 1100)
    bad = str(tmp_path / "--home-dev-p2--" / "s00005")
    real = os.scandir

    def scandir(path: str) -> object:
        if str(path) == bad:
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(root_module.os, "scandir", scandir)
    root = SessionRoot(tmp_path)
    summaries = root.scan()
    expected, problems = _serial(tmp_path)
    assert summaries == expected
    assert root.scan_problems == problems == [(Path(bad), "Permission denied")]
    assert len(summaries) == 1099


def test_a_directory_symlink_makes_the_scan_serial(tmp_path: Path) -> None:
    _write_root(tmp_path, 1100)
    (tmp_path / "--home-dev-p0--" / "again").symlink_to(tmp_path / "--home-dev-p1--" / "s00001")
    root = SessionRoot(tmp_path)
    assert root._scan_parallel() is None
    summaries = root.scan()
    assert summaries == _serial(tmp_path)[0]
    # Each folder is walked once: s00001 is listed under the link (walked first), not
    # again under p1, which two separate walks could not have known.
    assert len(summaries) == 1100
    assert sum(1 for s in summaries if s.id == "s00001") == 1


# -- the scan in the process pool (what `turnline ROOT` starts before Textual loads) --


def test_a_background_scan_gives_the_scan(tmp_path: Path, pool: ProcessPoolExecutor) -> None:
    _write_root(tmp_path, 40)
    root = SessionRoot(tmp_path)
    pending = root.scan_in_background()
    assert len(pending.tasks) == 1  # really in the pool (one batch: a small root)
    summaries = pending.result()
    assert summaries == _serial(tmp_path)[0]
    assert root.summaries() == summaries  # installed as the root's own


def test_a_background_scan_whose_worker_dies_scans_here(
    tmp_path: Path, pool: ProcessPoolExecutor
) -> None:
    _write_root(tmp_path, 40)
    root = SessionRoot(tmp_path)
    for pid in list(pool._processes):  # type: ignore[attr-defined]
        os.kill(pid, 9)
    pending = root.scan_in_background()
    assert pending.result() == _serial(tmp_path)[0]
    assert parallel.process_pool() is None  # the broken pool is dropped


def test_a_background_scan_without_a_pool_scans_here(tmp_path: Path) -> None:
    parallel.stop_pool()
    _write_root(tmp_path, 40)
    pending = SessionRoot(tmp_path).scan_in_background()
    assert not pending.tasks and pending.whole is None
    assert pending.result() == _serial(tmp_path)[0]


@pytest.mark.skipif(parallel.usable_cores() < 2, reason="needs two cores to split the walk")
def test_a_big_background_scan_streams_in_batches(
    tmp_path: Path, pool: ProcessPoolExecutor
) -> None:
    _write_big_root(tmp_path)
    root = SessionRoot(tmp_path)
    pending = root.scan_in_background()
    assert len(pending.tasks) == 3  # 1,100 session folders, 400 a batch
    summaries = pending.result()
    expected, problems = _serial(tmp_path)
    assert summaries == expected
    assert root.scan_problems == problems
    assert root.summaries() == summaries


@pytest.mark.skipif(parallel.usable_cores() < 2, reason="needs two cores to split the walk")
def test_a_background_scan_links_the_lineage_from_its_batches(
    tmp_path: Path, pool: ProcessPoolExecutor
) -> None:
    """The batches' plain values give the lineage's links as they land; the root's
    lineage is then the one `build_lineage` makes of the summaries, problems included."""
    from turnline.core.lineage import build_lineage

    from benchmarks.generate import write_wide_root

    wide = write_wide_root(tmp_path / "wide", sessions=1100)
    root = SessionRoot(wide.path)
    pending = root.scan_in_background()
    assert len(pending.tasks) >= 2
    summaries = pending.result()
    assert root._lineage is not None  # installed with the summaries, not built later
    lineage = root.lineage()
    built = build_lineage(summaries)
    assert lineage is not built and lineage == built
    assert lineage.parent_of == built.parent_of and lineage.parent_of
    assert lineage.problems == built.problems


def test_a_background_scan_over_a_symlinked_folder_is_the_serial_scan(
    tmp_path: Path, pool: ProcessPoolExecutor
) -> None:
    _write_root(tmp_path, 1100)
    (tmp_path / "--home-dev-p0--" / "again").symlink_to(tmp_path / "--home-dev-p1--" / "s00001")
    pending = SessionRoot(tmp_path).scan_in_background()
    assert pending.whole is not None and not pending.tasks  # the serial scan in one task
    assert pending.result() == _serial(tmp_path)[0]


def test_a_background_scan_of_one_log(tmp_path: Path, pool: ProcessPoolExecutor) -> None:
    _write_root(tmp_path, 3)
    log = next(tmp_path.rglob("session.jsonl"))
    root = SessionRoot(log)
    pending = root.scan_in_background()
    assert pending.whole is not None
    assert pending.result() == SessionRoot(log).scan()


# -- no fork once threads run ---------------------------------------------------------


def test_nothing_forks_once_a_thread_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process with threads (the app) scans, reloads and splits work serially or in
    the pool started before: `os.fork` is never called, and the pool is not started."""
    parallel.stop_pool()
    _write_big_root(tmp_path)
    expected, problems = _serial(tmp_path)
    forks: list[int] = []

    def no_fork() -> int:
        forks.append(threading.active_count())
        raise AssertionError("os.fork called while threads run")

    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        monkeypatch.setattr(os, "fork", no_fork)
        assert parallel.start_pool() is None
        root = SessionRoot(tmp_path)
        assert root.scan_in_background().result() == expected
        assert root.scan() == expected  # a reload (`r`)
        assert root.scan_problems == problems
        items = list(range(2000))
        assert split_map(_square, items, pack=_keep, unpack=_back, min_share=1) == [
            x * x for x in items
        ]
    finally:
        stop.set()
        thread.join()
    assert forks == []


def test_pool_workers_ignore_ctrl_c_and_never_print(pool: ProcessPoolExecutor) -> None:
    assert pool.submit(_worker_state).result() == (True, os.devnull)


def _worker_state() -> tuple[bool, str]:
    import signal

    return (
        signal.getsignal(signal.SIGINT) is signal.SIG_IGN,
        os.readlink("/proc/self/fd/1") if os.path.exists("/proc/self/fd/1") else os.devnull,
    )


def test_no_gc_nests_across_holders_and_restores_the_collector() -> None:
    import gc

    assert gc.isenabled()
    with root_module.no_gc():
        assert not gc.isenabled()
        with root_module.no_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer hold is still on
    assert gc.isenabled()
    gc.disable()
    try:
        with root_module.no_gc():
            pass
        assert not gc.isenabled()  # it was off before: left off
    finally:
        gc.enable()


# -- batches: system calls together, scans together -----------------------------------


@pytest.mark.parametrize("budget", [1, 5000, 1 << 20])
def test_summary_states_are_each_logs_summary_state(
    fixtures_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: int
) -> None:
    """Read in batches of any size (one log, a few, all), each log's state is the one
    `summary_state` gives it alone: the real logs, one that cannot be read, one too
    big to read whole, and a zstd one."""
    from turnline.core import summary

    monkeypatch.setattr(summary, "READ_BATCH", budget)
    logs: list[tuple[str, str | None, int | None]] = [
        (str(p), None, None) for p in sorted(fixtures_root.rglob("*.jsonl"))
    ]
    gone = tmp_path / "gone.jsonl"
    big = logs[0][0]
    zst = tmp_path / "z.jsonl.zstd"
    import zstandard

    zst.write_bytes(zstandard.ZstdCompressor().compress(Path(logs[1][0]).read_bytes()))
    logs[3:3] = [(str(gone), "gone-id", None), (big, None, 10), (str(zst), None, 1 << 20)]
    got = summary.summary_states(logs)
    assert got == [summary.summary_state(*log) for log in logs]
    assert got[4] is None  # too big: the caller indexes it
    assert got[3] is not None and got[3][8][0][0] == "unreadable"
    assert got[5] is not None and got[5][1] == "zstd"
    assert sum(1 for state in got if state is not None) == len(logs) - 1


def test_two_walks_of_one_folder_in_a_batch_make_the_scan_serial(tmp_path: Path) -> None:
    """A batch's units are walked separately: one folder met by two of them (a bind
    mount, say) ends the folders walked with (-1, -1), as a directory symlink does."""
    _write_root(tmp_path, 3)
    folder = tmp_path / "--home-dev-p0--" / "s00000"
    unit = ("folder", str(folder), folder.name, folder.parent.name)
    logs, errors, walked, _ = root_module._scan_batch(frozenset(), [unit, unit])
    assert (-1, -1) in walked and errors == []
    assert [p for p, _, _ in logs] == [str(folder / "session.jsonl")] * 2
    _, _, once, _ = root_module._scan_batch(frozenset(), [unit])
    assert (-1, -1) not in once and len(once) == 1


def _pid_of(_x: int) -> int:
    return os.getpid()


def _child_state(_x: int) -> tuple[int, bool, str, str]:
    import signal

    return (
        os.getpid(),
        signal.getsignal(signal.SIGINT) is signal.SIG_IGN,
        os.readlink("/proc/self/fd/1"),
        os.readlink("/proc/self/fd/2"),
    )


def _keep_any(value: object) -> object:
    return value


def _back_any(_item: int, value: object) -> object:
    return value


def test_a_headless_split_forks_its_shares_and_starts_no_pool() -> None:
    """With no pool running and one thread, `split_map` forks a child per extra share
    (`task_runner`'s `ForkRunner`): the second half is another process's, no pool is
    started, and the child ignores Ctrl-C and writes nowhere."""
    items = list(range(40))
    got = split_map(_pid_of, items, pack=_keep, unpack=_back, workers=2, min_share=1)
    assert got[:20] == [os.getpid()] * 20
    (child,) = set(got[20:])
    assert child != os.getpid()
    assert parallel.process_pool() is None
    states = split_map(
        _child_state, items, pack=_keep_any, unpack=_back_any, workers=2, min_share=1
    )
    assert {s[0] for s in states[20:]} != {os.getpid()}
    assert all(ignored and out == err == os.devnull for _, ignored, out, err in states[20:])
    for pid in {child, *(s[0] for s in states[20:])}:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reaped: not this process's child any more


def _unmarshallable_in_children(x: int) -> object:
    return object() if os.getpid() != PARENT else x


def test_a_reply_marshal_refuses_is_pickled_and_still_checked() -> None:
    """(`object()` comes back pickled, and its share is computed again: not an int.)"""
    items = list(range(50))
    got = split_map(
        _square, items, pack=_unmarshallable_in_children, unpack=_back, workers=2, min_share=1
    )
    assert got == [x * x for x in items]


def _stalls_in_children(x: int) -> int:
    marks = Path(os.environ["TURNLINE_TEST_CHILD"])
    if os.getpid() != PARENT:
        marks.write_text(f"{os.getpid()}\n")
        threading.Event().wait(600)  # killed long before (else the test times out)
    elif x == 5:
        for _ in range(1000):  # until the child is at work (at most 10 s)
            if marks.exists() and marks.read_text().endswith("\n"):
                break
            threading.Event().wait(0.01)
        raise KeyboardInterrupt  # Ctrl-C while this process computes its share
    return x


def test_ctrl_c_in_the_parent_kills_and_reaps_its_children(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marks = tmp_path / "children"
    monkeypatch.setenv("TURNLINE_TEST_CHILD", str(marks))
    items = list(range(40))
    with pytest.raises(KeyboardInterrupt):
        split_map(_stalls_in_children, items, pack=_keep, unpack=_back, workers=2, min_share=1)
    child = int(marks.read_text())  # it was at work (stalled) when Ctrl-C came
    with pytest.raises(ChildProcessError):
        os.waitpid(child, os.WNOHANG)  # killed and reaped, not left stalling
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)


def _exits(code: int) -> int:
    os._exit(code)


def _slow_square(x: int) -> int:
    threading.Event().wait(600)  # killed long before (else the test times out)
    return x * x


def test_a_forked_task_answers_fails_or_is_cancelled() -> None:
    """`task_runner` in a headless process: a child per task, its answer pickled back;
    a child that dies raises (the caller then does the work); `cancel` kills it."""
    runner = parallel.task_runner()
    assert isinstance(runner, parallel.ForkRunner)
    task = runner.submit(_square, 12)
    assert task.result() == 144  # (marshalled back)
    assert runner.submit(Path, "/a/b").result() == Path("/a/b")  # (marshal refuses: pickled)
    with pytest.raises(ChildProcessError):
        runner.submit(_exits, 3).result()
    slow = runner.submit(_slow_square, 2)
    pid = slow._child.pid
    assert slow.cancel()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # killed and reaped
    assert parallel.process_pool() is None  # no pool was started for any of it


def test_ctrl_c_while_waiting_for_a_forked_task_kills_it() -> None:
    """Interrupted while it waits for the child (the index's caller on Ctrl-C), the
    task kills and reaps its child rather than leave it running."""
    import signal

    runner = parallel.task_runner()
    assert isinstance(runner, parallel.ForkRunner)
    slow = runner.submit(_slow_square, 3)
    pid = slow._child.pid

    def interrupt(*_args: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(KeyboardInterrupt):
            slow.result()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # killed and reaped
