"""A big root's session tree drawn from the scan's preview, before the scan ends
(`SessionTree.show_preview`): the same lines the finished scan draws, nothing selected
until then, and no other project labelled from provisional summaries."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from turnline.core import parallel
from turnline.core.root import BackgroundScan, ScanPreview, SessionRoot
from turnline.core.summary import SessionSummary
from turnline.tui import TurnlineApp
from turnline.tui.widgets import SessionTree

from .conftest import wait_for

pytestmark = pytest.mark.skipif(
    parallel.usable_cores() < 2, reason="needs two cores to split the walk"
)


class HeldScan:
    """A previewed `BackgroundScan` that stops after its preview until `release`."""

    def __init__(self, scan: BackgroundScan) -> None:
        self.root = scan.root
        self._scan = scan
        self.previewed = threading.Event()
        self.gate = threading.Event()

    def result(self, on_preview: Callable[[ScanPreview], None] | None = None) -> Any:
        def held(preview: ScanPreview) -> None:
            assert on_preview is not None
            on_preview(preview)
            self.previewed.set()
            self.gate.wait(60)

        return self._scan.result(on_preview=held)

    def release(self) -> None:
        self.gate.set()


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated root of 1,200 sessions over 40 projects (only read here)."""
    from benchmarks.generate import write_wide_root

    return write_wide_root(tmp_path_factory.mktemp("wide") / "wide", sessions=1200).path


def _lines(tree: SessionTree) -> list[str]:
    """The tree's lines as drawn (text)."""
    return [tree.render_line(y).text for y in range(tree.size.height)]


@contextlib.asynccontextmanager
async def previewing(root: Path) -> AsyncIterator[tuple[TurnlineApp, Pilot[Any], HeldScan]]:
    """The app on `root`, its scan held once its preview is drawn."""
    scan = SessionRoot(root).scan_in_background(preview=True)
    assert scan.heads  # previewed: a first pass of headers
    held = HeldScan(scan)
    app = TurnlineApp(root, tz=UTC, scan=held)  # type: ignore[arg-type]
    async with app.run_test(size=(120, 36)) as pilot:
        tree = app.session_tree
        await wait_for(pilot, lambda: tree.previewing and bool(tree.root.children))
        try:
            yield app, pilot, held
        finally:
            held.release()


async def test_the_preview_draws_the_finished_trees_lines(
    wide: Path, pool: ProcessPoolExecutor
) -> None:
    async with previewing(wide) as (app, pilot, held):
        tree = app.session_tree
        await pilot.pause()
        before = _lines(tree)
        # A preview selects nothing: no session is loaded, no key acts on one.
        assert tree.highlighted_path is None and tree.snapshot is None
        assert app.snapshot is None and app.view is None
        projects = list(tree.root.children)
        assert len(projects) > 1
        assert [p for p in projects if p.children] == [projects[0]]
        assert projects[0].is_expanded and not any(p.is_expanded for p in projects[1:])
        assert "scanning" in str(tree.border_subtitle)
        held.release()
        await wait_for(pilot, lambda: app.view is not None)
        await pilot.pause()
        assert not tree.previewing
        assert _lines(tree) == before
        # The cursor the preview drew is the session selected and loaded.
        first = tree.highlighted_path
        assert first is not None and app.view is not None and app.view.path == first
        assert app.snapshot is not None
        assert tree.node_of(first) is not None


async def test_a_project_unfolded_during_the_preview_is_built_from_the_scan(
    wide: Path, pool: ProcessPoolExecutor
) -> None:
    async with previewing(wide) as (app, pilot, held):
        tree = app.session_tree
        folded = list(tree.root.children)[1]
        folded.expand()
        await wait_for(pilot, lambda: bool(folded.children))
        assert [str(c.label) for c in folded.children] == ["reading the logs…"]
        held.release()
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.pause()
        unfolded = list(tree.root.children)[1]
        assert unfolded.is_expanded  # the fold is kept
        sessions = [c for c in unfolded.children if c.data is not None]
        assert sessions and len(sessions) == len(unfolded.children)
        snapshot = app.snapshot
        assert snapshot is not None
        for node in sessions:
            assert node.data is not None and node.data.path is not None
            summary: SessionSummary = snapshot.summaries[node.data.path]
            assert summary.title is None or str(node.label).startswith(summary.title[:8])


async def test_a_filter_typed_during_the_preview_waits_for_the_scan(
    wide: Path, pool: ProcessPoolExecutor
) -> None:
    async with previewing(wide) as (app, pilot, held):
        tree = app.session_tree
        tree.set_filter("project07")
        assert not tree.previewing and not tree.root.children  # provisional: not filtered
        held.release()
        await wait_for(pilot, lambda: app.snapshot is not None and bool(tree.root.children))
        await pilot.pause()
        projects = [p for p in tree.root.children if p.data is not None]
        assert [p.data.key for p in projects if p.data] == ["/home/dev/project07"]
