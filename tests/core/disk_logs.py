"""Writing test logs to real folders: raw, or zstd as multiple independent frames."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import orjson
import zstandard
from turnline.core.codec import encode_records
from turnline.core.layout import session_dir
from turnline.core.model import SessionEvent, SessionHeader


def zstd_frames(header: SessionHeader, events: Sequence[SessionEvent], batch: int = 3) -> bytes:
    """A multi-frame zstd log as dsh writes it: the header alone, then one frame per batch."""
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    frames = [cctx.compress(header.to_json_line())]
    for start in range(0, len(events), batch):
        frames.append(cctx.compress(b"".join(encode_records(events[start : start + batch]))))
    return b"".join(frames)


def write_log(
    root: Path,
    header: SessionHeader,
    events: Sequence[SessionEvent],
    *,
    zstd: bool = False,
    batch: int = 3,
) -> Path:
    """Write a session in the dsh layout under root; return the log path."""
    folder = session_dir(root, header.id, header.cwd)
    folder.mkdir(parents=True, exist_ok=True)
    if zstd:
        path = folder / "session.jsonl.zstd"
        path.write_bytes(zstd_frames(header, events, batch))
    else:
        path = folder / "session.jsonl"
        path.write_bytes(header.to_json_line() + b"".join(encode_records(events)))
    return path


def write_lines(path: Path, *records: object, tail: bytes = b"") -> Path:
    """A raw log from JSON records, one per line, plus optional raw tail bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records) + tail)
    return path


def event(seq: int, etype: str, **data: object) -> dict[str, object]:
    """An event record."""
    return {"type": etype, "seq": seq, "time": 1000 + seq, "data": data}


def as_events(records: Sequence[dict[str, object]]) -> list[SessionEvent]:
    """Event records as `SessionEvent`s."""
    out = []
    for r in records:
        seq, time = r["seq"], r["time"]
        assert isinstance(seq, int) and isinstance(time, int)
        out.append(SessionEvent(str(r["type"]), seq, time, r["data"]))
    return out


def turn_records(start: int, n: int, kind: str = "completed") -> list[dict[str, object]]:
    """One closed turn of 4 events starting at seq `start`."""
    return [
        event(start, "turn/start", turn=n),
        event(
            start + 1,
            "user/message",
            role="user",
            content=[{"type": "text", "text": f"question {n}"}],
            source={"kind": "user"},
        ),
        event(start + 2, "step/start", turn=n, step=1),
        event(start + 3, "turn/end", turn=n, reason={"kind": kind}),
    ]


def zstd_of(tmp_path: Path, raw: bytes, per_frame: int = 3) -> Path:
    """`raw` as dsh's zstd: the header line alone in the first frame, then frames of
    `per_frame` lines."""
    nl = raw.index(b"\n") + 1
    lines = raw[nl:].splitlines(keepends=True)
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    frames = [cctx.compress(raw[:nl])]
    frames += [
        cctx.compress(b"".join(lines[i : i + per_frame])) for i in range(0, len(lines), per_frame)
    ]
    path = tmp_path / "session.jsonl.zstd"
    path.write_bytes(b"".join(frames))
    return path
