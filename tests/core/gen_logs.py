"""Hypothesis strategies for dsh-shaped event logs (shared by the store, codec and fork tests).

A generated log is a contiguous list of `SessionEvent`: turns with a reason (or an open
last turn), steps, runs of text/reasoning/tool-call chunk deltas long enough to pack
into rows, tool calls, user messages, titles, and now and then an event with an extra
top-level key, so that packing, expanding, forking and persisting meet every shape.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from turnline.core.model import REASON_KINDS, SessionEvent
from turnline.core.store import Session, SessionStore

_TEXT = st.text(max_size=12)
_NAME = st.sampled_from(["bash", "read", "write", "grep", "subagent"])


@st.composite
def _chunk_run(draw: st.DrawFn, turn: int, step: int) -> list[dict[str, Any]]:
    kind = draw(st.sampled_from(["text-delta", "reasoning-delta", "tool-call-delta"]))
    index = draw(st.integers(0, 3))
    size = draw(st.integers(1, 6))
    out = []
    call_id = draw(st.sampled_from(["call_1", "call_2"]))
    name = draw(st.none() | _NAME)
    for _ in range(size):
        chunk: dict[str, Any] = {"type": kind, "index": index}
        if kind == "tool-call-delta":
            chunk["id"] = call_id
            if name is not None:
                chunk["name"] = name
            chunk["argumentsDelta"] = draw(_TEXT)
        else:
            chunk["text"] = draw(_TEXT)
        out.append(
            {"type": "assistant/chunk", "data": {"turn": turn, "step": step, "chunk": chunk}}
        )
    return out


@st.composite
def _turn(draw: st.DrawFn, number: int, closed: bool) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    if draw(st.booleans()):
        text = draw(_TEXT)
        rows.append(
            {
                "type": "user/message",
                "data": {
                    "role": "user",
                    "content": [{"type": "text", "text": text}],
                    "source": {"kind": "user"},
                    "id": f"m{number}",
                },
            }
        )
    rows.append({"type": "turn/start", "data": {"turn": number}})
    for step in range(1, draw(st.integers(0, 3)) + 1):
        rows.append({"type": "step/start", "data": {"turn": number, "step": step}})
        for _ in range(draw(st.integers(0, 3))):
            rows.extend(draw(_chunk_run(number, step)))
        if draw(st.booleans()):
            rows.append(
                {
                    "type": "assistant/chunk",
                    "data": {"turn": number, "step": step, "chunk": {"type": "block-end"}},
                    "surfaceOp": "append",
                }
            )
        for k in range(draw(st.integers(0, 2))):
            rows.append(
                {
                    "type": "tool/call",
                    "data": {
                        "turn": number,
                        "step": step,
                        "callId": f"c{number}.{step}.{k}",
                        "name": draw(_NAME),
                        "arguments": {"x": draw(_TEXT)},
                    },
                }
            )
        rows.append({"type": "step/end", "data": {"turn": number, "step": step}})
    if draw(st.booleans()):
        rows.append({"type": "session/title", "data": {"title": draw(_TEXT), "source": "auto"}})
    if closed:
        kind = draw(st.sampled_from(REASON_KINDS))
        reason: dict[str, Any] = {"kind": kind}
        if kind == "error":
            reason["error"] = {"message": draw(_TEXT)}
        if kind == "aborted":
            reason["reason"] = {"kind": "user"}
        rows.append({"type": "turn/end", "data": {"turn": number, "reason": reason}})
    return rows


@st.composite
def logs(draw: st.DrawFn, max_turns: int = 4) -> list[SessionEvent]:
    """A contiguous event list: 0..max_turns turns, the last one possibly open."""
    count = draw(st.integers(0, max_turns))
    open_last = draw(st.booleans())
    rows: list[dict[str, Any]] = []
    for number in range(1, count + 1):
        rows.extend(draw(_turn(number, closed=not (open_last and number == count))))
    events = []
    time = draw(st.integers(0, 2_000_000_000_000))
    for seq, row in enumerate(rows):
        time += draw(st.integers(0, 5000))
        extra = {k: v for k, v in row.items() if k not in ("type", "data")}
        events.append(SessionEvent(row["type"], seq, time, row["data"], extra))
    return events


def build_session(
    store: SessionStore, session_id: str, events: list[SessionEvent], cwd: str = "/w/app"
) -> Session:
    """A live session holding exactly `events` (times kept, unlike `append`)."""
    return store.create(session_id, seed=events, meta={"cwd": cwd})
