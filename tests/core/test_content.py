"""`core.content`: a turn's events as typed blocks (the one place that reads message shapes)."""

from __future__ import annotations

import pytest
from turnline.core.content import (
    AssistantText,
    ContextText,
    Reasoning,
    StepUsage,
    TokenUsage,
    ToolCall,
    TurnError,
    UserText,
    is_user_input,
    turn_blocks,
    usage_sample,
)
from turnline.core.logfile import read_log
from turnline.core.model import SessionEvent

from ..conftest import fixture_logs


def ev(seq: int, type: str, data: object) -> SessionEvent:
    return SessionEvent(type, seq, 1000 + seq, data)


def test_blocks_pair_calls_with_results_in_log_order() -> None:
    events = [
        ev(0, "turn/start", {"turn": 1}),
        ev(1, "user/message", {"content": [{"type": "text", "text": "fix it"}]}),
        ev(2, "user/message", {"content": "ctx", "source": {"kind": "memory"}}),
        ev(3, "request/header", {"header": {"config": {"provider": "ds", "model": "m1"}}}),
        ev(
            4,
            "assistant/message",
            {
                "turn": 1,
                "step": 1,
                "message": {
                    "content": [
                        {"type": "reasoning", "text": "think"},
                        {"type": "text", "text": "running"},
                    ],
                    "source": {"kind": "model", "provider": "ds", "model": "m2"},
                },
                "usage": {"inputTokens": 5, "outputTokens": 7, "reasoningTokens": 2},
            },
        ),
        ev(5, "tool/call", {"step": 1, "callId": "c1", "name": "bash", "arguments": '{"a": 1}'}),
        ev(
            6,
            "tool/result",
            {
                "message": {
                    "content": [
                        {
                            "type": "tool-result",
                            "toolCallId": "c1",
                            "content": [{"type": "text", "text": "ok"}],
                            "isError": True,
                        }
                    ]
                },
                "meta": {"diffs": [1]},
            },
        ),
        ev(7, "turn/end", {"turn": 1, "reason": {"kind": "error", "error": {"message": "boom"}}}),
    ]
    blocks = turn_blocks(events)
    assert [type(b) for b in blocks] == [
        UserText,
        ContextText,
        Reasoning,
        AssistantText,
        StepUsage,
        ToolCall,
        TurnError,
    ]
    call = blocks[5]
    assert isinstance(call, ToolCall)
    assert call.arguments == {"a": 1} and call.argument("a") == 1
    assert call.result is not None and call.result.is_error and call.result.text == "ok"
    assert call.result.meta == {"diffs": [1]}
    usage = blocks[4]
    assert isinstance(usage, StepUsage)
    assert usage.model == "ds/m2"  # the message's own source beats the configured model
    assert usage.usage == TokenUsage(5, 7, 0, 0, 2)
    assert usage.usage.total == 12  # reasoning is part of output: never added again
    assert isinstance(blocks[6], TurnError) and blocks[6].message == "boom"


def test_a_later_sample_replaces_the_earlier_one_and_a_lone_chunk_counts() -> None:
    chunk = {"turn": 1, "step": 1, "chunk": {"type": "usage", "usage": {"inputTokens": 1}}}
    message = {"turn": 1, "step": 1, "message": {"content": []}, "usage": {"inputTokens": 9}}
    lone = {"turn": 1, "step": 2, "chunk": {"type": "usage", "usage": {"outputTokens": 4}}}
    header = {"header": {"config": {"provider": "p", "model": "x"}}}
    blocks = turn_blocks(
        [
            ev(0, "request/header", header),
            ev(1, "assistant/chunk", chunk),
            ev(2, "assistant/message", message),
            ev(3, "assistant/chunk", lone),
        ]
    )
    usages = [b for b in blocks if isinstance(b, StepUsage)]
    assert [(u.step, u.usage.input_tokens, u.usage.output_tokens, u.seq) for u in usages] == [
        (1, 9, 0, 2),
        (2, 0, 4, 3),
    ]
    assert usages[1].model == "p/x"  # a chunk sample takes the configured model


def test_orphan_result_and_odd_shapes_never_raise() -> None:
    blocks = turn_blocks(
        [
            ev(0, "tool/result", {"message": {"content": [{"toolCallId": "zz", "content": 3}]}}),
            ev(1, "tool/call", {"arguments": "not json"}),
            ev(2, "assistant/message", "odd"),
            ev(3, "turn/end", {"error": "plain"}),
        ]
    )
    orphan, call, error = blocks
    assert isinstance(orphan, ToolCall) and orphan.name == "?" and orphan.result is not None
    assert orphan.result.text == "3"
    assert isinstance(call, ToolCall) and call.arguments == "not json" and call.pending
    assert isinstance(error, TurnError) and error.message == "plain"


@pytest.mark.parametrize("kind,expected", [(None, True), ("user", True), ("memory", False)])
def test_is_user_input(kind: str | None, expected: bool) -> None:
    message: dict[str, object] = {"content": "x"}
    if kind is not None:
        message["source"] = {"kind": kind}
    assert is_user_input(message) is expected
    assert not is_user_input("x")


def test_every_fixture_turns_into_blocks() -> None:
    """All 151 real logs: no raise, and every tool/call event becomes exactly one call."""
    calls = samples = 0
    for path in fixture_logs():
        events = list(read_log(path).events)
        blocks = turn_blocks(events)
        tool_calls = sum(1 for e in events if e.type == "tool/call")
        assert sum(1 for b in blocks if isinstance(b, ToolCall) and b.seq in
                   {e.seq for e in events if e.type == "tool/call"}) == tool_calls  # fmt: skip
        calls += tool_calls
        samples += sum(1 for e in events if usage_sample(e) is not None)
    assert calls > 100 and samples > 100


def test_a_message_spliced_from_the_inbox_is_shown_once() -> None:
    """dsh writes an inbox message again as a `user/message` with the same id (fixture
    jsonrpc/subagent-spawn-in-process): one block, not two."""
    message = {"role": "user", "id": "m1", "content": [{"type": "text", "text": "hi"}]}
    blocks = turn_blocks(
        [
            ev(0, "agent/inbox/spliced", {"target": "next-turn", "inserted": [message]}),
            ev(1, "user/message", message),
            ev(2, "user/message", {**message, "id": "m2"}),
        ]
    )
    assert [(type(b).__name__, getattr(b, "seq", None)) for b in blocks] == [
        ("UserText", 0),
        ("UserText", 2),
    ]
