"""A real dsh-shaped log with huge fields, written in chunks (never held whole).

Turn 1: a user message, a 10 MB assistant message, a `bash` call and its 200 MB result
(a repeated pattern with escapes and multi-byte characters), then `turn/end`. Turn 2 is
small. The expected lengths are computed from the pattern, not read back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import zstandard

MB = 1 << 20
#: One repeat of the assistant message (JSON-escaped as written: a newline, a quote).
ASSISTANT_UNIT = 'The answer, "again": ü → 🙂\n'
#: One repeat of the tool result (a tab, a backslash, an emoji, CJK).
RESULT_UNIT = "line\tof output \\ 分叉 🙂 ok\n"


@dataclass(frozen=True)
class HugeLog:
    """Where the log is and what its fields hold."""

    path: Path
    assistant_repeats: int
    result_repeats: int

    @property
    def assistant_chars(self) -> int:
        return len(ASSISTANT_UNIT) * self.assistant_repeats

    @property
    def result_chars(self) -> int:
        return len(RESULT_UNIT) * self.result_repeats


def _line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def _write_long(fh: Any, head: dict[str, Any], marker: str, unit: str, repeats: int) -> None:
    """Write `head` as one line whose string `marker` is `unit` repeated, in chunks."""
    before, after = _line(head)[:-1].split(json.dumps(marker).encode())
    fh.write(before + b'"')
    encoded = json.dumps(unit, ensure_ascii=False)[1:-1].encode()
    step = 4096
    block = encoded * step
    left = repeats
    while left >= step:
        fh.write(block)
        left -= step
    fh.write(encoded * left)
    fh.write(b'"' + after + b"\n")


def write_huge_log(
    root: Path, *, assistant_mb: int = 10, result_mb: int = 200, sid: str = "huge-1"
) -> HugeLog:
    """The log under `root` in the dsh layout."""
    folder = root / "--home-dev-huge--" / sid
    folder.mkdir(parents=True)
    path = folder / "session.jsonl"
    a_rep = assistant_mb * MB // len(ASSISTANT_UNIT.encode())
    r_rep = result_mb * MB // len(RESULT_UNIT.encode())
    with open(path, "wb") as fh:
        fh.write(
            _line(
                {
                    "type": "session",
                    "version": 0,
                    "id": sid,
                    "createdAt": 1,
                    "cwd": "/home/dev/huge",
                    "delegationDepth": 0,
                }
            )
        )
        user = {"role": "user", "content": [{"type": "text", "text": "dump the logs"}]}
        user["source"] = {"kind": "user"}
        fh.write(_line({"type": "user/message", "seq": 0, "time": 1000, "data": user}))
        fh.write(_line({"type": "turn/start", "seq": 1, "time": 1001, "data": {"turn": 1}}))
        step = {"turn": 1, "step": 1}
        fh.write(_line({"type": "step/start", "seq": 2, "time": 1002, "data": step}))
        message = {
            "role": "assistant",
            "content": [{"type": "text", "text": "@@A@@"}],
            "source": {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"},
        }
        usage = {"inputTokens": 11, "outputTokens": 22}
        data = {"turn": 1, "step": 1, "message": message, "usage": usage}
        event = {"type": "assistant/message", "seq": 3, "time": 1003, "data": data}
        _write_long(fh, event, "@@A@@", ASSISTANT_UNIT, a_rep)
        args = json.dumps({"command": "cat /var/log/big"})
        call = {"turn": 1, "step": 1, "callId": "call-1", "name": "bash", "arguments": args}
        fh.write(_line({"type": "tool/call", "seq": 4, "time": 1004, "data": call}))
        part = {
            "type": "tool-result",
            "toolCallId": "call-1",
            "content": [{"type": "text", "text": "@@R@@"}],
            "isError": False,
        }
        result = {"turn": 1, "step": 1, "message": {"role": "user", "content": [part]}}
        event = {"type": "tool/result", "seq": 5, "time": 1005, "data": result}
        _write_long(fh, event, "@@R@@", RESULT_UNIT, r_rep)
        end = {"turn": 1, "reason": {"kind": "completed"}}
        fh.write(_line({"type": "turn/end", "seq": 6, "time": 1006, "data": end}))
        user2 = {"role": "user", "content": [{"type": "text", "text": "thanks"}]}
        fh.write(_line({"type": "user/message", "seq": 7, "time": 2000, "data": user2}))
        fh.write(_line({"type": "turn/start", "seq": 8, "time": 2001, "data": {"turn": 2}}))
        end2 = {"turn": 2, "reason": {"kind": "completed"}}
        fh.write(_line({"type": "turn/end", "seq": 9, "time": 2002, "data": end2}))
    return HugeLog(path, a_rep, r_rep)


def zstd_copy(log: HugeLog, root: Path) -> HugeLog:
    """The same log as multi-frame zstd under `root` (one frame per line, as dsh writes
    one per append), compressed in chunks: a few KB for 240 MB of repeated text."""
    folder = root / log.path.parent.relative_to(log.path.parents[2])
    folder.mkdir(parents=True)
    target = folder / "session.jsonl.zstd"
    compressor = zstandard.ZstdCompressor()
    with open(log.path, "rb") as src, open(target, "wb") as out:
        while True:
            piece = src.readline(8 << 20)
            if not piece:
                break
            with compressor.stream_writer(out, closefd=False) as frame:
                frame.write(piece)
                while not piece.endswith(b"\n"):
                    piece = src.readline(8 << 20)
                    if not piece:
                        break
                    frame.write(piece)
    return replace(log, path=target)
