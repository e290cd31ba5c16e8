"""The usage fold against an independent fold written here, over generated lineages
and every real fixture."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from turnline.core.codec import encode_records
from turnline.core.logfile import LogReader
from turnline.core.model import SessionEvent, SessionHeader
from turnline.core.root import SessionRoot
from turnline.core.usage import (
    UsageFold,
    _summaries_usage,
    fold_bytes,
    fold_events,
    fold_log,
    root_usage,
)

from tests.conftest import fixture_logs
from tests.core.disk_logs import write_lines, write_log

BUCKETS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens")


# -- the independent fold -------------------------------------------------------------


def reference(events: list[SessionEvent], seed: int, part: str) -> dict[str, Any]:
    """A plain re-statement of dsh's rule (`usage-projection.ts`): collect samples, let a
    sample replace the one just before it when they name the same (turn, step), unless
    an `llm/retry-started` for that (turn, step) came between (the retried attempt adds),
    then sum one side of the seed. A sample is a usage chunk (V0/V1), an
    `assistant/message`'s usage or else its stream's last usage chunk, or an
    `assistant/attempt`'s stream's last usage chunk (V2+)."""
    samples: list[dict[str, Any]] = []  # each: turn, step, usage, model, seq
    header_model = None
    slot_open = False  # the last sample may be replaced
    for e in events:
        d = e.data if isinstance(e.data, dict) else {}
        if e.type == "llm/retry-started":
            if samples and (samples[-1]["turn"], samples[-1]["step"]) == (
                d.get("turn"),
                d.get("step"),
            ):
                slot_open = False
            continue
        if e.type == "request/header":
            cfg = (
                (d.get("header") or {}).get("config") if isinstance(d.get("header"), dict) else None
            )
            if isinstance(cfg, dict) and isinstance(cfg.get("model"), str):
                p = cfg.get("provider")
                header_model = f"{p}/{cfg['model']}" if isinstance(p, str) else cfg["model"]
            continue
        usage = None
        model = None
        if e.type == "assistant/chunk" and isinstance(d.get("chunk"), dict):
            if d["chunk"].get("type") == "usage":
                usage = d["chunk"].get("usage")
        elif e.type in ("assistant/message", "assistant/attempt"):
            usage = d.get("usage") if e.type == "assistant/message" else None
            if usage is None and isinstance(d.get("stream"), list):
                chunks = [
                    m["chunk"]
                    for m in d["stream"]
                    if isinstance(m, dict)
                    and m.get("type") == "chunk"
                    and isinstance(m.get("chunk"), dict)
                    and m["chunk"].get("type") == "usage"
                ]
                usage = chunks[-1].get("usage") if chunks else None
            src = (
                (d.get("message") or {}).get("source")
                if isinstance(d.get("message"), dict)
                else None
            )
            if isinstance(src, dict) and isinstance(src.get("model"), str):
                p = src.get("provider")
                model = f"{p}/{src['model']}" if isinstance(p, str) else src["model"]
        if not isinstance(usage, dict) or e.type == "session/end-seed":
            continue
        vals = {}
        for b in BUCKETS:
            v = usage.get(b)
            vals[b] = (
                int(v)
                if isinstance(v, (int, float))
                and not isinstance(v, bool)
                and v >= 0
                and float(v).is_integer()
                else 0
            )
        if not any(
            isinstance(usage.get(b), (int, float)) and not isinstance(usage.get(b), bool)
            for b in BUCKETS
        ):
            continue
        s = {
            "turn": d.get("turn"),
            "step": d.get("step"),
            "usage": vals,
            "model": model or header_model or "unknown",
            "seq": e.seq,
        }
        if (
            slot_open
            and samples
            and (samples[-1]["turn"], samples[-1]["step"]) == (s["turn"], s["step"])
        ):
            samples[-1] = s
        else:
            samples.append(s)
        slot_open = True
    mine = [s for s in samples if (s["seq"] >= seed) == (part == "own")]
    out: dict[str, Any] = {b: sum(s["usage"][b] for s in mine) for b in BUCKETS}
    out["calls"] = len(mine)
    by_model: dict[str, dict[str, int]] = {}
    for s in mine:
        m = by_model.setdefault(s["model"], {**{b: 0 for b in BUCKETS}, "calls": 0})
        for b in BUCKETS:
            m[b] += s["usage"][b]
        m["calls"] += 1
    out["byModel"] = {k: v for k, v in by_model.items() if any(v.values())}
    side = [
        e for e in events if e.type != "session/end-seed" and (e.seq >= seed) == (part == "own")
    ]
    # A turn per turn/start, and per turn/end that no turn/start opened (the timeline's).
    opened, turned = False, []
    for e in events:
        if e.type == "turn/start" or (e.type == "turn/end" and not opened):
            turned.append(e)
        opened = e.type == "turn/start" or (opened and e.type != "turn/end")
    out["turns"] = sum((e.seq >= seed) == (part == "own") for e in turned)
    out["toolCalls"] = sum(e.type == "tool/call" for e in side)
    out["unmeteredCalls"] = {}
    for e in side:
        if e.type.endswith("-llm-request"):
            out["unmeteredCalls"][e.type] = out["unmeteredCalls"].get(e.type, 0) + 1
    return out


def view(fold_json: dict[str, Any]) -> dict[str, Any]:
    out = {k: fold_json[k] for k in (*BUCKETS, "calls", "turns", "toolCalls", "unmeteredCalls")}
    out["byModel"] = {
        m: {k: v for k, v in row.items() if k != "cost"} for m, row in fold_json["byModel"].items()
    }
    return out


# -- generated lineages ----------------------------------------------------------------


def ev(seq: int, etype: str, data: Any) -> SessionEvent:
    return SessionEvent(etype, seq, 1_700_000_000_000 + seq * 3_600_000, data)  # an hour apart


def usage_of(rng: random.Random) -> dict[str, int]:
    u = {"inputTokens": rng.randint(0, 900), "outputTokens": rng.randint(1, 500)}
    if rng.random() < 0.7:
        u["cacheReadTokens"] = rng.randint(0, 5000)
    if rng.random() < 0.3:
        u["cacheWriteTokens"] = rng.randint(0, 100)
    if rng.random() < 0.5:
        u["reasoningTokens"] = rng.randint(0, u["outputTokens"])
    return u


MODELS = [("deepseek", "deepseek-chat"), ("deepseek", "deepseek-reasoner"), ("openai", "gpt-x")]


def turns(rng: random.Random, start_seq: int, first_turn: int, n: int) -> list[SessionEvent]:
    out: list[SessionEvent] = []
    seq = start_seq
    for t in range(first_turn, first_turn + n):
        out.append(ev(seq, "turn/start", {"turn": t}))
        seq += 1
        for step in range(rng.randint(1, 3)):
            provider, model = rng.choice(MODELS)
            out.append(
                ev(
                    seq,
                    "request/header",
                    {"header": {"config": {"provider": provider, "model": model}}},
                )
            )
            seq += 1
            if rng.random() < 0.3:
                out.append(ev(seq, "web/deepseek-search-llm-request", {}))
                seq += 1
            if rng.random() < 0.2:
                out.append(ev(seq, "session/title-llm-request", {}))
                seq += 1
            shape = rng.random()
            if shape < 0.8:  # an early chunk sample
                out.append(
                    ev(
                        seq,
                        "assistant/chunk",
                        {
                            "turn": t,
                            "step": step,
                            "chunk": {"type": "usage", "usage": usage_of(rng)},
                        },
                    )
                )
                seq += 1
            if shape < 0.6 or shape >= 0.8:  # the final message (replaces the chunk)
                src = {"provider": provider, "model": model} if rng.random() < 0.8 else None
                msg: dict[str, Any] = {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "ok"}],
                }
                if src:
                    msg["source"] = src
                out.append(
                    ev(
                        seq,
                        "assistant/message",
                        {"turn": t, "step": step, "message": msg, "usage": usage_of(rng)},
                    )
                )
                seq += 1
            if rng.random() < 0.5:
                out.append(ev(seq, "tool/call", {"name": "bash", "id": f"c{seq}"}))
                seq += 1
        reason = (
            {"kind": "error", "error": {"message": "x"}}
            if rng.random() < 0.2
            else {"kind": "completed"}
        )
        out.append(ev(seq, "turn/end", {"turn": t, "reason": reason}))
        seq += 1
    return out


def fork_of(
    rng: random.Random, parent: list[SessionEvent], end_seed: bool
) -> tuple[list[SessionEvent], int]:
    ends = [e.seq for e in parent if e.type == "turn/end"]
    cut = rng.choice(ends) + 1
    child = list(parent[:cut])
    seq = cut
    if end_seed:
        child.append(ev(seq, "session/end-seed", {}))
        seq += 1
    n_turns = sum(e.type == "turn/start" for e in child)
    child += turns(rng, seq, n_turns, rng.randint(1, 3))
    return child, cut


def build_root(
    tmp: Path, seed: int, zstd: bool
) -> dict[str, tuple[SessionHeader, list[SessionEvent]]]:
    rng = random.Random(seed)
    logs: dict[str, tuple[SessionHeader, list[SessionEvent]]] = {}
    p = turns(rng, 0, 0, 4)
    logs["p"] = (SessionHeader("p", 1, cwd="/proj/a"), p)
    c, cut = fork_of(rng, p, end_seed=True)
    logs["c"] = (SessionHeader("c", 2, cwd="/proj/a", parent_session="p", seed_length=cut), c)
    g, gcut = fork_of(rng, c, end_seed=False)
    logs["g"] = (SessionHeader("g", 3, cwd="/proj/a", parent_session="c", seed_length=gcut), g)
    s = turns(rng, 0, 0, 2)
    logs["s"] = (SessionHeader("s", 4, cwd="/proj/a", parent_session="p", origin="subagent"), s)
    o, ocut = fork_of(rng, turns(rng, 0, 0, 3), end_seed=True)
    logs["o"] = (SessionHeader("o", 5, cwd="/proj/b", parent_session="gone", seed_length=ocut), o)
    for header, events in logs.values():
        write_log(tmp, header, events, zstd=zstd)
    return logs


@pytest.mark.parametrize("zstd", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_generated_lineage_matches_reference(tmp_path: Path, seed: int, zstd: bool) -> None:
    logs = build_root(tmp_path, seed, zstd)
    usage = root_usage(SessionRoot(tmp_path))
    doc = usage.to_json_dict()
    by_id = {s["id"]: s for s in doc["sessions"]}
    assert set(by_id) == set(logs)
    for sid, (header, events) in logs.items():
        L = header.seed_length or 0
        assert view(by_id[sid]["own"]) == reference(events, L, "own"), sid
        assert view(by_id[sid]["inherited"]) == reference(events, L, "inherited"), sid

    # Subtrees: a branch is its own plus its descendants' own (the subagent included).
    def own_calls(sid: str) -> int:
        return int(by_id[sid]["own"]["calls"])

    assert by_id["p"]["subtree"]["calls"] == sum(own_calls(x) for x in "pcgs")
    assert by_id["c"]["subtree"]["calls"] == own_calls("c") + own_calls("g")
    assert by_id["o"]["subtree"]["outputTokens"] == by_id["o"]["own"]["outputTokens"]
    # Totals: every session's own, once; the orphan's prefix is inheritedFromOutside.
    for b in BUCKETS:
        assert doc["totals"][b] == sum(by_id[x]["own"][b] for x in logs)
        assert doc["inheritedFromOutside"][b] == by_id["o"]["inherited"][b]
    assert doc["totals"]["unmeteredCalls"] == {
        k: sum(by_id[x]["own"]["unmeteredCalls"].get(k, 0) for x in logs)
        for k in doc["totals"]["unmeteredCalls"]
    }
    # A forked child never re-counts its parent: the totals are not the sum of wholes.
    whole = sum(reference(ev_, 0, "own")["outputTokens"] for _h, ev_ in logs.values())
    assert doc["totals"]["outputTokens"] < whole


def test_limited_to_a_subtree(tmp_path: Path) -> None:
    build_root(tmp_path, 3, False)
    root = SessionRoot(tmp_path)
    usage = root_usage(root, root.resolve("c"))
    assert {s.id for s in usage.sessions} == {"c", "g"}
    c = next(s for s in usage.sessions if s.id == "c")
    assert usage.inherited_from_outside.buckets() == c.inherited.buckets()


def test_chunk_without_message_counts_and_message_replaces_chunk() -> None:
    events = [
        ev(0, "request/header", {"header": {"config": {"provider": "a", "model": "m"}}}),
        ev(
            1,
            "assistant/chunk",
            {
                "turn": 0,
                "step": 0,
                "chunk": {"type": "usage", "usage": {"inputTokens": 5, "outputTokens": 1}},
            },
        ),
        ev(
            2,
            "assistant/message",
            {
                "turn": 0,
                "step": 0,
                "message": {"source": {"provider": "b", "model": "n"}},
                "usage": {"inputTokens": 7, "outputTokens": 3},
            },
        ),
        ev(
            3,
            "assistant/chunk",
            {
                "turn": 0,
                "step": 1,
                "chunk": {"type": "usage", "usage": {"inputTokens": 11, "outputTokens": 2}},
            },
        ),
    ]
    doc = fold_events(events, 0).own().to_json_dict()
    assert doc["calls"] == 2 and doc["inputTokens"] == 18 and doc["outputTokens"] == 5
    assert doc["byModel"]["b/n"]["inputTokens"] == 7
    assert doc["byModel"]["a/m"]["inputTokens"] == 11


def test_active_time_and_incremental_feed() -> None:
    rng = random.Random(9)
    events = turns(rng, 0, 0, 5)
    whole = fold_events(events, 0)
    inc = UsageFold(0)
    for i in range(0, len(events), 7):
        inc.feed(events[i : i + 7])
    assert inc.own().to_json_dict() == whole.own().to_json_dict()
    spans = 0
    start = None
    for e in events:
        if e.type == "turn/start":
            start = e.time
        elif e.type == "turn/end" and start is not None:
            spans += int(e.time - start)
    assert whole.own().active_ms == spans
    # An open turn counts up to its last event.
    open_fold = fold_events(events[:-1], 0)
    last_start = max(e.time for e in events if e.type == "turn/start")
    assert open_fold.own().active_ms == spans - int(events[-1].time - last_start) + int(
        events[-2].time - last_start
    )


# -- every real log ----------------------------------------------------------------------


@pytest.mark.parametrize("path", fixture_logs(), ids=lambda p: str(p.parent.name)[:40])
def test_fixture_own_plus_inherited_is_whole_and_fast_is_full(path: Path) -> None:
    reader = LogReader(path)
    events = reader.read().events
    seed = reader.header.seed_length if reader.header is not None else None
    split = fold_events(events, seed)
    whole = fold_events(events, 0)
    combined = split.own()
    combined.add(split.inherited())
    assert combined.to_json_dict() == whole.own().to_json_dict()
    assert whole.inherited().tokens == {}
    # The per-turn totals (for a timeline column) add up to the whole.
    assert sum(whole.turn_tokens.values()) == whole.own().total_tokens
    assert view(whole.own().to_json_dict()) == reference(list(events), 0, "own")
    fast = fold_log(path, seed)
    assert fast.own().to_json_dict() == split.own().to_json_dict()
    assert fast.inherited().to_json_dict() == split.inherited().to_json_dict()


def test_fold_crosses_a_process_boundary_intact() -> None:
    """What `split_map` sends back from a child (marshal) rebuilds the same views."""
    import marshal

    from turnline.core.usage import _pack_fold, _unpack_fold

    for path in fixture_logs():
        reader = LogReader(path)
        events = reader.read().events
        seed = reader.header.seed_length if reader.header is not None else None
        fold = fold_events(events, seed)
        back = _unpack_fold((str(path), seed), marshal.loads(marshal.dumps(_pack_fold(fold))))
        assert back.own().to_json_dict() == fold.own().to_json_dict()
        assert back.inherited().to_json_dict() == fold.inherited().to_json_dict()


# -- the whole-root path reads each log once; its answer is the summaries' ----------------


def _odd_logs(root: Path) -> None:
    """Logs the listing reads whole or names by their folder: an empty log, a header
    that is not a header, a torn header line, a header with problems (no version),
    a torn tail, an open turn, and a zstd log."""
    rng = random.Random(4)
    base = root / "--odd--"
    (base / "empty-id").mkdir(parents=True)
    (base / "empty-id" / "session.jsonl").write_bytes(b"")
    write_lines(base / "not-a-header" / "session.jsonl", {"type": "user/message", "seq": 0})
    (base / "torn-header").mkdir()
    (base / "torn-header" / "session.jsonl").write_bytes(b'{"type":"session","id":"x"')
    events = turns(rng, 0, 0, 2)
    head = {"type": "session", "id": "noversion", "createdAt": 9, "cwd": "/odd"}
    records = [orjson.loads(line) for line in encode_records(events)]
    write_lines(base / "noversion" / "session.jsonl", head, *records)
    torn = write_log(root, SessionHeader("torn", 10, cwd="/odd"), events)
    torn.write_bytes(torn.read_bytes() + b'{"type":"turn/st')
    write_log(root, SessionHeader("open", 11, cwd="/odd"), events[:-1])
    write_log(
        root,
        SessionHeader("zchild", 12, cwd="/odd", parent_session="torn", seed_length=3),
        events,
        zstd=True,
    )


@pytest.mark.parametrize("seed", range(3))
def test_whole_root_path_equals_the_summaries_path(tmp_path: Path, seed: int) -> None:
    build_root(tmp_path / "raw", seed, False)
    build_root(tmp_path / "zstd", seed + 10, True)
    _odd_logs(tmp_path / "odd")
    for sub in ("raw", "zstd", "odd"):
        fresh = root_usage(SessionRoot(tmp_path / sub)).to_json_dict()
        scanned = _summaries_usage(SessionRoot(tmp_path / sub)).to_json_dict()
        assert fresh == scanned, sub
    # The ids and lineage fields are the listing's (layout ids for headerless logs).
    root = SessionRoot(tmp_path / "odd")
    doc = root_usage(root).to_json_dict()
    listed = {(str(s.path), s.id, s.parent_session, s.seed_length) for s in root.scan()}
    got = {(s["path"], s["id"], s["parentSession"], s["seedLength"]) for s in doc["sessions"]}
    assert got == listed and len(got) == 7
    assert {"empty-id", "not-a-header", "torn-header", "noversion", "zchild"} <= {
        s["id"] for s in doc["sessions"]
    }


def test_whole_root_path_equals_the_summaries_path_on_the_fixtures(fixtures_root: Path) -> None:
    fresh = root_usage(SessionRoot(fixtures_root)).to_json_dict()
    scanned = _summaries_usage(SessionRoot(fixtures_root)).to_json_dict()
    assert len(fresh["sessions"]) == len(fixture_logs())
    assert fresh == scanned


def test_single_log_root(tmp_path: Path) -> None:
    logs = build_root(tmp_path, 2, False)
    path = next(tmp_path.rglob("session.jsonl"))
    doc = root_usage(SessionRoot(path)).to_json_dict()
    (one,) = doc["sessions"]
    header, events = logs[one["id"]]
    assert view(one["own"]) == reference(events, header.seed_length or 0, "own")


def test_logged_fold_crosses_a_process_boundary_intact(fixtures_root: Path) -> None:
    """What a pool worker sends back for one log (`_log_usage`) rebuilds the same value."""
    import pickle

    from turnline.core.usage import _log_usage, _pack_logged, _unpack_logged

    for path in fixture_logs()[:40]:
        item = (str(path), None)
        logged = _log_usage(item)
        back = _unpack_logged(item, pickle.loads(pickle.dumps(_pack_logged(logged))))
        assert back[:5] == logged[:5]
        assert back.fold.own().to_json_dict() == logged.fold.own().to_json_dict()
        assert back.fold.inherited().to_json_dict() == logged.fold.inherited().to_json_dict()


def test_views_are_snapshots_that_share_nothing_mutable() -> None:
    """`own()` costs its number of keys, not its events (rows are shared between
    copies), so no method may change a row in place: a view taken earlier stays as it
    was while the fold goes on, and adding into a view leaves the fold alone."""
    rng = random.Random(11)
    # All in one UTC minute: every sample lands on the keys the earlier ones made.
    events = [SessionEvent(e.type, e.seq, 1_700_000_000_000, e.data) for e in turns(rng, 0, 0, 6)]
    half = len(events) // 2
    fold = fold_events(events[:half], 0)
    before = fold.own()
    frozen = before.to_json_dict()
    fold.feed(events[half:])  # replacements and new samples on the same keys
    assert before.to_json_dict() == frozen
    after = fold.own()
    expected = after.to_json_dict()
    after.add(fold.own())  # doubles the view ...
    assert fold.own().to_json_dict() == expected  # ... not the fold
    assert after.buckets()[:5] == [2 * b for b in fold.own().buckets()[:5]]
    whole = fold_events(events, 0).own().to_json_dict()
    assert fold.own().to_json_dict() == whole


def test_a_root_big_enough_to_split_is_walked_and_folded_on_all_cores_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A root of more session folders than one process takes alone is walked, read
    and folded in batches on all cores (`root.map_root_logs`): the same document as
    the summaries' path, forks under the root and outside it, zstd logs included."""
    from turnline.core import usage as usage_module

    rng = random.Random(7)
    base = turns(rng, 0, 0, 3)
    for k in range(1100):
        sid = f"s{k:04d}"
        if k % 5 == 1:
            events, cut = fork_of(rng, base, end_seed=k % 2 == 0)
            parent = "s0000" if k % 10 == 1 else "gone"
            header = SessionHeader(sid, k, cwd="/p", parent_session=parent, seed_length=cut)
        else:
            events = base if k == 0 else turns(rng, 0, 0, 1)
            header = SessionHeader(sid, k, cwd=f"/p{k % 3}")
        write_log(tmp_path, header, events, zstd=k % 50 == 7)
    mapped: list[bool] = []
    real = usage_module.map_root_logs

    def watched(path: Path, func: Any) -> Any:
        got = real(path, func)
        mapped.append(got is not None)
        return got

    monkeypatch.setattr(usage_module, "map_root_logs", watched)
    fresh = root_usage(SessionRoot(tmp_path)).to_json_dict()
    assert mapped == [True]
    scanned = _summaries_usage(SessionRoot(tmp_path)).to_json_dict()
    assert len(fresh["sessions"]) == 1100
    assert fresh == scanned
    assert fresh["inheritedFromOutside"]["calls"] > 0


def test_a_type_or_key_spelled_with_an_escape_is_folded_as_it_decodes(tmp_path: Path) -> None:
    """JSON lets a writer spell `usage` as `us\\u0061ge` and `turn/end` as `turn\\/end`:
    the records decode the same, so the fold must be the same, though the fast pass's
    byte searches would not see them (it leaves such a log to the full read)."""
    from turnline.core.usage import fold_bytes

    checked = 0
    for path in fixture_logs():
        data = path.read_bytes()
        full = fold_events(LogReader(path).read().events, 0).own()
        if not full.tokens or b'"usage"' not in data:
            continue
        for old, new in ((b'"usage"', b'"us\\u0061ge"'), (b'"turn/end"', b'"turn\\/end"')):
            if old not in data:
                continue
            odd = tmp_path / f"{checked}.jsonl"
            odd.write_bytes(data.replace(old, new))
            assert fold_bytes(odd.read_bytes(), 0) is None
            assert fold_log(odd, 0).own().to_json_dict() == full.to_json_dict()
            checked += 1
    assert checked >= 20
    # An escaped control character (common in a tool's output) keeps the fast pass.
    colored = b'{"type":"tool/result","seq":0,"time":1,"data":{"content":"\\u001b[1m"}}\n'
    assert fold_bytes(b'{"type":"session","version":0,"id":"x"}\n' + colored, 0) is not None


def test_an_inherited_marker_the_byte_search_cannot_see_is_read_whole(tmp_path: Path) -> None:
    """A V5 child's inherited count is the seq of its last inherited marker: found by a
    search for the marker's line as dsh writes it only when every mention of the type
    is such a line; a later marker written with another key order is found by the
    full read."""
    from turnline.core.usage import _raw_header

    marker = {"type": "session/end-seed", "seq": 1, "time": 2, "data": {"inherited": True}}
    lines = [
        {"type": "session", "version": 5, "id": "c", "createdAt": 1, "delegationDepth": 0,
         "parentSession": "gone", "isSeeded": True},
        {"type": "user/message", "seq": 0, "time": 1, "data": {"content": "q"}},
        marker,
        {"type": "user/message", "seq": 2, "time": 3, "data": {"content": "r"}},
        {"seq": 3, "type": "session/end-seed", "time": 4, "data": {"inherited": True}},
        {"type": "user/message", "seq": 4, "time": 5, "data": {"content": "s"}},
    ]  # fmt: skip
    data = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    assert _raw_header(data) is None
    lines[4] = {**marker, "seq": 3, "time": 4}
    plain = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    got = _raw_header(plain)
    assert got is not None and got.seed_length == 3
    folder = tmp_path / "--w--" / "c"
    folder.mkdir(parents=True)
    (folder / "session.v5.jsonl").write_bytes(data)
    fresh = root_usage(SessionRoot(tmp_path)).to_json_dict()
    assert fresh == _summaries_usage(SessionRoot(tmp_path)).to_json_dict()
    assert fresh["sessions"][0]["seedLength"] == 3


def _odd_v5(rows: list[dict[str, Any]], how: str) -> list[bytes]:
    """dsh's V5 sample's persisted rows, one of them made odd in a way JSON allows."""
    lines = [orjson.dumps(r) for r in rows]
    at = next(i for i, r in enumerate(rows) if r.get("type") == "assistant/message")
    row = rows[at]
    if how == "string time":
        lines[at] = orjson.dumps({**row, "time": "noon"})
    elif how == "two data keys":  # JSON.parse keeps the last
        head = orjson.dumps({"type": row["type"], "seq": row["seq"], "time": row["time"]})
        lines[at] = (
            head[:-1]
            + b',"data":{"usage":{"inputTokens":1}},"data":'
            + orjson.dumps(row["data"])
            + b"}"
        )
    elif how == "lone surrogate":  # orjson refuses it; JSON.parse keeps the half
        lines[at] = lines[at].replace(b'"role":"assistant"', b'"role":"assistant\\ud83d"', 1)
    elif how == "no seq":
        lines[at] = orjson.dumps({k: v for k, v in row.items() if k != "seq"})
    elif how == "huge time":
        lines[at] = lines[at].replace(b'"time":%d' % row["time"], b'"time":1e400', 1)
    elif how == "escaped names":  # the same JSON strings, spelled with escapes
        lines = [
            line.replace(b'"usage"', b'"us\\u0061ge"').replace(b'"turn/end"', b'"turn\\/end"')
            for line in lines
        ]
    return [line + b"\n" for line in lines]


@pytest.mark.parametrize(
    "how",
    [
        "plain",
        "string time",
        "two data keys",
        "lone surrogate",
        "no seq",
        "huge time",
        "escaped names",
    ],
)
def test_a_v5_log_folds_in_one_decode_as_the_full_read_does(tmp_path: Path, how: str) -> None:
    """The one-decode fold of a V2+ log (`usage._rows_of`) gives what the full read gives,
    or leaves the log to it, whatever a row JSON allows holds."""
    from tests.core.test_generations import V5_SAMPLES, lines_of, persisted

    (source,) = [p for p in V5_SAMPLES if p.parent.name == "subagent-list-agents"]
    rows = persisted(lines_of(source))
    path = tmp_path / "session.v5.jsonl"
    path.write_bytes(b"".join(_odd_v5(rows, how)))
    fast, full = fold_log(path, None), fold_log(path, None, fast=False)
    assert fast.own().to_json_dict() == full.own().to_json_dict()
    assert fast.turn_tokens == full.turn_tokens
    if how in ("plain", "escaped names"):
        assert fast.own().tokens  # the sample holds usage
        assert fold_bytes(path.read_bytes(), None) is not None  # the one-decode path


def _damaged(data: bytes, how: str, at: int) -> bytes:
    """`data` (a log) with its line `at` damaged as `how` says, keeping the line breaks
    of the others."""
    lines = data.split(b"\n")
    line = lines[at]
    if how == "not UTF-8":
        cut = line.index(b'":"') + 3
        lines[at] = line[:cut] + b"\xff" + line[cut:]
    elif how == "over two lines":
        cut = line.index(b',"') + 1
        lines[at] = line[:cut] + b"\n" + line[cut:]
    elif how == "two on a line":
        lines[at : at + 2] = [line + lines[at + 1]]
    elif how == "no type":
        lines[at] = line.replace(b'"type":', b'"typf":', 1)
    elif how == "a seq as text":
        lines[at] = re.sub(rb'"seq":(\d+)', rb'"seq":"\1"', line, count=1)
    else:  # a torn write, then the next record on the same line
        lines[at : at + 2] = [line[: len(line) // 2] + lines[at + 1]]
    return b"\n".join(lines)


@pytest.mark.parametrize(
    "how",
    ["not UTF-8", "over two lines", "two on a line", "torn write", "no type", "a seq as text"],
)
def test_a_damaged_line_anywhere_folds_as_the_full_read(tmp_path: Path, how: str) -> None:
    """The fast pass decodes only the lines that matter; a line it does not decode
    that the reader refuses (the log stops there) still leaves the log to the full
    read, so the fold is the full read's: every real log and dsh's V5 samples, each
    damaged at a line early in it (usage-bearing rows follow)."""
    from tests.core.test_generations import V5_SAMPLES, lines_of, persisted

    logs = [p.read_bytes() for p in fixture_logs()]
    logs += [b"".join(orjson.dumps(r) + b"\n" for r in persisted(lines_of(p))) for p in V5_SAMPLES]
    changed = 0
    for k, data in enumerate(logs):
        lines = data.split(b"\n")
        at = next((i for i in range(1, len(lines) - 3) if b'":"' in lines[i]), None)
        if at is None:
            continue
        name = "session.v5.jsonl" if b'"version":5' in lines[0] else "session.jsonl"
        whole, path = tmp_path / f"{k}" / name, tmp_path / f"{k}-damaged" / name
        for log, content in ((whole, data), (path, _damaged(data, how, at))):
            log.parent.mkdir()
            log.write_bytes(content)
        full = fold_log(path, None, fast=False)
        fast = fold_log(path, None)
        assert fast.own().to_json_dict() == full.own().to_json_dict(), path
        assert fast.turn_tokens == full.turn_tokens
        changed += full.own().to_json_dict() != fold_log(whole, None).own().to_json_dict()
    assert changed >= 20  # (the log stops at the damaged line: its later usage is not)


def test_a_logs_turns_are_its_timelines_turns(tmp_path: Path) -> None:
    """`usage` counts the turns `show` lists: on every real log (one of them holds a
    `turn/end` with no `turn/start` before it), and for a log whose only turn is such
    a `turn/end`, fast or full, own or inherited as its seq falls."""
    from turnline.core.timeline import build_timeline

    for path in fixture_logs():
        events = LogReader(path).read().events
        turns = len(build_timeline(events).turns)
        assert fold_events(events, 0).own().turns == turns, path
        assert fold_log(path, 0).own().turns == turns, path
    log = tmp_path / "s" / "session.v2.jsonl"
    log.parent.mkdir()
    log.write_bytes(
        b'{"type":"session","version":2,"id":"P","createdAt":17,"cwd":"/w","isSeeded":false,'
        b'"delegationDepth":0}\n{"type":"turn/end","seq":0,"time":17,"data":{"error":"x"}}\n'
    )
    for fast in (True, False):
        assert fold_log(log, 0, fast=fast).own().turns == 1
        assert fold_log(log, 1, fast=fast).inherited().turns == 1


def test_a_bad_packed_row_or_header_folds_as_the_full_read(tmp_path: Path) -> None:
    """A packed row the reader refuses (a time delta too few, its texts not a list),
    on a line the fast pass does not decode, stops the log there; a first line that is
    no session header to the reader (no id, too long) holds no events: the fold is the
    full read's, fast or not."""
    rows = [p for p in fixture_logs() if b'"text-chunks"' in p.read_bytes()]
    assert rows
    data = rows[0].read_bytes()
    head, rest = data.split(b"\n", 1)
    at = rest.index(b'"dt":[') + len(b'"dt":[')
    odd = {
        "a delta too few": head + b"\n" + rest[:at] + b"9999999," + rest[at:],
        "texts not a list": head + b"\n" + rest.replace(b'"texts":[', b'"texts":{"x":[', 1),
        "no id": data.replace(b'"id":', b'"iq":', 1),
        "a header past 1 MiB": head[:-1] + b',"pad":"' + b"x" * (1 << 20) + b'"}\n' + rest,
    }
    for name, content in odd.items():
        log = tmp_path / name.replace(" ", "-") / "session.jsonl"
        log.parent.mkdir()
        log.write_bytes(content)
        full = fold_log(log, None, fast=False)
        assert fold_log(log, None).own().to_json_dict() == full.own().to_json_dict(), name
    assert fold_log(rows[0], None).own().tokens  # (the log holds usage)
