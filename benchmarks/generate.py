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
- `v5_twin_log` / `v5_twin_root`: the V5 twins of those inputs (dsh's current
  format: one event per row, chunks folded into `assistant/message.data.stream`,
  `isSeeded` headers, tool-role results), streamed line by line; `V5TurnWriter`
  appends turns to a twin.

Everything derives from `random.Random(seed)`, so a run is reproducible.
"""

from __future__ import annotations

import io
import os
import random
from array import array
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson
import zstandard
from turnline.core.formats import HEADER_ORDER

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


# -- V5 twins ---------------------------------------------------------------------------
#
# dsh's current format (V5, TnzGit's line; V2+ framing) differs from the v0 logs above
# in framing, not in sessions: one event per row with `seq` dense from 0, no packed
# rows and no `assistant/chunk` events (a reply's chunks are folded into its
# `assistant/message.data.stream`, or an `assistant/attempt` when no message claims
# them), a closed header with `isSeeded` instead of `seedLength` (the seed ends with
# `session/end-seed {"inherited": true}`), and `role: "tool"` tool results
# (docs/formats.md; the fact sheet's §4–§8). The converter below turns the generated
# v0 inputs into their V5 twins, streaming, so the big log never sits in memory.

V5: Final = 5
#: v0 packed row tag → (the delta chunk type it packs, its member array key).
_PACKED: Final = {
    "text-chunks": ("text-delta", "texts"),
    "reasoning-chunks": ("reasoning-delta", "texts"),
    "tool-call-chunks": ("tool-call-delta", "args"),
}
_DELTA_TAG: Final = {
    "text-delta": ("text-chunks", "text"),
    "reasoning-delta": ("reasoning-chunks", "text"),
    "tool-call-delta": ("tool-call-chunks", "argumentsDelta"),
}
_SURFACE: Final = frozenset(("user/message", "assistant/message", "tool/result"))
_STEP_CLOSERS: Final = frozenset(("step/end", "llm/retry", "llm/retry-started"))
_ENVELOPE: Final = ("type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs")


def v5_header(header: dict[str, Any]) -> dict[str, Any]:
    """A v0 header as V5's closed key set: `isSeeded` for `seedLength`, version 5."""
    fields = dict(header)
    fields["version"] = V5
    fields["isSeeded"] = header.get("seedLength") is not None
    fields.setdefault("createdAt", 0)
    fields.setdefault("delegationDepth", 0)
    return {k: fields[k] for k in HEADER_ORDER if k in fields}


class _Group:
    """One (turn, step)'s chunks, packed as dsh's embedded stream members."""

    __slots__ = ("key", "last", "stream", "terminal", "usage")

    def __init__(self, key: tuple[Any, Any]) -> None:
        self.key = key
        self.stream: list[dict[str, Any]] = []
        self.terminal = False  # a `finish` chunk ended it
        self.usage: Any = None
        self.last = 0  # time of the last member

    def delta(self, kind: str, time: int, chunk: dict[str, Any], values: list[Any]) -> None:
        """Add a run of deltas (`values`, the first at `time`, the rest after `chunk`'s
        `dt`) and join it to the previous member when dsh's accumulator would: the same
        run type and index (and, for a tool call, the same id and name)."""
        tag, _ = _DELTA_TAG[kind]
        key = "args" if tag == "tool-call-chunks" else "texts"
        dt: list[int] = chunk.get("dt", [])
        prev = self.stream[-1] if self.stream else None
        if (
            prev is not None
            and prev["type"] == tag
            and prev["index"] == chunk.get("index")
            and (
                tag != "tool-call-chunks"
                or (prev["id"] == chunk.get("id") and prev.get("name") == chunk.get("name"))
            )
        ):
            prev["dt"].append(time - self.last)
            prev["dt"].extend(dt)
            prev[key].extend(values)
        else:
            member: dict[str, Any] = {"type": tag, "time0": time, "index": chunk.get("index")}
            member["dt"] = list(dt)
            if tag == "tool-call-chunks":
                member["id"] = chunk.get("id")
                if chunk.get("name") is not None:
                    member["name"] = chunk["name"]
            member[key] = list(values)
            self.stream.append(member)
        self.last = time + sum(dt)


class V5Converter:
    """Turns the lines of a v0 log (as `write_big_log` / `write_wide_root` write them)
    into the lines of its V5 twin, one line at a time (`feed`, then `close`).

    - packed rows are expanded into their chunks, and each (turn, step)'s chunk group
      (closed by `finish`) is folded into the `assistant/message` of that (turn, step)
      that follows (`data.stream`, its usage chunk also as `data.usage`); a group no
      message claims before its step or turn ends becomes an `assistant/attempt
      {turn, step, stream}` at its last chunk's place;
    - seqs are renumbered densely from `seq`, and `session/title.messageSeqs` and
      `sourceEventSeqs` follow (a message's own `sourceEventSeqs`, which cite chunks,
      go with them);
    - the header becomes V5's; a seeded child's `session/end-seed` at `seedLength`
      becomes `{"inherited": true}`, or one is inserted there;
    - `tool/result` messages become `role: "tool"` messages; surface events carry
      `surfaceOp` (`"append"` unless they had one).

    `header=False` starts without a header line (appending to a twin), at V5 seq `seq`.
    """

    def __init__(self, *, seq: int = 0, header: bool = True) -> None:
        self.seq = seq
        self.want_header = header
        self.seed_length: int | None = None
        self.marked = True
        self.group: _Group | None = None
        self.held: list[dict[str, Any]] = []  # events after the open group's last chunk
        self.old = array("q")  # v0 seq → V5 seq of every event kept (both increasing)
        self.new = array("q")
        self.time = 0
        self.out: list[bytes] = []

    # -- input ---------------------------------------------------------------------------

    def feed(self, line: bytes) -> list[bytes]:
        """The V5 lines that this v0 line completes (maybe none yet, maybe several)."""
        if not line.strip():
            return []
        obj = orjson.loads(line)
        if self.want_header:
            self.want_header = False
            seed = obj.get("seedLength")
            if type(seed) is int:
                self.seed_length, self.marked = seed, False
            self.out.append(_dumps(v5_header(obj)))
            return self._take()
        kind = obj.get("type")
        packed = _PACKED.get(kind)
        if packed is not None:
            data = obj["data"]
            self._chunk_group(data, obj.get("time0", 0))
            assert self.group is not None
            self.group.delta(packed[0], obj.get("time0", 0), data, data[packed[1]])
        elif kind == "assistant/chunk":
            data = obj["data"]
            self._chunk_group(data, obj["time"])
            group = self.group
            assert group is not None
            chunk = data.get("chunk") or {}
            ctype = chunk.get("type")
            if ctype in _DELTA_TAG:
                value = chunk.get(_DELTA_TAG[ctype][1])
                group.delta(ctype, obj["time"], chunk, [value])
            else:
                group.stream.append({"type": "chunk", "time": obj["time"], "chunk": chunk})
                group.last = obj["time"]
                if ctype == "usage":
                    group.usage = chunk.get("usage")
                elif ctype == "finish":
                    group.terminal = True
        else:
            self._event(obj)
        return self._take()

    def close(self) -> list[bytes]:
        """The lines still held: an open group as an attempt; a missing seed marker."""
        if self.group is not None:
            self._attempt()
        self._release()
        if not self.marked:
            self._marker(self.time)
        return self._take()

    def _take(self) -> list[bytes]:
        out, self.out = self.out, []
        return out

    # -- grouping ------------------------------------------------------------------------

    def _chunk_group(self, data: dict[str, Any], time: int) -> None:
        key = (data.get("turn"), data.get("step"))
        group = self.group
        if group is not None and (group.key != key or group.terminal):
            self._attempt()
            group = None
        self._release()  # events between two chunks of a group come before it
        if group is None:
            self.group = _Group(key)

    def _event(self, obj: dict[str, Any]) -> None:
        group = self.group
        if group is None:
            self._emit(obj)
            return
        kind = obj.get("type")
        data = obj.get("data")
        data = data if type(data) is dict else {}
        key = (data.get("turn"), data.get("step"))
        if kind == "assistant/message" and key == group.key:
            self._release()
            self.group = None
            data["stream"] = group.stream
            if group.usage is not None and "usage" not in data:
                data["usage"] = group.usage
            obj.pop("sourceEventSeqs", None)  # it cited the chunks
            self._emit(obj)
        elif (kind == "turn/end" and data.get("turn") == group.key[0]) or (
            kind in _STEP_CLOSERS and key == group.key
        ):
            self._attempt()
            self._release()
            self._emit(obj)
        else:
            self.held.append(obj)

    def _attempt(self) -> None:
        group = self.group
        assert group is not None
        self.group = None
        data = {"turn": group.key[0], "step": group.key[1], "stream": group.stream}
        self._write({"type": "assistant/attempt", "seq": 0, "time": group.last, "data": data})

    def _release(self) -> None:
        held, self.held = self.held, []
        for obj in held:
            self._emit(obj)

    # -- output --------------------------------------------------------------------------

    def _map(self, seq: Any) -> int | None:
        if type(seq) is not int:
            return None
        i = bisect_left(self.old, seq)
        return self.new[i] if i < len(self.old) and self.old[i] == seq else None

    def _marker(self, time: int) -> None:
        self.marked = True
        self._write(
            {"type": "session/end-seed", "seq": 0, "time": time, "data": {"inherited": True}}
        )

    def _emit(self, obj: dict[str, Any]) -> None:
        old = obj.get("seq")
        kind = obj.get("type")
        data = obj.get("data")
        if not self.marked and type(old) is int and old >= (self.seed_length or 0):
            if kind == "session/end-seed" and old == self.seed_length:
                self.marked = True
                obj["data"] = {"inherited": True}
            else:
                self._marker(obj["time"])
        if type(data) is dict:
            if kind == "tool/result":
                data["message"] = _tool_role(data.get("message"))
            elif kind == "session/title" and type(data.get("messageSeqs")) is list:
                data["messageSeqs"] = self._remap(data["messageSeqs"])
            elif kind == "assistant/message":
                data.setdefault("stream", [])
                obj.pop("sourceEventSeqs", None)
        if kind in _SURFACE:
            obj.setdefault("surfaceOp", "append")
        if "sourceEventSeqs" in obj:
            obj["sourceEventSeqs"] = _runs(self._remap(obj["sourceEventSeqs"]))
        if type(old) is int:
            self.old.append(old)
            self.new.append(self.seq)
        self._write(obj)

    def _remap(self, seqs: list[Any]) -> list[int]:
        out: list[int] = []
        for item in seqs:
            olds = range(item[0], item[1] + 1) if type(item) is list else (item,)
            out.extend(s for s in map(self._map, olds) if s is not None)
        return out

    def _write(self, obj: dict[str, Any]) -> None:
        obj["seq"] = self.seq
        self.seq += 1
        self.time = obj.get("time", self.time)
        row = {k: obj[k] for k in _ENVELOPE if k in obj}
        row.update(obj)
        self.out.append(_dumps(row))


def _tool_role(message: Any) -> Any:
    """A v0 user-role tool-result wrapper as V4+'s `role: "tool"` message."""
    if type(message) is not dict or message.get("role") == "tool":
        return message
    parts = message.get("content")
    part = parts[0] if type(parts) is list and len(parts) == 1 else {}
    call = part.get("toolCallId")
    content = part.get("content")
    if type(content) is str:
        content = [{"type": "text", "text": content}]
    return {
        "role": "tool",
        "toolCallId": call,
        "content": content,
        "isError": part.get("isError") is True,
        "id": message.get("id") or f"tool-result-{call}",
        "source": {"kind": "tool", "callId": call},
    }


def _runs(seqs: list[int]) -> list[Any]:
    """dsh's storage form of `sourceEventSeqs`: runs of ≥ 3 consecutive seqs as pairs."""
    out: list[Any] = []
    i = 0
    while i < len(seqs):
        j = i
        while j + 1 < len(seqs) and seqs[j + 1] == seqs[j] + 1:
            j += 1
        if j - i >= 2:
            out.append([seqs[i], seqs[j]])
        else:
            out.extend(seqs[i : j + 1])
        i = j + 1
    return out


def v5_name(name: str) -> str:
    """`session.jsonl[.zstd]` → `session.v5.jsonl[.zstd]`."""
    return name.replace("session.jsonl", "session.v5.jsonl", 1)


def _v0_lines(src: Path) -> Iterator[bytes]:
    with open(src, "rb") as raw:
        if src.name.endswith(".zstd"):
            reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
            yield from io.BufferedReader(reader, 1 << 20)  # type: ignore[arg-type]
        else:
            yield from raw


def v5_twin_log(src: Path, dst: Path) -> int:
    """Write the V5 twin of the v0 log `src` to `dst` (a `.zstd` name: compressed like
    `write_zstd_copy`, a header frame then one frame per turn); returns its size.

    Streams: memory holds one step's chunks, not the log."""
    conv = V5Converter()
    size = 0
    if not dst.name.endswith(".zstd"):
        with open(dst, "wb", buffering=1 << 20) as out:
            for line in _v0_lines(src):
                for row in conv.feed(line):
                    out.write(row)
                    size += len(row)
            for row in conv.close():
                out.write(row)
                size += len(row)
        return size
    cctx = zstandard.ZstdCompressor(level=3, write_checksum=True, threads=0)
    batch: list[bytes] = []
    with open(dst, "wb") as out:

        def flush() -> None:
            nonlocal size
            if batch:
                frame = cctx.compress(b"".join(batch))
                out.write(frame)
                size += len(frame)
                batch.clear()

        for k, line in enumerate(_v0_lines(src)):
            batch.extend(conv.feed(line))
            if k == 0 or line.startswith(b'{"type":"turn/end"'):
                flush()  # the header frame; one frame per turn (a durable batch)
        batch.extend(conv.close())
        flush()
    return size


def _twin_one(job: tuple[str, str]) -> int:
    return v5_twin_log(Path(job[0]), Path(job[1]))


def v5_twin_root(src_root: Path, dst_root: Path, *, workers: int | None = None) -> int:
    """The V5 twin of a root `write_wide_root` (or any v0 root) made: the same folders,
    each `session.jsonl[.zstd]` as `session.v5.jsonl[.zstd]`. Returns the bytes written.
    Sessions are converted in a process pool (each alone, so the result does not
    depend on the order)."""
    jobs: list[tuple[str, str]] = []
    for folder, dirs, files in os.walk(src_root):
        dirs.sort()
        rel = Path(folder).relative_to(src_root)
        for name in sorted(files):
            if name in ("session.jsonl", "session.jsonl.zstd"):
                (dst_root / rel).mkdir(parents=True, exist_ok=True)
                jobs.append((os.path.join(folder, name), str(dst_root / rel / v5_name(name))))
    if len(jobs) < 64 or workers == 1:
        return sum(map(_twin_one, jobs))
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers) as pool:
        return sum(pool.map(_twin_one, jobs, chunksize=64))


class V5TurnWriter(TurnWriter):
    """`TurnWriter` for a V5 twin: the same turns, converted as `V5Converter` does."""

    def __init__(self, log: BigLog, seed: int = 99) -> None:
        super().__init__(log, seed)
        self.conv = V5Converter(seq=log.events, header=False)

    def next_turn(self) -> tuple[bytes, int]:
        out: list[bytes] = []
        for line in self.maker.turn(self.state, 2, 20):
            out.extend(self.conv.feed(line))
        out.extend(self.conv.close())
        return b"".join(out), self.conv.seq - 1


def turn_writer(log: BigLog, version: int | None, seed: int = 99) -> TurnWriter:
    """The writer that appends turns in the log's own format version."""
    return V5TurnWriter(log, seed) if version == V5 else TurnWriter(log, seed)
