"""Hand-made lineages with planted words, for the catalog and search tests."""

from __future__ import annotations

from pathlib import Path

import orjson
from turnline.core.model import SessionHeader

from .disk_logs import event

CWD = "/home/u/proj"


def user(seq: int, text: str) -> dict[str, object]:
    """A user message."""
    return event(
        seq,
        "user/message",
        role="user",
        content=[{"type": "text", "text": text}],
        source={"kind": "user"},
    )


def assistant(seq: int, text: str, reasoning: str = "") -> dict[str, object]:
    """An assistant message (with optional reasoning)."""
    content: list[dict[str, str]] = [{"type": "text", "text": text}]
    if reasoning:
        content.insert(0, {"type": "reasoning", "text": reasoning})
    return event(seq, "assistant/message", message={"role": "assistant", "content": content})


def turn(
    start: int, n: int, said: str, answer: str, *, tool: str = "", reasoning: str = ""
) -> list[dict[str, object]]:
    """One closed turn starting at seq `start` (5 events, or 7 with a tool)."""
    out = [
        event(start, "turn/start", turn=n),
        user(start + 1, said),
        event(start + 2, "step/start", turn=n, step=1),
    ]
    seq = start + 3
    if tool:
        out.append(event(seq, "tool/call", name="bash", callId=f"c{n}", arguments={"cmd": "ls"}))
        part = {
            "type": "tool-result",
            "toolCallId": f"c{n}",
            "content": [{"type": "text", "text": tool}],
            "isError": False,
        }
        out.append(event(seq + 1, "tool/result", message={"role": "user", "content": [part]}))
        seq += 2
    out.append(assistant(seq, answer, reasoning))
    out.append(event(seq + 1, "turn/end", turn=n, reason={"kind": "completed"}))
    return out


def write(path: Path, header: SessionHeader, records: list[dict[str, object]]) -> Path:
    """Write a raw log."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header.to_json_line() + b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def parent_records() -> list[dict[str, object]]:
    """The parent: turn 1 plants `zebracorn` (user) and 分叉 (assistant); turn 2 a tool
    result with `toolonlyword`; turn 3 reasoning `pondering`."""
    return (
        turn(0, 1, "tell me about the zebracorn", "这里是分叉的说明")
        + turn(5, 2, "list files", "done", tool="toolonlyword appears here")
        + turn(12, 3, "think", "ok", reasoning="pondering deeply")
    )


def make_lineage(root: Path) -> dict[str, Path]:
    """parent P; fork C of P after turn 2 (seed 12); fork G of C after C's own turn
    (seed = C's length); C's own turn plants `childword`."""
    p_records = parent_records()
    p = write(
        root / "p" / "session.jsonl", SessionHeader("P", 1, cwd=CWD, delegation_depth=0), p_records
    )
    c_records = [
        *p_records[:12],
        event(12, "session/end-seed"),
        *turn(13, 3, "a childword here", "fine"),
    ]
    c = write(
        root / "c" / "session.jsonl",
        SessionHeader("C", 2, cwd=CWD, parent_session="P", seed_length=12, delegation_depth=0),
        c_records,
    )
    g_records = [*c_records, event(len(c_records), "session/end-seed")]
    g_records += turn(len(g_records), 4, "grandchild asks", "gee")
    g = write(
        root / "g" / "session.jsonl",
        SessionHeader(
            "G", 3, cwd=CWD, parent_session="C", seed_length=len(c_records), delegation_depth=0
        ),
        g_records,
    )
    return {"P": p, "C": c, "G": g}
