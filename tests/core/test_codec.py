"""Records <-> events: packing then expanding is the identity; real packed rows expand
exactly as the format doc describes (checked against an independent expansion)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from turnline.core.codec import (
    PACKED_TAGS,
    RecordError,
    encode_log,
    encode_records,
    expand_record,
    parse_header,
)
from turnline.core.model import LogProblem, ProblemKind, SessionEvent, SessionHeader

from ..conftest import fixture_logs
from .gen_logs import logs


def _expand_all(lines: list[bytes]) -> list[SessionEvent]:
    return [e for line in lines for e in expand_record(orjson.loads(line))]


@given(logs())
def test_packing_then_expanding_is_the_identity(events: list[SessionEvent]) -> None:
    lines = list(encode_records(events))
    assert all(line.endswith(b"\n") and line.count(b"\n") == 1 for line in lines)
    assert [e.to_json_dict() for e in _expand_all(lines)] == [e.to_json_dict() for e in events]


@settings(max_examples=20)
@given(logs())
def test_unpacked_encoding_is_one_line_per_event(events: list[SessionEvent]) -> None:
    lines = list(encode_records(events, pack=False))
    assert len(lines) == len(events)
    assert [orjson.loads(line) for line in lines] == [e.to_json_dict() for e in events]


def test_runs_of_three_or_more_pack_and_shorter_runs_do_not() -> None:
    def chunk(seq: int, text: str, index: int = 0) -> SessionEvent:
        data = {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": index, "text": text}}
        return SessionEvent("assistant/chunk", seq, 1000 + seq * 2, data)

    events = [chunk(0, "a"), chunk(1, "b"), chunk(2, "c", 1), chunk(3, "d", 1), chunk(4, "e", 1)]
    lines = [orjson.loads(line) for line in encode_records(events)]
    assert [line["type"] for line in lines] == ["assistant/chunk", "assistant/chunk", "text-chunks"]
    row = lines[2]
    assert row == {
        "type": "text-chunks",
        "seq0": 2,
        "time0": 1004,
        "data": {"turn": 1, "step": 1, "index": 1, "dt": [2, 2], "texts": ["c", "d", "e"]},
    }


def test_tool_call_rows_keep_id_and_optional_name() -> None:
    row = {
        "type": "tool-call-chunks",
        "seq0": 7,
        "time0": 50,
        "data": {
            "turn": 2,
            "step": 3,
            "index": 1,
            "dt": [1, 0],
            "id": "call_9",
            "args": ["{", "}", ""],
        },
    }
    events = expand_record(row)
    assert [e.to_json_dict() for e in events] == [
        {
            "type": "assistant/chunk",
            "seq": 7 + k,
            "time": 50 + [0, 1, 1][k],
            "data": {
                "turn": 2,
                "step": 3,
                "chunk": {
                    "type": "tool-call-delta",
                    "index": 1,
                    "id": "call_9",
                    "argumentsDelta": arg,
                },
            },
        }
        for k, arg in enumerate(["{", "}", ""])
    ]
    assert "name" not in events[0].data["chunk"]
    assert list(encode_records(events)) == [orjson.dumps(row) + b"\n"]


@pytest.mark.parametrize(
    ("row", "kind"),
    [
        ({"type": "text-chunks", "seq0": 1, "data": {"dt": [1], "texts": ["a"]}}, "bad-packed-row"),
        ({"type": "text-chunks", "seq0": 1, "data": {"dt": [], "texts": []}}, "bad-packed-row"),
        (
            {"type": "text-chunks", "seq0": "1", "data": {"dt": [], "texts": ["a"]}},
            "bad-packed-row",
        ),
        (
            {"type": "text-chunks", "seq0": 1, "data": {"dt": ["x"], "texts": ["a", "b"]}},
            "bad-packed-row",
        ),
        ({"type": "turn/end", "seq": "3"}, "corrupt"),
        ({"type": "turn/end", "seq": True}, "corrupt"),
        ({"seq": 3}, "corrupt"),
        ([1, 2], "corrupt"),
        ("text", "corrupt"),
    ],
)
def test_bad_records_raise_a_typed_error(row: Any, kind: str) -> None:
    with pytest.raises(RecordError) as info:
        expand_record(row)
    assert info.value.kind == kind


def test_unknown_top_level_keys_round_trip() -> None:
    record = {"type": "x/y", "seq": 4, "time": 9, "data": {"a": 1}, "surfaceOp": "append", "z": [1]}
    (event,) = expand_record(record)
    assert event.extra == {"surfaceOp": "append", "z": [1]}
    assert orjson.loads(next(encode_records([event]))) == record


def test_header_round_trip_and_problems() -> None:
    header = SessionHeader(
        id="c",
        created_at=5,
        cwd="/w",
        parent_session="p",
        seed_length=3,
        origin="subagent",
        delegation_depth=1,
        agent_preset="minimal",
        extra={"future": True},
    )
    parsed, problems = parse_header(header.to_json_dict())
    assert (parsed, problems) == (header, [])
    log = encode_log(header, [])
    assert orjson.loads(log) == {
        "type": "session",
        "version": 0,
        "id": "c",
        "createdAt": 5,
        "cwd": "/w",
        "parentSession": "p",
        "seedLength": 3,
        "origin": "subagent",
        "delegationDepth": 1,
        "agentPreset": "minimal",
        "future": True,
    }


@pytest.mark.parametrize(
    ("obj", "kinds"),
    [
        ({"type": "session", "id": "a", "delegationDepth": 0}, ["missing-version"]),
        ({"type": "session", "id": "a", "version": 0}, ["legacy-header"]),
        ({"type": "session", "id": "a"}, ["missing-version", "legacy-header"]),
        ({"type": "session", "id": "a", "version": 1, "delegationDepth": 0}, []),
        ({"type": "session", "id": "a", "version": 7, "delegationDepth": 0}, ["foreign-version"]),
        (
            {"type": "session", "id": "a", "version": 5, "isSeeded": False, "delegationDepth": 0},
            [],
        ),
        (
            {"type": "session", "id": "a", "version": 6, "isSeeded": False, "delegationDepth": 0},
            [],
        ),
        ({"type": "session", "id": "a", "version": 6, "delegationDepth": 0}, ["bad-header"]),
        # V2+: isSeeded is required, and the key set is closed (seedLength is not in it)
        ({"type": "session", "id": "a", "version": 3, "delegationDepth": 0}, ["bad-header"]),
        (
            {
                "type": "session",
                "id": "a",
                "version": 4,
                "isSeeded": True,
                "seedLength": 3,
                "delegationDepth": 0,
            },
            ["bad-header"],
        ),
        (
            {"type": "session", "id": "a", "version": True, "delegationDepth": 0},
            ["foreign-version"],
        ),
        (
            {"type": "session", "id": "a", "version": 0, "delegationDepth": 0, "createdAt": "x"},
            ["bad-header"],
        ),
        ({"type": "session", "version": 0}, ["bad-header"]),
        ({"type": "turn/start", "seq": 0}, ["bad-header"]),
        (None, ["bad-header"]),
    ],
)
def test_header_problems_are_classified(obj: Any, kinds: list[str]) -> None:
    _, problems = parse_header(obj)
    assert [str(p.kind) for p in problems] == kinds
    assert all(isinstance(p, LogProblem) for p in problems)
    assert ProblemKind.CORRUPT not in [p.kind for p in problems]


def _doc_expand(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The packed-row rule of dsh-format.md, written out independently of the codec."""
    delta = {
        "text-chunks": "text-delta",
        "reasoning-chunks": "reasoning-delta",
        "tool-call-chunks": "tool-call-delta",
    }[row["type"]]
    data = row["data"]
    members = data["args"] if delta == "tool-call-delta" else data["texts"]
    assert len(data["dt"]) == len(members) - 1
    out = []
    for k, member in enumerate(members):
        chunk: dict[str, Any] = {"type": delta, "index": data["index"]}
        if delta == "tool-call-delta":
            chunk["id"] = data["id"]
            if "name" in data:
                chunk["name"] = data["name"]
            chunk["argumentsDelta"] = member
        else:
            chunk["text"] = member
        out.append(
            {
                "type": "assistant/chunk",
                "seq": row["seq0"] + k,
                "time": row["time0"] + sum(data["dt"][:k]),
                "data": {"turn": data["turn"], "step": data["step"], "chunk": chunk},
            }
        )
    return out


def _packed_rows() -> list[tuple[Path, dict[str, Any]]]:
    rows = []
    for path in fixture_logs():
        for line in path.read_text(encoding="utf-8").splitlines()[1:]:
            obj = json.loads(line)
            if obj.get("type") in PACKED_TAGS:
                rows.append((path, obj))
    return rows


def test_real_packed_rows_expand_as_the_format_doc_says() -> None:
    rows = _packed_rows()
    tags = {row["type"] for _, row in rows}
    assert tags == set(PACKED_TAGS)  # the fixtures hold all three kinds
    for path, row in rows:
        assert [e.to_json_dict() for e in expand_record(row)] == _doc_expand(row), path


def test_real_packed_rows_re_encode_to_the_same_row() -> None:
    for path, row in _packed_rows():
        events = expand_record(row)
        assert [orjson.loads(line) for line in encode_records(events)] == [row], path
