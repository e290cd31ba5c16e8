"""A log rewritten in place (same inode, `O_TRUNC`, then longer content) is re-read
whole as a reset (issue 14 item 4), by the real reader."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
from turnline.core.logfile import LogReader

HEADER = {
    "type": "session",
    "version": 0,
    "delegationDepth": 0,
    "id": "s-1",
    "createdAt": 1,
    "cwd": "/w",
}


def _turns(n: int, title: str) -> bytes:
    lines = [HEADER, {"type": "session/title", "seq": 0, "time": 1, "data": {"title": title}}]
    for k in range(n):
        seq = 1 + 2 * k
        lines.append({"type": "turn/start", "seq": seq, "time": seq, "data": {"turn": k + 1}})
        lines.append(
            {
                "type": "turn/end",
                "seq": seq + 1,
                "time": seq + 1,
                "data": {"turn": k + 1, "reason": {"kind": "completed"}},
            }
        )
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def _rewrite_in_place(path: Path, data: bytes) -> None:
    ino = path.stat().st_ino
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    assert path.stat().st_ino == ino


def test_a_log_rewritten_in_place_is_read_again_whole(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(_turns(2, "old"))
    reader = LogReader(path)
    first = reader.read()
    assert len(first.events) == 5 and not first.reset
    stamp = path.stat().st_mtime_ns
    _rewrite_in_place(path, _turns(12, "new"))
    os.utime(path, ns=(stamp + 1_000_000, stamp + 1_000_000))  # a coarse clock moves too
    again = reader.read()
    assert again.reset
    assert len(again.events) == 25
    assert again.events[0].data == {"title": "new"}
    assert reader.problems == [] and reader.event_count == 25


def test_appends_are_not_taken_for_a_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    data = _turns(12, "t")
    cut = data.index(b"\n", len(data) // 2) + 1
    path.write_bytes(data[:cut])
    reader = LogReader(path)
    before = reader.read().events
    with open(path, "ab") as fh:
        fh.write(data[cut:])
    batch = reader.read()
    assert not batch.reset
    assert len(before) + len(batch.events) == 25


def test_a_resumed_reader_sees_a_rewrite_too(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(_turns(2, "old"))
    full = LogReader(path)
    full.read()
    resumed = LogReader.resume(path, full.header, full.offset, 5, 4, True)
    stamp = path.stat().st_mtime_ns
    _rewrite_in_place(path, _turns(12, "new"))
    os.utime(path, ns=(stamp + 1_000_000, stamp + 1_000_000))
    batch = resumed.read()
    assert batch.reset and len(batch.events) == 25
