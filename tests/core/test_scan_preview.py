"""A big root's tree before its scan ends (`BackgroundScan` with `preview`,
`summary.head_states`, `root.ScanPreview`): the first pass reads headers, the preview
is worked out from them and the first project's logs, and the scan's result is the
serial scan's, whatever the preview showed."""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ProcessPoolExecutor, wait
from pathlib import Path

import pytest
from turnline.core import parallel
from turnline.core.ids import short_ids
from turnline.core.lineage import (
    Lineage,
    first_project_paths,
    project_groups,
    project_order,
)
from turnline.core.records import INDEX_THRESHOLD
from turnline.core.root import BackgroundScan, ScanPreview, SessionRoot
from turnline.core.summary import SessionSummary, head_states, state_link_key, summary_states
from turnline.demo.dshmigrate import twin_root

from ..conftest import FIXTURES, fixture_logs

needs_two_cores = pytest.mark.skipif(
    parallel.usable_cores() < 2, reason="needs two cores to split the walk"
)


@pytest.fixture(scope="module")
def wide_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated root of 1,200 sessions over 40 projects."""
    from benchmarks.generate import write_wide_root

    return write_wide_root(tmp_path_factory.mktemp("wide") / "wide", sessions=1200).path


@pytest.fixture(scope="module")
def mixed_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 151 real logs, their V5 twins and their V6 twins side by side: every wart
    of the fixtures (zstd logs, broken headers, repeated ids, missing parents) three
    times over, under three top folders of about the same size."""
    root = tmp_path_factory.mktemp("mixed")
    shutil.copytree(FIXTURES, root / "v0")
    twin_root(FIXTURES, root / "v5", version=5)
    twin_root(FIXTURES, root / "v6", version=6)
    return root


def _logs(root: Path) -> list[tuple[str, str | None, int | None]]:
    return [(str(path), None, INDEX_THRESHOLD) for path in sorted(root.rglob("session*.jsonl*"))]


def test_a_provisional_state_is_the_exact_states_header(mixed_root: Path) -> None:
    """Of every real log and twin: a provisional state (from the header line alone)
    has the exact state's id, encoding and header (the seed cut aside, which V2+
    logs take from their records), so the lineage and the projects it gives are the
    scan's; a log whose first line is not a plain header is summarized whole."""
    logs = _logs(mixed_root)
    assert len(logs) >= 3 * len(fixture_logs())
    states, provisional = head_states(logs)
    exact = summary_states(logs)
    assert len(provisional) > len(logs) // 2  # most real logs take the quick way
    assert len(provisional) < len(logs)  # and the odd ones do not
    for k, ((path, _, _), state, truth) in enumerate(zip(logs, states, exact, strict=True)):
        assert truth is not None and state is not None, path
        if k not in provisional:
            assert state == truth, path
            continue
        assert state[:2] == truth[:2], path
        assert state[2] is not None and truth[2] is not None, path
        assert state[2][:5] == truth[2][:5] and state[2][6:] == truth[2][6:], path
        assert state_link_key(path, state) == state_link_key(path, truth), path
        assert state[3:9] == (None, 0, None, 0, False, ()), path  # nothing to show


def test_a_log_to_index_in_a_whole_batch_still_gives_its_header(mixed_root: Path) -> None:
    """A first batch is summarized whole, but a log big enough to index has no whole
    summary there: its header line stands in (so the preview's lineage has it), as in
    any other batch."""
    logs = [(path, sid, 1) for path, sid, _ in _logs(mixed_root)]  # every log "big"
    states, provisional = head_states(logs, whole=True)
    quick, quick_provisional = head_states(logs)
    assert provisional == quick_provisional and provisional
    for k in provisional:
        assert states[k] == quick[k]
    exact = summary_states([(path, sid, None) for path, sid, _ in logs])
    for k in provisional:
        path = logs[k][0]
        state, truth = states[k], exact[k]
        assert state is not None and truth is not None
        assert state_link_key(path, state) == state_link_key(path, truth), path


def _check_preview(preview: ScanPreview, summaries: list[SessionSummary], root: Path) -> None:
    """The preview is exactly what the finished scan gives the tree's first screen."""
    lineage: Lineage = SessionRoot(root).lineage()
    groups = project_groups(lineage)
    order = sorted(groups, key=project_order)
    assert preview.projects == [
        (cwd, sum(1 for kind, _ in groups[cwd] if kind == "session")) for cwd in order
    ]
    first = first_project_paths(lineage)
    assert list(preview.summaries) == sorted(preview.summaries, key=first.index)
    assert set(preview.summaries) == set(first)
    mine = project_groups(preview.lineage)
    assert list(mine) == [order[0]] and mine[order[0]] == groups[order[0]]
    shorts = short_ids((s.id, s.path) for s in summaries)
    assert preview.shorts == {path: shorts[path] for path in first}
    assert preview.lineage.problems == {
        p: lineage.problems[p] for p in first if p in lineage.problems
    }
    assert preview.total == len(summaries)
    for summary in summaries:
        if summary.path in preview.summaries:
            assert preview.summaries[summary.path] == summary


def _previewed(path: Path) -> tuple[SessionRoot, BackgroundScan]:
    """A root and its scan, started with a preview (a first pass of headers)."""
    root = SessionRoot(path)
    pending = root.scan_in_background(preview=True)
    assert pending.heads
    return root, pending


@needs_two_cores
def test_a_previewed_scan_gives_the_scan_and_shows_its_first_project(
    wide_root: Path, pool: ProcessPoolExecutor
) -> None:
    root, pending = _previewed(wide_root)
    assert not pending.tasks  # only the first pass, so far
    previews: list[ScanPreview] = []
    summaries = pending.result(on_preview=previews.append)
    serial = SessionRoot(wide_root)
    assert summaries == serial.summaries()
    assert root.lineage() == serial.lineage()
    assert root._lineage is not None  # linked from the preview's links, not later
    assert len(previews) == 1
    preview = previews[0]
    assert 0 < len(preview.summaries) < len(summaries) // 2
    _check_preview(preview, summaries, wide_root)


@needs_two_cores
def test_real_logs_preview_and_scan_as_the_serial_scan(
    mixed_root: Path, pool: ProcessPoolExecutor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fixtures' warts (repeated ids across the three copies, missing parents,
    logs the first pass reads whole) under a preview: the first screen and the result
    are the serial scan's."""
    monkeypatch.setattr(BackgroundScan, "PREVIEW_UNITS", 10)
    root, pending = _previewed(mixed_root)
    previews: list[ScanPreview] = []
    summaries = pending.result(on_preview=previews.append)
    serial = SessionRoot(mixed_root)
    assert summaries == serial.summaries()
    assert root.lineage() == serial.lineage()
    assert len(previews) == 1
    _check_preview(previews[0], summaries, mixed_root)
    # Every id is claimed three times: the short ids say which copy is which.
    assert any("@" in short for short in previews[0].shorts.values())


@needs_two_cores
def test_a_small_or_one_project_root_is_not_previewed(
    tmp_path: Path, pool: ProcessPoolExecutor
) -> None:
    from benchmarks.generate import write_wide_root

    small = write_wide_root(tmp_path / "small", sessions=300)
    assert not SessionRoot(small.path).scan_in_background(preview=True).heads
    one = tmp_path / "one"
    for k in range(1100):
        folder = one / "--home-dev-p--" / f"s{k:05d}"
        folder.mkdir(parents=True)
        (folder / "session.jsonl").write_bytes(
            b'{"type":"session","version":0,"id":"s%05d","delegationDepth":0}\n' % k
        )
    pending = SessionRoot(one).scan_in_background(preview=True)
    assert not pending.heads and pending.tasks  # one project: nothing to show sooner
    assert pending.result() == SessionRoot(one).summaries()


@needs_two_cores
def test_a_previewed_scan_whose_workers_die_scans_here(
    wide_root: Path, pool: ProcessPoolExecutor
) -> None:
    _, pending = _previewed(wide_root)
    # The first pass done, the workers die idle (one killed while it writes a reply
    # hangs the standard library's pool itself, with or without a preview).
    wait(pending.heads)
    for pid in list(pool._processes):  # type: ignore[attr-defined]
        os.kill(pid, 9)
    previews: list[ScanPreview] = []
    assert pending.result(on_preview=previews.append) == SessionRoot(wide_root).summaries()
    assert parallel.process_pool() is None  # the broken pool is dropped
