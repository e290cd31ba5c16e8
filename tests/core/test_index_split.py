"""A big raw log indexed in two halves at once (`index._index_raw_split`, the second
half in the process pool) gives exactly what the serial index and the full reader
give, and falls back to the serial index whenever the halves cannot be joined exactly.

The size threshold is lowered to zero here, so every raw log with a `turn/end` past its
middle is split (the real threshold is 32 MiB).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from turnline.core import index as index_module
from turnline.core import parallel
from turnline.core.codec import encode_records
from turnline.core.index import index_log
from turnline.core.model import ProblemKind, SessionEvent, SessionHeader
from turnline.core.parallel import ForkRunner, pool_for_work, task_runner, usable_cores

from ..conftest import fixture_logs
from .disk_logs import event, turn_records, zstd_of
from .gen_logs import logs
from .test_index import BAD_CASES, HEADER, assert_same, full_read

pytestmark = pytest.mark.skipif(
    usable_cores() < 2, reason="the split needs two cores (no pool on one)"
)


def _record_splits(
    monkeypatch: pytest.MonkeyPatch, threshold: str, split: str, runner: str
) -> list[bool]:
    """Lower the `threshold` to zero so every log is split, and record each outcome of
    the `split` function (True: `ix` holds the result). The second half runs in the
    process pool (`runner` "pool": the app's way) or in a child forked for it ("fork":
    a headless command's way, with no pool running)."""
    if runner == "pool":
        assert pool_for_work() is not None  # the halves really run in two processes
        assert task_runner() is parallel.process_pool()
    else:
        parallel.stop_pool()
        assert isinstance(task_runner(), ForkRunner)
    outcomes: list[bool] = []
    real = getattr(index_module, split)

    def recorded(*args: object) -> bool:
        ok = bool(real(*args))
        outcomes.append(ok)
        return ok

    monkeypatch.setattr(index_module, threshold, 0)
    monkeypatch.setattr(index_module, split, recorded)
    return outcomes


@pytest.fixture(params=["pool", "fork"])
def joined(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[list[bool]]:
    """Split every raw log; the list records each split's outcome (True: joined)."""
    yield _record_splits(monkeypatch, "SPLIT_THRESHOLD", "_index_raw_split", request.param)


@pytest.fixture(params=["pool", "fork"])
def zjoined(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[list[bool]]:
    """Split every zstd log; the list records each split's outcome (True: `ix` holds
    the result, joined or read whole by this process)."""
    yield _record_splits(monkeypatch, "ZSTD_SPLIT_THRESHOLD", "_index_zstd_split", request.param)


def _line(record: object) -> bytes:
    return orjson.dumps(record) + b"\n"


def _log(tmp_path: Path, records: list[dict[str, object]], tail: bytes = b"") -> Path:
    path = tmp_path / "session.jsonl"
    path.write_bytes(_line(HEADER) + b"".join(_line(r) for r in records) + tail)
    return path


def _turns(n: int) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for k in range(n):
        out += turn_records(len(out), k + 1)
    return out


def test_real_fixture_logs_split_exactly(joined: list[bool]) -> None:
    for path in fixture_logs():
        assert_same(index_log(path, block_size=4096), full_read(path))
    # Most fixtures are a few turns long: their first turn/end past the middle is
    # their last line, so there is no second half. The longer ones are split.
    assert sum(joined) >= 5


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # the patch holds
@given(events=logs(max_turns=6))
def test_generated_logs_split_exactly(
    joined: list[bool], tmp_path_factory: pytest.TempPathFactory, events: list[SessionEvent]
) -> None:
    log = tmp_path_factory.mktemp("gen") / "session.jsonl"
    header = SessionHeader(id="g-1", created_at=5, cwd="/w")
    log.write_bytes(header.to_json_line() + b"".join(encode_records(events)))
    ix = index_log(log, block_size=300)
    assert_same(ix, full_read(log))
    assert ix.problems == ()


@pytest.mark.parametrize("case", list(BAD_CASES))
def test_bad_logs_split_or_fall_back_exactly(joined: list[bool], tmp_path: Path, case: str) -> None:
    log = tmp_path / "session.jsonl"
    log.write_bytes(BAD_CASES[case][0])
    assert_same(index_log(log, block_size=64), full_read(log))


def test_a_healthy_log_is_joined(joined: list[bool], tmp_path: Path) -> None:
    log = _log(tmp_path, _turns(40))
    ix = index_log(log, block_size=512)
    assert joined == [True]
    assert_same(ix, full_read(log))
    assert len(ix.timeline.turns) == 40


def test_a_torn_tail_after_the_split_is_joined_with_its_line(
    joined: list[bool], tmp_path: Path
) -> None:
    log = _log(tmp_path, _turns(40), tail=b'{"type":"turn/start","se')
    ix = index_log(log, block_size=512)
    assert joined == [True]
    assert_same(ix, full_read(log))
    (tail,) = ix.problems
    assert tail.kind is ProblemKind.TORN_TAIL and tail.line == 40 * 4 + 2


@pytest.mark.parametrize("half", ["first", "second"])
def test_a_seq_gap_in_either_half_falls_back(joined: list[bool], tmp_path: Path, half: str) -> None:
    records = _turns(40)
    k = 20 if half == "first" else 140
    records = [*records[:k], *[{**r, "seq": int(str(r["seq"])) + 3} for r in records[k:]]]
    log = _log(tmp_path, records)
    ix = index_log(log, block_size=512)
    assert joined == [False]
    assert_same(ix, full_read(log))
    assert [p.kind for p in ix.problems] == [ProblemKind.SEQ_GAP]


def test_a_corrupt_line_in_the_second_half_falls_back(joined: list[bool], tmp_path: Path) -> None:
    records = _turns(40)
    body = b"".join(_line(r) for r in records[:130])
    body += b'{"type":"step/start","seq":130,"ti\n'
    body += b"".join(_line(r) for r in records[131:])
    log = tmp_path / "session.jsonl"
    log.write_bytes(_line(HEADER) + body)
    ix = index_log(log, block_size=512)
    assert joined == [False]
    assert_same(ix, full_read(log))
    assert ProblemKind.CORRUPT in {p.kind for p in ix.problems}


def test_turns_without_numbers_after_the_split_fall_back(
    joined: list[bool], tmp_path: Path
) -> None:
    """A turn with no number is numbered by counting the turns before it, which the
    second half cannot know."""
    records = _turns(40)
    for r in records[100:]:
        if r["type"] in ("turn/start", "turn/end"):
            data = r["data"]
            assert isinstance(data, dict)
            r["data"] = {k: v for k, v in data.items() if k != "turn"}
    log = _log(tmp_path, records)
    ix = index_log(log, block_size=512)
    assert joined == [False]
    assert_same(ix, full_read(log))
    assert [t.number for t in ix.timeline.turns] == list(range(1, 41))


def test_an_odd_turn_end_in_the_second_half_falls_back(joined: list[bool], tmp_path: Path) -> None:
    records = _turns(40)
    records.append(event(len(records), "turn/end", turn=41, error="boom"))
    log = _log(tmp_path, records)
    ix = index_log(log, block_size=512)
    assert joined == [False]
    assert_same(ix, full_read(log))


class _DeadPool:
    """A pool whose worker died with the task (what `BrokenProcessPool` looks like to
    the caller): the future fails."""

    _broken = True

    def submit(self, *_args: object) -> Future[object]:
        future: Future[object] = Future()
        future.set_exception(RuntimeError("the worker died"))
        return future

    def shutdown(self, **_kw: object) -> None:
        pass


def test_a_lost_worker_falls_back(
    joined: list[bool], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "task_runner", _DeadPool)
    log = _log(tmp_path, _turns(40))
    assert_same(index_log(log, block_size=512), full_read(log))
    assert joined == [False]


def test_no_pool_indexes_serially(
    joined: list[bool], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process with threads and no pool started before them (the app without one)."""
    monkeypatch.setattr(index_module, "task_runner", lambda: None)
    log = _log(tmp_path, _turns(40))
    assert_same(index_log(log, block_size=512), full_read(log))
    assert joined == [False]


# -- zstd ------------------------------------------------------------------------------


def test_real_fixture_logs_as_zstd_split_exactly(
    zjoined: list[bool], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    joins: list[bool] = []
    real_join = index_module._join

    def join(*args: object) -> bool:
        joins.append(real_join(*args))  # type: ignore[arg-type]
        return joins[-1]

    monkeypatch.setattr(index_module, "_join", join)
    for k, path in enumerate(fixture_logs()):
        folder = tmp_path / str(k)
        folder.mkdir()
        log = zstd_of(folder, path.read_bytes())
        assert_same(index_log(log, block_size=4096), full_read(log))
    assert len(zjoined) == len(fixture_logs())
    # Most fixtures are a few turns long (no frame past the middle ends a turn before
    # the last one): this process reads them whole. The longer ones are split and joined.
    assert sum(joins) >= 5


@pytest.mark.parametrize("per_frame", [1, 4])
def test_a_healthy_zstd_log_is_joined(zjoined: list[bool], tmp_path: Path, per_frame: int) -> None:
    raw = _line(HEADER) + b"".join(_line(r) for r in _turns(40))
    log = zstd_of(tmp_path, raw, per_frame)
    ix = index_log(log, block_size=512)
    assert zjoined == [True]
    assert_same(ix, full_read(log))
    assert len(ix.timeline.turns) == 40


@pytest.mark.parametrize("case", [c for c, (body, _) in BAD_CASES.items() if b"\n" in body])
def test_bad_logs_as_zstd_split_or_fall_back_exactly(
    zjoined: list[bool], tmp_path: Path, case: str
) -> None:
    log = zstd_of(tmp_path, BAD_CASES[case][0], 2)
    assert_same(index_log(log, block_size=64), full_read(log))


def test_a_torn_last_zstd_frame_after_the_split_is_joined(
    zjoined: list[bool], tmp_path: Path
) -> None:
    raw = _line(HEADER) + b"".join(_line(r) for r in _turns(40))
    log = zstd_of(tmp_path, raw, 4)
    blob = log.read_bytes()
    log.write_bytes(blob[:-7])  # the last frame cut short
    ix = index_log(log, block_size=512)
    assert zjoined == [True]
    assert_same(ix, full_read(log))
    assert [p.kind for p in ix.problems] == [ProblemKind.TORN_TAIL]


def test_a_seq_gap_in_the_first_zstd_half_falls_back(zjoined: list[bool], tmp_path: Path) -> None:
    records = _turns(40)
    records = [*records[:20], *[{**r, "seq": int(str(r["seq"])) + 3} for r in records[20:]]]
    raw = _line(HEADER) + b"".join(_line(r) for r in records)
    log = zstd_of(tmp_path, raw, 4)
    ix = index_log(log, block_size=512)
    assert zjoined == [False]
    assert_same(ix, full_read(log))
    assert [p.kind for p in ix.problems] == [ProblemKind.SEQ_GAP]


def test_a_lost_zstd_worker_falls_back(
    zjoined: list[bool], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "task_runner", _DeadPool)
    raw = _line(HEADER) + b"".join(_line(r) for r in _turns(40))
    log = zstd_of(tmp_path, raw, 4)
    assert_same(index_log(log, block_size=512), full_read(log))
    assert zjoined == [False]


def _v5_log(tmp_path: Path, *, seed_turns: int, own_turns: int) -> tuple[Path, int]:
    """A seeded V5 child: `seed_turns` inherited turns, the inherited marker, then its own."""
    records = _turns(seed_turns)
    cut = len(records)
    records.append(event(cut, "session/end-seed", inherited=True))
    for k in range(own_turns):
        records += turn_records(len(records), seed_turns + k + 1)
    header = {
        "type": "session",
        "version": 5,
        "id": "v5-child",
        "createdAt": 5,
        "cwd": "/w",
        "parentSession": "p",
        "isSeeded": True,
        "delegationDepth": 0,
    }
    path = tmp_path / "session.v5.jsonl"
    path.write_bytes(_line(header) + b"".join(_line(r) for r in records))
    return path, cut


def test_a_seeded_v5_log_is_joined_with_its_cut(joined: list[bool], tmp_path: Path) -> None:
    """The later half of a V2+ child starts past its inherited marker: it takes the cut
    the first half read, so the halves still join."""
    log, cut = _v5_log(tmp_path, seed_turns=3, own_turns=40)
    ix = index_log(log, block_size=512)
    assert joined == [True]
    assert_same(ix, full_read(log))
    assert ix.header is not None and ix.header.seed_length == cut
    assert ix.timeline.seed_length == cut


def test_v5_twins_of_the_fixtures_split_exactly(joined: list[bool], tmp_path: Path) -> None:
    from turnline.demo.dshmigrate import migrate, read_v0, write_log

    for n, path in enumerate(fixture_logs()):
        twin = tmp_path / f"{n}" / "session.v5.jsonl"
        twin.parent.mkdir()
        write_log(migrate(read_v0(path)), twin)
        assert_same(index_log(twin, block_size=2048), full_read(twin))
    assert sum(joined) >= 3
