"""Structural tests of turnline.demo.dshmigrate: v0 logs migrated to dsh's later versions.

These tests do not read V2+ logs with turnline; they check the migrated rows themselves.
"""

from __future__ import annotations

import shutil
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import orjson
import pytest
import zstandard
from turnline.demo.dshmigrate import (
    HEADER_KEYS_V2,
    Log,
    compress_seqs,
    expand_seqs,
    log_lines,
    migrate,
    pack_stream,
    read_v0,
    twin_root,
    write_log,
)

from tests.conftest import FIXTURES, fixture_logs

DATA = Path(__file__).resolve().parent.parent / "data" / "dsh-generations"
PACKED = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})


@cache
def _pair(path: Path) -> tuple[Log, Log]:
    v0 = read_v0(path)
    return v0, migrate(v0, to=5)


def _all() -> list[tuple[str, Log, Log]]:
    return [(str(p.relative_to(FIXTURES)), *_pair(p)) for p in fixture_logs()]


def test_every_fixture_migrates() -> None:
    assert len(_all()) == len(fixture_logs()) >= 151


def test_header_is_the_closed_v5_set() -> None:
    for name, v0, (header, _) in _all():
        assert set(header) <= set(HEADER_KEYS_V2), name
        assert list(header) == [k for k in HEADER_KEYS_V2 if k in header], name
        assert header["type"] == "session" and header["version"] == 5, name
        assert isinstance(header["isSeeded"], bool), name
        assert header["isSeeded"] == (v0[0].get("seedLength") is not None), name
        depth = header["delegationDepth"]
        assert isinstance(depth, int) and not isinstance(depth, bool), name
        assert "seedLength" not in header, name
        assert header["id"] == v0[0]["id"], name


def test_rows_are_dense_single_events() -> None:
    for name, _, (_, rows) in _all():
        for index, row in enumerate(rows):
            assert row["seq"] == index, (name, index)
            time = row["time"]
            assert isinstance(time, int | float) and not isinstance(time, bool), (name, index)
            assert row["type"] != "assistant/chunk", (name, index)
            assert row["type"] not in PACKED and "seq0" not in row, (name, index)
            assert isinstance(row["data"], dict | list | str | int | float | None), (name, index)


def test_references_point_backwards() -> None:
    for name, _, (_, rows) in _all():
        for row in rows:
            for seq in expand_seqs(row.get("sourceEventSeqs")):
                assert 0 <= seq < row["seq"], (name, row["seq"])
            if row["type"] == "session/title":
                for seq in row["data"].get("messageSeqs", []):
                    assert 0 <= seq < len(rows), (name, row["seq"])


def test_surface_rules() -> None:
    for name, _, (_, rows) in _all():
        for row in rows:
            if row["type"] == "tool/result":
                message = row["data"]["message"]
                assert message["role"] == "tool", (name, row["seq"])
                assert isinstance(message["content"], list), (name, row["seq"])
                assert message["toolCallId"], (name, row["seq"])
            if row["type"] in (
                "system/message",
                "user/message",
                "assistant/message",
                "tool/result",
            ):
                assert "surfaceOp" in row, (name, row["seq"])
            if row["type"] == "assistant/message":
                assert "sourceEventSeqs" not in row, (name, row["seq"])
                assert isinstance(row["data"]["stream"], list), (name, row["seq"])
            op = row.get("surfaceOp")
            if isinstance(op, dict):
                assert set(op) == {"op", "startSeq", "endSeq"}, (name, row["seq"])


def test_system_head_follows_the_first_step() -> None:
    for name, _, (_, rows) in _all():
        starts = [i for i, r in enumerate(rows) if r["type"] == "step/start"]
        if not starts:
            continue
        head = rows[starts[0] + 1]
        assert head["type"] == "system/message", name
        assert head["data"]["message"]["content"] == [], name
        assert head["data"]["message"]["source"] == {"kind": "system-prompt"}, name


def test_seeded_child_has_one_inherited_marker_at_the_cut() -> None:
    seeded = 0
    for name, (h0, e0), (header, rows) in _all():
        markers = [
            r for r in rows if r["type"] == "session/end-seed" and r["data"] == {"inherited": True}
        ]
        if not header["isSeeded"]:
            assert not markers, name
            continue
        seeded += 1
        assert len(markers) == 1, name
        cut = markers[-1]["seq"]
        assert rows[cut] is markers[-1] and cut == len(rows[:cut]), name
        # the inherited rows are the parent's prefix: the same turns as the v0 prefix
        prefix_turns = [r["data"]["turn"] for r in rows[:cut] if r["type"] == "turn/start"]
        v0_turns = [
            e["data"]["turn"]
            for e in e0
            if e["type"] == "turn/start" and e["seq"] < h0["seedLength"]
        ]
        assert prefix_turns == v0_turns, name
    assert seeded >= 2


def _turn(data: Any) -> Any:
    return data.get("turn") if isinstance(data, dict) else None


def _reason_kind(data: Any) -> Any:
    reason = data.get("reason") if isinstance(data, dict) else None
    return reason.get("kind") if isinstance(reason, dict) else None


def _expected_repairs(events: list[dict[str, Any]]) -> list[int]:
    """Turns dsh closes as interrupted: open turn, no open step, non-empty next-turn splice."""
    turns = []
    open_turn: Any = None
    open_step = False
    previous: dict[str, Any] | None = None
    for event in events:
        if event["type"] == "assistant/chunk":
            continue
        data = event["data"] if isinstance(event["data"], dict) else {}
        if event["type"] == "turn/start":
            prev = previous["data"] if previous is not None else {}
            if (
                isinstance(open_turn, int)
                and not open_step
                and data.get("turn") == open_turn + 1
                and previous is not None
                and previous["type"] == "agent/inbox/spliced"
                and prev.get("target") == "next-turn"
                and prev.get("inserted")
            ):
                turns.append(open_turn)
            open_turn, open_step = data.get("turn"), False
        elif event["type"] == "turn/end":
            open_turn, open_step = None, False
        elif event["type"] == "step/start":
            open_step = True
        elif event["type"] == "step/end":
            open_step = False
        previous = event
    return turns


def test_turn_ends_and_verdicts_survive() -> None:
    repaired = 0
    for name, (_, e0), (_, rows) in _all():
        repairs = _expected_repairs(e0)
        repaired += len(repairs)
        ends0 = [e for e in e0 if e["type"] == "turn/end"]
        ends5 = [r for r in rows if r["type"] == "turn/end"]
        assert len(ends5) == len(ends0) + len(repairs), name
        # v0->v1 verdict normalization: disposed becomes aborted(disposed); kinds stay otherwise
        expected = Counter(
            (
                e["data"].get("turn") if isinstance(e["data"], dict) else None,
                "aborted" if _reason_kind(e["data"]) == "disposed" else _reason_kind(e["data"]),
            )
            for e in ends0
        )
        expected.update((turn, "interrupted") for turn in repairs)
        got = Counter(
            (
                r["data"].get("turn") if isinstance(r["data"], dict) else None,
                _reason_kind(r["data"]),
            )
            for r in rows
            if r["type"] == "turn/end"
        )
        assert got == expected, name
    assert repaired >= 0


Buckets = tuple[int, int, int, int]


def _buckets(usage: Any) -> Buckets:
    u = usage if isinstance(usage, dict) else {}
    return (
        u.get("inputTokens") or 0,
        u.get("outputTokens") or 0,
        u.get("cacheReadTokens") or 0,
        u.get("cacheWriteTokens") or 0,
    )


class _Fold:
    """dsh's V2 usage fold (fact sheet §8): totals plus one replaceable slot."""

    def __init__(self) -> None:
        self.total = [0, 0, 0, 0]
        self.slot: tuple[Any, Any, Buckets] | None = None

    def sample(self, turn: Any, step: Any, usage: Any) -> None:
        value = _buckets(usage)
        if self.slot is not None and self.slot[:2] == (turn, step):
            for i in range(4):
                self.total[i] += value[i] - self.slot[2][i]
        else:
            for i in range(4):
                self.total[i] += value[i]
        self.slot = (turn, step, value)

    def retry(self, turn: Any, step: Any) -> None:
        if self.slot is not None and self.slot[:2] == (turn, step):
            self.slot = None


def _fold_v0(events: list[dict[str, Any]]) -> list[int]:
    fold = _Fold()
    for event in events:
        data = event["data"] if isinstance(event["data"], dict) else {}
        turn, step = data.get("turn"), data.get("step")
        if event["type"] == "assistant/chunk":
            chunk = data.get("chunk") or {}
            if chunk.get("type") == "usage":
                fold.sample(turn, step, chunk.get("usage"))
        elif event["type"] == "assistant/message" and "usage" in data:
            fold.sample(turn, step, data["usage"])
        elif event["type"] == "llm/retry-started":
            fold.retry(turn, step)
    return fold.total


def _last_stream_usage(stream: list[dict[str, Any]]) -> Any:
    for record in reversed(stream):
        if record.get("type") == "chunk" and record["chunk"].get("type") == "usage":
            return record["chunk"].get("usage")
    return None


def _fold_v5(rows: list[dict[str, Any]]) -> list[int]:
    fold = _Fold()
    for row in rows:
        data = row["data"] if isinstance(row["data"], dict) else {}
        turn, step = data.get("turn"), data.get("step")
        if row["type"] in ("assistant/message", "assistant/attempt"):
            usage = data.get("usage") if row["type"] == "assistant/message" else None
            if usage is None:
                usage = _last_stream_usage(data.get("stream", []))
            if usage is not None:
                fold.sample(turn, step, usage)
        elif row["type"] == "llm/retry-started":
            fold.retry(turn, step)
    return fold.total


def test_usage_totals_survive() -> None:
    nonzero = 0
    for name, (_, e0), (_, rows) in _all():
        before, after = _fold_v0(e0), _fold_v5(rows)
        assert after == before, name
        nonzero += any(before)
    assert nonzero > 50


def _member_chunk(record: dict[str, Any], member: str) -> dict[str, Any]:
    if record["type"] == "tool-call-chunks":
        chunk = {"type": "tool-call-delta", "index": record["index"], "id": record["id"]}
        if "name" in record:
            chunk["name"] = record["name"]
        chunk["argumentsDelta"] = member
        return chunk
    kind = "text-delta" if record["type"] == "text-chunks" else "reasoning-delta"
    return {"type": kind, "index": record["index"], "text": member}


def _expand_stream(stream: list[dict[str, Any]]) -> list[tuple[Any, dict[str, Any]]]:
    """A stream's records as the timed chunks they stand for (dsh's expandAssistantStream)."""
    chunks: list[tuple[Any, dict[str, Any]]] = []
    for record in stream:
        if record["type"] == "chunk":
            chunks.append((record["time"], record["chunk"]))
            continue
        members = record["args"] if record["type"] == "tool-call-chunks" else record["texts"]
        time = record["time0"]
        for k, member in enumerate(members):
            time += record["dt"][k - 1] if k else 0
            chunks.append((time, _member_chunk(record, member)))
    return chunks


def test_stream_packing_reproduces_dsh_snapshots() -> None:
    """Expanding a V5 snapshot's streams and packing them again gives dsh's own records."""
    checked = 0
    for path in sorted((DATA / "v5").rglob("*.jsonl")):
        for line in path.read_bytes().splitlines()[1:]:
            row = orjson.loads(line)
            stream = row["data"].get("stream")
            if stream is None:
                continue
            chunks = _expand_stream(stream)
            assert pack_stream(chunks) == stream, (path, row["type"])
            checked += 1
    assert checked >= 20


def test_v5_snapshots_are_whole() -> None:
    files = sorted((DATA / "v5").rglob("session.v5.jsonl"))
    assert len(files) == 11
    for path in files:
        lines = path.read_bytes().split(b"\n")
        assert lines[-1] == b"", path
        header = orjson.loads(lines[0])
        assert header["version"] == 5 and set(header) <= set(HEADER_KEYS_V2), path
        for line in lines[1:-1]:
            assert "seq" not in orjson.loads(line), path  # dsh's snapshot projection


def test_sequence_storage_form() -> None:
    assert compress_seqs([3, 4, 5, 6, 9]) == [[3, 6], 9]
    assert compress_seqs([17, 18, 8, 9]) == [17, 18, 8, 9]
    assert compress_seqs([1, 2]) == [1, 2]
    assert expand_seqs([[3, 6], 9]) == [3, 4, 5, 6, 9]


def _small_fixture() -> Path:
    return min(fixture_logs(), key=lambda p: p.stat().st_size)


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5])
def test_write_log_round_trips(tmp_path: Path, version: int) -> None:
    log = migrate(read_v0(_small_fixture()), to=version)
    assert log[0]["version"] == version
    raw = tmp_path / "session.jsonl"
    write_log(log, raw)
    assert raw.read_bytes().splitlines(keepends=True) == log_lines(log)
    with pytest.raises(FileExistsError):
        write_log(log, raw)


def test_write_log_zstd_frames(tmp_path: Path) -> None:
    log = migrate(read_v0(max(fixture_logs(), key=lambda p: p.stat().st_size)), to=5)
    assert len(log[1]) > 64
    path = tmp_path / "session.v5.jsonl.zstd"
    write_log(log, path, zstd=True)
    blob = path.read_bytes()
    frames = []
    while blob:
        obj = zstandard.ZstdDecompressor().decompressobj()
        frames.append(obj.decompress(blob))
        blob = obj.unused_data
    lines = log_lines(log)
    assert frames[0] == lines[0]  # the first frame holds only the header line
    assert len(frames) == 1 + -(-len(log[1]) // 64)
    assert b"".join(frames).splitlines(keepends=True) == lines
    params = zstandard.get_frame_parameters(path.read_bytes())
    assert params.has_checksum


def test_twin_root_names(tmp_path: Path) -> None:
    parent = next(p for p in fixture_logs() if (p.parent / "session.1.jsonl").exists())
    src = tmp_path / "src" / "suite" / parent.parent.name
    src.mkdir(parents=True)
    for name in ("session.jsonl", "session.1.jsonl"):
        shutil.copy(parent.parent / name, src / name)
    (tmp_path / "src" / "NOTICE.md").write_text("notice\n")
    for zstd, suffix in ((False, ""), (True, ".zstd")):
        dst = tmp_path / f"dst{suffix}"
        pairs = twin_root(tmp_path / "src", dst, version=5, zstd=zstd)
        twins = {p.relative_to(dst).as_posix() for _, p in pairs}
        folder = f"suite/{parent.parent.name}"
        assert twins == {
            f"{folder}/session.v5.jsonl{suffix}",
            f"{folder}/session.1.v5.jsonl{suffix}",
        }
        assert (dst / "NOTICE.md").read_text() == "notice\n"
        for _, twin in pairs:
            assert twin.is_file() and twin.stat().st_size > 0
    v3 = twin_root(tmp_path / "src", tmp_path / "v3", version=3)
    assert sorted(p.name for _, p in v3) == ["session.1.v3.jsonl", "session.v3.jsonl"]
    assert orjson.loads(v3[0][1].read_bytes().split(b"\n")[0])["version"] == 3


def _event(seq: int, kind: str, data: Any, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "seq": seq, "time": 1000 + seq, "data": data, **extra}


def _chunk(seq: int, chunk: dict[str, Any]) -> dict[str, Any]:
    return _event(seq, "assistant/chunk", {"turn": 1, "step": 1, "chunk": chunk})


def test_synthetic_fold_repair_and_seed_marker() -> None:
    """The paths no fixture takes: restart repair, inserted seed marker, attempts, remapping."""
    delta = {"type": "text-delta", "index": 0}
    events = [
        _event(0, "turn/start", {"turn": 1, "trigger": {"kind": "message"}}),
        _event(1, "user/message", {"content": [], "source": {"kind": "user"}}, surfaceOp="append"),
        _event(2, "step/start", {"turn": 1, "step": 1}),
        _chunk(3, {**delta, "text": "a"}),
        _chunk(4, {"type": "usage", "usage": {"inputTokens": 5, "outputTokens": 1}}),
        _event(5, "llm/retry-started", {"turn": 1, "step": 1}),
        _chunk(6, {**delta, "text": "b"}),
        _chunk(7, {**delta, "text": "c"}),
        _chunk(8, {"type": "finish", "reason": {"kind": "stop"}}),
        _event(
            9,
            "assistant/message",
            {"turn": 1, "step": 1, "message": {"id": "m", "role": "assistant", "content": []}},
            surfaceOp="append",
            sourceEventSeqs=[[6, 8]],
        ),
        _event(10, "step/end", {"turn": 1, "step": 1}),
        _event(11, "agent/inbox/spliced", {"target": "next-turn", "inserted": [{"x": 1}]}),
        _event(12, "turn/start", {"turn": 2}),
        _event(13, "session/title", {"title": "t", "messageSeqs": [1]}),
        _event(14, "turn/end", {"turn": 2, "reason": {"kind": "disposed"}}),
    ]
    header = {"type": "session", "id": "s", "createdAt": 1, "seedLength": 11, "sandboxMode": "x"}
    notes: list[str] = []
    h, rows = migrate((header, events), to=5, notes=notes)
    assert h == {
        "type": "session",
        "version": 5,
        "id": "s",
        "createdAt": 1,
        "isSeeded": True,
        "delegationDepth": 0,
    }
    types = [r["type"] for r in rows]
    assert types == [
        "turn/start",
        "user/message",
        "step/start",
        "system/message",
        "assistant/attempt",
        "llm/retry-started",
        "assistant/message",
        "step/end",
        "session/end-seed",
        "agent/inbox/spliced",
        "turn/end",
        "turn/start",
        "session/title",
        "turn/end",
    ]
    assert rows[0]["data"] == {"turn": 1}
    attempt, message = rows[4]["data"]["stream"], rows[6]["data"]["stream"]
    assert [r["type"] for r in attempt] == ["text-chunks", "chunk"]
    assert message[0] == {
        "type": "text-chunks",
        "time0": 1006,
        "index": 0,
        "dt": [1],
        "texts": ["b", "c"],
    }
    assert rows[8]["data"] == {"inherited": True} and rows[8]["time"] == 1011
    assert rows[10]["data"] == {"turn": 1, "reason": {"kind": "interrupted"}}
    assert rows[10]["time"] == rows[11]["time"] == 1012
    assert rows[12]["data"]["messageSeqs"] == [1]
    assert rows[13]["data"]["reason"] == {"kind": "aborted", "reason": {"kind": "disposed"}}
    assert _fold_v5(rows) == _fold_v0(events) == [5, 1, 0, 0]
    assert any("sandboxMode" in n for n in notes)


def test_v5_to_v6_renames_the_event_attribution_only() -> None:
    """quockhangluong1012's V6 edge: `data.metadata.provenance` and `evidence/recorded`'s
    `data.provenance` become `sourceRef` (the same value moves); a `provenance` inside
    opaque data stays; a record holding both names is kept and noted (dsh refuses it)."""
    source = {"source": "tool", "locator": "src/a.py"}
    header = {"type": "session", "version": 5, "id": "s", "isSeeded": False}
    rows = [
        {"type": "task/created", "seq": 0, "time": 1, "data": {"metadata": {"provenance": source}}},
        {"type": "evidence/recorded", "seq": 1, "time": 2, "data": {"provenance": source}},
        {"type": "tool/result", "seq": 2, "time": 3, "data": {"meta": {"provenance": "x"}}},
        {
            "type": "claim/updated",
            "seq": 3,
            "time": 4,
            "data": {"metadata": {"provenance": source, "sourceRef": source}},
        },
    ]
    notes: list[str] = []
    new_header, new_rows = migrate((header, rows), to=6, notes=notes)
    assert new_header["version"] == 6 and header["version"] == 5  # the input is not changed
    assert new_rows[0]["data"] == {"metadata": {"sourceRef": source}}
    assert new_rows[1]["data"] == {"sourceRef": source}
    assert new_rows[2] == rows[2]
    assert new_rows[3] == rows[3]
    assert notes == ["v5->v6: seq 3: provenance beside sourceRef; kept"]
    assert rows[0]["data"] == {"metadata": {"provenance": source}}
