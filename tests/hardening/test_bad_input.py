"""The bad-input corpus: every case beside healthy sessions, read through scan and load.

Each case must report its exact problem kind for its own log, must not change what
the healthy sessions beside it look like, and must never raise.
"""

from __future__ import annotations

import errno
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from turnline.core.lineage import LineageNode
from turnline.core.logfile import LogReader
from turnline.core.model import ProblemKind
from turnline.core.root import RootError, SessionRoot, discover
from turnline.core.summary import SessionSummary

from .corpus import (
    BIG_LINE_BYTES,
    HEALTHY_IDS,
    BadCase,
    bad_cases,
    build_healthy,
    build_symlink_loops,
    build_unreadable,
    conversation,
    header,
    log_path,
    make_unreadable,
    put,
    raw_log,
    run_without_dac_override,
)

K = ProblemKind
#: Found only by a full load (the seed check reads the parent), not by a scan.
LOAD_ONLY = frozenset({K.SEED_MISMATCH})


def _signature(root: SessionRoot, summary: SessionSummary) -> tuple[Any, ...]:
    """What a listing and a load show of a session, minus where the root lives."""
    loaded = root.load(summary)
    return (
        summary.id,
        summary.path.relative_to(root.path),
        summary.events,
        summary.last_seq,
        summary.turns,
        summary.open_turn,
        summary.title,
        summary.header,
        root.problems_of(summary),
        tuple(e.to_json_dict() for e in loaded.events),
        loaded.problems,
        tuple(t.end_seq for t in loaded.timeline.turns),
    )


def _healthy(root: SessionRoot, summaries: list[SessionSummary]) -> dict[str, tuple[Any, ...]]:
    return {s.id: _signature(root, s) for s in summaries if s.id in HEALTHY_IDS}


@pytest.fixture()
def baseline(tmp_path: Path) -> dict[str, tuple[Any, ...]]:
    """The healthy sessions' signatures in a root that holds nothing else."""
    clean = tmp_path / "clean"
    build_healthy(clean)
    root = SessionRoot(clean)
    found = _healthy(root, root.scan())
    assert sorted(found) == sorted(HEALTHY_IDS)
    return found


def _by_path(summaries: list[SessionSummary]) -> dict[Path, SessionSummary]:
    return {s.path: s for s in summaries}


def _case_ids() -> list[str]:
    return [case.name for case in bad_cases(Path("unused"))]


@pytest.mark.parametrize("name", _case_ids())
def test_bad_case_reports_its_kind_beside_healthy_sessions(
    name: str, tmp_path: Path, big_line_log: Path, baseline: dict[str, tuple[Any, ...]]
) -> None:
    case: BadCase = next(c for c in bad_cases(big_line_log) if c.name == name)
    rootdir = tmp_path / "root"
    build_healthy(rootdir)
    bad_paths = case.build(rootdir)
    root = SessionRoot(rootdir)
    summaries = _by_path(root.scan())
    for path in bad_paths:
        summary = summaries[path]
        scan_kinds = {p.kind for p in root.problems_of(summary)}
        assert scan_kinds == case.kinds - LOAD_ONLY, (path, root.problems_of(summary))
        loaded = root.load(summary)
        load_kinds = {p.kind for p in loaded.problems}
        assert load_kinds == case.kinds, (path, loaded.problems)
        assert not load_kinds & case.forbidden
        # The listing and the full read agree on what is readable.
        assert summary.events == len(loaded.events), path
    assert _healthy(root, list(summaries.values())) == baseline


def test_corrupt_middle_names_line_and_seq_and_keeps_earlier_events(
    tmp_path: Path, big_line_log: Path
) -> None:
    case = next(c for c in bad_cases(big_line_log) if c.name == "bad-json-middle")
    (path,) = case.build(tmp_path)
    root = SessionRoot(tmp_path)
    loaded = root.load(root.resolve("bad-json-middle"))
    (problem,) = loaded.problems
    assert problem.kind is K.CORRUPT
    # Line 7 holds seq 5 (line 1 is the header); seqs 0-4 before it are still shown.
    assert (problem.line, problem.seq) == (7, 5)
    assert "line 7" in problem.message and "seq 4" in problem.message
    assert [e.seq for e in loaded.events] == [0, 1, 2, 3, 4]
    assert [e.to_json_dict() for e in loaded.events] == conversation(2)[:5]
    assert path.exists()


def test_duplicated_seq_is_named_a_duplicate(tmp_path: Path, big_line_log: Path) -> None:
    next(c for c in bad_cases(big_line_log) if c.name == "seq-dup").build(tmp_path)
    root = SessionRoot(tmp_path)
    (problem,) = root.load(root.resolve("seq-dup")).problems
    assert problem.kind is K.SEQ_GAP and problem.seq == 5 and "duplicate" in problem.message


_MEASURE_BIG_LINE = """
import json, resource, sys
from pathlib import Path
from turnline.core.root import SessionRoot
path = Path(sys.argv[1])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
root = SessionRoot(path.parent)
(summary,) = root.scan()
loaded = root.load(summary)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = next(e for e in loaded.events if e.type == "tool/result")
print(json.dumps({
    "grown": (after - before) * 1024,
    "events": summary.events,
    "problems": [p.kind for p in loaded.problems],
    "content": len(result.data["message"]["content"][0]["content"]),
}))
"""


def test_fifty_megabyte_line_is_read_whole_within_bounded_memory(big_line_log: Path) -> None:
    # Peak RSS of a fresh process, not tracemalloc: orjson's internal reallocations make
    # tracemalloc report ~12x the line for one loads() that really costs 2x.
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE_BIG_LINE, str(big_line_log)],
        capture_output=True,
        text=True,
        check=True,
    )
    seen = json.loads(out.stdout)
    assert seen["content"] == BIG_LINE_BYTES
    assert (seen["events"], seen["problems"]) == (12, [])
    # scan + load hold a few copies of the line at once (file bytes, the split line,
    # the decoded string): ~4x measured. Re-reading or re-slicing per record would not fit.
    assert seen["grown"] < 8 * BIG_LINE_BYTES, seen


def test_lineage_cycle_tree_does_not_loop(tmp_path: Path, big_line_log: Path) -> None:
    case = next(c for c in bad_cases(big_line_log) if c.name == "lineage-cycle")
    a, b = case.build(tmp_path)
    build_healthy(tmp_path)
    root = SessionRoot(tmp_path)
    root.scan()
    lineage = root.lineage()
    seen: list[Path] = []
    stack: list[LineageNode] = [*lineage.roots, *(n for m in lineage.missing for n in m.children)]
    while stack:
        node = stack.pop()
        assert node.summary.path not in seen, "a session appears twice: the tree loops"
        seen.append(node.summary.path)
        stack.extend(node.children)
    assert sorted(seen) == sorted(s.path for s in root.summaries())
    assert {a, b} <= set(seen)
    assert len(lineage.ancestors(a)) <= 1 and len(lineage.ancestors(b)) <= 1


class _VanishAfterDiscovery(SessionRoot):
    """A root whose scan removes one session folder for real between discovery and
    summarize: only the timing is arranged, the removal is a real `rmtree`."""

    victim: Path

    def log_paths(self) -> list[tuple[Path, str | None]]:
        found = super().log_paths()
        shutil.rmtree(self.victim)
        return found


def test_session_folder_vanishing_between_discovery_and_summary(
    tmp_path: Path, baseline: dict[str, tuple[Any, ...]]
) -> None:
    rootdir = tmp_path / "root"
    build_healthy(rootdir)
    gone = put(log_path(rootdir, "vanishing"), raw_log(header("vanishing"), conversation(1)))
    root = _VanishAfterDiscovery(rootdir)
    root.victim = gone.parent
    summaries = _by_path(root.scan())
    summary = summaries[gone]
    assert summary.id == "vanishing"  # named from its folder, since the header is gone
    assert {p.kind for p in summary.problems} == {K.UNREADABLE}
    loaded = root.load(summary)
    assert {p.kind for p in loaded.problems} == {K.UNREADABLE} and loaded.events == ()
    assert _healthy(root, list(summaries.values())) == baseline


def test_session_folder_vanishing_during_discovery_is_reported_not_raised(
    tmp_path: Path,
) -> None:
    build_healthy(tmp_path)
    victim = log_path(tmp_path, "zz-vanishing")
    put(victim, raw_log(header("zz-vanishing"), conversation(1)))
    errors: list[tuple[Path, OSError]] = []
    found: list[Path] = []
    for path, _ in discover(tmp_path, lambda p, e: errors.append((p, e))):
        found.append(path)
        if victim.parent.exists():
            # Discovery is lazy: this folder is listed later, so it is gone by then.
            shutil.rmtree(victim.parent)
    assert victim not in found
    assert [(p, e.errno) for p, e in errors] == [(victim.parent, errno.ENOENT)]
    assert len(found) == len(HEALTHY_IDS)


def test_unreadable_log_is_reported_and_healthy_ones_unaffected(
    tmp_path: Path, baseline: dict[str, tuple[Any, ...]]
) -> None:
    rootdir = tmp_path / "root"
    build_healthy(rootdir)
    path = build_unreadable(rootdir)
    denied_already = make_unreadable(path)

    def scan_and_load() -> tuple[Any, ...]:
        root = SessionRoot(rootdir)
        summaries = _by_path(root.scan())
        summary = summaries[path]
        loaded = root.load(summary)
        return summary, loaded, _healthy(root, list(summaries.values()))

    summary, loaded, healthy = (
        scan_and_load() if denied_already else run_without_dac_override(scan_and_load)
    )
    assert {p.kind for p in summary.problems} == {K.UNREADABLE}
    assert "Permission denied" in summary.problems[0].message
    assert {p.kind for p in loaded.problems} == {K.UNREADABLE} and loaded.events == ()
    assert healthy == baseline


def test_symlink_loops_end_discovery_and_list_each_session_once(
    tmp_path: Path, baseline: dict[str, tuple[Any, ...]]
) -> None:
    # No log is behind a looping link, so no problem kind applies: what must hold is
    # that discovery ends, each real session is listed once, and nothing raises.
    rootdir = tmp_path / "root"
    healthy = build_healthy(rootdir)
    build_symlink_loops(rootdir)
    root = SessionRoot(rootdir)
    summaries = root.scan()
    assert sorted(s.path for s in summaries) == sorted(healthy.values())
    assert _healthy(root, summaries) == baseline
    tree = root.lineage()
    assert len(tree.roots) == 2


def test_root_that_does_not_exist_or_is_a_file(tmp_path: Path) -> None:
    with pytest.raises(RootError) as missing:
        SessionRoot(tmp_path / "nope")
    assert missing.value.code == "ROOT_NOT_FOUND"
    plain = tmp_path / "notes.txt"
    plain.write_text("not a log")
    with pytest.raises(RootError) as invalid:
        SessionRoot(plain)
    assert invalid.value.code == "ROOT_INVALID"
    # A root that is one log file is a valid single-session root.
    log = put(tmp_path / "one.jsonl", raw_log(header("one"), conversation(1)))
    (summary,) = SessionRoot(log).scan()
    assert summary.id == "one" and summary.problems == ()


def test_whole_corpus_in_one_root_scans_and_loads_without_raising(
    corpus_root: tuple[Path, dict[str, tuple[list[Path], BadCase]]],
) -> None:
    rootdir, cases = corpus_root

    def check() -> None:
        root = SessionRoot(rootdir)
        summaries = _by_path(root.scan())
        for name, (paths, case) in cases.items():
            for path in paths:
                loaded = root.load(summaries[path])
                assert {p.kind for p in loaded.problems} == case.kinds, (name, loaded.problems)
        for summary in summaries.values():
            if summary.id in HEALTHY_IDS:
                assert root.problems_of(summary) == (), summary.path

    run_without_dac_override(check)


def test_empty_log_that_gets_its_header_later_is_read(tmp_path: Path) -> None:
    path = put(log_path(tmp_path, "late"), b"")
    reader = LogReader(path)
    assert [p.kind for p in reader.read().problems] == [K.EMPTY]
    with path.open("ab") as fh:
        fh.write(raw_log(header("late"), conversation(1)))
    batch = reader.read()
    assert reader.header is not None and reader.header.id == "late"
    assert len(batch.events) == 12 and reader.all_problems() == []
