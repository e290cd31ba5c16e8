"""Deterministic benchmark inputs, written fast with orjson straight to bytes.

- `write_big_log`: one raw dsh session of about a million events shaped like a real
  coding session: turns of several model steps, reasoning / text / tool-call deltas
  streamed as `assistant/chunk` events and stored as packed chunk rows the way dsh
  writes them (`reasoning-chunks`, `text-chunks`, `tool-call-chunks`), assembled
  `assistant/message` events, tool calls with results of a few KB to tens of KB.
- `write_zstd_copy`: the same log as multi-frame `.jsonl.zstd` (header frame, then
  one frame per turn: one durable append batch each).
- `write_wide_root`: ten thousand small sessions in the dsh layout with lineage
  (user forks carrying `seedLength`, subagent children without it).
- `TurnWriter`: appends one more turn to a raw log (the live benchmark's writer).

Everything derives from `random.Random(seed)`, so a run is reproducible.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson
import zstandard

_WORD_TEXT: Final = (
    "the a to of and in that is for it with as was on be this by are not or at from "
    "file test function return value error module import class def self path line "
    "read write check parse log event turn seq fork root session index offset byte "
    "buffer config run build make pytest assert result output input call tool args "
    "json data let me look at why failing fix update change add remove rename "
    "refactor type hint mypy ruff lint format commit branch merge diff patch apply "
    "step next first last "
)
WORDS: Final = tuple(_WORD_TEXT.split())
_ROW_MAX: Final = 32  # members per packed row: dsh flushes a run per append batch
_BASE_TIME: Final = 1_785_000_000_000
_CWD: Final = "/home/dev/turnline-bench"


def _dumps(obj: Any) -> bytes:
    return orjson.dumps(obj) + b"\n"


@dataclass
class _State:
    seq: int
    time: int
    turn: int


class _TurnMaker:
    """Produces the record lines of one turn; shares a word pool for speed."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        # A pool of deltas ("tokens") with their leading space, picked by index.
        self.pool = [" " + w for w in WORDS] + [w for w in WORDS[:20]] + [".", ",", "\n"]
        # Tool output text: a few KB to tens of KB, sliced from one long string.
        lines = [
            f"{rng.choice(WORDS)}/{rng.choice(WORDS)}.py:{rng.randrange(1, 900)}: "
            + " ".join(rng.choice(WORDS) for _ in range(rng.randrange(4, 14)))
            for _ in range(3000)
        ]
        self.output = "\n".join(lines)
        self.result_min = 2000
        self.result_spread = 20.0

    def deltas(self, n: int) -> list[str]:
        pool, rnd = self.pool, self.rng.random
        size = len(pool)
        return [pool[int(rnd() * size)] for _ in range(n)]

    def rows(
        self, st: _State, tag: str, step: int, index: int, members: list[str], extra: dict[str, Any]
    ) -> Iterator[bytes]:
        """Packed rows for a run of deltas (each row ≤ `_ROW_MAX` members, ≥ 3)."""
        rnd = self.rng.random
        key = "args" if tag == "tool-call-chunks" else "texts"
        i = 0
        while i < len(members):
            part = members[i : i + _ROW_MAX]
            if 0 < len(members) - (i + len(part)) < 3:
                part = members[i:]  # never leave a tail too short to pack
            dt = [int(rnd() * 30) for _ in range(len(part) - 1)]
            data: dict[str, Any] = {"turn": st.turn, "step": step, "index": index, "dt": dt}
            data.update(extra)
            data[key] = part
            yield _dumps({"type": tag, "seq0": st.seq, "time0": st.time, "data": data})
            st.seq += len(part)
            st.time += sum(dt) + 1
            i += len(part)

    def event(self, st: _State, etype: str, data: Any, **extra: Any) -> bytes:
        obj: dict[str, Any] = {"type": etype, "seq": st.seq, "time": st.time, "data": data}
        obj.update(extra)
        st.seq += 1
        st.time += 1 + int(self.rng.random() * 40)
        return _dumps(obj)

    def turn(self, st: _State, steps: int, reasoning: int, *, pad: int = 0) -> list[bytes]:
        """One whole turn: turn/start … turn/end, `steps` model rounds."""
        rng, turn = self.rng, st.turn
        out: list[bytes] = []
        user_text = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(8, 40)))
        out.append(
            self.event(
                st,
                "user/message",
                {
                    "role": "user",
                    "content": [{"type": "text", "text": f"Turn {turn}: {user_text}"}],
                    "source": {"kind": "user"},
                    "id": f"u-{turn}",
                },
            )
        )
        out.append(self.event(st, "turn/start", {"turn": turn}))
        if turn == 1:
            out.append(
                self.event(
                    st,
                    "session/title",
                    {"title": "Benchmark session", "messageSeqs": [0], "source": {"kind": "llm"}},
                )
            )
        for step in range(1, steps + 1):
            last = step == steps
            out.append(self.event(st, "step/start", {"turn": turn, "step": step}))
            out.append(
                self.event(
                    st,
                    "request/context",
                    {"provider": "deepseek-official", "model": "deepseek-v4-flash"},
                )
            )
            think = self.deltas(reasoning)
            text = self.deltas(rng.randrange(8, 40))
            call_id = f"call_{turn}_{step}"
            content: list[dict[str, Any]] = [
                {"type": "reasoning", "text": "".join(think)},
                {"type": "text", "text": "".join(text)},
            ]
            blocks = [
                ("reasoning-chunks", "reasoning", think, {}),
                ("text-chunks", "text", text, {}),
            ]
            args = ""
            if not last:
                arg_parts = ['{"', "command", '":', ' "', *self.deltas(rng.randrange(6, 24)), '"}']
                args = "".join(arg_parts)
                blocks.append(
                    ("tool-call-chunks", "tool-call", arg_parts, {"id": call_id, "name": "bash"})
                )
                content.append(
                    {"type": "tool-call", "id": call_id, "name": "bash", "arguments": args}
                )
            for index, (tag, block, members, extra) in enumerate(blocks):
                chunk = {"type": "block-start", "index": index, "blockType": block}
                out.append(
                    self.event(st, "assistant/chunk", {"turn": turn, "step": step, "chunk": chunk})
                )
                out.extend(self.rows(st, tag, step, index, members, extra))
                chunk = {"type": "block-end", "index": index}
                out.append(
                    self.event(st, "assistant/chunk", {"turn": turn, "step": step, "chunk": chunk})
                )
            usage = {"type": "usage", "usage": {"inputTokens": 900 * step, "outputTokens": 120}}
            out.append(
                self.event(st, "assistant/chunk", {"turn": turn, "step": step, "chunk": usage})
            )
            finish = {"type": "finish", "reason": {"kind": "stop" if last else "tool-calls"}}
            out.append(
                self.event(st, "assistant/chunk", {"turn": turn, "step": step, "chunk": finish})
            )
            message = {"role": "assistant", "content": content, "source": {"kind": "model"}}
            out.append(
                self.event(
                    st, "assistant/message", {"turn": turn, "step": step, "message": message}
                )
            )
            if not last:
                out.append(
                    self.event(
                        st,
                        "tool/call",
                        {
                            "turn": turn,
                            "step": step,
                            "callId": call_id,
                            "name": "bash",
                            "arguments": args,
                        },
                    )
                )
                # Log-uniform sizes: 2 KB … 40 KB by default.
                size = int(self.result_min * (self.result_spread ** rng.random()))
                start = rng.randrange(0, len(self.output) - size)
                result = {
                    "type": "tool-result",
                    "toolCallId": call_id,
                    "content": [{"type": "text", "text": self.output[start : start + size]}],
                    "isError": rng.random() < 0.05,
                }
                out.append(
                    self.event(
                        st,
                        "tool/result",
                        {
                            "turn": turn,
                            "step": step,
                            "message": {
                                "role": "user",
                                "content": [result],
                                "source": {"kind": "tool"},
                            },
                        },
                        surfaceOp="append",
                    )
                )
            out.append(self.event(st, "step/end", {"turn": turn, "step": step}))
        if pad:
            # Exact-count padding without drawing from the rng (so it is predictable):
            # one more text block of fixed deltas in the last step.
            step = steps
            chunk = {"type": "block-start", "index": 9, "blockType": "text"}
            out.append(
                self.event(st, "assistant/chunk", {"turn": turn, "step": step, "chunk": chunk})
            )
            for _ in range(pad - 2):
                data = {
                    "turn": turn,
                    "step": step,
                    "chunk": {"type": "text-delta", "index": 9, "text": " ok"},
                }
                if pad - 2 < 3:
                    out.append(self.event(st, "assistant/chunk", data))
            if pad - 2 >= 3:
                members = [" ok"] * (pad - 2)
                for i in range(0, len(members), _ROW_MAX):
                    part = members[i : i + _ROW_MAX]
                    if len(part) < 3:
                        for _ in part:
                            data = {
                                "turn": turn,
                                "step": step,
                                "chunk": {"type": "text-delta", "index": 9, "text": " ok"},
                            }
                            out.append(self.event(st, "assistant/chunk", data))
                        continue
                    data = {
                        "turn": turn,
                        "step": step,
                        "index": 9,
                        "dt": [0] * (len(part) - 1),
                        "texts": part,
                    }
                    out.append(
                        _dumps(
                            {"type": "text-chunks", "seq0": st.seq, "time0": st.time, "data": data}
                        )
                    )
                    st.seq += len(part)
            chunk = {"type": "block-end", "index": 9}
            out.append(
                self.event(st, "assistant/chunk", {"turn": turn, "step": step, "chunk": chunk})
            )
        roll = rng.random()
        if roll < 0.03:
            reason: dict[str, Any] = {"kind": "error", "error": {"message": "provider timeout"}}
        elif roll < 0.06:
            reason = {"kind": "aborted", "reason": {"kind": "user"}}
        else:
            reason = {"kind": "completed"}
        out.append(self.event(st, "turn/end", {"turn": turn, "reason": reason}))
        st.turn += 1
        return out


def header_line(session_id: str, **fields: Any) -> bytes:
    """A dsh header line."""
    obj: dict[str, Any] = {"type": "session", "version": 0, "id": session_id}
    obj["createdAt"] = fields.pop("createdAt", _BASE_TIME)
    obj["cwd"] = fields.pop("cwd", _CWD)
    obj.update(fields)
    return _dumps(obj)


@dataclass(frozen=True)
class BigLog:
    """What `write_big_log` wrote."""

    path: Path
    events: int
    turns: int
    size: int
    #: Byte offset just past each turn (header first): the zstd copy's frame cuts.
    turn_offsets: tuple[int, ...]


def write_big_log(path: Path, events: int = 1_000_000, seed: int = 4) -> BigLog:
    """Write a raw session of exactly `events` events (all turns closed).

    Turns have 3–6 steps with 25–75 reasoning deltas per step, so a million
    events make roughly 2,000–2,500 turns and 100–150 MB.
    """
    rng = random.Random(seed)
    maker = _TurnMaker(rng)
    st = _State(seq=0, time=_BASE_TIME, turn=1)
    offsets: list[int] = []
    written = 0
    with open(path, "wb") as fh:
        line = header_line("big-session-0001")
        fh.write(line)
        written += len(line)
        offsets.append(written)
        while st.seq < events:
            steps = rng.randrange(3, 7)
            reasoning = rng.randrange(25, 75)
            probe = _State(st.seq, st.time, st.turn)
            saved = rng.getstate()
            lines = maker.turn(probe, steps, reasoning)
            if events - probe.seq < 700:
                # The last turn: a minimal one, padded with reasoning deltas to hit
                # the event count exactly.
                rng.setstate(saved)
                probe = _State(st.seq, st.time, st.turn)
                maker.turn(probe, steps, 5)
                pad = events - probe.seq
                rng.setstate(saved)
                probe = _State(st.seq, st.time, st.turn)
                lines = maker.turn(probe, steps, 5, pad=pad)
            chunk = b"".join(lines)
            fh.write(chunk)
            written += len(chunk)
            offsets.append(written)
            st = probe
    return BigLog(path, st.seq, st.turn - 1, written, tuple(offsets))


class TurnWriter:
    """Appends whole turns to a raw log that `write_big_log` made (live benchmark)."""

    def __init__(self, log: BigLog, seed: int = 99) -> None:
        self.path = log.path
        self.maker = _TurnMaker(random.Random(seed))
        self.state = _State(seq=log.events, time=_BASE_TIME + 10**9, turn=log.turns + 1)

    def next_turn(self) -> tuple[bytes, int]:
        """The bytes of the next turn and the seq of its `turn/end`."""
        chunk = b"".join(self.maker.turn(self.state, 2, 20))
        return chunk, self.state.seq - 1

    def append(self, chunk: bytes) -> None:
        """Append one durable batch (one write call, like dsh's appender)."""
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, chunk)
        finally:
            os.close(fd)


def write_zstd_copy(log: BigLog, path: Path, level: int = 3) -> int:
    """The same log as multi-frame zstd: header frame, then one frame per turn."""
    cctx = zstandard.ZstdCompressor(level=level, write_checksum=True, threads=0)
    size = 0
    with open(log.path, "rb") as src, open(path, "wb") as out:
        prev = 0
        for end in log.turn_offsets:
            frame = cctx.compress(src.read(end - prev))
            out.write(frame)
            size += len(frame)
            prev = end
    return size


def _encode_id(sid: str) -> str:
    return sid  # generated ids use only safe characters


def _project_dir(k: int) -> str:
    return f"--home-dev-project{k:02d}--"


@dataclass(frozen=True)
class WideRoot:
    """What `write_wide_root` wrote."""

    path: Path
    sessions: int
    forks: int
    subagents: int
    bytes: int


def write_wide_root(root: Path, sessions: int = 10_000, seed: int = 7) -> WideRoot:
    """Ten thousand ~50-event sessions in the dsh layout, with lineage.

    About 15% are user forks of an earlier session (header `parentSession` +
    `seedLength`, the parent's first events copied verbatim as the seed) and 15%
    subagent children (`parentSession`, `origin: subagent`, no seed).
    """
    rng = random.Random(seed)
    maker = _TurnMaker(rng)
    maker.result_min, maker.result_spread = 100, 4.0  # small tool results: wide, not deep
    made: list[tuple[str, str, list[bytes], list[int]]] = []  # id, cwd, lines, ends
    forks = subagents = total = 0
    for i in range(sessions):
        sid = f"{rng.getrandbits(32):08x}-{i:05d}-4000-8000-{rng.getrandbits(48):012x}"
        project = rng.randrange(40)
        cwd = f"/home/dev/project{project:02d}"
        fields: dict[str, Any] = {"cwd": cwd, "createdAt": _BASE_TIME + i * 60_000}
        seed_lines: list[bytes] = []
        st = _State(seq=0, time=_BASE_TIME + i * 60_000, turn=1)
        roll = rng.random()
        if made and roll < 0.15:
            pid, pcwd, plines, pends = made[rng.randrange(max(0, len(made) - 500), len(made))]
            cut = rng.randrange(len(pends))
            fields.update(cwd=pcwd, parentSession=pid, seedLength=pends[cut] + 1)
            fields["delegationDepth"] = 0
            # The seed: the parent's records through its turn/end at `cut`.
            for line in plines:
                seed_lines.append(line)
                if (
                    line.startswith(b'{"type":"turn/end"')
                    and orjson.loads(line)["seq"] == pends[cut]
                ):
                    break
            st = _State(seq=pends[cut] + 1, time=st.time, turn=cut + 2)
            forks += 1
        elif made and roll < 0.30:
            pid, pcwd, _, _ = made[rng.randrange(max(0, len(made) - 500), len(made))]
            fields.update(cwd=pcwd, parentSession=pid, origin="subagent", delegationDepth=1)
            subagents += 1
        else:
            fields["delegationDepth"] = 0
        lines = list(seed_lines)
        ends: list[int] = []
        target = st.seq + rng.randrange(40, 60)
        while st.seq < target:
            lines.extend(maker.turn(st, 2, 3))
            ends.append(st.seq - 1)
        cwd = fields["cwd"]
        folder = root / _project_dir(int(cwd[-2:])) / _encode_id(sid)
        folder.mkdir(parents=True, exist_ok=True)
        body = header_line(sid, **fields) + b"".join(lines)
        (folder / "session.jsonl").write_bytes(body)
        total += len(body)
        if fields.get("origin") is None:
            all_ends = [e for e in _turn_end_seqs(lines)]
            made.append((sid, cwd, lines, all_ends))
    return WideRoot(root, sessions, forks, subagents, total)


def _turn_end_seqs(lines: list[bytes]) -> list[int]:
    return [orjson.loads(x)["seq"] for x in lines if x.startswith(b'{"type":"turn/end"')]
