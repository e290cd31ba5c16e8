"""The index's bulk path (`_Indexer._consume_bulk`: a batch validated in one msgspec
call, its seqs checked at once, only structural lines decoded one by one) takes the
clean batches and refuses every other one, which the line-by-line path then reads.
That both give exactly what a full read gives is `test_index.py`'s (its bad cases run
through both); this checks that the fast path is really the one taken, so a change
that quietly sends every batch down the slow path is caught too."""

from __future__ import annotations

from itertools import accumulate
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from turnline.core import index
from turnline.core.index import index_log
from turnline.core.timeline import TimelineBuilder
from turnline.demo.dshmigrate import twin_root

from ..conftest import FIXTURES, fixture_logs
from .disk_logs import as_events, turn_records
from .test_index import BAD_CASES, _line, _packed, assert_same, full_read

HEADER_V0 = BAD_CASES["seq gap"][0].split(b"\n", 1)[0] + b"\n"


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """What `_consume_bulk` answered for each batch, in order."""
    answers: list[bool] = []
    bulk = index._Indexer._consume_bulk

    def spy(self: index._Indexer, *args: object) -> bool:
        answer = bulk(self, *args)  # type: ignore[arg-type]
        answers.append(answer)
        return answer

    monkeypatch.setattr(index._Indexer, "_consume_bulk", spy)
    return answers


def _clean_log(tmp_path: Path, turns: int) -> Path:
    records: list[dict[str, object]] = []
    for k in range(turns):
        records += turn_records(len(records), k + 1)
    records.insert(6, _packed(6, 5))  # packed rows are counted in bulk too
    for r in records[7:]:
        r["seq"] = int(str(r["seq"])) + 5
    log = tmp_path / "session.jsonl"
    log.write_bytes(HEADER_V0 + b"".join(_line(r) for r in records))
    return log


def test_clean_batches_are_taken_in_bulk(tmp_path: Path, taken: list[bool]) -> None:
    log = _clean_log(tmp_path, 200)
    ix = index_log(log, block_size=4096)
    assert len(taken) > 10 and all(taken)
    assert_same(ix, full_read(log))
    assert ix.problems == ()


@pytest.mark.parametrize(
    ("case", "bulk"),
    [
        ("two records on one line and one over two lines", False),
        ("one record over two lines that end and start with braces", False),
        ("blank lines and another key order", False),
        ("seq gap", False),
        ("a packed row whose members and deltas disagree, inside a clean batch", False),
        # Read in bulk: the odd numbers and the data that is not an object are
        # decoded whole (as the full reader does) for those lines alone.
        ("timeline fields past 64 bits and past a double", True),
        ("packed row in another key order", True),
        # A `seq0` key counts only on a packed row's tag (as the full reader reads it).
        ("seq0 beside a seq on ordinary events", True),
        ("a packed row's tag with a null seq0 beside a seq", False),
    ],
)
def test_odd_batches_are_refused_or_read_exactly(
    tmp_path: Path, taken: list[bool], case: str, bulk: bool
) -> None:
    log = tmp_path / "session.jsonl"
    log.write_bytes(BAD_CASES[case][0])
    ix = index_log(log, block_size=1 << 20)  # the whole log is one batch
    assert taken == [bulk]
    assert_same(ix, full_read(log))


def test_most_real_fixture_batches_are_taken_in_bulk(taken: list[bool]) -> None:
    for path in fixture_logs():
        assert_same(index_log(path, block_size=1 << 14), full_read(path))
    # The fixtures' warts (blank lines, gaps, torn tails) send some batches down the
    # line-by-line path; the clean majority must not.
    assert taken.count(True) > 0.8 * len(taken)


def test_a_builder_copy_is_independent_and_equal() -> None:
    records: list[dict[str, object]] = []
    for k in range(4):
        records += turn_records(len(records), k + 1)
    events = as_events(records)
    builder = TimelineBuilder().feed(events[:10])  # turn 3 open
    twin = builder.copy()
    assert twin.snapshot() == builder.snapshot()
    twin.feed(events[10:])
    assert builder.snapshot() == TimelineBuilder().feed(events[:10]).snapshot()
    assert twin.snapshot() == TimelineBuilder().feed(events).snapshot()


@pytest.mark.parametrize("unknown", [False, True])
def test_a_type_the_union_does_not_name_is_still_read_in_bulk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, taken: list[bool], unknown: bool
) -> None:
    """A batch is decoded in one call, a Struct per record kind; one holding a type
    that union does not name is decoded in three calls instead, still in bulk."""
    heads_decoded: list[int] = []
    decode = index._decode_head_lines

    def spy(block: bytes) -> list[object]:
        heads_decoded.append(len(block))
        return decode(block)  # type: ignore[no-any-return]

    monkeypatch.setattr(index, "_decode_head_lines", spy)
    records = [*turn_records(0, 1), *turn_records(4, 2)]
    records.insert(2, {"type": "x/newer-kind" if unknown else "step/end", "seq": 2, "data": {}})
    for r in records[3:]:
        r["seq"] = int(str(r["seq"])) + 1
    log = tmp_path / "session.jsonl"
    log.write_bytes(HEADER_V0 + b"".join(_line(r) for r in records))
    ix = index_log(log, block_size=1 << 20)
    assert taken == [True]
    assert bool(heads_decoded) is unknown
    assert_same(ix, full_read(log))
    assert ix.event_count == 9


@pytest.fixture(scope="module")
def v5_twins(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    dest = tmp_path_factory.mktemp("twins") / "v5"
    twin_root(FIXTURES, dest, version=5)
    return sorted(dest.rglob("*.jsonl"))


def _positions(path: Path, block_size: int) -> tuple[object, ...]:
    """Where the index can start a range read: its anchors, and the offset past each
    `turn/end` line, with where it stopped."""
    _indexed, ix, _st = index.indexed_with_state(path, None, None, None, block_size)
    assert ix is not None
    return (ix.anchor_seqs, ix.anchor_pos, ix.anchor_skip, ix.end_offsets, ix.line, ix.offset)


def _line_by_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index._Indexer, "_consume_bulk", lambda *_args: False)


@pytest.mark.parametrize("spacing", [300, 4096, index.ANCHOR_SPACING])
def test_bulk_anchors_are_the_line_by_line_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, v5_twins: list[Path], spacing: int
) -> None:
    """The bulk path finds anchors by bisection over a block's line starts
    (`_bulk_anchors`, `_BlockLines`); it must
    anchor the very lines `_consume_lines` anchors (a turn line, or the first line
    `ANCHOR_SPACING` past the last anchor: at short spacings, inside stretches too),
    on every real log, its V5 twin, and a generated log of long turns."""
    monkeypatch.setattr(index, "ANCHOR_SPACING", spacing)
    logs = [*fixture_logs(), *v5_twins, _clean_log(tmp_path, 300)]
    bulk = [_positions(log, 1 << 14) for log in logs]
    with monkeypatch.context() as slow:
        _line_by_line(slow)
        assert [_positions(log, 1 << 14) for log in logs] == bulk
    assert sum(len(p[0]) for p in bulk) > 2 * len(logs)  # (anchors were set)


_LINE_BYTES = st.sampled_from([b"{", b"}", b"\n", b" ", b"a", b'"', b"{}", b'{"a":1}'])


@given(st.lists(st.lists(_LINE_BYTES, max_size=6).map(b"".join), min_size=1, max_size=8))
def test_block_lines_are_the_split_lines(pieces: list[bytes]) -> None:
    """A raw block's lines found without copying them (`_BlockLines`) are the lines a
    split gives, and have the shape a split's lines have (blank lines included)."""
    block = b"".join(piece + b"\n" for piece in pieces)
    split = block.split(b"\n")
    split.pop()
    view = index._BlockLines(block)
    assert len(view) == len(split)
    assert [view[i] for i in range(len(view))] == split
    assert view.starts == [0, *accumulate(len(line) + 1 for line in split)]
    assert view.shaped() == (
        bool(split) and all(line[:1] == b"{" and line[-1:] == b"}" for line in split)
    )


@given(
    st.lists(
        st.lists(st.lists(_LINE_BYTES, max_size=6).map(b"".join), max_size=5),
        min_size=1,
        max_size=6,
    )
)
def test_frame_lines_are_the_split_lines(frames: list[list[bytes]]) -> None:
    """The same for a zstd batch's frames, not joined (`_FrameLines`): empty frames
    included, every line sliced out of its own frame."""
    parts = [b"".join(piece + b"\n" for piece in frame) for frame in frames]
    split = [line for part in parts for line in part.split(b"\n")[:-1]]
    view = index._FrameLines()
    for part in parts:
        view.add(part)
    assert view.parts == parts
    assert len(view) == len(split)
    assert [view[i] for i in range(len(view))] == split
    assert view.starts == [0, *accumulate(len(line) + 1 for line in split)]
    assert view.shaped() == (
        bool(split) and all(line[:1] == b"{" and line[-1:] == b"}" for line in split)
    )
