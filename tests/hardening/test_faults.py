"""Faults and races around forking: injected I/O failures, SIGKILL, a live writer, same-id.

Every test that forks checks the parent's bytes (sha256) before and after: a fork
never touches its parent.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import orjson
import pytest
from turnline.core.layout import session_dir
from turnline.core.logfile import LogReader, read_log
from turnline.core.root import SessionRoot
from turnline.core.store import ForkErrorCode, SessionForkError
from turnline.core.writer import TEMP_PREFIX, cleanup_temporaries

from .corpus import (
    CWD,
    build_healthy,
    conversation,
    frame,
    header,
    lines,
    log_path,
    long_conversation,
    put,
    raw_log,
    turn_events,
    zstd_log,
)

REPO = Path(__file__).resolve().parents[2]
STEPS = ("write", "fsync", "link", "dirsync")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def temporaries(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob(f"{TEMP_PREFIX}*"))


def assert_complete_copy(child: Path, parent: Path) -> None:
    """A raw child forked at the parent's last event: its header names the parent and
    the rest of its bytes are the parent's records, byte for byte (a cheap full check
    for big logs: the parent itself is valid)."""
    data, source = child.read_bytes(), parent.read_bytes()
    head, _, body = data.partition(b"\n")
    parent_head, _, parent_body = source.partition(b"\n")
    meta, parent_meta = orjson.loads(head), orjson.loads(parent_head)
    assert meta["parentSession"] == parent_meta["id"]
    assert meta["seedLength"] == parent_body.count(b"\n")
    # The parent's records, then dsh's end-seed marker at seq = seedLength.
    assert body.startswith(parent_body)
    marker = orjson.loads(body[len(parent_body) :])
    assert (marker["type"], marker["seq"], marker["data"]) == (
        "session/end-seed",
        meta["seedLength"],
        {},
    )


def assert_valid_child(child: Path, parent: Path, seed_length: int) -> None:
    """The child is complete: a header naming the parent and exactly its seed prefix."""
    got, want = read_log(child), read_log(parent)
    assert got.problems == (), got.problems
    assert got.header is not None and want.header is not None
    assert got.header.parent_session == want.header.id
    # The seed, then dsh's end-seed marker at seq = seedLength.
    assert got.header.seed_length == seed_length == len(got.events) - 1
    assert [e.to_json_dict() for e in got.events[:-1]] == [
        e.to_json_dict() for e in want.events[:seed_length]
    ]
    marker = got.events[-1]
    assert (marker.type, marker.seq, marker.data) == ("session/end-seed", seed_length, {})


# -- injected faults --------------------------------------------------------------------


class InjectedFault(OSError):
    pass


@pytest.mark.parametrize("zstd", [False, True], ids=["raw", "zstd"])
@pytest.mark.parametrize("step", STEPS)
def test_fork_failing_at_each_step_leaves_no_child_and_no_temporary(
    tmp_path: Path, step: str, zstd: bool
) -> None:
    events = conversation(3)
    parent = put(
        log_path(tmp_path, "p", zstd=zstd),
        zstd_log(header("p"), [events[:12], events[12:]]) if zstd else raw_log(header("p"), events),
    )
    before = sha256(parent)
    root = SessionRoot(tmp_path)
    seen: list[str] = []

    def fail_at(current: str) -> None:
        seen.append(current)
        if current == step:
            raise InjectedFault(5, f"injected failure at {step}")

    with pytest.raises(SessionForkError) as refused:
        root.fork("p", 11, "kid", fault=fail_at)
    assert refused.value.code is ForkErrorCode.WRITE_FAILED
    assert seen == list(STEPS[: STEPS.index(step) + 1])
    final_dir = session_dir(tmp_path, "kid", CWD)
    # "Nothing was written" is true: no final name, no temporary, no empty folder.
    assert not final_dir.exists()
    assert temporaries(tmp_path) == []
    assert [s.id for s in SessionRoot(tmp_path).scan()] == ["p"]
    assert sha256(parent) == before
    # The failure left nothing in the way: the same fork now succeeds, complete.
    done = root.fork("p", 11, "kid")
    assert_valid_child(done.child.path, parent, 12)
    assert sha256(parent) == before


def test_fork_fault_in_an_existing_folder_keeps_the_folder_and_its_files(tmp_path: Path) -> None:
    parent = put(log_path(tmp_path, "p"), raw_log(header("p"), conversation(1)))
    before = sha256(parent)
    notes = put(session_dir(tmp_path, "kid", CWD) / "notes.txt", b"belongs to the session")

    def fail(step: str) -> None:
        if step == "link":
            raise InjectedFault(28, "no space left")

    with pytest.raises(SessionForkError):
        SessionRoot(tmp_path).fork("p", None, "kid", fault=fail)
    assert notes.read_bytes() == b"belongs to the session"
    assert sorted(p.name for p in notes.parent.iterdir()) == ["notes.txt"]
    assert sha256(parent) == before


# -- SIGKILL while forking ------------------------------------------------------------------

_FORK_AND_WAIT = """
import sys, time
from pathlib import Path
from turnline.core.root import SessionRoot
root = SessionRoot(Path(sys.argv[1]))
summary = root.resolve("big-parent")
stop_at = sys.argv[3]

def hook(step):
    print(step, flush=True)
    if step == stop_at:
        time.sleep(600)  # parked at this step until the test kills us

print("ready", flush=True)
sys.stdin.readline()
root.fork(summary, None, sys.argv[2], fault=hook)
print("done", flush=True)
"""


@pytest.fixture(scope="module")
def big_parent_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root holding one ~20 MB raw log (160 turns with 120 KB tool results)."""
    root = tmp_path_factory.mktemp("big-fork")
    put(
        log_path(root, "big-parent"), raw_log(header("big-parent"), long_conversation(160, 120_000))
    )
    return root


def _spawn_fork(root: Path, child_id: str, stop_at: str) -> subprocess.Popen[str]:
    """Start a process that loads the root, then forks when told to go."""
    return subprocess.Popen(
        [sys.executable, "-c", _FORK_AND_WAIT, str(root), child_id, stop_at],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )


def _go(proc: subprocess.Popen[str]) -> None:
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline() == "ready\n"
    proc.stdin.write("go\n")
    proc.stdin.flush()


def test_sigkill_while_forking_never_leaves_a_partial_child(big_parent_root: Path) -> None:
    parent = log_path(big_parent_root, "big-parent")
    before = sha256(parent)
    rng = random.Random(20260815)
    outcomes: dict[str, tuple[bool, int]] = {}
    # 4 trials parked at each durable step (deterministic states), 11 at random delays.
    plans: list[tuple[str, float]] = [(step, 0.0) for step in STEPS]
    plans += [("never", rng.uniform(0.0, 0.7)) for _ in range(11)]
    # Started together (interpreter start-up overlaps); each forks only when told to.
    procs = [
        _spawn_fork(big_parent_root, f"killed-{trial:02d}", stop_at)
        for trial, (stop_at, _) in enumerate(plans)
    ]
    try:
        for trial, ((stop_at, delay), proc) in enumerate(zip(plans, procs, strict=True)):
            child_id = f"killed-{trial:02d}"
            _go(proc)
            assert proc.stdout is not None
            if stop_at != "never":
                while (line := proc.stdout.readline()) and line.strip() != stop_at:
                    pass
            else:
                time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
            final = session_dir(big_parent_root, child_id, CWD) / "session.jsonl"
            outcomes[child_id] = (final.exists(), len(temporaries(final.parent)))
            if final.exists():
                assert_complete_copy(final, parent)
                # Verified; removed so later trials do not rescan every earlier 20 MB child.
                final.unlink()
            assert sha256(parent) == before
    finally:
        for proc in procs:  # never leave a parked process behind if an assert fails
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
    # Parked trials: before the link there is no child; parked at the folder fsync the
    # link is done, so the child is there, complete; every parked trial left its temporary.
    assert [outcomes[f"killed-{k:02d}"] for k in range(4)] == [
        (False, 1),
        (False, 1),
        (False, 1),
        (True, 1),
    ]
    # Discovery never lists a temporary (the complete children were removed above).
    listed = {s.path for s in SessionRoot(big_parent_root).scan()}
    assert listed == {parent}
    # Cleanup removes exactly the dead writers' temporaries and nothing else.
    leftovers = temporaries(big_parent_root)
    assert len(leftovers) >= 4
    removed = [p for folder in {t.parent for t in leftovers} for p in cleanup_temporaries(folder)]
    assert sorted(removed) == leftovers
    assert temporaries(big_parent_root) == []
    assert {s.path for s in SessionRoot(big_parent_root).scan()} == listed
    assert sha256(parent) == before


def test_cleanup_keeps_temporaries_of_live_writers(tmp_path: Path) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live_other = put(tmp_path / f"{TEMP_PREFIX}{sleeper.pid}-aaaa", b"partial")
        live_self = put(tmp_path / f"{TEMP_PREFIX}{os.getpid()}-bbbb", b"partial")
        dead = put(tmp_path / f"{TEMP_PREFIX}{2**22 + 12345}-cccc", b"partial")
        other = put(tmp_path / "session.jsonl", raw_log(header("s"), conversation(1)))
        assert cleanup_temporaries(tmp_path) == [dead]
        assert live_other.exists() and live_self.exists() and other.exists()
    finally:
        sleeper.kill()
        sleeper.wait()


# -- a concurrent writer --------------------------------------------------------------------

_APPEND_TURNS = """
import os, random, sys, time
from pathlib import Path
from tests.hardening.corpus import frame, lines, turn_events
path, zstd, turns = Path(sys.argv[1]), sys.argv[2] == "zstd", int(sys.argv[3])
pause = int(sys.argv[4])
rng = random.Random(7)
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
seq = 0
for n in range(1, turns + 1):
    events = turn_events(n, seq)
    seq += len(events)
    batches = [frame(events)] if zstd else [lines([e]) for e in events]
    for k, data in enumerate(batches):
        if n == pause + 1 and k == 0:
            # Park mid-record until the test has forked: a fork during a torn write.
            os.write(fd, data[: len(data) // 2])
            sys.stdin.readline()
            os.write(fd, data[len(data) // 2 :])
        elif rng.random() < 0.4:
            cut = rng.randrange(1, len(data))
            os.write(fd, data[:cut])  # a torn write: the rest comes a moment later
            time.sleep(rng.uniform(0.0005, 0.003))
            os.write(fd, data[cut:])
        else:
            os.write(fd, data)
    time.sleep(rng.uniform(0.0, 0.002))
os.close(fd)
"""


def _expected(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n in range(1, turns + 1):
        out += turn_events(n, len(out))
    return out


@pytest.mark.parametrize("encoding", ["raw", "zstd"])
def test_reading_and_forking_while_another_process_appends(tmp_path: Path, encoding: str) -> None:
    turns = 60
    zstd = encoding == "zstd"
    expected = _expected(turns)
    path = log_path(tmp_path, "live", zstd=zstd)
    head = lines([header("live")])
    put(path, frame([header("live")]) if zstd else head)
    root = SessionRoot(tmp_path)
    summary = root.resolve("live")
    reader = LogReader(path)
    got: list[dict[str, Any]] = []
    forks: list[tuple[Path, int]] = []
    pause = 30  # the writer parks half-way through turn 31 until released
    parked_fork: tuple[Path, int] | None = None
    writer = subprocess.Popen(
        [sys.executable, "-c", _APPEND_TURNS, str(path), encoding, str(turns), str(pause)],
        cwd=REPO,
        stdin=subprocess.PIPE,
    )
    assert writer.stdin is not None
    try:
        while True:
            running = writer.poll() is None
            batch = reader.read()
            assert not batch.reset
            # Only whole records: each event is exactly the next one the writer wrote.
            for event in batch.events:
                assert event.to_json_dict() == expected[len(got)], len(got)
                got.append(event.to_json_dict())
            assert all(p.kind == "torn-tail" for p in reader.all_problems())
            ends = [e["seq"] for e in got if e["type"] == "turn/end"]
            if ends and (not forks or forks[-1][1] != ends[-1] + 1):
                done = root.fork(summary, ends[-1], f"fork-{len(forks)}")
                forks.append((done.child.path, ends[-1] + 1))
            if parked_fork is None and len(got) == pause * 12 and reader.tail_problem:
                # The writer is parked inside a record: fork now, then let it go on.
                done = root.fork(summary, None, "fork-parked")
                parked_fork = (done.child.path, pause * 12)
                forks.append(parked_fork)
                writer.stdin.write(b"go\n")
                writer.stdin.flush()
            if not running:
                break
            time.sleep(0.002)
    finally:
        writer.stdin.close()  # a writer still parked (a failed assert) sees EOF and ends
        writer.wait(timeout=60)
    assert writer.returncode == 0
    assert len(got) == len(expected) and reader.all_problems() == []
    assert parked_fork is not None
    # Every fork taken while the writer ran is a valid prefix of the parent.
    for child, seed_length in forks:
        kid = read_log(child)
        assert kid.problems == () and kid.header is not None
        assert kid.header.seed_length == seed_length
        assert [e.to_json_dict() for e in kid.events[:-1]] == expected[:seed_length]
        assert kid.events[-1].type == "session/end-seed"
    # The parent holds exactly what its writer wrote: turnline added nothing to it.
    want = (
        frame([header("live")])
        + b"".join(frame(turn_events(n, 12 * (n - 1))) for n in range(1, turns + 1))
        if zstd
        else head + lines(expected)
    )
    assert path.read_bytes() == want


# -- same-id race ---------------------------------------------------------------------------


def _race(rootdir: str, child_id: str, barrier: Barrier, results: Any) -> None:
    root = SessionRoot(Path(rootdir))
    source = root.resolve("healthy-raw")
    root.summaries()
    barrier.wait()
    try:
        done = root.fork(source, None, child_id)
        results.put(("ok", str(done.child.path)))
    except SessionForkError as exc:
        results.put((str(exc.code), exc.message))


def test_two_processes_forking_the_same_child_id_exactly_one_wins(tmp_path: Path) -> None:
    healthy = build_healthy(tmp_path)
    parent = healthy["healthy-raw"]
    before = sha256(parent)
    ctx = multiprocessing.get_context("fork")
    for trial in range(10):
        child_id = f"race-{trial}"
        barrier = ctx.Barrier(2)
        results = ctx.Queue()
        procs = [
            ctx.Process(target=_race, args=(str(tmp_path), child_id, barrier, results))
            for _ in range(2)
        ]
        for proc in procs:
            proc.start()
        outcome = sorted(results.get(timeout=60)[0] for _ in procs)
        for proc in procs:
            proc.join(timeout=60)
            assert proc.exitcode == 0
        assert outcome == ["SESSION_ALREADY_EXISTS", "ok"], outcome
        folder = session_dir(tmp_path, child_id, CWD)
        assert [p.name for p in folder.iterdir()] == ["session.jsonl.zstd"]
        assert_valid_child(folder / "session.jsonl.zstd", parent, 25)
        assert sha256(parent) == before
    assert temporaries(tmp_path) == []
