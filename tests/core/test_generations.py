"""dsh's format generations: names, headers, dsh's own V5 logs, V6, forks in the parent's
generation, one session per folder, and versions newer than turnline reads."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
from turnline.core import formats
from turnline.core.index import index_log
from turnline.core.logfile import read_log
from turnline.core.model import ProblemKind
from turnline.core.root import SessionRoot
from turnline.core.store import ForkErrorCode, SessionForkError
from turnline.core.summary import from_contents, summarize
from turnline.core.usage import fold_log, root_usage
from turnline.core.view import SessionView
from turnline.core.watcher import RootWatcher, SessionAdded, SessionRemoved

from ..conftest import FIXTURES
from .test_index import assert_same, full_read
from .test_search import family_hits

DATA = Path(__file__).resolve().parent.parent / "data" / "dsh-generations"
V5_SAMPLES = sorted((DATA / "v5").rglob("session.v5.jsonl"))

#: Usage of two of dsh's samples as dsh's token meter folds them (the fact sheet's
#: twin table, `../shared/docs/dsh-format-generations.md` §7): in, out, cache read, write.
SAMPLE_USAGE = {
    "empty-response-retry-current": (12, 3, 0, 0),
    "escalation-rejected": (1578, 243, 1664, 0),
}


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def write_lines(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def persisted(rows: list[dict[str, Any]], *, sid: str = "s1", t0: int = 1_790_000_000_000) -> list:
    """A projected snapshot with the envelope a real log has: seq = row, a time each,
    the row keys in dsh's order (type, seq, time, data, then the rest)."""
    header = {**rows[0], "id": sid, "cwd": "/work/project"}
    out: list[dict[str, Any]] = [header]
    for seq, row in enumerate(rows[1:]):
        rest = {k: v for k, v in row.items() if k not in ("type", "data")}
        out.append({"type": row["type"], "seq": seq, "time": t0 + seq, "data": row["data"], **rest})
    return out


# -- names -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("session.jsonl", 0),
        ("session.jsonl.zstd", 0),
        ("session.v1.jsonl", 1),
        ("session.v5.jsonl", 5),
        ("session.v12.jsonl.zstd", 12),
        ("session.v0.jsonl", None),  # version 0 keeps the suffix-only name
        ("session.v05.jsonl", None),  # no leading zero
        ("session.V5.jsonl", None),  # lowercase only
        ("session.1.jsonl", None),  # a snapshot child, not a generation
        ("session.1.v5.jsonl", None),
        (".turnline-tmp-session.v5.jsonl", None),
        ("other.jsonl", None),
    ],
)
def test_generation_names(name: str, version: int | None) -> None:
    assert formats.generation_of(name) == version


def test_superseded_keeps_only_the_highest_generation() -> None:
    names = ["session.jsonl", "session.v3.jsonl", "session.v5.jsonl", "session.lock"]
    assert formats.superseded(names) == {"session.jsonl", "session.v3.jsonl"}
    assert formats.superseded(["session.jsonl", "session.lock"]) == set()
    # snapshot children are separate logs, never history
    assert formats.superseded(["session.jsonl", "session.1.jsonl"]) == set()
    assert formats.generation_name(5, zstd=True) == "session.v5.jsonl.zstd"
    assert formats.generation_name(0, zstd=False) == "session.jsonl"


@pytest.mark.parametrize(
    ("name", "role"),
    [
        ("session.jsonl", (0, 0)),
        ("session.v5.jsonl.zstd", (0, 5)),
        ("session.1.jsonl", (1, 0)),
        ("session.2.v3.jsonl", (2, 3)),
        ("session.12.v5.jsonl", (12, 5)),
        ("session.1.v0.jsonl", None),  # version 0 keeps the suffix-only name
        ("session.01.jsonl", None),  # no leading zero
        ("session.0.jsonl", None),  # the parent is role 0 by its own name
        ("session.1.jsonl.zstd", None),  # dsh's corpus names are raw only
        ("session.1.V3.jsonl", None),
        ("writer.1.expected.jsonl", None),
    ],
)
def test_generation_roles(name: str, role: tuple[int, int] | None) -> None:
    """dsh's snapshot corpus names child K's generation N `session.K.vN.jsonl`
    (`sessionFixtureName`, `FIXTURE_FILE`)."""
    assert formats.generation_role(name) == role


def test_superseded_per_role_as_dshs_fixture_selection() -> None:
    """dsh's own vector (`selectedSessionFixture`: "selects the highest parent and child
    generations without counting retained inputs twice")."""
    names = ["session.jsonl", "session.v2.jsonl", "session.1.jsonl", "session.1.v1.jsonl"]
    assert formats.superseded(names) == {"session.jsonl", "session.1.jsonl"}
    # each role by itself: a child's newer generation never hides the parent's log
    names = ["session.jsonl", "session.1.jsonl", "session.1.v5.jsonl", "session.2.jsonl"]
    assert formats.superseded(names) == {"session.1.jsonl"}
    assert formats.name_mismatch("session.1.v3.jsonl", 5) is not None
    assert formats.name_mismatch("session.1.v3.jsonl", 3) is None


# -- dsh's own V5 logs ---------------------------------------------------------------------


def test_the_v5_samples_are_dshs_eleven() -> None:
    assert len(V5_SAMPLES) == 11
    assert (DATA / "NOTICE.md").is_file()


@pytest.mark.parametrize("path", V5_SAMPLES, ids=lambda p: p.parent.name)
def test_dsh_v5_sample_reads_whole(path: Path) -> None:
    contents = read_log(path)
    assert contents.header is not None
    assert contents.header.version == 5
    assert contents.header.is_seeded is False
    # the only remark: these are dsh's projected test snapshots (no seq/time)
    assert [p.kind for p in contents.problems] == [ProblemKind.PROJECTED]
    assert len(contents.events) == len(lines_of(path)) - 1
    assert [e.seq for e in contents.events] == list(range(len(contents.events)))
    root = SessionRoot(path)
    (summary,) = root.scan()
    assert summary.header is not None and summary.header.version == 5
    view = SessionView(root.load(summary))
    assert view.turns, "a dsh session with no turns"
    assert all(t.turn.end_seq is not None for t in view.turns)
    reasons = {t.turn.reason for t in view.turns}
    assert reasons <= {"completed", "aborted", "interrupted", "error", "blocked"}
    assert summary.title
    # the assistant's text and every tool call are blocks, whatever the version
    blocks = [b for i in range(len(view.turns)) for b in view.blocks(i)]
    kinds = {type(b).__name__ for b in blocks}
    assert {"UserText", "AssistantText"} <= kinds
    calls = [b for b in blocks if type(b).__name__ == "ToolCall"]
    tool_calls = sum(e.type == "tool/call" for e in contents.events)
    assert len(calls) == tool_calls
    results = sum(e.type == "tool/result" for e in contents.events)
    assert sum(c.result is not None for c in calls) == results


@pytest.mark.parametrize("name", sorted(SAMPLE_USAGE))
def test_dsh_v5_sample_usage_is_dshs_fold(name: str) -> None:
    (path,) = [p for p in V5_SAMPLES if p.parent.name == name]
    own = fold_log(path, None).own().to_json_dict()
    buckets = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
    assert tuple(own[b] for b in buckets) == SAMPLE_USAGE[name]


@pytest.mark.parametrize("path", V5_SAMPLES, ids=lambda p: p.parent.name)
def test_persisted_rows_read_as_their_projection(path: Path, tmp_path: Path) -> None:
    """A real V5 log carries seq and time: read strictly, it gives the projection's
    turns with no problem at all."""
    real = write_lines(tmp_path / "--p--" / "s1" / "session.v5.jsonl", persisted(lines_of(path)))
    projected = SessionView(SessionRoot(path).load(SessionRoot(path).scan()[0]))
    root = SessionRoot(tmp_path)
    (summary,) = root.scan()
    assert summary.problems == ()
    view = SessionView(root.load(summary))
    assert [
        (t.turn.number, t.turn.reason, t.turn.first_seq, t.turn.end_seq) for t in view.turns
    ] == [(t.turn.number, t.turn.reason, t.turn.first_seq, t.turn.end_seq) for t in projected.turns]
    tokens = {k: v for k, v in fold_log(path, None).own().to_json_dict().items() if k != "activeMs"}
    real_tokens = fold_log(real, None).own().to_json_dict()
    assert {k: v for k, v in real_tokens.items() if k != "activeMs"} == tokens
    # the fast paths (the listing's byte scan, usage's byte pass) agree with the full read
    full = from_contents(read_log(real), "s1", summary.mtime)
    assert summarize(real) == full
    assert fold_log(real, None, fast=True).own().to_json_dict() == (
        fold_log(real, None, fast=False).own().to_json_dict()
    )


def test_a_seq_gap_in_a_persisted_v5_log_is_named(tmp_path: Path) -> None:
    rows = persisted(lines_of(V5_SAMPLES[0]))
    rows[5]["seq"] = 40
    path = write_lines(tmp_path / "session.v5.jsonl", rows)
    kinds = [p.kind for p in read_log(path).problems]
    assert ProblemKind.SEQ_GAP in kinds


def test_a_packed_row_in_a_v5_log_is_corrupt_not_expanded(tmp_path: Path) -> None:
    rows = persisted(lines_of(V5_SAMPLES[0]))
    packed = {
        "type": "text-chunks",
        "seq0": len(rows) - 1,
        "time0": 1,
        "data": {"turn": 9, "step": 1, "index": 0, "dt": [0], "texts": ["a", "b"]},
    }
    end = {
        "type": "turn/end",
        "seq": len(rows),
        "time": 2,
        "data": {"turn": 9, "reason": {"kind": "completed"}},
    }
    path = write_lines(tmp_path / "session.v5.jsonl", [*rows, packed, end])
    kinds = [p.kind for p in read_log(path).problems]
    assert kinds == [ProblemKind.CORRUPT]


# -- the seed of a V2+ child --------------------------------------------------------------


def v5_parent(tmp_path: Path, *, version: int = 5) -> tuple[SessionRoot, Path]:
    """dsh's multi-turn V5 sample, persisted, as a session of a root (as a V6 log, which
    keeps V5's rows and header shape, with `version=6`)."""
    (source,) = [p for p in V5_SAMPLES if p.parent.name == "subagent-list-agents"]
    rows = persisted(lines_of(source))
    rows[0] = {**rows[0], "version": version}
    path = write_lines(
        tmp_path / "--work-project--" / "s1" / formats.generation_name(version, zstd=False), rows
    )
    return SessionRoot(tmp_path), path


@pytest.mark.parametrize("version", [5, 6])
def test_fork_of_a_v5_or_v6_session_is_written_as_dsh_writes_it(
    tmp_path: Path, version: int
) -> None:
    root, parent = v5_parent(tmp_path, version=version)
    summaries = root.scan()
    (summary,) = summaries
    assert summary.problems == ()
    view = SessionView(root.load(summary))
    first = view.turns[0].turn
    assert first.end_seq is not None
    result = root.fork(summary, first.end_seq, "child-1")
    path = result.child.path
    assert path.name == f"session.v{version}.jsonl"
    assert path.parent.name == "child-1"
    rows = lines_of(path)
    header = rows[0]
    assert list(header) == [
        "type",
        "version",
        "id",
        "createdAt",
        "cwd",
        "parentSession",
        "isSeeded",
        "delegationDepth",
    ]
    assert header["version"] == version and header["isSeeded"] is True
    assert header["delegationDepth"] == 0 and header["parentSession"] == "s1"
    assert "seedLength" not in header
    boundary = first.end_seq
    parent_rows = lines_of(parent)
    # the seed rows byte for byte, then the inherited marker timed as the boundary's row
    assert (
        path.read_bytes().splitlines()[1 : boundary + 2]
        == parent.read_bytes().splitlines()[1 : boundary + 2]
    )
    assert rows[-1] == {
        "type": "session/end-seed",
        "seq": boundary + 1,
        "time": parent_rows[boundary + 1]["time"],
        "data": {"inherited": True},
    }
    assert len(rows) == boundary + 3
    # read back: the cut is the marker's seq, the seed its parent's, no problem
    root2 = SessionRoot(tmp_path)
    by_id = {s.id: s for s in root2.scan()}
    child = by_id["child-1"]
    assert child.seed_length == boundary + 1
    loaded = root2.load(child)
    assert loaded.problems == ()
    assert loaded.parent_path == parent
    child_view = SessionView(loaded)
    assert [t.inherited for t in child_view.turns] == [True]
    # a fork of the child copies both markers: the last inherited one is the cut
    grandchild = root2.fork(child, boundary, "grandchild-1")
    assert grandchild.child.seed_length == boundary + 1
    fork_rows = lines_of(grandchild.child.path)
    assert sum(r["type"] == "session/end-seed" for r in fork_rows) == 1


def test_fork_of_a_v5_zstd_root_and_of_a_projected_sample(tmp_path: Path) -> None:
    (source,) = [p for p in V5_SAMPLES if p.parent.name == "escalation-rejected"]
    copy = tmp_path / "snap" / "session.v5.jsonl"
    copy.parent.mkdir()
    shutil.copyfile(source, copy)
    root = SessionRoot(tmp_path)
    (summary,) = root.scan()
    end = SessionView(root.load(summary)).turns[-1].turn.end_seq
    assert end is not None
    result = root.fork(summary, end, "from-snapshot")
    rows = lines_of(result.child.path)
    # a projected parent's rows get the envelope a real log has (seq = row, time 0)
    assert [r["seq"] for r in rows[1:]] == list(range(end + 2))
    assert all("time" in r for r in rows[1:])
    loaded = SessionRoot(tmp_path).load(summarize(result.child.path))
    assert [p.kind for p in loaded.problems] == []


def test_a_seeded_v5_header_without_its_marker_is_named(tmp_path: Path) -> None:
    rows = persisted(lines_of(V5_SAMPLES[0]))
    rows[0] = {**rows[0], "isSeeded": True, "parentSession": "p"}
    path = write_lines(tmp_path / "session.v5.jsonl", rows)
    contents = read_log(path)
    assert ProblemKind.ODD_EVENT in [p.kind for p in contents.problems]
    assert summarize(path).seed_length is None
    # A big log is indexed: the index names it too, where the full reader does.
    for block in (256, 1 << 20):
        assert_same(index_log(path, block_size=block), full_read(path))
    # A bad row before any marker: named after the row's problem, as the reader does.
    rows.insert(3, {"type": "step/start", "time": 1, "data": {}})
    path = write_lines(tmp_path / "bad" / "session.v5.jsonl", rows)
    assert_same(index_log(path, block_size=256), full_read(path))
    assert index_log(path).problems[-1].kind is ProblemKind.ODD_EVENT


@pytest.mark.parametrize("last", [False, True])
def test_a_v5_row_with_a_packed_rows_tag_and_seq0_is_a_plain_event(
    tmp_path: Path, last: bool
) -> None:
    """From V2 on no row is packed: a `text-chunks` row with a `seq0` beside its seq is
    one plain event to the full reader, so the index reads it (its range reads and the
    log's last activity included) as one too."""
    rows = persisted(lines_of(V5_SAMPLES[0]))
    n = rows[-1]["seq"] + 1
    odd = {"type": "text-chunks", "seq": n, "seq0": n, "time": rows[-1]["time"] + 7}
    rows.append(odd)
    if not last:
        rows.append({"type": "step/end", "seq": n + 1, "time": rows[-2]["time"] + 9})
    path = write_lines(tmp_path / "session.v5.jsonl", rows)
    for block in (256, 1 << 20):
        ix = index_log(path, block_size=block)
        assert_same(ix, full_read(path))
        assert ix.summary.last_activity == full_read(path).summary.last_activity


def test_an_untagged_end_seed_is_not_a_cut(tmp_path: Path) -> None:
    rows = persisted(lines_of(V5_SAMPLES[0]))
    n = len(rows) - 1
    rows.append({"type": "session/end-seed", "seq": n, "time": 5, "data": {}})
    rows[0] = {**rows[0], "isSeeded": False}
    path = write_lines(tmp_path / "session.v5.jsonl", rows)
    assert summarize(path).seed_length is None
    assert read_log(path).problems == ()


# -- one session per folder --------------------------------------------------------------


def test_a_folder_with_two_generations_is_one_session(tmp_path: Path) -> None:
    folder = tmp_path / "--work-project--" / "s1"
    rows = persisted(lines_of(V5_SAMPLES[0]))
    write_lines(folder / "session.v5.jsonl", rows)
    v3 = [{**rows[0], "version": 3}, *rows[1:]]
    write_lines(folder / "session.v3.jsonl", v3)
    (folder / "session.lock").write_bytes(b"")
    root = SessionRoot(tmp_path)
    summaries = root.scan()
    assert [s.path.name for s in summaries] == ["session.v5.jsonl"]
    assert summaries[0].problems == ()
    assert [v for v, _ in formats.generations(summaries[0].path)] == [5, 3]
    assert [Path(s.path).name for s in root_usage(root).sessions] == ["session.v5.jsonl"]


CORPUS_FAMILIES = sorted(
    {p.parent for p in FIXTURES.rglob("session.1.jsonl") if (p.parent / "session.jsonl").is_file()}
)


@pytest.mark.parametrize("folder", CORPUS_FAMILIES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_corpus_folder_refreshed_beside_its_v0_logs_is_the_same_family(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dsh refreshes a recorded scenario by writing each role's new generation beside
    the old ones (`session.v3.jsonl`, `session.1.v3.jsonl`, ...). Every real family of
    the fixtures, so refreshed: the same sessions and lineage as the V0 folder, each
    listed once, with its V0 file as its history; search finds the same hits."""
    from turnline.demo.dshmigrate import migrate, read_v0, twin_name, write_log

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    plain = tmp_path / "plain" / folder.name
    shutil.copytree(folder, plain)
    both = tmp_path / "both" / folder.name
    shutil.copytree(folder, both)
    logs = sorted(p.name for p in folder.glob("session*.jsonl"))
    for name in logs:
        write_log(migrate(read_v0(both / name), to=3), both / twin_name(name, 3))

    def family(root_path: Path) -> tuple[list[tuple[str, str | None, int]], dict[str, str]]:
        root = SessionRoot(root_path)
        summaries = root.scan()
        id_of = {s.path: s.id for s in summaries}
        return (
            sorted((s.id, s.parent_session, s.turns) for s in summaries),
            {id_of[c]: id_of[p] for c, p in root.lineage().parent_of.items()},
        )

    got, want = family(tmp_path / "both"), family(tmp_path / "plain")
    assert got == want
    assert len(want[0]) == len(logs)  # each role once
    root = SessionRoot(tmp_path / "both")
    twin_of = {twin_name(n, 3): n for n in logs}
    for summary in root.scan():
        assert summary.path.name in twin_of  # the newest generation is the log
        older = [p.name for _, p in formats.history(summary.path)]
        assert older == [twin_of[summary.path.name]]  # its own V0 file, as history
        assert not [p for p in summary.problems if p.kind is ProblemKind.DUPLICATE_ID]

    for query in ("the", "subagent"):
        got, want = family_hits(tmp_path / "both", query), family_hits(tmp_path / "plain", query)
        assert got == want, query


@contextmanager
def watching(
    watcher: RootWatcher, until: Callable[[list[Any]], bool]
) -> Iterator[tuple[list[Any], threading.Event]]:
    """The watcher's changes, collected on a thread of its own once it is primed, and
    its stop event, which is set when `until` holds of them; on the way out (a failed
    assertion too) the watcher is stopped and its thread joined."""
    stop = threading.Event()
    seen: list[Any] = []

    def run() -> None:
        for batch in watcher.watch(stop):
            seen.extend(batch)
            if until(seen):
                stop.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        assert watcher.primed.wait(10)
        yield seen, stop
    finally:
        stop.set()
        thread.join(20)


def test_the_watcher_switches_a_corpus_childs_generation_by_itself(tmp_path: Path) -> None:
    """A child's new generation supersedes that child's old one, not the parent's log
    (and deleting it makes the old one the child's log again)."""
    from turnline.demo.dshmigrate import migrate, read_v0, write_log

    family = tmp_path / "scenario"
    shutil.copytree(CORPUS_FAMILIES[0], family)
    root = SessionRoot(tmp_path)
    before = {s.path for s in root.scan()}
    old = family / "session.1.jsonl"
    assert old in before and family / "session.jsonl" in before
    watcher = RootWatcher(root, poll=True, poll_interval_ms=20)
    new = family / "session.1.v3.jsonl"

    def old_back(seen: list[Any]) -> bool:
        return any(isinstance(c, SessionAdded) and c.summary.path == old for c in seen)

    with watching(watcher, old_back) as (seen, stop):
        write_log(migrate(read_v0(old), to=3), new)
        for _ in range(400):
            if new in {s.path for s in root.summaries()}:
                break
            stop.wait(0.05)
        assert {s.path for s in root.summaries()} == before - {old} | {new}
        new.unlink()
        stop.wait(20)
    removed = [(c.path, c.moved_to) for c in seen if isinstance(c, SessionRemoved)]
    assert (old, new) in removed
    assert {s.path for s in root.summaries()} == before


def test_the_watcher_switches_to_a_new_generation(tmp_path: Path) -> None:
    folder = tmp_path / "--work-project--" / "s1"
    rows = persisted(lines_of(V5_SAMPLES[0]))
    old = write_lines(folder / "session.v3.jsonl", [{**rows[0], "version": 3}, *rows[1:]])
    root = SessionRoot(tmp_path)
    root.scan()
    watcher = RootWatcher(root, poll=True, poll_interval_ms=20)

    def added_one(seen: list[Any]) -> bool:
        return any(isinstance(c, SessionAdded) for c in seen)

    with watching(watcher, added_one) as (seen, stop):
        new = write_lines(folder / "session.v5.jsonl", rows)
        stop.wait(20)
    removed = [c for c in seen if isinstance(c, SessionRemoved)]
    added = [c for c in seen if isinstance(c, SessionAdded)]
    assert [(c.path, c.moved_to) for c in removed] == [(old, new)]
    assert [c.summary.path for c in added] == [new]
    assert [s.path for s in root.summaries()] == [new]


# -- newer than turnline reads -----------------------------------------------------------


def test_a_v6_log_reads_as_v5_and_another_forks_header_key_is_named(tmp_path: Path) -> None:
    """quockhangluong1012's V6 keeps V5's rows and header; CoHarness's V6 adds `sshTarget`
    to the header, which is kept and named, as any key outside dsh's closed set."""
    root5, _ = v5_parent(tmp_path / "five")
    root6, path6 = v5_parent(tmp_path / "six", version=6)
    rows = lines_of(path6)
    rows[0] = {**rows[0], "sshTarget": 2}
    path6.unlink()
    write_lines(path6, rows)
    (five,) = root5.scan()
    (six,) = root6.scan()
    assert six.header is not None and six.header.version == 6
    assert six.header.extra == {"sshTarget": 2}
    (problem,) = six.problems
    assert problem.kind is ProblemKind.BAD_HEADER and "sshTarget" in problem.message
    assert (six.events, six.turns, six.title, six.open_turn) == (
        five.events,
        five.turns,
        five.title,
        five.open_turn,
    )
    turns5 = SessionView(root5.load(five)).turns
    turns6 = SessionView(root6.load(six)).turns
    assert [(t.turn.reason, t.forkable, t.turn.tools) for t in turns6] == [
        (t.turn.reason, t.forkable, t.turn.tools) for t in turns5
    ]
    assert fold_log(path6, None).own().tokens == fold_log(five.path, None).own().tokens != {}


@pytest.mark.parametrize("zstd", [False, True], ids=["raw", "zstd"])
def test_a_v7_log_is_listed_with_its_header_and_one_problem(tmp_path: Path, zstd: bool) -> None:
    """CoHarness's V7 moves tool results and rewrites message sources: not read."""
    rows = persisted(lines_of(V5_SAMPLES[0]))
    rows[0] = {**rows[0], "version": 7}
    rows[3] = {"type": "brand/new", "payload": 1}  # its rows are not guessed at
    path = write_lines(tmp_path / "--work-project--" / "s1" / "session.v7.jsonl", rows)
    if zstd:
        import zstandard

        data = path.read_bytes()
        path.unlink()
        path = path.with_name("session.v7.jsonl.zstd")
        path.write_bytes(zstandard.ZstdCompressor(write_checksum=True).compress(data))
    root = SessionRoot(tmp_path)
    (summary,) = root.scan()
    assert summary.id == "s1" and summary.cwd == "/work/project"
    assert summary.events == 0 and summary.turns == 0
    (problem,) = summary.problems
    assert problem.kind is ProblemKind.FOREIGN_VERSION
    assert "version 7" in problem.message and "0 to 6" in problem.message
    loaded = root.load(summary)
    assert [p.kind for p in loaded.problems] == [ProblemKind.FOREIGN_VERSION]
    with pytest.raises(SessionForkError) as refused:
        root.fork(summary, 0, "x")
    assert refused.value.code is ForkErrorCode.UNSUPPORTED_VERSION
    assert fold_log(path, None).own().tokens == {}


def test_a_projected_log_grows_by_rows_without_seq(tmp_path: Path) -> None:
    """dsh's snapshot logs carry no seq or time: rows appended the same way continue
    their numbering live (a real log's rows carry theirs: the timeline test covers it)."""
    (source,) = [p for p in V5_SAMPLES if p.parent.name == "empty-response-retry-current"]
    log = tmp_path / "snap" / "session.v5.jsonl"
    log.parent.mkdir()
    shutil.copyfile(source, log)
    root = SessionRoot(tmp_path)
    (summary,) = root.scan()
    before = summary.events
    watcher = RootWatcher(root, poll=True, poll_interval_ms=20)
    stop = threading.Event()
    appended: list[Any] = []

    def run() -> None:
        for batch in watcher.watch(stop):
            appended.extend(c for c in batch if type(c).__name__ == "EventsAppended")
            if appended:
                stop.set()

    thread = threading.Thread(target=run)
    thread.start()
    assert watcher.primed.wait(10)
    rows = [
        {"type": "turn/start", "data": {"turn": 2}},
        {"type": "turn/end", "data": {"turn": 2, "reason": {"kind": "completed"}}},
    ]
    with log.open("ab") as fh:
        fh.write(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    thread.join(20)
    stop.set()
    (change,) = appended
    assert [(e.type, e.seq) for e in change.events] == [
        ("turn/start", before),
        ("turn/end", before + 1),
    ]
    assert change.summary.turns == 2 and not change.summary.open_turn
    assert not any(p.kind is ProblemKind.CORRUPT for p in change.problems)


# -- dsh's own V2, V3 and V4 logs ----------------------------------------------------------

OLDER_SAMPLES = sorted(p for v in ("v2", "v3", "v4") for p in (DATA / v).rglob("*.jsonl"))
#: dsh's subagent-fork-in-process child: its seed's end in each version (the inherited
#: marker's row), and its own and inherited usage (the fact sheet's twin table, §7).
FORK_CUT = {2: 15, 3: 16}
FORK_OWN = (97, 39, 2816, 0)
FORK_INHERITED = (2885, 25, 0, 0)
BUCKETS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")


def test_the_older_samples_are_dshs_seven() -> None:
    assert [p.relative_to(DATA).as_posix() for p in OLDER_SAMPLES] == [
        "v2/acp/escalation-rejected/session.v2.jsonl",
        "v2/sdk/subagent-fork-in-process/session.1.v2.jsonl",
        "v2/sdk/subagent-fork-in-process/session.v2.jsonl",
        "v3/acp/escalation-rejected/session.v3.jsonl",
        "v3/sdk/subagent-fork-in-process/session.1.v3.jsonl",
        "v3/sdk/subagent-fork-in-process/session.v3.jsonl",
        "v4/acp/escalation-rejected/session.v4.jsonl",
    ]


@pytest.mark.parametrize("path", OLDER_SAMPLES, ids=lambda p: "/".join(p.parts[-4:]))
def test_dsh_older_sample_reads_whole(path: Path) -> None:
    contents = read_log(path)
    assert contents.header is not None
    assert contents.header.version == int(path.relative_to(DATA).parts[0][1:])
    assert [p.kind for p in contents.problems] == [ProblemKind.PROJECTED]
    assert len(contents.events) == len(lines_of(path)) - 1
    if "escalation-rejected" in path.parts:
        own = fold_log(path, None).own().to_json_dict()
        assert tuple(own[b] for b in BUCKETS) == SAMPLE_USAGE["escalation-rejected"]


@pytest.mark.parametrize("version", sorted(FORK_CUT))
def test_dsh_v2_v3_fork_child_has_its_cut_its_parent_and_its_usage(version: int) -> None:
    folder = DATA / f"v{version}" / "sdk" / "subagent-fork-in-process"
    root = SessionRoot(folder)
    by_name = {s.path.name: s for s in root.scan()}
    child = by_name[f"session.1.v{version}.jsonl"]
    assert child.header is not None and child.header.is_seeded is True
    assert child.seed_length == FORK_CUT[version]
    loaded = root.load(child)
    # its seed is its parent's prefix, compared as dsh's snapshots keep it
    assert [p.kind for p in loaded.problems] == [ProblemKind.PROJECTED]
    assert loaded.parent_path == folder / f"session.v{version}.jsonl"
    view = SessionView(loaded)
    assert [(t.turn.number, t.inherited) for t in view.turns] == [(1, True), (2, False)]
    fold = fold_log(child.path, child.seed_length)
    assert tuple(fold.own().to_json_dict()[b] for b in BUCKETS) == FORK_OWN
    assert tuple(fold.inherited().to_json_dict()[b] for b in BUCKETS) == FORK_INHERITED
    # and the same as the v0 original's own and inherited usage, seed 42 events there
    v0 = FIXTURES / "acp" / "subagent-fork-in-process"
    v0_root = SessionRoot(v0)
    (v0_child,) = [s for s in v0_root.scan() if s.parent_session is not None]
    assert v0_child.seed_length == 42
    v0_fold = fold_log(v0_child.path, v0_child.seed_length)
    assert tuple(v0_fold.own().to_json_dict()[b] for b in BUCKETS) == FORK_OWN
    assert tuple(v0_fold.inherited().to_json_dict()[b] for b in BUCKETS) == FORK_INHERITED
