"""The sparse index gives exactly what a full read gives (`SessionRoot.load`).

Every comparison is against the real full reader on the same file: real dsh fixtures,
hypothesis-generated logs (raw and multi-frame zstd, small blocks so batches split
everywhere), and the bad cases (torn tail, corrupt line, seq gap, blank and odd lines,
bad packed rows, broken zstd frames).
"""

from __future__ import annotations

import threading
from pathlib import Path

import orjson
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st
from turnline.core.codec import encode_records
from turnline.core.index import IndexCancelled, IndexedSession, index_log
from turnline.core.model import ProblemKind, SessionHeader
from turnline.core.root import LoadedSession, SessionRoot

from ..conftest import fixture_logs
from .disk_logs import event, turn_records, write_lines, zstd_frames
from .gen_logs import logs

HEADER = {
    "type": "session",
    "version": 0,
    "delegationDepth": 0,
    "id": "s-1",
    "createdAt": 1,
    "cwd": "/w",
}


def full_read(path: Path) -> LoadedSession:
    root = SessionRoot(path)
    return root.load(root.summaries()[0], check_seed=False)


def assert_same(ix: IndexedSession, full: LoadedSession) -> None:
    """Everything the UI and CLI read from a loaded session agrees."""
    assert ix.summary == full.summary
    assert ix.problems == full.summary.problems
    assert ix.timeline == full.timeline
    assert ix.event_count == len(full.events)
    assert ix.contiguous == full.contiguous
    assert ix.turn_ends == full.turn_ends
    assert ix.end_offsets == full.end_offsets
    assert ix.events_between(0, None) == list(full.events)
    for turn in full.timeline.turns:
        assert ix.events_between(turn.first_seq, turn.end_seq) == full.events_between(
            turn.first_seq, turn.end_seq
        )
    if full.events:
        mid = full.events[len(full.events) // 2].seq
        assert ix.events_between(mid, mid + 2) == full.events_between(mid, mid + 2)
        assert ix.events_between(mid, None) == full.events_between(mid, None)


@pytest.mark.parametrize("path", fixture_logs(), ids=lambda p: "/".join(p.parts[-3:]))
def test_real_fixture_logs_index_exactly(path: Path) -> None:
    assert_same(index_log(path), full_read(path))


@pytest.mark.parametrize("path", fixture_logs()[::10], ids=lambda p: "/".join(p.parts[-3:]))
def test_real_fixture_logs_as_zstd_index_exactly(path: Path, tmp_path: Path) -> None:
    raw = path.read_bytes()
    nl = raw.index(b"\n") + 1
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    lines = raw[nl:].splitlines(keepends=True)
    frames = [cctx.compress(raw[:nl])]
    frames += [cctx.compress(b"".join(lines[i : i + 5])) for i in range(0, len(lines), 5)]
    log = tmp_path / "session.jsonl.zstd"
    log.write_bytes(b"".join(frames))
    assert_same(index_log(log, block_size=256), full_read(log))


@given(events=logs(max_turns=5), block=st.sampled_from([64, 300, 4096]), zstd=st.booleans())
def test_generated_logs_index_exactly(
    tmp_path_factory: pytest.TempPathFactory, events: list, block: int, zstd: bool
) -> None:
    folder = tmp_path_factory.mktemp("gen")
    header = SessionHeader(id="g-1", created_at=5, cwd="/w")
    if zstd:
        log = folder / "session.jsonl.zstd"
        log.write_bytes(zstd_frames(header, events, batch=4))
    else:
        log = folder / "session.jsonl"
        log.write_bytes(header.to_json_line() + b"".join(encode_records(events)))
    ix = index_log(log, block_size=block)
    assert_same(ix, full_read(log))
    assert ix.problems == ()


def _turns(n: int) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for k in range(n):
        out += turn_records(len(out), k + 1)
    return out


def _packed(seq0: int, n: int, dt: int | None = None) -> dict[str, object]:
    data = {"turn": 1, "step": 1, "index": 0, "dt": [1] * (n - 1 if dt is None else dt)}
    data["texts"] = ["a,b", '"q"', *(["x"] * (n - 2))]
    return {"type": "text-chunks", "seq0": seq0, "time0": 7, "data": data}


def _line(record: object) -> bytes:
    return orjson.dumps(record) + b"\n"


BAD_CASES: dict[str, tuple[bytes, set[ProblemKind]]] = {
    "torn tail": (
        b"".join(_line(r) for r in [HEADER, *_turns(3)]) + b'{"type":"turn/start","se',
        {ProblemKind.TORN_TAIL},
    ),
    "corrupt line before a turn/end": (
        b"".join(_line(r) for r in [HEADER, *_turns(2)])
        + b'{"type":"step/start","seq":8,"ti\n'
        + b"".join(_line(r) for r in turn_records(9, 3)),
        {ProblemKind.CORRUPT},
    ),
    "garbage line before a turn/end": (
        b"".join(_line(r) for r in [HEADER, *_turns(2)])
        + b"not json at all}\n"
        + b"".join(_line(r) for r in turn_records(8, 3)),
        {ProblemKind.CORRUPT},
    ),
    "corrupt line with no turn after it": (
        b"".join(_line(r) for r in [HEADER, *_turns(2)])
        + b'{"type":"step/start","seq":8,"ti\n'
        + _line(event(9, "step/start", turn=3, step=1)),
        {ProblemKind.TORN_TAIL},
    ),
    "seq gap": (
        b"".join(_line(r) for r in [HEADER, *_turns(2), *turn_records(12, 3)]),
        {ProblemKind.SEQ_GAP},
    ),
    "duplicate seq": (
        b"".join(_line(r) for r in [HEADER, *_turns(2), *turn_records(7, 3)]),
        {ProblemKind.SEQ_GAP},
    ),
    "bytes that are not UTF-8 before a turn/end": (
        b"".join(_line(r) for r in [HEADER, *_turns(2)])
        + _line(event(8, "tool/result", content="XX")).replace(b"XX", b"\xff\xfe")
        + b"".join(_line(r) for r in turn_records(9, 3)),
        {ProblemKind.CORRUPT},
    ),
    "a surrogate in UTF-8 with no turn after it": (
        b"".join(_line(r) for r in [HEADER, *_turns(2)])
        + _line(event(8, "tool/result", content="XX")).replace(b"XX", b"\xed\xa0\x80"),
        {ProblemKind.TORN_TAIL},
    ),
    "first seq not 0": (
        b"".join(_line(r) for r in [HEADER, *turn_records(5, 1)]),
        {ProblemKind.SEQ_GAP},
    ),
    "gap inside packed rows": (
        b"".join(_line(r) for r in [HEADER, *turn_records(0, 1), _packed(4, 5), _packed(10, 4)])
        + b"".join(_line(r) for r in turn_records(14, 2)),
        {ProblemKind.SEQ_GAP},
    ),
    "packed row with a wrong dt": (
        b"".join(_line(r) for r in [HEADER, *turn_records(0, 1), _packed(4, 5, dt=2)])
        + b"".join(_line(r) for r in turn_records(9, 2)),
        {ProblemKind.BAD_PACKED_ROW},
    ),
    "blank lines and another key order": (
        b"".join(_line(r) for r in [HEADER, *turn_records(0, 1)])
        + b"\n   \n"
        + b'{"seq":4,"type":"turn/start","time":3,"data":{"turn":2}}\n'
        + b"".join(_line(r) for r in turn_records(5, 3)),
        set(),
    ),
    "turn/end without a reason": (
        b"".join(_line(r) for r in [HEADER, *turn_records(0, 1)])
        + _line(event(4, "turn/start", turn=2))
        + _line(event(5, "turn/end", turn=2, error="boom")),
        {ProblemKind.ODD_EVENT},
    ),
    "non-integer seq": (
        b"".join(_line(r) for r in [HEADER, *turn_records(0, 1)])
        + b'{"type":"turn/start","seq":4.5,"time":1,"data":{}}\n'
        + b"".join(_line(r) for r in turn_records(5, 2)),
        {ProblemKind.CORRUPT},
    ),
    "packed row with a non-numeric dt": (
        b"".join(_line(r) for r in [HEADER, *turn_records(0, 1)])
        + _line({**_packed(4, 3), "data": {**_packed(4, 3)["data"], "dt": [1, "x"]}})
        + b"".join(_line(r) for r in turn_records(7, 2)),
        {ProblemKind.BAD_PACKED_ROW},
    ),
    "packed row in another key order": (
        b"".join(_line(r) for r in [HEADER, *turn_records(0, 1)])
        + b'{"type":"text-chunks","seq0":4,"data":{"dt":[1,2],"texts":["a","b","c"],'
        + b'"turn":1,"step":1,"index":0},"time0":9}\n'
        + b"".join(_line(r) for r in turn_records(7, 2)),
        set(),
    ),
    "seq0 on an ordinary event": (
        b"".join(_line(r) for r in [HEADER, *turn_records(0, 1)])
        + b'{"type":"step/start","seq0":4,"time":1,"data":{}}\n'
        + b"".join(_line(r) for r in turn_records(5, 2)),
        {ProblemKind.CORRUPT},
    ),
    "seq0 beside a seq on ordinary events": (
        b"".join(_line(r) for r in [HEADER, *turn_records(0, 1)])
        + b'{"type":"step/start","seq":4,"seq0":99,"time":1,"data":{"turn":1,"step":2}}\n'
        + b'{"type":"request/context","seq0":7,"seq":5,"time":2,"data":{}}\n'
        + b"".join(_line(r) for r in turn_records(6, 2)),
        set(),
    ),
    "a packed row's tag with a null seq0 beside a seq": (
        b"".join(_line(r) for r in [HEADER, *turn_records(0, 1)])
        + b'{"type":"text-chunks","seq0":null,"seq":4,"data":{"dt":[],"texts":["a"]}}\n'
        + b"".join(_line(r) for r in turn_records(5, 2)),
        {ProblemKind.BAD_PACKED_ROW},
    ),
    "a turn/end with no reason whose data holds a lone surrogate": (
        b"".join(_line(r) for r in [HEADER, *turn_records(0, 1)])
        + b'{"type":"turn/start","seq":4,"time":1,"data":{"turn":2}}\n'
        + b'{"type":"turn/end","seq":5,"time":2,"data":{"turn":2,"note":"\\ud83d"}}\n'
        + b"".join(_line(r) for r in turn_records(6, 3)),
        {ProblemKind.ODD_EVENT},
    ),
    # orjson reads an integer past 64 bits as a float, which is no seq (msgspec would
    # read an integer): the line is one the full reader refuses.
    "a seq past 64 bits": (
        b"".join(_line(r) for r in [HEADER, *turn_records(0, 1)])
        + b'{"type":"step/end","seq":1180591620717411303424,"time":1,"data":{}}\n'
        + b"".join(_line(r) for r in turn_records(5, 2)),
        {ProblemKind.CORRUPT},
    ),
    "a packed row's seq0 past 64 bits": (
        b"".join(_line(r) for r in [HEADER, *turn_records(0, 1)])
        + b'{"type":"text-chunks","seq0":18446744073709551616,"data":{"dt":[],"texts":["a"]}}\n'
        + b"".join(_line(r) for r in turn_records(5, 2)),
        {ProblemKind.BAD_PACKED_ROW},
    ),
    # msgspec raises RecursionError (not a decode error) past the interpreter's depth;
    # orjson, the full reader's, refuses the line.
    "a record nested 3,000 deep": (
        b"".join(_line(r) for r in [HEADER, *turn_records(0, 1)])
        + b'{"type":"step/end","seq":4,"time":1,"data":'
        + b"[" * 3000
        + b"]" * 3000
        + b"}\n"
        + b"".join(_line(r) for r in turn_records(5, 2)),
        {ProblemKind.CORRUPT},
    ),
    # `json` (the fallback for a line orjson refuses) refuses an integer past 4,300
    # digits, as orjson does one past a double.
    "a title whose data holds an integer of 5,000 digits": (
        b"".join(_line(r) for r in [HEADER, *turn_records(0, 1)])
        + b'{"type":"session/title","seq":4,"time":1,"data":{"title":"t","n":'
        + b"7" * 5000
        + b"}}\n"
        + b"".join(_line(r) for r in turn_records(5, 2)),
        {ProblemKind.CORRUPT},
    ),
    # What the bulk path (`_consume_bulk`: one msgspec call for a batch) must refuse
    # or read exactly as the full reader does.
    "two records on one line and one over two lines": (
        b"".join(_line(r) for r in [HEADER, *turn_records(0, 1)])
        + _line(event(4, "request/context", turn=2))[:-1]
        + _line(event(5, "request/context", turn=2))
        + b'{"type":"request/context","seq":6,"time":1,"data":\n{"turn":2}}\n'
        + b"".join(_line(r) for r in turn_records(7, 3)),
        {ProblemKind.CORRUPT},
    ),
    "one record over two lines that end and start with braces": (
        b"".join(_line(r) for r in [HEADER, *turn_records(0, 1)])
        + b'{"type":"tool/call","seq":4,"time":1,"data":{"args":[{"a":1}\n'
        + b'{"b":2}],"name":"x"}}\n'
        + b"".join(_line(r) for r in turn_records(5, 2)),
        {ProblemKind.CORRUPT},
    ),
    "timeline fields past 64 bits and past a double": (
        b"".join(_line(r) for r in [HEADER, *turn_records(0, 1)])
        + b'{"type":"step/start","seq":4,"time":18446744073709551616,'
        + b'"data":{"turn":18446744073709551616}}\n'
        + b'{"type":"tool/call","seq":5,"time":1,"data":"not an object"}\n'
        + b'{"type":"assistant/message","seq":6,"time":1e400,"data":{"message":'
        + b'{"role":"assistant","content":[{"type":"text","text":"hi"}]},"stream":[1e999]}}\n'
        + b'{"type":"tool/call","seq":7,"time":2,"data":{"name":"x","turn":-9223372036854775809}}\n'
        + _line(event(8, "turn/end", reason={"kind": "completed"}))  # (no number)
        + b"".join(_line(r) for r in turn_records(9, 3)),
        set(),
    ),
    "a packed row whose members and deltas disagree, inside a clean batch": (
        b"".join(_line(r) for r in [HEADER, *turn_records(0, 1), _packed(4, 4, dt=1)])
        + b"".join(_line(r) for r in turn_records(8, 2)),
        {ProblemKind.BAD_PACKED_ROW},
    ),
    "header only, no newline": (
        b'{"type":"session","version":0,"delegationDepth":0,"id":"x"',
        {ProblemKind.TORN_TAIL},
    ),
    "not a header": (b"".join(_line(r) for r in [*_turns(1)]), {ProblemKind.BAD_HEADER}),
    "empty": (b"", {ProblemKind.EMPTY}),
}


@pytest.mark.parametrize("case", list(BAD_CASES))
@pytest.mark.parametrize("block", [40, 1 << 20])
def test_bad_logs_report_the_same_problems(tmp_path: Path, case: str, block: int) -> None:
    body, kinds = BAD_CASES[case]
    log = tmp_path / "session.jsonl"
    log.write_bytes(body)
    ix = index_log(log, block_size=block)
    assert_same(ix, full_read(log))
    assert {p.kind for p in ix.problems} - {ProblemKind.MISSING_VERSION} == kinds


@pytest.mark.parametrize("case", ["corrupt line before a turn/end", "seq gap", "torn tail"])
def test_bad_lines_inside_zstd_frames_report_the_same_problems(tmp_path: Path, case: str) -> None:
    body = BAD_CASES[case][0]
    lines = body.splitlines(keepends=True)
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    frames = [cctx.compress(lines[0])]
    frames += [cctx.compress(b"".join(lines[i : i + 3])) for i in range(1, len(lines), 3)]
    log = tmp_path / "session.jsonl.zstd"
    blob = b"".join(frames)
    if case == "torn tail":
        blob = b"".join(frames[:-1]) + frames[-1][:-6]  # an incomplete last frame
    log.write_bytes(blob)
    assert_same(index_log(log, block_size=100), full_read(log))


def test_a_frame_that_does_not_decode_is_corruption(tmp_path: Path) -> None:
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    frames = [cctx.compress(_line(HEADER))]
    frames += [cctx.compress(b"".join(_line(r) for r in turn_records(0, 1)))]
    frames += [b"\x28\xb5\x2f\xfd" + b"\x00garbage-bytes-here" * 3]
    log = tmp_path / "session.jsonl.zstd"
    log.write_bytes(b"".join(frames))
    ix = index_log(log)
    assert_same(ix, full_read(log))
    assert ix.event_count == 4


def test_progress_is_reported_and_cancel_stops(tmp_path: Path) -> None:
    log = tmp_path / "session.jsonl"
    log.write_bytes(b"".join(_line(r) for r in [HEADER, *_turns(300)]))
    seen: list[float] = []
    index_log(log, progress=seen.append, block_size=1000)
    assert seen[-1] == 1.0
    assert seen == sorted(seen)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(IndexCancelled):
        index_log(log, cancel=cancel, block_size=1000)


def test_a_line_longer_than_a_block_is_read_whole(tmp_path: Path) -> None:
    big = event(1, "user/message", content=[{"type": "text", "text": "y" * 5000}])
    records = [HEADER, event(0, "turn/start", turn=1), big, event(2, "turn/end", turn=1)]
    log = write_lines(tmp_path / "session.jsonl", *records)
    assert_same(index_log(log, block_size=64), full_read(log))


def test_root_loads_and_forks_a_big_log_through_the_index(tmp_path: Path) -> None:
    import hashlib

    from turnline.core.index import INDEX_THRESHOLD
    from turnline.core.logfile import read_log

    from benchmarks.generate import write_big_log

    folder = tmp_path / "--w--" / "big"
    folder.mkdir(parents=True)
    big = write_big_log(folder / "session.jsonl", events=80_000)
    assert big.size >= INDEX_THRESHOLD
    before = hashlib.sha256(big.path.read_bytes()).hexdigest()
    root = SessionRoot(tmp_path)
    loaded = root.load(root.resolve(str(big.path)))
    assert loaded.index is not None
    contents = read_log(big.path)
    assert len(loaded.events) == len(contents.events) == 80_000
    assert loaded.events[-1] == contents.events[-1]
    assert list(loaded.events[100:140]) == list(contents.events[100:140])
    turn = loaded.timeline.turns[len(loaded.timeline.turns) // 2]
    assert loaded.events_between(turn.first_seq, turn.end_seq) == [
        e for e in contents.events if turn.first_seq <= e.seq <= (turn.end_seq or 0)
    ]
    result = root.fork(loaded.summary, loaded.turn_ends[-1], child_id="child-1")
    assert result.child.events == 80_001  # the seed and the end-seed marker
    assert result.child.seed_length == 80_000
    assert hashlib.sha256(big.path.read_bytes()).hexdigest() == before
    child = root.load(result.child)
    assert child.problems == ()  # the seed check passes (bytes equal the parent's)
    assert child.timeline.turns == loaded.timeline.turns


def test_a_fork_copied_from_a_big_log_is_summarized_like_its_file(tmp_path: Path) -> None:
    """The child summary a copying fork takes from its indexed parent equals
    `summarize` of the written child: counts, turns and the title as of the boundary
    (titles set before and after it, a turn left open in the middle)."""
    from turnline.core.index import INDEX_THRESHOLD
    from turnline.core.summary import summarize

    records: list[dict[str, object]] = [HEADER]
    pad = "r" * 60_000
    for n in range(1, 161):
        seq = len(records) - 1
        if n == 40:
            records.append(event(seq, "turn/start", turn=n))  # never ends: stays open
            seq += 1
        records += turn_records(seq, n)
        seq += 4
        records.append(event(seq, "tool/result", turn=n, step=1, content=pad))
        if n in (20, 120):
            records.append(event(seq + 1, "session/title", title=f"title {n}"))
    log = write_lines(tmp_path / "--w--" / "p" / "session.jsonl", *records)
    assert log.stat().st_size >= INDEX_THRESHOLD
    root = SessionRoot(tmp_path)
    loaded = root.load(root.resolve("s-1"))
    assert loaded.index is not None
    ends = loaded.turn_ends
    for k, boundary in enumerate([ends[0], ends[30], ends[39], ends[60], ends[-1]]):
        result = root.fork(loaded.summary, boundary, child_id=f"c-{k}")
        assert result.child == summarize(result.child.path, f"c-{k}")
        assert result.child.events == boundary + 2  # the seed and the end-seed marker
    titles = {root.resolve(f"c-{k}").title for k in range(5)}
    assert titles == {"question 1", "title 20", "title 120"}


def test_a_forks_title_from_a_big_log_is_exact_however_a_record_spells_its_type(
    tmp_path: Path,
) -> None:
    """A title record whose type is spelled with an escape (`session\\/title`, as JSON
    allows) is a title to the full reader, so the child summary a copying fork takes
    from its indexed parent has it too (a byte search for dsh's spelling missed it)."""
    from turnline.core.index import INDEX_THRESHOLD
    from turnline.core.summary import summarize

    records: list[dict[str, object]] = [HEADER]
    pad = "r" * 60_000
    for n in range(1, 161):
        seq = len(records) - 1
        records += turn_records(seq, n)
        records.append(event(seq + 4, "tool/result", turn=n, step=1, content=pad))
        if n in (20, 120):
            records.append(event(seq + 5, "session/title", title=f"title {n}"))
    log = write_lines(tmp_path / "--w--" / "p" / "session.jsonl", *records)
    plain = b'{"type":"session/title","seq":'
    head, _, tail = log.read_bytes().rpartition(plain)
    log.write_bytes(head + b'{"type":"session\\/title","seq":' + tail)  # title 120's
    assert log.stat().st_size >= INDEX_THRESHOLD
    root = SessionRoot(tmp_path)
    loaded = root.load(root.resolve("s-1"))
    assert loaded.index is not None and loaded.timeline.title == "title 120"
    ends = loaded.turn_ends
    titles = []
    for k, boundary in enumerate([ends[10], ends[60], ends[130]]):
        result = root.fork(loaded.summary, boundary, child_id=f"c-{k}")
        assert result.child == summarize(result.child.path, f"c-{k}")
        titles.append(result.child.title)
    assert titles == ["question 1", "title 20", "title 120"]


def test_bytes_that_are_not_utf8_clear_the_utf8_flag(tmp_path: Path) -> None:
    """A tool result the index does not parse may hold bytes a full read rejects; the
    index says so (`utf8`), so a fork never trusts it for its child's summary, and
    finds the line as the full read does (decoded whole)."""
    good = b"".join(_line(r) for r in [HEADER, *_turns(2)])
    bad = _line(event(8, "tool/result", content="XX")).replace(b"XX", b"\xff\xfe")
    clean = tmp_path / "a" / "session.jsonl"
    dirty = tmp_path / "b" / "session.jsonl"
    clean.parent.mkdir()
    dirty.parent.mkdir()
    clean.write_bytes(good)
    dirty.write_bytes(good + bad + b"".join(_line(r) for r in turn_records(9, 3)))
    assert index_log(clean).utf8
    assert not index_log(dirty).utf8
    assert {p.kind for p in full_read(dirty).summary.problems} == {ProblemKind.CORRUPT}
    assert_same(index_log(dirty), full_read(dirty))  # found while indexing, too


@pytest.mark.parametrize("bad", [b'{"bad json\n', b'{"type":"text-chunks","seq0":1}\n'])
@pytest.mark.parametrize("block", [64, 256, 4096])
def test_a_bad_line_in_a_zstd_frame_bigger_than_a_block(
    tmp_path: Path, bad: bytes, block: int
) -> None:
    """A frame bigger than a block is read a block at a time (`_index_big_frame`). A bad
    line with a `turn/end` later in the same frame, past the block it is in, makes the
    log corrupt, not torn, as the full reader (which holds the frame) says."""
    header = _line(HEADER)
    frame = (
        b'{"type":"step/end","seq":0,"time":1,"data":{}}\n'
        + bad
        + b'{"type":"step/end","seq":1,"time":2,"data":{}}\n'
        + b"".join(
            b'{"type":"request/context","seq":%d,"time":3,"data":{"x":"%s"}}\n' % (k, b"x" * 40)
            for k in range(2, 40)
        )
        + b'{"type":"turn/end","seq":40,"time":4,"data":{"turn":1,"reason":{"kind":"completed"}}}\n'
    )
    cctx = zstandard.ZstdCompressor()
    log = tmp_path / "session.jsonl.zstd"
    log.write_bytes(cctx.compress(header) + cctx.compress(frame))
    ix = index_log(log, block_size=block)
    assert_same(ix, full_read(log))
    assert ProblemKind.TORN_TAIL not in {p.kind for p in ix.problems}
