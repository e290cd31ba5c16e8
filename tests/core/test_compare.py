"""divergedAt and ancestor come from the lineage: siblings, parent and descendant,
cousins, raw and zstd, and a missing parent (no ancestor)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from turnline.core.compare import CompareError, Comparison, compare, split_point, touched_files
from turnline.core.content import (
    StepUsage,
    TokenUsage,
    ToolCall,
    ToolResult,
    turn_blocks,
    usage_sample,
)
from turnline.core.model import SessionHeader
from turnline.core.root import LoadedSession, SessionRoot
from turnline.core.usage import fold_events
from turnline.demo import build_demo_root

from .disk_logs import as_events, turn_records, write_log
from .test_usage import build_root


def _parent(root: Path, *, zstd: bool, turns: int = 3, sid: str = "parent-1") -> None:
    header = SessionHeader(id=sid, created_at=1, cwd="/home/dev/app", delegation_depth=0)
    records = [r for n in range(turns) for r in turn_records(4 * n, n + 1)]
    write_log(root, header, as_events(records), zstd=zstd)


def _root(tmp_path: Path, zstd: bool) -> SessionRoot:
    _parent(tmp_path, zstd=zstd)
    root = SessionRoot(tmp_path)
    root.scan()
    return root


def _fork(root: SessionRoot, source: str, at: int, child: str) -> None:
    root.fork(source, at, child)
    root.scan()


@pytest.mark.parametrize("zstd", [False, True])
def test_siblings_split_at_their_seed_length(tmp_path: Path, zstd: bool) -> None:
    root = _root(tmp_path, zstd)
    _fork(root, "parent-1", 7, "a")  # after turn 2: seedLength 8
    _fork(root, "parent-1", 7, "b")
    a, b = root.resolve("a"), root.resolve("b")
    assert a.encoding == b.encoding
    common, at = split_point(root, a.path, b.path)
    assert common == root.resolve("parent-1").path
    assert at == 8
    result = compare(root, a, b)
    assert result.ancestor.id == "parent-1"
    assert result.shared_turns == 2
    assert result.left.turns == () and result.right.turns == ()


@pytest.mark.parametrize("zstd", [False, True])
def test_siblings_at_different_turns_split_at_the_first(tmp_path: Path, zstd: bool) -> None:
    root = _root(tmp_path, zstd)
    _fork(root, "parent-1", 3, "a")  # seedLength 4
    _fork(root, "parent-1", 7, "b")  # seedLength 8
    _, at = split_point(root, root.resolve("a").path, root.resolve("b").path)
    assert at == 4
    result = compare(root, root.resolve("a"), root.resolve("b"))
    # b still holds parent turn 2 after the split; a holds none of its own.
    assert [t.number for t in result.right.turns] == [2]
    assert result.left.turns == ()
    assert result.rows == [(None, result.right.turns[0])]


@pytest.mark.parametrize("zstd", [False, True])
def test_parent_and_descendant(tmp_path: Path, zstd: bool) -> None:
    root = _root(tmp_path, zstd)
    _fork(root, "parent-1", 3, "child")  # seedLength 4
    _fork(root, "child", 3, "grandchild")  # seedLength 4 again: child has only its seed
    parent, grandchild = root.resolve("parent-1"), root.resolve("grandchild")
    common, at = split_point(root, parent.path, grandchild.path)
    assert common == parent.path
    assert at == 4  # the descendant's first fork off the parent's line
    result = compare(root, parent, grandchild)
    assert result.ancestor.id == "parent-1"
    assert [t.number for t in result.left.turns] == [2, 3]
    assert result.right.turns == ()
    payload = result.to_json_dict()
    assert payload["divergedAt"] == 4
    assert payload["ancestor"] == {"id": "parent-1", "path": str(parent.path)}
    assert payload["left"]["turns"] == 2
    assert payload["left"]["lastReason"] == "completed"
    assert payload["rows"][0]["left"]["turn"] == 2
    assert payload["rows"][0]["right"] is None
    assert set(payload["left"]) == {
        "id",
        "path",
        "turns",
        "lastReason",
        "tokens",
        "toolCalls",
        "errors",
        "wallMs",
        "files",
    }
    # Reversed: the same split, the sides swapped.
    assert split_point(root, grandchild.path, parent.path) == (parent.path, 4)


@pytest.mark.parametrize("zstd", [False, True])
def test_cousins_split_where_the_first_left(tmp_path: Path, zstd: bool) -> None:
    root = _root(tmp_path, zstd)
    _fork(root, "parent-1", 3, "u1")  # seed 4
    _fork(root, "parent-1", 7, "u2")  # seed 8
    _fork(root, "u1", 3, "c1")  # seed 4, under u1
    _fork(root, "u2", 7, "c2")  # seed 8, under u2
    common, at = split_point(root, root.resolve("c1").path, root.resolve("c2").path)
    assert common == root.resolve("parent-1").path
    assert at == 4
    # Cousins under one uncle: the common line is u2's, left at 8.
    _fork(root, "u2", 7, "c3")
    common, at = split_point(root, root.resolve("c2").path, root.resolve("c3").path)
    assert common == root.resolve("u2").path
    assert at == 8


def test_a_missing_parent_gives_no_ancestor(tmp_path: Path) -> None:
    _parent(tmp_path / "one", zstd=False)
    root = SessionRoot(tmp_path)
    root.scan()
    _fork(root, "parent-1", 3, "a")
    _fork(root, "parent-1", 3, "b")
    parent = root.resolve("parent-1").path
    parent.unlink()
    root = SessionRoot(tmp_path)
    root.scan()
    with pytest.raises(CompareError) as info:
        split_point(root, root.resolve("a").path, root.resolve("b").path)
    assert info.value.code == "NO_ANCESTOR"
    assert "is not under the root" in info.value.message


def test_unrelated_sessions_and_the_same_one(tmp_path: Path) -> None:
    _parent(tmp_path, zstd=False)
    _parent(tmp_path, zstd=False, sid="other")
    root = SessionRoot(tmp_path)
    root.scan()
    a, b = root.resolve("parent-1"), root.resolve("other")
    with pytest.raises(CompareError) as info:
        compare(root, a, b)
    assert info.value.code == "NO_ANCESTOR"
    with pytest.raises(CompareError) as same:
        compare(root, a, a)
    assert same.value.code == "SAME_SESSION"


def test_files_from_file_tools_and_diffs() -> None:
    edit = ToolCall("edit", "c1", {"file_path": "src/a.py"}, "{}", 1)
    assert touched_files(edit) == ["src/a.py"]
    result = ToolResult("ok", False, 2, {"diffs": [{"path": "b.txt"}, {"path": "src/a.py"}]})
    write = ToolCall("write", "c2", {"file_path": "src/a.py"}, "{}", 1, result=result)
    assert touched_files(write) == ["src/a.py", "b.txt"]
    bash = ToolCall("bash", "c3", {"command": "cat x"}, "{}", 1)
    assert touched_files(bash) == []


def test_every_real_child_compares_with_its_parent(fixtures_root: Path) -> None:
    """Real fork children: the split is the child's seedLength, the parent's side holds
    exactly its turns from there on."""
    root = SessionRoot(fixtures_root)
    root.scan()
    lineage = root.lineage()
    pairs = list(lineage.parent_of.items())
    assert pairs, "the fixtures hold fork children"
    by_path = {s.path: s for s in root.summaries()}
    for child, parent in pairs:
        result = compare(root, by_path[parent], by_path[child])
        seed = by_path[child].seed_length or 0
        assert result.ancestor.path == parent
        assert result.diverged_at == seed
        parent_turns = root.load(by_path[parent]).timeline.turns
        assert len(result.left.turns) == sum(1 for t in parent_turns if t.first_seq >= seed)


# -- tokens are core.usage's fold ----------------------------------------------------------


def _fold_from(loaded: LoadedSession, diverged: int) -> list[int]:
    """The whole log folded with the split as its seed: the own part's buckets."""
    events = loaded.events_between(0, None)
    return fold_events(events, diverged).own().buckets()


def _step_usage_sum(loaded: LoadedSession, diverged: int) -> TokenUsage:
    """What compare summed before it used the fold, the turns' StepUsage blocks, plus
    the samples outside every turn (which only the fold counts)."""
    total = TokenUsage()
    in_turns: set[int] = set()
    for turn in loaded.timeline.turns:
        if turn.first_seq >= diverged:
            events = loaded.events_between(turn.first_seq, turn.end_seq)
            in_turns.update(e.seq for e in events)
            for block in turn_blocks(events):
                if isinstance(block, StepUsage):
                    total = total + block.usage
    for event in loaded.events_between(diverged, None):
        sample = usage_sample(event)
        if sample is not None and event.seq not in in_turns:
            total = total + sample.usage
    return total


def _check_tokens(root: SessionRoot, result: Comparison) -> int:
    checked = 0
    for side_ in (result.left, result.right):
        loaded = root.load(side_.summary)
        buckets = _fold_from(loaded, result.diverged_at)
        assert side_.tokens == TokenUsage(*buckets[:5]), side_.summary.id
        assert side_.tokens == _step_usage_sum(loaded, result.diverged_at), side_.summary.id
        assert side_.to_json_dict()["tokens"] == sum(buckets[:4])
        checked += buckets[5]
    return checked


def test_real_children_tokens_are_the_usage_fold(fixtures_root: Path) -> None:
    root = SessionRoot(fixtures_root)
    root.scan()
    by_path = {s.path: s for s in root.summaries()}
    calls = 0
    for child, parent in root.lineage().parent_of.items():
        calls += _check_tokens(root, compare(root, by_path[parent], by_path[child]))
    assert calls > 0  # some side held usage samples


@pytest.mark.parametrize("zstd", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_generated_lineage_tokens_are_the_usage_fold(tmp_path: Path, seed: int, zstd: bool) -> None:
    build_root(tmp_path, seed, zstd)  # p; c and g forks down its line; s a subagent
    root = SessionRoot(tmp_path)
    root.scan()
    calls = 0
    for a, b in (("p", "c"), ("c", "g"), ("p", "g"), ("g", "s"), ("c", "s")):
        result = compare(root, root.resolve(a), root.resolve(b))
        calls += _check_tokens(root, result)
    assert calls > 0


@pytest.mark.parametrize("zstd", [False, True])
def test_a_grandchild_forked_inside_its_parents_seed_shares_only_its_own(
    tmp_path: Path, zstd: bool
) -> None:
    root = _root(tmp_path, zstd)
    _fork(root, "parent-1", 7, "child")  # seed 8: parent turns 1-2
    _fork(root, "child", 3, "grandchild")  # seed 4: inside the child's seed, turn 1 only
    parent, grandchild = root.resolve("parent-1"), root.resolve("grandchild")
    common, at = split_point(root, grandchild.path, parent.path)
    assert (common, at) == (parent.path, 4)  # the smallest seed on the way, not the child's 8
    result = compare(root, grandchild, parent)
    assert result.shared_turns == 1
    assert [t.number for t in result.right.turns] == [2, 3]


def _demo(tmp_path: Path) -> tuple[SessionRoot, dict[str, Path]]:
    demo = build_demo_root(tmp_path / "demo", now_ms=1_790_000_000_000)
    root = SessionRoot(demo.path)
    root.scan()
    return root, dict(demo.roles)


def test_a_v0_child_of_a_parent_dsh_migrated_splits_after_the_same_turns(tmp_path: Path) -> None:
    """The demo's `subagent-fork` is a V0 child (seed in V0 seqs) of a root dsh migrated
    to V5 (97 events where its V0 generation holds 1,000): the split falls after the same
    turn in every generation, and each side counts from it in its own seqs."""
    root, roles = _demo(tmp_path)
    by_path = {s.path: s for s in root.summaries()}
    child, parent = by_path[roles["subagent-fork"]], by_path[roles["root"]]
    assert parent.header is not None and parent.header.version == 5
    seed = child.seed_length
    assert seed is not None and seed > parent.events
    cut = root.seed_cut(child)
    loaded = root.load(parent)
    assert cut is not None and cut - 1 in loaded.turn_ends
    assert root.child_cut(child, cut) == seed
    result = compare(root, child, parent)
    for path in (roles["subagent-fork"], roles["root"]):
        # the same family with the parent's V0 generation alone: the reference
        target = tmp_path / "v0" / path.relative_to(tmp_path / "demo").parent
        target.mkdir(parents=True)
        shutil.copyfile(path.with_name("session.jsonl"), target / "session.jsonl")
    old = SessionRoot(tmp_path / "v0")
    old.scan()
    reference = compare(old, old.resolve(child.id), old.resolve(parent.id))
    assert reference.diverged_at == seed
    assert result.diverged_at == cut
    assert result.shared_turns == reference.shared_turns == 4
    for mine, theirs in ((result.left, reference.left), (result.right, reference.right)):
        assert [(t.number, t.reason, t.user) for t in mine.turns] == [
            (t.number, t.reason, t.user) for t in theirs.turns
        ]
        assert mine.tokens == theirs.tokens
        assert mine.tool_calls == theirs.tool_calls
    assert [t.number for t in result.right.turns] == [5, 6]


def _migrate_beside(log: Path, version: int, *, keep: bool) -> Path:
    """Write `log`'s migration to `version` beside it, as dsh does; drop the V0 file
    unless `keep`."""
    from turnline.demo.dshmigrate import migrate, read_v0, write_log

    new = log.with_name(f"session.v{version}.jsonl")
    write_log(migrate(read_v0(log), to=version), new)
    if not keep:
        log.unlink()
    return new


def _outcome(root: SessionRoot, a: str, b: str) -> tuple[Any, ...]:
    result = compare(root, root.resolve(a), root.resolve(b))
    return (
        result.shared_turns,
        result.split_turn,
        [(t.number, t.reason) for t in result.left.turns],
        [(t.number, t.reason) for t in result.right.turns],
        result.left.tokens,
        result.right.tokens,
        result.left.tool_calls,
        result.right.tool_calls,
    )


@pytest.mark.parametrize("version", [2, 3, 5, 6])
@pytest.mark.parametrize("keep", [True, False])
def test_a_child_dsh_migrated_by_itself_splits_after_the_same_turn(
    tmp_path: Path, fixtures_root: Path, version: int, keep: bool
) -> None:
    """A child dsh migrated on its own counts its seed in its own seqs, which its V0
    parent (never reopened) does not hold: the split is placed by turns."""
    ref = tmp_path / "ref"
    (ref / "p").mkdir(parents=True)
    shutil.copyfile(
        fixtures_root / "acp" / "multi-turn" / "session.jsonl", ref / "p" / "session.jsonl"
    )
    root = SessionRoot(ref)
    parent = root.scan()[0]
    first_end = sorted(root.load(parent, check_seed=False).turn_ends)[0]
    root.fork(parent.id, first_end, "child")
    root.scan()
    want = _outcome(root, parent.id, "child")
    mixed = tmp_path / "mixed"
    shutil.copytree(ref, mixed)
    child_log = SessionRoot(mixed).resolve("child").path
    _migrate_beside(child_log, version, keep=keep)
    other = SessionRoot(mixed)
    other.scan()
    assert _outcome(other, parent.id, "child") == want
    child = other.resolve("child")
    assert child.seed_length != first_end + 1  # its own seqs: the rule is needed
    assert other.seed_cut(child) == first_end + 1
    assert not other.load(child).problems


def test_a_turn_left_open_before_the_cut_ends_where_the_next_begins(tmp_path: Path) -> None:
    """A crash left turn 2 open, and turn 3 began: a fork after turn 3 shares turns 1-3
    (the open one is not 'inside' the split), in V0 and with the parent migrated."""
    import orjson

    from .rich_logs import append_turns, rich_turn

    ref = tmp_path / "ref"
    (ref / "p").mkdir(parents=True)
    rows: list[Any] = []
    for n in (1, 2, 3, 4):
        turn = rich_turn(len(rows), n, f"t{n}")
        rows += turn[:-1] if n == 2 else turn  # turn 2: no turn/end
    header = {"type": "session", "version": 0, "id": "parent", "createdAt": 1, "delegationDepth": 0}
    (ref / "p" / "session.jsonl").write_bytes(
        b"".join(orjson.dumps(r) + b"\n" for r in [header, *rows])
    )
    root = SessionRoot(ref)
    root.scan()
    loaded = root.load(root.resolve("parent"), check_seed=False)
    assert [t.end_seq is None for t in loaded.timeline.turns] == [False, True, False, False]
    third_end = sorted(loaded.turn_ends)[1]
    assert loaded.timeline.split_at(third_end + 1) is None
    root.fork("parent", third_end, "child")
    root.scan()
    child = root.resolve("child")
    append_turns(child.path, root.load(child).events[-1].seq + 1, range(5, 6), "child", "src/c.py")
    root.scan()
    want = _outcome(root, "parent", "child")
    assert want[:4] == (3, None, [(4, "completed")], [(5, "completed")])
    for version in (3, 5):
        mixed = tmp_path / f"mixed{version}"
        shutil.copytree(ref, mixed)
        _migrate_beside(mixed / "p" / "session.jsonl", version, keep=True)
        other = SessionRoot(mixed)
        other.scan()
        assert _outcome(other, "parent", "child") == want, version
        assert other.seed_cut(other.resolve("child")) is not None
