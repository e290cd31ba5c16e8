"""Turn a v0 dsh session log into its twin of a later format version, step by adjacent step.

dsh (deepseek-harness) migrates an old session log through adjacent edges v0→v1→…→v5→v6.
This module redoes those edges in Python, from dsh's own descriptions of them: the demo writes
part of its root in dsh's current format with it, and the tests make every real V0 log's twins
(which turnline must read as it reads the original). It is a model of dsh, kept apart from
turnline's reader (`core.formats`, `core.codec`): it only takes from the core the V0 reader and
the names both sides must agree on. No dsh code is copied; each rule names where it was read
("[S18]" etc. are the source keys of the fact sheet ``shared/docs/dsh-format-generations.md``):

- v0→v1: zsagi1368/deepseek-harness-zDSH packages/session/session-format-v0-to-v1/src/migration.ts
  @1dd6c6a308f1db1d57f6d117d673e73f00072b68 [S18] and its README [S16].
- v1→v2: .../session-format-v1-to-v2/src/migration.ts @3a10855f190d197730ab05c78ead712e519191e7
  [S21], its README @1dd6c6a3 [S19], and the stream packing of ``AssistantStreamAccumulator``
  (packages/llm, same repository).
- v2→v3: .../session-format-v2-to-v3/README.md @a18d8a996c0e6a0f28f0d65d21966ed46039515e [S22].
- v3→v4: TnzGit/deepseek-harness packages/session/session-format-v3-to-v4/README.md
  @c5e3fc5870af9044697cf3bc0d64413ec771f2d3 [S4].
- v4→v5: TnzGit/deepseek-harness packages/session/session-format-v4-to-v5/README.md and
  src/codec.ts @c5e3fc58 [S2][S3]: the header version is the only change.

dsh refuses to migrate some logs (its migrators validate strictly). turnline's fixtures are real
logs with warts, so where dsh would refuse, each step does the closest faithful thing instead and,
when the caller passes a ``notes`` list, appends one line saying what it bent and why. Every step
is a pure function: it never mutates its input.

A :data:`Log` is ``(header, rows)``. For v0 and v1 the rows are the logical events (packed chunk
rows already expanded into ``assistant/chunk`` events by turnline's reader); from v2 on they are
the physical rows, one event per row, with ``seq`` dense from 0 and equal to the row index.
``sourceEventSeqs`` is kept in dsh's storage form: runs of three or more consecutive seqs are
written as ``[start, end]`` pairs [S20][S25].
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import zstandard
from turnline.core.formats import (
    HEADER_ORDER,
    RENAMED_PLUGINS,
    SAME_NAME_PRODUCERS,
    SYSTEM_PROMPT_PLUGIN,
)
from turnline.core.logfile import read_log

Log = tuple[dict[str, Any], list[dict[str, Any]]]
"""A session log: the header dict and the event rows (dicts in persisted form)."""

Notes = list[str] | None
"""Where a step records the rules it had to bend, or None to record nothing."""

#: The V2+ header's closed key set, in the order dsh writes it [S20][S1].
HEADER_KEYS_V2 = HEADER_ORDER


#: The surface event types, which from V3 on must carry ``surfaceOp`` [S14][S22].
SURFACE_TYPES = frozenset({"system/message", "user/message", "assistant/message", "tool/result"})

#: Rows per zstd frame after the header frame in :func:`write_log`.
ROWS_PER_FRAME = 64

#: Content block kinds the released V2/V3 audit admits [S22]; V3→V4 renames others [S4].
_KNOWN_BLOCKS = frozenset({"text", "reasoning", "image", "file", "tool-call", "tool-result"})


# --------------------------------------------------------------------------- helpers


def _note(notes: Notes, message: str) -> None:
    if notes is not None:
        notes.append(message)


def _obj(value: Any) -> dict[str, Any]:
    """The value if it is a JSON object, else an empty dict (for tolerant reads)."""
    return value if isinstance(value, dict) else {}


def expand_seqs(value: Any) -> list[int]:
    """Expand a stored ``sourceEventSeqs`` list: ``[start, end]`` pairs become inclusive runs.

    Args:
        value: The stored list (seqs and pairs), or anything else (read as empty).

    Returns:
        The plain list of seqs.
    """
    out: list[int] = []
    if not isinstance(value, list):
        return out
    for member in value:
        if isinstance(member, list) and len(member) == 2:
            out.extend(range(int(member[0]), int(member[1]) + 1))
        elif isinstance(member, int) and not isinstance(member, bool):
            out.append(member)
    return out


def compress_seqs(seqs: list[int]) -> list[Any]:
    """Store a seq list the way dsh's writer does: runs of three or more become pairs.

    dsh range-encodes only strictly increasing lists (a reader refuses pairs in any other
    list [S20][S25]), so an unsorted list such as ``[17, 18, 8, 9]`` stays verbatim.

    Args:
        seqs: Plain seqs.

    Returns:
        The storage form.
    """
    if any(b <= a for a, b in itertools.pairwise(seqs)):
        return list(seqs)
    out: list[Any] = []
    i = 0
    while i < len(seqs):
        j = i
        while j + 1 < len(seqs) and seqs[j + 1] == seqs[j] + 1:
            j += 1
        if j - i + 1 >= 3:
            out.append([seqs[i], seqs[j]])
        else:
            out.extend(seqs[i : j + 1])
        i = j + 1
    return out


def _expanded(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Deep copies of the rows with ``sourceEventSeqs`` expanded to plain seqs."""
    out = []
    for row in rows:
        new = copy.deepcopy(row)
        if "sourceEventSeqs" in new:
            new["sourceEventSeqs"] = expand_seqs(new["sourceEventSeqs"])
        out.append(new)
    return out


def _stored(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with ``sourceEventSeqs`` put back into storage form (in place)."""
    for row in rows:
        if "sourceEventSeqs" in row:
            row["sourceEventSeqs"] = compress_seqs(expand_seqs(row["sourceEventSeqs"]))
    return rows


def _remap_row(row: dict[str, Any], f: Callable[[int, str], int]) -> None:
    """Rewrite every declared same-session seq reference of one row through ``f`` (in place).

    The declared references are those dsh's edges remap [S21][S22][S4]: ``sourceEventSeqs``, the
    surface replacement endpoints (``start/end`` before V3, ``startSeq/endSeq`` after),
    ``command/done.sourceEventSeq``, compaction ``shadowedRange``/``shadowedSeqs``, title
    ``messageSeqs``, ``image/offload.targets[].seq`` and ``developer/message.headerSeq``.
    """
    label = f"{row.get('type')} {row.get('seq')}"
    if "sourceEventSeqs" in row:
        row["sourceEventSeqs"] = [f(s, label) for s in expand_seqs(row["sourceEventSeqs"])]
    op = row.get("surfaceOp")
    if isinstance(op, dict):
        for key in ("start", "end", "startSeq", "endSeq"):
            if isinstance(op.get(key), int):
                op[key] = f(op[key], label)
    data = row.get("data")
    if not isinstance(data, dict):
        return
    kind = row.get("type")
    if kind == "command/done" and isinstance(data.get("sourceEventSeq"), int):
        data["sourceEventSeq"] = f(data["sourceEventSeq"], label)
    elif kind in ("compaction/summary", "compaction/prune"):
        rng = data.get("shadowedRange")
        if isinstance(rng, dict):
            for key in ("start", "end"):
                if isinstance(rng.get(key), int):
                    rng[key] = f(rng[key], label)
        if isinstance(data.get("shadowedSeqs"), list):
            data["shadowedSeqs"] = [
                f(s, label) if isinstance(s, int) else s for s in data["shadowedSeqs"]
            ]
    elif kind in ("session/title", "session/title-llm-request"):
        if isinstance(data.get("messageSeqs"), list):
            data["messageSeqs"] = [
                f(s, label) if isinstance(s, int) else s for s in data["messageSeqs"]
            ]
    elif kind == "image/offload" and isinstance(data.get("targets"), list):
        for target in data["targets"]:
            if isinstance(target, dict) and isinstance(target.get("seq"), int):
                target["seq"] = f(target["seq"], label)
    elif kind == "developer/message" and isinstance(data.get("headerSeq"), int):
        data["headerSeq"] = f(data["headerSeq"], label)


def _mapper(
    old_to_new: dict[int, int], notes: Notes, what: str, fallback: dict[int, int] | None = None
) -> Callable[[int, str], int]:
    """A seq mapping that never raises: unknown seqs go to the nearest earlier mapped event.

    dsh refuses a reference it cannot map [S21]; a real log with a dangling reference still has
    to produce a twin, so the reference is bent to the nearest earlier surviving event.
    """
    known = sorted(old_to_new)

    def f(seq: int, label: str) -> int:
        if seq in old_to_new:
            return old_to_new[seq]
        if fallback is not None and seq in fallback:
            _note(notes, f"{what}: {label} cites consumed chunk {seq}; redirected to its owner")
            return fallback[seq]
        earlier = [s for s in known if s < seq]
        target = old_to_new[earlier[-1]] if earlier else 0
        _note(notes, f"{what}: {label} cites unknown seq {seq}; bent to {target}")
        return target

    return f


def _renumber(
    rows: list[dict[str, Any]], old_seqs: list[int | None], what: str, notes: Notes
) -> None:
    """Give rows dense seqs and remap their references (in place).

    Args:
        rows: The rows in their final order.
        old_seqs: For each row its seq before the change, or None for an inserted row.
        what: The step's name, for notes.
        notes: Where to record bent references.
    """
    old_to_new = {old: new for new, old in enumerate(old_seqs) if old is not None}
    f = _mapper(old_to_new, notes, what)
    for new, row in enumerate(rows):
        _remap_row(row, f)
        row["seq"] = new


def _repair_restarts(rows: list[dict[str, Any]], what: str, notes: Notes) -> int:
    """Close a turn a legacy restart left open, as V1→V2 and V3→V4 do [S19][S4] (in place).

    The one pattern: an open turn with no open step, then a non-empty ``agent/inbox/spliced``
    for ``next-turn``, then directly the next numbered ``turn/start``. A ``turn/end`` with
    reason ``interrupted`` goes right before that ``turn/start``, with its time. Open tails stay
    open. The rows must have dense seqs; inserted rows shift and remap the later ones.

    Returns:
        How many ``turn/end`` rows were inserted.
    """
    out: list[dict[str, Any]] = []
    old: list[int | None] = []
    open_turn: Any = None
    open_step = False
    inserted = 0
    for row in rows:
        kind = row.get("type")
        data = _obj(row.get("data"))
        if kind == "turn/start":
            turn = data.get("turn")
            prev = out[-1] if out else None
            prev_data = _obj(prev.get("data")) if prev else {}
            if (
                isinstance(open_turn, int)
                and isinstance(turn, int)
                and not open_step
                and turn == open_turn + 1
                and prev is not None
                and prev.get("type") == "agent/inbox/spliced"
                and prev_data.get("target") == "next-turn"
                and isinstance(prev_data.get("inserted"), list)
                and len(prev_data["inserted"]) > 0
            ):
                out.append(
                    {
                        "type": "turn/end",
                        "seq": -1,
                        "time": row.get("time"),
                        "data": {"turn": open_turn, "reason": {"kind": "interrupted"}},
                    }
                )
                old.append(None)
                inserted += 1
            open_turn = turn
            open_step = False
        elif kind == "turn/end":
            open_turn = None
            open_step = False
        elif kind == "step/start":
            open_step = True
        elif kind == "step/end":
            open_step = False
        out.append(row)
        old.append(row.get("seq"))
    if inserted:
        _renumber(out, old, what, notes)
        rows[:] = out
    return inserted


# --------------------------------------------------------------------------- reading


def read_v0(path: Path) -> Log:
    """Read a v0 dsh log with turnline's reader.

    Packed chunk rows come back as ``assistant/chunk`` events. Only the events the reader
    returns are used; a log with problems migrates what was read.

    Args:
        path: The log file (raw or ``.zstd``).

    Returns:
        The header and the event rows.
    """
    contents = read_log(path)
    if contents.header is not None:
        header = copy.deepcopy(contents.header.to_json_dict())
    else:  # no usable header: migrate the events under a minimal one
        header = {"type": "session", "id": path.parent.name, "createdAt": 0}
    rows = [copy.deepcopy(event.to_json_dict()) for event in contents.events]
    return header, rows


# --------------------------------------------------------------------------- v0 -> v1


@dataclass
class _V1State:
    message_ids: dict[int, str] = field(default_factory=dict)
    retry_ids: dict[str, str] = field(default_factory=dict)
    compaction_id: str | None = None


def _legacy_id(session: str, seq: Any) -> str:
    return f"legacy-message:{session}:{seq}"


def _normalize_reason(reason: dict[str, Any]) -> dict[str, Any] | None:
    """The v1 form of a v0 ``turn/end`` reason, or None when it stays as is [S18]."""
    kind = reason.get("kind")
    if kind == "aborted" and "reason" not in reason:
        return {"kind": "aborted", "reason": {"kind": "legacy"}}
    if kind == "disposed":
        return {"kind": "aborted", "reason": {"kind": "disposed"}}
    if kind == "error" and "error" not in reason:
        failure = reason.get("failure")
        if isinstance(failure, dict):
            return {"kind": "error", "error": failure}
        code = reason.get("code")
        return {
            "kind": "error",
            "error": {
                "message": reason.get("message"),
                "code": code if isinstance(code, str) else "UNKNOWN",
            },
        }
    return None  # completed, blocked, max-tokens, interrupted, unknown kinds: unchanged


def _v1_event(row: dict[str, Any], session: str, state: _V1State, notes: Notes) -> dict[str, Any]:
    """One v0 event normalized to v1, in dsh's order of normalizations [S18]."""
    seq = row.get("seq")
    kind = row.get("type")
    if isinstance(kind, str) and kind.startswith("compact/"):
        kind = row["type"] = "compaction/" + kind.removeprefix("compact/")
    data = row.get("data")
    if not isinstance(data, dict):
        return row
    if kind in ("request/header-delta", "mode/set") or (
        kind == "request/header" and data.get("reason") == "fallback"
    ):
        # dsh refuses the whole log here; keep the event as it is so the twin exists.
        _note(notes, f"v0->v1: {kind} {seq} is a legacy form dsh refuses; kept unchanged")
    if kind == "turn/start" and "trigger" in data:
        row["data"] = data = {k: v for k, v in data.items() if k != "trigger"}
    if kind == "turn/end":
        reason = data.get("reason")
        if isinstance(reason, dict):
            new = _normalize_reason(reason)
            if new is not None:
                data["reason"] = new
        else:
            # dsh refuses a turn/end without a reason object; keep it so the turn count holds.
            _note(notes, f"v0->v1: turn/end {seq} has no reason object; kept unchanged")
    if kind == "request/header":
        header = data.get("header")
        if isinstance(header, dict) and "messagePrefix" in header:
            del header["messagePrefix"]
    if kind == "steering/message":
        row["type"] = kind = "user/message"
        if "message" in data:
            row["data"] = data = _obj(data["message"])
        else:
            message = {k: v for k, v in data.items() if k != "turn"}
            message["id"] = _legacy_id(session, seq)
            message["role"] = "user"
            row["data"] = data = message
    if kind == "llm/retry":
        chain = "\0".join(
            json.dumps(data.get(k)) for k in ("turn", "step", "provider", "policyKey")
        )
        retry_id = data.get("retryId")
        if isinstance(retry_id, str) and retry_id:
            state.retry_ids[chain] = retry_id
        elif "retryId" not in data:
            data["retryId"] = state.retry_ids.setdefault(chain, f"legacy-retry:{session}:{seq}")
    _v1_compaction(row, kind, data, session, state)
    _v1_message(row, kind, data, session, state)
    return row


def _v1_compaction(
    row: dict[str, Any], kind: Any, data: dict[str, Any], session: str, state: _V1State
) -> None:
    """Fill in missing compaction ids along one compaction [S18]."""
    if kind == "session/end-seed":
        state.compaction_id = None
    elif kind == "compaction/start":
        existing = data.get("compactionId")
        if isinstance(existing, str) and existing:
            state.compaction_id = existing
        elif "compactionId" not in data:
            state.compaction_id = data["compactionId"] = (
                f"legacy-compaction:{session}:{row.get('seq')}"
            )
    elif state.compaction_id is not None:
        if kind in ("compaction/summary", "compaction/end"):
            data.setdefault("compactionId", state.compaction_id)
            if kind == "compaction/end":
                state.compaction_id = None
        elif kind == "user/message":
            source = data.get("source")
            if (
                isinstance(source, dict)
                and source.get("kind") == "plugin"
                and source.get("plugin") == "compact"
                and "compactionId" not in source
            ):
                source["compactionId"] = state.compaction_id


def _v1_message(
    row: dict[str, Any], kind: Any, data: dict[str, Any], session: str, state: _V1State
) -> None:
    """Give legacy flat messages their v1 shapes and remember message ids [S18]."""
    seq = row.get("seq")
    if kind == "user/message":
        if not ({"id", "role", "message"} & data.keys()) and {"content", "source"} <= data.keys():
            data["id"] = _legacy_id(session, seq)
            data["role"] = "user"
    elif kind == "assistant/message":
        if "message" not in data and "content" in data and "provenance" in data:
            content = data.pop("content")
            source = _obj(data.pop("provenance"))
            data["message"] = {
                "id": _legacy_id(session, seq),
                "role": "assistant",
                "content": content,
                "source": {**source, "kind": "model"},
            }
    elif kind == "tool/result":
        call_id = data.get("callId")
        is_error = data.get("isError")
        if (
            "message" not in data
            and isinstance(call_id, str)
            and isinstance(is_error, bool)
            and "content" in data
        ):
            content = data.pop("content")
            del data["callId"], data["isError"]
            op = row.get("surfaceOp")
            start = op.get("start") if isinstance(op, dict) else None
            new_id = (
                _legacy_id(session, seq) if start is None else state.message_ids.get(start)
            ) or _legacy_id(session, seq)
            data["message"] = {
                "id": new_id,
                "role": "user",
                "content": [
                    {
                        "type": "tool-result",
                        "toolCallId": call_id,
                        "content": content,
                        "isError": is_error,
                    }
                ],
                "source": {"kind": "tool", "callId": call_id},
            }
    message_id: Any = (
        data.get("id") if kind == "user/message" else _obj(data.get("message")).get("id")
    )
    if isinstance(message_id, str) and isinstance(seq, int):
        state.message_ids[seq] = message_id


def v0_to_v1(log: Log, *, notes: Notes = None) -> Log:
    """Migrate a v0 log to v1: header version 1 plus dsh's legacy normalizations [S16][S18].

    Renames ``compact/*`` to ``compaction/*`` (filling in ``compactionId``) and
    ``steering/message`` to ``user/message``; gives legacy flat user, assistant and tool-result
    messages their wrapped shapes; normalizes the ``aborted``/``disposed``/``error`` verdicts of
    ``turn/end``; fills in ``llm/retry.retryId``; drops ``turn/start.trigger`` and
    ``request/header.header.messagePrefix``. A header without ``version`` is read as v0 and one
    without ``delegationDepth`` gets 0 (dsh's frozen decoder requires the key [S17]).

    Args:
        log: A v0 log.
        notes: Where to record bent rules.

    Returns:
        The v1 log (logical events; chunks stay top-level ``assistant/chunk`` events).
    """
    header = copy.deepcopy(log[0])
    if header.get("version", 0) != 0:
        _note(notes, f"v0->v1: header version {header.get('version')!r} is not 0; migrated anyway")
    header["version"] = 1
    header.setdefault("delegationDepth", 0)
    session = str(header.get("id"))
    state = _V1State()
    rows = [_v1_event(row, session, state, notes) for row in _expanded(log[1])]
    return header, _stored(rows)


# --------------------------------------------------------------------------- v1 -> v2


def pack_stream(chunks: Iterable[tuple[Any, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Compact one attempt's timed chunks into dsh's embedded stream records.

    This follows ``AssistantStreamAccumulator`` (zsagi1368/deepseek-harness-zDSH packages/llm):
    every text or reasoning delta joins the previous record when that is a run of the same type
    and index, else starts a run (a single delta is a run too, ``dt: []``, as in the V5
    snapshots). A tool-call delta joins the previous run of the same index and id only when both
    have the same ``name`` presence and value, so a name-bearing first delta is a run of its own;
    a delta with an empty id or an empty name stays a raw chunk. Every other chunk
    (block-start, block-end, usage, finish, anything unknown) is a raw ``{type:"chunk", time,
    chunk}`` record. ``dt`` holds the time gaps between members.

    Args:
        chunks: ``(time, chunk)`` pairs in stream order.

    Returns:
        The stream records.
    """
    records: list[dict[str, Any]] = []
    last_time: Any = None
    for time, chunk in chunks:
        kind = chunk.get("type")
        prev = records[-1] if records else None
        if kind in ("text-delta", "reasoning-delta"):
            run = "text-chunks" if kind == "text-delta" else "reasoning-chunks"
            if prev is not None and prev["type"] == run and prev["index"] == chunk.get("index"):
                prev["dt"].append(time - last_time)
                prev["texts"].append(chunk.get("text"))
            else:
                records.append(
                    {
                        "type": run,
                        "time0": time,
                        "index": chunk.get("index"),
                        "dt": [],
                        "texts": [chunk.get("text")],
                    }
                )
            last_time = time
            continue
        if kind == "tool-call-delta" and chunk.get("id") != "" and chunk.get("name", None) != "":
            same = (
                prev is not None
                and prev["type"] == "tool-call-chunks"
                and prev["index"] == chunk.get("index")
                and prev["id"] == chunk.get("id")
                and ("name" in prev) == ("name" in chunk)
                and prev.get("name") == chunk.get("name")
            )
            if same and prev is not None:
                prev["dt"].append(time - last_time)
                prev["args"].append(chunk.get("argumentsDelta"))
            else:
                record: dict[str, Any] = {
                    "type": "tool-call-chunks",
                    "time0": time,
                    "index": chunk.get("index"),
                    "dt": [],
                    "id": chunk.get("id"),
                }
                if "name" in chunk:
                    record["name"] = chunk["name"]
                record["args"] = [chunk.get("argumentsDelta")]
                records.append(record)
            last_time = time
            continue
        records.append({"type": "chunk", "time": time, "chunk": chunk})
    return records


@dataclass
class _Attempt:
    turn: Any
    step: Any
    chunks: list[dict[str, Any]] = field(default_factory=list)
    terminal: bool = False
    message_seq: int | None = None


def _collect_attempts(rows: list[dict[str, Any]], notes: Notes) -> list[_Attempt]:
    """Group chunks into attempts and bind each ``assistant/message`` to the one it cites [S21].

    An attempt is the chunks of one (turn, step), closed by ``finish``, by ``turn/end`` of its
    turn, or by ``step/end``/``llm/retry``/``llm/retry-started`` of its step. A message claims
    the attempt whose chunk seqs equal its ``sourceEventSeqs``; an explicit empty list or no
    list claims nothing.
    """
    attempts: list[_Attempt] = []
    current: dict[tuple[Any, Any], _Attempt] = {}
    chunk_seqs = {row.get("seq") for row in rows if row.get("type") == "assistant/chunk"}
    for row in rows:
        kind = row.get("type")
        data = _obj(row.get("data"))
        key = (data.get("turn"), data.get("step"))
        if kind == "assistant/chunk":
            group = current.get(key)
            if group is None or group.terminal:
                group = current[key] = _Attempt(*key)
                attempts.append(group)
            group.chunks.append(row)
            if _obj(data.get("chunk")).get("type") == "finish":
                group.terminal = True
            continue
        if kind == "turn/end":
            for group in current.values():
                if group.turn == data.get("turn"):
                    group.terminal = True
            continue
        if kind in ("step/end", "llm/retry", "llm/retry-started"):
            if key in current:
                current[key].terminal = True
            continue
        if kind != "assistant/message":
            continue
        seq = row.get("seq")
        sources = row.get("sourceEventSeqs")
        unclaimed = [
            g for g in attempts if g.message_seq is None and (g.turn, g.step) == key and g.chunks
        ]
        if isinstance(sources, list) and sources:
            match = [g for g in unclaimed if [c.get("seq") for c in g.chunks] == sources]
            if not match:
                # A log whose seqs have gaps (upstream normalised away packed rows) cites chunks
                # the reader never returned. dsh would refuse; the closest faithful reading is
                # the attempt made of the cited chunks that are present.
                present = [s for s in sources if s in chunk_seqs]
                match = [g for g in unclaimed if [c.get("seq") for c in g.chunks] == present]
                if match:
                    _note(
                        notes,
                        f"v1->v2: assistant/message {seq} cites missing chunks; bound "
                        "to the attempt of the cited chunks present",
                    )
            if match:
                match[0].message_seq = seq
                match[0].terminal = True
                continue
            # dsh refuses a message whose provenance is not one complete ordered attempt. The
            # cited chunks stay attempts (their usage still counts once) and the message gets an
            # empty stream.
            _note(notes, f"v1->v2: assistant/message {seq} cites no single complete attempt")
        elif unclaimed:
            # dsh refuses a message that does not cite the attempt of its own (turn, step);
            # the chunks become an assistant/attempt instead.
            _note(notes, f"v1->v2: assistant/message {seq} does not cite its chunk attempt")
        attempts.append(_Attempt(*key, terminal=True, message_seq=seq))
    return attempts


def _stream_of(group: _Attempt) -> list[dict[str, Any]]:
    return pack_stream(
        (c.get("time"), _obj(_obj(c.get("data")).get("chunk"))) for c in group.chunks
    )


def _header_v2(header: dict[str, Any], notes: Notes) -> dict[str, Any]:
    """The V2 header: the closed key set, ``isSeeded`` for ``seedLength`` [S20][S1]."""
    out: dict[str, Any] = {
        "type": "session",
        "version": 2,
        "id": header.get("id"),
        "createdAt": header.get("createdAt", 0),
    }
    for key in ("cwd", "parentSession"):
        if key in header:
            out[key] = header[key]
    out["isSeeded"] = header.get("seedLength") is not None
    if "origin" in header:
        out["origin"] = header["origin"]
    out["delegationDepth"] = header.get("delegationDepth", 0)
    if "agentPreset" in header:
        out["agentPreset"] = header["agentPreset"]
    dropped = sorted(set(header) - set(HEADER_KEYS_V2) - {"seedLength"})
    if dropped:
        # dsh's V2 header is a closed set; its v1 decoder would refuse these keys.
        _note(notes, f"v1->v2: header keys {dropped} are not in the V2 set; dropped")
    return out


def v1_to_v2(log: Log, *, notes: Notes = None) -> Log:
    """Migrate a v1 log to v2: chunks fold into streams, one event per row [S19][S21].

    Every ``assistant/chunk`` disappears: an attempt a message cites becomes that message's
    ``data.stream`` (the message loses ``sourceEventSeqs``), an attempt no message cites becomes
    an ``assistant/attempt {turn, step, stream}`` at its last chunk's position. Seqs become dense
    and every declared reference is remapped. The header becomes V2's closed key set. A seeded
    log marks its cut with ``session/end-seed {"inherited": true}``: the event at
    ``seq == seedLength`` if it is a ``session/end-seed``, else a new marker at the mapped cut
    with the next event's time. Then the bounded restart repair closes a turn a restart left
    open (see :func:`_repair_restarts`).

    Not done: the split of a legacy round-zero goal message into ``goal/change`` plus the
    message [S19]; its exact source shape was not read, and the fixtures' goal logs already
    carry ``goal/change`` events.

    Args:
        log: A v1 log.
        notes: Where to record bent rules.

    Returns:
        The v2 log.
    """
    header, rows = log[0], _expanded(log[1])
    attempts = _collect_attempts(rows, notes)
    by_chunk: dict[Any, _Attempt] = {}
    by_message: dict[Any, _Attempt] = {}
    for group in attempts:
        for chunk in group.chunks:
            by_chunk[chunk.get("seq")] = group
        if group.message_seq is not None:
            by_message[group.message_seq] = group

    seeded = header.get("seedLength") is not None
    cut = header.get("seedLength") if seeded else None
    staged: list[tuple[float, dict[str, Any]]] = []  # (origin seq, row)
    absorbed_by: dict[int, Any] = {}  # consumed chunk seq -> origin of the row holding it
    for row in rows:
        seq: Any = row.get("seq")
        owned = by_chunk.get(seq)
        if owned is not None:
            group = owned
            owner = group.message_seq if group.message_seq is not None else group.chunks[-1]["seq"]
            absorbed_by[seq] = owner
            if group.message_seq is None and seq == group.chunks[-1].get("seq"):
                last = group.chunks[-1]
                data = {"turn": group.turn, "step": group.step, "stream": _stream_of(group)}
                staged.append(
                    (
                        seq,
                        {
                            "type": "assistant/attempt",
                            "seq": seq,
                            "time": last.get("time"),
                            "data": data,
                        },
                    )
                )
            continue
        if seq in by_message:
            message = {k: v for k, v in row.items() if k != "sourceEventSeqs"}
            message["data"] = {**_obj(row.get("data")), "stream": _stream_of(by_message[seq])}
            staged.append((seq, message))
            continue
        if seeded and seq == cut and row.get("type") == "session/end-seed":
            row = {**row, "data": {"inherited": True}}
        staged.append((seq, row))

    if seeded and isinstance(cut, int):
        for group in attempts:
            members: list[Any] = [c.get("seq") for c in group.chunks]
            if group.message_seq is not None:
                members.append(group.message_seq)
            if any(m < cut for m in members) and any(m >= cut for m in members):
                # dsh refuses a cut that splits an attempt; the whole attempt lands on the side
                # of its message (or of its last chunk).
                _note(notes, f"v1->v2: inherited cut {cut} splits an assistant attempt")
        if not any(r.get("seq") == cut and r.get("type") == "session/end-seed" for r in rows):
            position = sum(1 for origin, _ in staged if origin < cut)
            after = [r for r in rows if isinstance(r.get("seq"), int) and r["seq"] >= cut]
            before = [r for r in rows if isinstance(r.get("seq"), int) and r["seq"] < cut]
            time = (
                after[0].get("time")
                if after
                else before[-1].get("time")
                if before
                else header.get("createdAt", 0)
            )
            marker = {
                "type": "session/end-seed",
                "seq": -1,
                "time": time,
                "data": {"inherited": True},
            }
            staged.insert(position, (cut - 0.5, marker))

    old_to_new = {
        int(origin): new for new, (origin, _) in enumerate(staged) if float(origin).is_integer()
    }
    fallback = {
        chunk: old_to_new[owner] for chunk, owner in absorbed_by.items() if owner in old_to_new
    }
    f = _mapper(old_to_new, notes, "v1->v2", fallback)
    out: list[dict[str, Any]] = []
    for new, (_, row) in enumerate(staged):
        row = copy.deepcopy(row)
        _remap_row(row, f)
        row["seq"] = new
        out.append(row)
    _repair_restarts(out, "v1->v2", notes)
    return _header_v2(header, notes), _stored(out)


# --------------------------------------------------------------------------- v2 -> v3


def _system_id(session: Any, anchor: dict[str, Any]) -> str:
    """The synthetic system message id V2→V3 derives from its anchor event [S22]."""
    key = json.dumps(
        ["session-format-v2-to-v3", session, anchor.get("seq"), anchor.get("type")],
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return "v2-to-v3-system-" + hashlib.sha256(key.encode("utf-8")).hexdigest()


def _system_message(
    session: Any, anchor: dict[str, Any], owner: tuple[Any, Any], prompt: str
) -> dict[str, Any]:
    content: list[Any] = [] if prompt == "" else [{"type": "text", "text": prompt}]
    return {
        "type": "system/message",
        "seq": -1,
        "time": anchor.get("time"),
        "data": {
            "turn": owner[0],
            "step": owner[1],
            "message": {
                "role": "system",
                "content": content,
                "source": {"kind": "plugin", "plugin": SYSTEM_PROMPT_PLUGIN},
                "id": _system_id(session, anchor),
            },
        },
        "surfaceOp": "append",
    }


def _rename_code_plugin(source: Any) -> None:
    if (
        isinstance(source, dict)
        and source.get("kind") == "plugin"
        and source.get("plugin") == "tools-code-mode"
    ):
        source["plugin"] = "tools-ptc"


def v2_to_v3(log: Log, *, notes: Notes = None) -> Log:
    """Migrate a v2 log to v3: system messages, PTC names, canonical surface ops [S22].

    An empty ``system/message`` append goes right after the first ``step/start``. At every
    ``request/header`` whose ``header.system`` (absent = empty) differs from the current prompt,
    a ``system/message`` replacing the current head (``surfaceOp`` replace of its seq, citing it)
    goes right before that request header; every request header loses ``system`` and an exactly
    empty ``tools: []`` / ``adapterDefaults: {}``. ``tool/code-dispatch(-start)`` become
    ``tool/ptc-dispatch(-start)``, plugin ``tools-code-mode`` becomes ``tools-ptc`` in the three
    source slots, preset ``code`` becomes ``ptc``. Replace ops ``{start, end}`` become
    ``{startSeq, endSeq}``. The four surface types must carry ``surfaceOp`` and
    ``assistant/message`` must not carry ``sourceEventSeqs`` [S14].

    Args:
        log: A v2 log.
        notes: Where to record bent rules.

    Returns:
        The v3 log.
    """
    header = copy.deepcopy(log[0])
    header["version"] = 3
    if header.get("agentPreset") == "code":
        header["agentPreset"] = "ptc"
    session = header.get("id")
    out: list[dict[str, Any]] = []
    old: list[int | None] = []
    head: int | None = None  # index in `out` of the current protected system head
    prompt = ""
    step: tuple[Any, Any] | None = None
    last_step: tuple[Any, Any] | None = None
    for row in _expanded(log[1]):
        kind = row.get("type")
        data = _obj(row.get("data"))
        if kind == "request/header":
            rh = data.get("header")
            if isinstance(rh, dict):
                system = rh.pop("system", None)
                text = (
                    ""
                    if system is None
                    else system
                    if isinstance(system, str)
                    else json.dumps(system)
                )
                if rh.get("tools") == []:
                    del rh["tools"]
                if rh.get("adapterDefaults") == {}:
                    del rh["adapterDefaults"]
                if text != prompt:
                    where = f"request/header {row.get('seq')}"
                    owner = step or last_step
                    if head is None or owner is None:
                        # dsh refuses a changed prompt before the first step; no head to replace.
                        _note(notes, f"v2->v3: {where} changes the prompt before a step")
                    else:
                        if step is None:
                            # dsh refuses a changed prompt outside an open step; the replacement
                            # takes the last step's coordinates instead.
                            _note(notes, f"v2->v3: {where} changes the prompt outside a step")
                        message = _system_message(session, row, owner, text)
                        message["sourceEventSeqs"] = [head]
                        message["surfaceOp"] = {"op": "replace", "start": head, "end": head}
                        out.append(message)
                        old.append(None)
                        head = len(out) - 1
                        prompt = text
        out.append(row)
        old.append(row.get("seq"))
        if kind == "step/start":
            step = last_step = (data.get("turn"), data.get("step"))
            if head is None:
                out.append(_system_message(session, row, step, ""))
                old.append(None)
                head = len(out) - 1
        elif kind in ("step/end", "turn/end"):
            step = None
    # Synthetic replacements cite their head by its *new* index: map those through identity.
    old_to_new = {o: n for n, o in enumerate(old) if o is not None}
    f = _mapper(old_to_new, notes, "v2->v3")
    for new, row in enumerate(out):
        if old[new] is not None:
            _remap_row(row, f)
        row["seq"] = new
        _v3_canonical(row, notes)
    return header, _stored(out)


def _v3_canonical(row: dict[str, Any], notes: Notes) -> None:
    """V2→V3's event-local renames and envelope canonicalization (in place) [S22]."""
    kind = row.get("type")
    if kind in ("tool/code-dispatch", "tool/code-dispatch-start"):
        row["type"] = kind = kind.replace("code-dispatch", "ptc-dispatch")
    data = _obj(row.get("data"))
    if kind == "user/message":
        _rename_code_plugin(data.get("source"))
    elif kind == "agent/inbox/spliced":
        for message in data.get("inserted") or []:
            _rename_code_plugin(_obj(message).get("source"))
    elif kind == "session/title-llm-request":
        for message in data.get("messages") or []:
            _rename_code_plugin(_obj(message).get("source"))
    elif kind == "agent-preset/selected" and data.get("agentPreset") == "code":
        data["agentPreset"] = "ptc"
    op = row.get("surfaceOp")
    if isinstance(op, dict) and op.get("op") == "replace" and "start" in op:
        row["surfaceOp"] = {"op": "replace", "startSeq": op.get("start"), "endSeq": op.get("end")}
    if kind in SURFACE_TYPES and "surfaceOp" not in row:
        # dsh does not invent placement; it refuses the log. An append is the closest form.
        _note(notes, f"v2->v3: {kind} {row.get('seq')} has no surfaceOp; given 'append'")
        row["surfaceOp"] = "append"
    if kind == "assistant/message" and "sourceEventSeqs" in row:
        _note(notes, f"v2->v3: assistant/message {row.get('seq')} carries sourceEventSeqs; dropped")
        del row["sourceEventSeqs"]
    if kind in SURFACE_TYPES and "surfaceOp" in row and "sourceEventSeqs" in row:
        # keep dsh's key order: type, seq, time, data, surfaceOp, sourceEventSeqs
        seqs = row.pop("sourceEventSeqs")
        row["sourceEventSeqs"] = seqs


# --------------------------------------------------------------------------- v3 -> v4


def _v4_source(source: Any, role: Any) -> None:
    """Turn a V3 plugin source into a V4 producer kind (in place) [S4]."""
    if not isinstance(source, dict) or source.get("kind") != "plugin":
        return
    plugin = source.get("plugin")
    if not isinstance(plugin, str):
        return
    del source["plugin"]
    if plugin == SYSTEM_PROMPT_PLUGIN:
        kind = "system-prompt" if role == "system" else "runtime-context"
    elif plugin in RENAMED_PLUGINS:
        kind = RENAMED_PLUGINS[plugin]
    elif plugin in SAME_NAME_PRODUCERS:
        kind = plugin
    else:
        kind = f"plugin:{plugin}"
    source["kind"] = kind


def _v4_blocks(content: Any) -> None:
    """Unknown content tags become ``plugin:<tag>`` (in place) [S4]."""
    if isinstance(content, list):
        for block in content:
            tag = block.get("type") if isinstance(block, dict) else None
            if isinstance(tag, str) and tag not in _KNOWN_BLOCKS and not tag.startswith("plugin:"):
                block["type"] = "plugin:" + tag


def _v4_message(message: Any, default_role: Any = None) -> None:
    if isinstance(message, dict):
        _v4_source(message.get("source"), message.get("role", default_role))
        _v4_blocks(message.get("content"))


def _lift_tool_result(row: dict[str, Any], notes: Notes) -> None:
    """The V3 user-role tool-result wrapper becomes V4's tool-role message (in place) [S4]."""
    data = _obj(row.get("data"))
    message = data.get("message")
    if not isinstance(message, dict) or message.get("role") != "user":
        return
    content = message.get("content")
    source = _obj(message.get("source"))
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    if len(blocks) == 1 and blocks[0].get("type") == "tool-result":
        block = blocks[0]
        call_id = block.get("toolCallId", source.get("callId"))
        inner = block.get("content")
        extra_result = {
            k: v for k, v in block.items() if k not in ("type", "toolCallId", "content", "isError")
        }
    else:
        # dsh refuses anything but exactly one tool-result block; lift the content as it is.
        _note(notes, f"v3->v4: tool/result {row.get('seq')} has no single tool-result block")
        block, call_id, inner, extra_result = {}, source.get("callId"), content, {}
    if not isinstance(inner, list):
        # dsh requires array content; a bare string is the text it stands for.
        _note(notes, f"v3->v4: tool/result {row.get('seq')} content is not a list; wrapped as text")
        inner = [{"type": "text", "text": inner if isinstance(inner, str) else json.dumps(inner)}]
    lifted: dict[str, Any] = {
        "role": "tool",
        "source": message.get("source", {"kind": "tool", "callId": call_id}),
    }
    lifted["toolCallId"] = call_id
    lifted["content"] = inner
    if "isError" in block:
        lifted["isError"] = block["isError"]
    lifted["id"] = message.get("id")
    for key, value in message.items():
        if key not in ("id", "role", "source", "content"):
            lifted[f"plugin:message:{key}"] = value
    for key, value in extra_result.items():
        lifted[f"plugin:result:{key}"] = value
    data["message"] = lifted


def v3_to_v4(log: Log, *, notes: Notes = None) -> Log:
    """Migrate a v3 log to v4: tool-role results, producer sources, restart repair [S4][S15].

    ``tool/result.data.message`` becomes ``{role:"tool", source, toolCallId, content, isError?,
    id}``; plugin sources become producer kinds (``system-prompt``, ``runtime-context``,
    ``compact-checkpoint``, ``ptc-mode``, ``compact-basic``, same-name producers,
    ``plugin:<name>``) in the message slots of ``user/message``, ``system/message``,
    ``assistant/message``, ``tool/result``, ``agent/inbox/spliced.inserted[]`` and
    ``session/title-llm-request.messages[]``. The bounded restart repair runs again.

    Not done: appending missing ``subagent/catalog`` facts for direct children. dsh takes them
    from the children's own logs, which a single-log migration does not have; the brief allows
    skipping it. Unknown ignorable V3 events keep their type (no fixture has any).

    Args:
        log: A v3 log.
        notes: Where to record bent rules.

    Returns:
        The v4 log.
    """
    header = copy.deepcopy(log[0])
    header["version"] = 4
    rows = _expanded(log[1])
    for row in rows:
        kind = row.get("type")
        data = _obj(row.get("data"))
        if kind == "tool/result":
            _lift_tool_result(row, notes)
            _v4_message(data.get("message"))
        elif kind == "user/message":
            _v4_message(data, "user")
        elif kind in ("system/message", "assistant/message"):
            _v4_message(data.get("message"))
        elif kind == "agent/inbox/spliced":
            for message in data.get("inserted") or []:
                _v4_message(message, "user")
        elif kind == "session/title-llm-request":
            for message in data.get("messages") or []:
                _v4_message(message)
    _repair_restarts(rows, "v3->v4", notes)
    return header, _stored(rows)


# --------------------------------------------------------------------------- v4 -> v5


def v4_to_v5(log: Log, *, notes: Notes = None) -> Log:
    """Migrate a v4 log to TnzGit's v5: the header version changes, nothing else [S2][S3].

    Args:
        log: A v4 log.
        notes: Unused (nothing can be bent); kept for a uniform signature.

    Returns:
        The v5 log.
    """
    header = copy.deepcopy(log[0])
    header["version"] = 5
    return header, copy.deepcopy(log[1])


# --------------------------------------------------------------------------- v5 -> v6


def v5_to_v6(log: Log, *, notes: Notes = None) -> Log:
    """Migrate a v5 log to quockhangluong1012's v6 [S51].

    The header's version becomes 6 (V6 keeps V5's header shape and physical rows). On every
    event, ``data.metadata.provenance`` becomes ``data.metadata.sourceRef``, and so does
    ``evidence/recorded``'s ``data.provenance``: the same value moves. A ``provenance`` anywhere
    else (inside message content, tool results) is opaque data and stays. dsh refuses a record
    that already holds both names, and records V6 requires members of that V5 never wrote; this
    step keeps such a record as it is and notes it.

    Args:
        log: A v5 log.
        notes: Where to record bent rules.

    Returns:
        The v6 log.
    """
    header = copy.deepcopy(log[0])
    header["version"] = 6
    rows = copy.deepcopy(log[1])
    for row in rows:
        data = row.get("data")
        if not isinstance(data, dict):
            continue
        holders = [data.get("metadata")]
        if row.get("type") == "evidence/recorded":
            holders.append(data)
        for holder in holders:
            if not isinstance(holder, dict) or "provenance" not in holder:
                continue
            if "sourceRef" in holder:
                _note(notes, f"v5->v6: seq {row.get('seq')}: provenance beside sourceRef; kept")
                continue
            holder["sourceRef"] = holder.pop("provenance")
    return header, rows


STEPS: tuple[Callable[..., Log], ...] = (
    v0_to_v1,
    v1_to_v2,
    v2_to_v3,
    v3_to_v4,
    v4_to_v5,
    v5_to_v6,
)
"""The adjacent edges; ``STEPS[n]`` migrates version n to n + 1."""


def migrate(log: Log, to: int = 5, *, notes: Notes = None) -> Log:
    """Chain the adjacent steps from the log's version (absent = 0) to ``to``.

    Args:
        log: A log of version 0 to ``to``.
        to: The target version, 0 to 6.
        notes: Where to record bent rules.

    Returns:
        The migrated log (a copy even when no step runs).

    Raises:
        ValueError: If ``to`` is out of range or below the log's version.
    """
    start = log[0].get("version", 0)
    if not isinstance(start, int) or not 0 <= start <= to <= len(STEPS):
        raise ValueError(f"cannot migrate version {start!r} to {to!r}")
    current: Log = (copy.deepcopy(log[0]), copy.deepcopy(log[1]))
    for step in STEPS[start:to]:
        current = step(current, notes=notes)
    return current


# --------------------------------------------------------------------------- writing


def log_lines(log: Log) -> list[bytes]:
    """The log as ``\\n``-terminated JSON lines: the header, then one line per row."""
    return [orjson.dumps(log[0]) + b"\n"] + [orjson.dumps(row) + b"\n" for row in log[1]]


def log_chunks(log: Log, *, zstd: bool = False) -> list[bytes]:
    """The log's bytes as dsh writes them, in pieces whose concatenation is the file.

    The zstd form is a checksummed frame holding only the header line, then one checksummed
    frame per :data:`ROWS_PER_FRAME` rows, concatenated (dsh's append framing [S25]).

    Args:
        log: The log.
        zstd: zstd frames instead of plain lines.
    """
    lines = log_lines(log)
    if not zstd:
        return lines
    compressor = zstandard.ZstdCompressor(write_checksum=True)
    body = lines[1:]
    return [compressor.compress(lines[0])] + [
        compressor.compress(b"".join(body[i : i + ROWS_PER_FRAME]))
        for i in range(0, len(body), ROWS_PER_FRAME)
    ]


def write_log(log: Log, path: Path, *, zstd: bool = False) -> None:
    """Write a log (:func:`log_chunks`); never overwrite an existing file.

    Raises:
        FileExistsError: If ``path`` exists.
    """
    chunks = log_chunks(log, zstd=zstd)
    with open(path, "xb") as fh:
        fh.write(b"".join(chunks))


def twin_name(name: str, version: int, *, zstd: bool = False) -> str:
    """The twin's file name: ``session[.K].jsonl`` → ``session[.K].v{version}.jsonl[.zstd]``."""
    stem = name.removesuffix(".zstd").removesuffix(".jsonl")
    return f"{stem}.v{version}.jsonl" + (".zstd" if zstd else "")


def twin_root(
    src_root: Path, dst_root: Path, *, version: int = 5, zstd: bool = False
) -> list[tuple[Path, Path]]:
    """Mirror every v0 log under ``src_root`` as its migrated twin under ``dst_root``.

    Each ``*.jsonl`` keeps its relative folder; ``session.jsonl`` becomes
    ``session.v{version}.jsonl`` and a snapshot child ``session.K.jsonl`` becomes
    ``session.K.v{version}.jsonl`` (plus ``.zstd`` with ``zstd``). Every ``NOTICE.md`` is
    copied to the same place.

    Args:
        src_root: The folder of v0 logs.
        dst_root: Where the twins go (created as needed; existing files are never replaced).
        version: The twins' format version.
        zstd: Write the twins zstd-compressed.

    Returns:
        The (original, twin) pairs, in sorted order of the originals.
    """
    pairs: list[tuple[Path, Path]] = []
    for src in sorted(src_root.rglob("*.jsonl")):
        dst = dst_root / src.relative_to(src_root).parent / twin_name(src.name, version, zstd=zstd)
        dst.parent.mkdir(parents=True, exist_ok=True)
        write_log(migrate(read_v0(src), to=version), dst, zstd=zstd)
        pairs.append((src, dst))
    for notice in sorted(src_root.rglob("NOTICE.md")):
        target = dst_root / notice.relative_to(src_root)
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(notice, "rb") as src_fh, open(target, "xb") as dst_fh:
            shutil.copyfileobj(src_fh, dst_fh)
    return pairs
