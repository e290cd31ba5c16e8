"""The app at scale: a big log's head preview, and a big root's folded projects."""

from __future__ import annotations

import inspect
from datetime import UTC
from pathlib import Path

import orjson
import pytest
from turnline.core.logfile import read_log
from turnline.core.model import ProblemKind, SessionHeader
from turnline.core.preview import head_preview
from turnline.core.timeline import build_timeline
from turnline.tui import TurnlineApp
from turnline.tui.widgets import SessionTree

from .conftest import CWD, T0, turn, wait_for, write_session


def long_log(root: Path, turns: int, *, header: SessionHeader | None = None) -> Path:
    events = []
    for number in range(1, turns + 1):
        events += turn(len(events), number, f"question {number}", f"answer {number}")
    return write_session(root, header or SessionHeader(id="long-1", created_at=T0, cwd=CWD), events)


def test_head_preview_is_a_prefix_of_the_full_timeline(tmp_path: Path) -> None:
    path = long_log(tmp_path / "root", 40)
    full = build_timeline(read_log(path).events)
    size = path.stat().st_size
    preview = head_preview(path, head_bytes=size // 3)
    assert preview is not None
    n = len(preview.timeline.turns)
    assert 0 < n < len(full.turns)
    assert preview.timeline.turns == full.turns[:n]
    assert all(t.end_seq is not None for t in preview.timeline.turns)  # closed turns only
    last = preview.timeline.turns[-1]
    assert [e.seq for e in preview.events_between(last.first_seq, last.end_seq)] == list(
        range(last.first_seq, (last.end_seq or 0) + 1)
    )


def test_head_preview_takes_a_legacy_header(tmp_path: Path) -> None:
    """A header without delegationDepth (older dsh, and 22 of the fixtures) is a warning
    the full load reports, not a reason to show no first turns: it made the big-log
    first screen wait for the whole index (1.8 s instead of 0.5 s)."""
    path = long_log(tmp_path / "root", 40)
    lines = path.read_bytes().splitlines(keepends=True)
    head = orjson.loads(lines[0])
    head.pop("delegationDepth", None)
    path.write_bytes(orjson.dumps(head) + b"\n" + b"".join(lines[1:]))
    assert any(p.kind is ProblemKind.LEGACY_HEADER for p in read_log(path).problems)
    preview = head_preview(path, head_bytes=path.stat().st_size // 3)
    assert preview is not None and len(preview.timeline.turns) > 0
    full = build_timeline(read_log(path).events)
    n = len(preview.timeline.turns)
    assert preview.timeline.turns == full.turns[:n]


def test_head_preview_refuses_fork_children_and_broken_heads(tmp_path: Path) -> None:
    child = SessionHeader(
        id="child-1", created_at=T0, cwd=CWD, parent_session="long-1", seed_length=3
    )
    assert head_preview(long_log(tmp_path / "a", 5, header=child)) is None
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b'{"type":"session","id":\n{"type":"turn/end","seq":0}\n')
    assert head_preview(broken) is None
    gapped = long_log(tmp_path / "b", 5)
    lines = gapped.read_bytes().splitlines(keepends=True)
    # Drop an event in the first turn: the preview stops before the gap (no turn left).
    gapped.write_bytes(b"".join([lines[0], *lines[2:]]))
    assert head_preview(gapped) is None


async def test_big_root_starts_with_projects_folded_and_builds_them_on_demand(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    paths: list[Path] = []
    for k in range(404):  # four projects of 101 sessions: past EAGER_SESSIONS
        header = SessionHeader(id=f"s{k:04d}", created_at=T0 + k, cwd=f"/work/p{k % 4}")
        paths.append(write_session(root, header, turn(0, 1, f"task {k}", "done")))
    app = TurnlineApp(root, tz=UTC)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.view is not None)
        tree = app.query_one(SessionTree)
        projects = list(tree.root.children)
        assert len(projects) == 4
        # Only the project holding the first (selected) session has nodes.
        built = [p for p in projects if p.children]
        assert len(built) == 1 and built[0].is_expanded
        assert sum(not p.is_expanded for p in projects) == 3
        # Selecting a session in a folded project builds and unfolds it.
        target = paths[3]  # cwd /work/p3
        app.open_session(target)
        await wait_for(pilot, lambda: app.view is not None and app.view.path == target)
        assert tree.highlighted_path == target
        assert sum(1 for p in tree.root.children if p.children) == 2
        # Unfolding a project by hand builds it too.
        folded = next(p for p in tree.root.children if not p.children)
        folded.expand()
        await wait_for(pilot, lambda: len(folded.children) == 101)


async def test_a_big_logs_head_is_in_the_first_frame(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opened on one big log whose head was read while the app was composed, the first
    frame already holds its first rows (issue 22's first-rows figure): they are not
    held for a frame after it, as a message from a worker is."""
    import turnline.core.index as index_module

    monkeypatch.setattr(index_module, "INDEX_THRESHOLD", 1)  # every log is big here
    path = long_log(tmp_path / "root", 40)
    seen: list[int] = []

    class FirstFrame(TurnlineApp):
        CSS_PATH = str(Path(inspect.getfile(TurnlineApp)).parent / str(TurnlineApp.CSS_PATH))

        def on_mount(self) -> None:
            # Textual calls each class's `on_mount`, this one's first: the head read
            # in `__init__` is waited for here, so the app's own `on_mount` finds it.
            assert self._head is not None
            self._head.result()

        def on_ready(self) -> None:  # after the first frame was drawn
            seen.append(self.timeline.row_count)

    async with FirstFrame(path, tz=UTC).run_test(size=(160, 50)) as pilot:
        await wait_for(pilot, lambda: bool(seen))
        assert seen[0] > 0
