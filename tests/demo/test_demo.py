"""The generated demo root loads with the expected shape; the live writer appends safely."""

from __future__ import annotations

import itertools
import json
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from turnline.core.codec import encode_records, expand_record
from turnline.core.formats import (
    MINTED_PREFIXES,
    SYSTEM_ID_PREFIX,
    generation_name,
    history,
    result_parts_of,
)
from turnline.core.lineage import LineageNode
from turnline.core.logfile import Encoding, read_log
from turnline.core.model import REASON_KINDS, TURN_END, SessionHeader
from turnline.core.root import LoadedSession, SessionRoot
from turnline.core.timeline import build_timeline
from turnline.core.writer import encode_new_log, log_name, write_new_file
from turnline.demo.generator import (
    CURRENT_DSH,
    MARKUP_TITLE,
    REASONS,
    DemoRoot,
    LiveWriter,
    TurnFactory,
    build_demo_root,
)

NOW = 1_790_000_000_000

#: The problem kinds each deliberately broken log must show; every other log shows none.
EXPECTED_PROBLEMS = {
    "torn-tail": {"torn-tail"},
    "foreign-version": {"foreign-version"},
    "seq-gap": {"seq-gap"},
    "missing-parent": {"missing-parent"},
}
USER_FORKS = {"fork": "root", "fork-of-fork": "fork", "fork-of-fork-of-fork": "fork-of-fork"}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoRoot:
    return build_demo_root(tmp_path_factory.mktemp("demo") / "root", now_ms=NOW)


@pytest.fixture(scope="module")
def loaded(demo: DemoRoot) -> dict[str, LoadedSession]:
    root = SessionRoot(demo.path)
    by_path = {s.path: s for s in root.scan()}
    return {role: root.load(by_path[path]) for role, path in demo.roles.items()}


def _depth(node: LineageNode) -> int:
    return 1 + max((_depth(c) for c in node.children), default=0)


def _wait_until(predicate: Callable[[], bool], deadline: float = 30.0) -> bool:
    """Poll until predicate holds; a generous deadline only guards against a hang."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


# -- shape -------------------------------------------------------------------------------


def test_demo_scans_with_projects_and_a_no_cwd_session(demo: DemoRoot) -> None:
    summaries = SessionRoot(demo.path).scan()
    assert len(summaries) == demo.sessions == len(demo.roles)
    assert 12 <= demo.sessions <= 20
    assert {s.path for s in summaries} == set(demo.roles.values())
    cwds = {s.cwd for s in summaries}
    assert {"/home/dev/shop-api", "/home/dev/turnline", "/srv/infra", None} <= cwds
    assert demo.roles["no-cwd"].parent.parent.name == "_no-cwd"
    assert demo.live_path == demo.roles["live"]
    total = sum(p.stat().st_size for p in demo.path.rglob("*") if p.is_file())
    assert total < 2 * 1024 * 1024
    # Only logs: no fork scratch or temporaries are left behind. The root of the shop-api
    # lineage keeps its V0 generation beside the V5 one dsh migrated it to.
    files = {p for p in demo.path.rglob("*") if p.is_file()}
    older = demo.roles["root"].with_name("session.jsonl")
    assert files == set(demo.roles.values()) | {older}


def test_lineage_is_deep_with_subagents_and_a_missing_parent(demo: DemoRoot) -> None:
    root = SessionRoot(demo.path)
    root.scan()
    lineage = root.lineage()
    assert max(_depth(n) for n in lineage.roots) >= 4
    roles = demo.roles
    for child, parent in USER_FORKS.items():
        assert lineage.parent_of[roles[child]] == roles[parent]
    assert lineage.parent_of[roles["subagent-spawned"]] == roles["root"]
    assert lineage.parent_of[roles["subagent-fork"]] == roles["root"]
    assert lineage.parent_of[roles["subagent-of-fork"]] == roles["fork-of-fork"]
    by_path = {s.path: s for s in root.summaries()}
    spawned = by_path[roles["subagent-spawned"]].header
    assert spawned is not None
    assert (spawned.origin, spawned.seed_length, spawned.delegation_depth) == ("subagent", None, 1)
    seeded = by_path[roles["subagent-fork"]].header
    assert seeded is not None
    assert seeded.origin == "subagent" and seeded.seed_length and seeded.delegation_depth == 1
    ids = {s.id for s in root.summaries()}
    assert len(lineage.missing) == 1
    group = lineage.missing[0]
    assert group.parent_id not in ids
    assert [c.summary.path for c in group.children] == [roles["missing-parent"]]


def test_every_reason_kind_and_one_open_turn(loaded: dict[str, LoadedSession]) -> None:
    turns = [t for session in loaded.values() for t in session.timeline.turns]
    assert set(REASON_KINDS) <= {t.reason for t in turns}
    assert {t.detail for t in turns if t.reason == "aborted"} == {"user"}
    assert all(t.detail for t in turns if t.reason == "error")
    live = loaded["live"].timeline.turns
    assert live[-1].reason == "open" and not live[-1].forkable and live[-1].steps >= 2
    assert all(t.forkable for t in live[:-1])
    open_roles = {r for r, s in loaded.items() if any(t.is_open for t in s.timeline.turns)}
    assert open_roles == {"live", "torn-tail"}


def test_exactly_the_intended_problems(demo: DemoRoot, loaded: dict[str, LoadedSession]) -> None:
    root = SessionRoot(demo.path)
    listed = {s.path: {str(p.kind) for p in root.problems_of(s)} for s in root.scan()}
    for role, session in loaded.items():
        want = EXPECTED_PROBLEMS.get(role, set())
        assert {str(p.kind) for p in session.problems} == want, role
        assert listed[demo.roles[role]] == want, role


def test_user_forks_are_core_forks_at_a_turn_end(
    demo: DemoRoot, loaded: dict[str, LoadedSession]
) -> None:
    for child_role, parent_role in USER_FORKS.items():
        child, parent = loaded[child_role], loaded[parent_role]
        header = child.summary.header
        assert header is not None and header.seed_length is not None
        assert header.origin is None
        assert header.parent_session == parent.summary.id
        boundary = header.seed_length - 1
        assert boundary in parent.turn_ends
        seed = [e.to_json_dict() for e in child.events[: header.seed_length]]
        prefix = [e.to_json_dict() for e in parent.events[: header.seed_length]]
        # The child continued with turns of its own after the seed.
        assert len(child.events) > header.seed_length
        assert child.events[-1].type == TURN_END
        # dsh migrated these forks (V0 core forks) and their parents each by itself: the
        # seed is the parent's prefix but for the ids each migration made from its own
        # log's session id, and the parent's own marker left untagged.
        assert [unminted(r) for r in seed] == [unminted(r) for r in prefix]
        assert seed != prefix


def unminted(value: Any) -> Any:
    """A row with every migration-made id blanked and every end-seed marker untagged."""
    if isinstance(value, dict):
        if value.get("type") == "session/end-seed":
            value = {**value, "data": {}}
        return {k: unminted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unminted(v) for v in value]
    if isinstance(value, str) and value.startswith((*MINTED_PREFIXES, SYSTEM_ID_PREFIX)):
        return "<minted>"
    return value


def test_the_shop_lineage_is_in_the_formats_dsh_writes_today(
    demo: DemoRoot, loaded: dict[str, LoadedSession]
) -> None:
    for role, (version, keep, zstd) in CURRENT_DSH.items():
        path = demo.roles[role]
        assert path.name == generation_name(version, zstd=zstd), role
        header = loaded[role].summary.header
        assert header is not None and header.version == version, role
        assert path.with_name("session.jsonl").exists() == keep, role
    assert {5, 3} <= {v for v, _k, _z in CURRENT_DSH.values()}
    assert any(z for _v, _k, z in CURRENT_DSH.values())
    # The root was opened again after dsh moved on: its V0 file is its history, and
    # reads as the same turns as the V5 generation dsh runs it from.
    root_log = demo.roles["root"]
    assert history(root_log) == [(0, root_log.with_name("session.jsonl"))]
    old = build_timeline(read_log(root_log.with_name("session.jsonl")).events)
    new = loaded["root"].timeline
    assert [(t.number, t.reason, t.user, t.tools) for t in old.turns] == [
        (t.number, t.reason, t.user, t.tools) for t in new.turns
    ]
    # A child dsh never reopened is still V0, seeded from the root's V0 generation.
    child = loaded["subagent-fork"]
    assert child.summary.header is not None and child.summary.header.version in (None, 0, 1)
    assert child.parent_path == root_log


def test_titles_are_common_and_one_carries_markup(loaded: dict[str, LoadedSession]) -> None:
    with_title = [r for r, s in loaded.items() if any(e.type == "session/title" for e in s.events)]
    assert len(with_title) >= len(loaded) * 2 // 3
    title = loaded["markup-title"].timeline.title
    assert title == MARKUP_TITLE
    assert "[bold red]" in title and "\x1b[31m" in title


def test_content_looks_like_a_coding_session(
    demo: DemoRoot, loaded: dict[str, LoadedSession]
) -> None:
    calls = [e for s in loaded.values() for e in s.events if e.type == "tool/call"]
    assert {"bash", "read_file", "edit", "grep", "subagent", "subagent_fork"} <= {
        e.data["name"] for e in calls
    }
    assert all(isinstance(json.loads(e.data["arguments"]), dict) for e in calls)
    results = [
        part["content"][0]["text"]
        for s in loaded.values()
        for e in s.events
        if e.type == "tool/result"
        for part in result_parts_of(e.data)
    ]
    assert sum(1 for r in results if r.count("\n") >= 40) >= 3
    plugin = [
        e
        for e in loaded["root"].events
        if e.type == "user/message" and e.data["source"]["kind"] != "user"
    ]
    assert plugin
    raw = demo.roles["root"].read_bytes()
    for tag in (b"text-chunks", b"reasoning-chunks", b"tool-call-chunks"):
        assert b'{"type":"' + tag + b'"' in raw


def test_build_is_deterministic(tmp_path: Path, demo: DemoRoot) -> None:
    again = build_demo_root(tmp_path / "again", now_ms=NOW)

    def files(root: Path) -> dict[str, bytes]:
        return {
            str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
        }

    assert files(again.path) == files(demo.path)
    other = build_demo_root(tmp_path / "other", seed=8, now_ms=NOW)
    assert files(other.path) != files(demo.path)


def test_build_refuses_a_non_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        build_demo_root(tmp_path, now_ms=NOW)
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


# -- TurnFactory -----------------------------------------------------------------------


@pytest.mark.parametrize("reason", sorted(REASONS))
def test_turn_factory_makes_whole_turns(reason: str) -> None:
    factory = TurnFactory(random.Random(3), cwd="/srv/infra")
    turn = factory.turn(17, 1_000_000, 4, reason=reason, tools=2, title="t")
    events = turn.events
    assert [e.seq for e in events] == list(range(17, 17 + len(events)))
    assert turn.next_seq == 17 + len(events)
    assert all(a.time <= b.time for a, b in itertools.pairwise(events))
    assert turn.batches[-1] == len(events) and list(turn.batches) == sorted(set(turn.batches))
    assert len(turn.batch_events()) >= 3
    end = events[-1]
    assert end.type == TURN_END and end.data["reason"]["kind"] == reason
    timeline = build_timeline(events)
    assert [(t.number, t.reason) for t in timeline.turns] == [(4, reason)]
    assert timeline.turns[0].tools[:2] and timeline.turns[0].user
    # Packing into rows and expanding again gives exactly the same events.
    lines = list(encode_records(list(events)))
    assert len(lines) < len(events)
    back = [e for line in lines for e in expand_record(json.loads(line))]
    assert [e.to_json_dict() for e in back] == [e.to_json_dict() for e in events]


def test_turn_factory_is_deterministic_and_can_leave_a_turn_open() -> None:
    def make(seed: int) -> list[dict[str, object]]:
        turn = TurnFactory(random.Random(seed)).turn(0, 5, 1, tools=3, close=False)
        return [e.to_json_dict() for e in turn.events]

    assert make(1) == make(1)
    assert make(1) != make(2)
    turn = TurnFactory(random.Random(1)).turn(0, 5, 1, tools=3, close=False)
    assert not turn.closed and all(e.type != TURN_END for e in turn.events)
    assert build_timeline(turn.events).turns[0].reason == "open"


# -- LiveWriter ------------------------------------------------------------------------


def _check_whole(path: Path) -> list[int]:
    """Read the log as a watcher would; return its turn/end seqs."""
    contents = read_log(path)
    assert contents.problems == ()
    assert [e.seq for e in contents.events] == list(range(len(contents.events)))
    assert contents.contiguous == len(contents.events)
    assert path.read_bytes().endswith(b"\n")
    assert contents.events[-1].type == TURN_END
    return [e.seq for e in contents.events if e.type == TURN_END]


def test_live_writer_closes_the_open_turn_and_keeps_adding_turns(tmp_path: Path) -> None:
    demo = build_demo_root(tmp_path / "root", now_ms=NOW)
    before = demo.live_path.read_bytes()
    start_turns = len(build_timeline(read_log(demo.live_path).events).turns)
    writer = LiveWriter(demo.live_path, interval=0.01, seed=5)
    writer.start()

    def new_closed_turns() -> int:
        events = read_log(demo.live_path).events
        return sum(1 for t in build_timeline(events).turns[start_turns:] if t.forkable)

    try:
        assert _wait_until(lambda: new_closed_turns() >= 2)
    finally:
        writer.stop()
    assert not writer.is_alive() and writer.error is None
    after = demo.live_path.read_bytes()
    assert after.startswith(before)  # append-only
    _check_whole(demo.live_path)
    turns = build_timeline(read_log(demo.live_path).events).turns
    assert all(t.forkable for t in turns)
    assert [t.number for t in turns] == list(range(1, len(turns) + 1))
    # The root still loads cleanly with the grown log.
    root = SessionRoot(demo.path)
    live = next(s for s in root.scan() if s.path == demo.live_path)
    assert root.load(live).problems == ()


def test_live_writer_stops_promptly_mid_turn_and_closes_it(tmp_path: Path) -> None:
    demo = build_demo_root(tmp_path / "root", now_ms=NOW)
    # A long interval: after its first batch the writer would wait 15 s before the next,
    # so stopping then always lands in the middle of the turn.
    writer = LiveWriter(demo.live_path, interval=30.0)
    writer.start()
    try:
        assert _wait_until(lambda: writer.appends >= 1)
    finally:
        writer.stop(timeout=5.0)
    assert not writer.is_alive()
    ends = _check_whole(demo.live_path)
    last = read_log(demo.live_path).events[ends[-1]]
    assert last.data["reason"] == {"kind": "interrupted"}
    assert writer.appends == 2 and not writer.turn_open


def test_live_writer_appends_zstd_frames(tmp_path: Path) -> None:
    factory = TurnFactory(random.Random(9), cwd="/home/dev/turnline")
    turn = factory.turn(0, NOW, 1, tools=1)
    path = tmp_path / "--home-dev-turnline--" / "s1" / log_name(Encoding.ZSTD)
    header = SessionHeader(id="s1", created_at=NOW, cwd="/home/dev/turnline")
    write_new_file(path, [encode_new_log(header, turn.events, Encoding.ZSTD)])
    writer = LiveWriter(path, interval=0.01)
    writer.start()
    try:
        assert _wait_until(lambda: len(_turn_ends(path)) >= 3)
    finally:
        writer.stop()
    assert not writer.is_alive()
    contents = read_log(path)
    assert contents.problems == ()
    assert [e.seq for e in contents.events] == list(range(len(contents.events)))
    assert contents.events[-1].type == TURN_END


def _turn_ends(path: Path) -> list[int]:
    return [e.seq for e in read_log(path).events if e.type == TURN_END]


def test_live_writer_refuses_a_log_it_would_damage(demo: DemoRoot, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="torn-tail"):
        LiveWriter(demo.roles["torn-tail"])
    with pytest.raises(ValueError, match="seq-gap"):
        LiveWriter(demo.roles["seq-gap"])
    junk = tmp_path / "session.jsonl"
    junk.write_text('{"not": "a header"}\n')
    with pytest.raises(ValueError, match="header"):
        LiveWriter(junk)
    # Refusing never touched the files.
    assert read_log(demo.roles["torn-tail"]).problems[0].kind == "torn-tail"


def test_turn_factory_refuses_an_unknown_reason() -> None:
    with pytest.raises(ValueError, match="unknown turn/end reason"):
        TurnFactory(random.Random(1)).turn(0, 0, 1, reason="finished")
