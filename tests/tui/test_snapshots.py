"""Snapshot tests: fixed terminal sizes (80x24, 120x36, 200x50), times from the logs
(UTC), and a fixed "today" for the timeline's dates (`TODAY`).

Each test builds its root in tmp_path/root, so the only path on screen (the root's
name in the header) is the same on every machine.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from turnline.core.model import SessionEvent, SessionHeader
from turnline.tui import TurnlineApp

from .conftest import T0, copy_fixture_scenarios, make_family, turn, wait_for, write_session

SIZE = (120, 36)
SMALL = (80, 24)
LARGE = (200, 50)
#: The timeline's "today": the family's day (its times show without a date; the real
#: dsh logs, from another day, show theirs).
TODAY = T0 / 1000 + 3600
SnapCompare = Callable[..., bool]


def settled(path: Path, row: int | None = None) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """A `run_before` that opens `path`, puts the timeline cursor on `row`, and waits
    until every pane has drawn its final content."""

    async def run_before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, TurnlineApp)
        app.timeline.clock = lambda: TODAY
        await wait_for(pilot, lambda: app.snapshot is not None)
        app.open_session(path)
        await wait_for(
            pilot, lambda: app.view is not None and app.view.path == path and not app._wanted
        )
        await pilot.pause()
        if row is not None:
            app.timeline.focus()
            app.timeline.move_cursor(row=row)
        await wait_for(pilot, lambda: bool(app.detail.query(".heading, .hint")))
        await pilot.pause(0.1)

    return run_before


def make_app(root: Path) -> TurnlineApp:
    return TurnlineApp(root, tz=UTC)


def test_tree_and_timeline(snap_compare: SnapCompare, tmp_path: Path) -> None:
    """The family root: parent highlighted, turn 1 (two tool calls) in the detail."""
    family = make_family(tmp_path / "root")
    assert snap_compare(
        make_app(family.root), terminal_size=SIZE, run_before=settled(family.parent, row=0)
    )


def test_fork_modal(snap_compare: SnapCompare, tmp_path: Path) -> None:
    """`f` on turn 2 of the parent: the fork dialog with boundary and inherited count."""
    family = make_family(tmp_path / "root")
    before = settled(family.parent, row=1)

    async def run_before(pilot: Pilot[Any]) -> None:
        await before(pilot)
        await pilot.press("f")
        await pilot.pause(0.2)

    assert snap_compare(make_app(family.root), terminal_size=SIZE, run_before=run_before)


def test_child_with_seed_divider(snap_compare: SnapCompare, tmp_path: Path) -> None:
    """A user fork: dimmed seed rows, the divider, the child's own turn selected."""
    family = make_family(tmp_path / "root")
    assert snap_compare(
        make_app(family.root), terminal_size=SIZE, run_before=settled(family.child, row=3)
    )


def write_problem_log(root: Path) -> Path:
    """A log with a seq gap and a torn (unfinished) last line."""
    events = turn(0, 1, "Summarise the incident report", "Summary written.")
    tail = turn(len(events), 2, "Now draft the postmortem", "Drafted.", minute=20)
    gapped = [SessionEvent(e.type, e.seq + 3, e.time, e.data) for e in tail]
    path = write_session(
        root,
        SessionHeader(id="0bad0bad-problems", created_at=T0, cwd="/srv/ops"),
        events + gapped,
    )
    with open(path, "ab") as fh:
        fh.write(b'{"type":"assistant/chunk","seq":99,"ti')
    return path


def test_problem_log(snap_compare: SnapCompare, tmp_path: Path) -> None:
    """A log with problems: listed (kind, where) above the turn; the rest still works."""
    root = tmp_path / "root"
    make_family(root)
    path = write_problem_log(root)
    assert snap_compare(make_app(root), terminal_size=SIZE, run_before=settled(path, row=0))


def test_help_screen(snap_compare: SnapCompare, tmp_path: Path) -> None:
    """`?`: keys and markers."""
    family = make_family(tmp_path / "root")
    before = settled(family.parent)

    async def run_before(pilot: Pilot[Any]) -> None:
        await before(pilot)
        await pilot.press("question_mark")
        await pilot.pause(0.2)

    assert snap_compare(make_app(family.root), terminal_size=SIZE, run_before=run_before)


def test_real_dsh_logs(snap_compare: SnapCompare, tmp_path: Path, fixtures_root: Path) -> None:
    """Real dsh logs (the jsonrpc scenarios): a subagent child under its parent."""
    root = copy_fixture_scenarios(fixtures_root, tmp_path / "root", ["jsonrpc"])
    parent = root / "jsonrpc" / "subagent-spawn-in-process" / "session.jsonl"
    assert snap_compare(make_app(root), terminal_size=SIZE, run_before=settled(parent, row=0))


async def redrawn_detail(pilot: Pilot[Any]) -> None:
    """Read and show the highlighted turn again once the layout has settled: at 80x24
    the detail header's path is cut to the pane's width when first drawn, which may be
    before the pane's scrollbar appeared."""
    app = pilot.app
    assert isinstance(app, TurnlineApp)
    await pilot.pause(0.2)
    app._read_current_turn()
    await pilot.pause(0.5)


def test_tree_and_timeline_80x24(snap_compare: SnapCompare, tmp_path: Path) -> None:
    """80x24: whole turn counts (`4t`), the timeline keeps the user text (steps, tools,
    tokens and time give way), the footer keeps `? Help`."""
    family = make_family(tmp_path / "root")
    before = settled(family.child, row=3)

    async def run_before(pilot: Pilot[Any]) -> None:
        await before(pilot)
        await redrawn_detail(pilot)

    assert snap_compare(make_app(family.root), terminal_size=SMALL, run_before=run_before)


def test_real_dsh_logs_80x24(
    snap_compare: SnapCompare, tmp_path: Path, fixtures_root: Path
) -> None:
    """80x24 on real logs, the detail pane focused (its Unfold all joins the footer)."""
    root = copy_fixture_scenarios(fixtures_root, tmp_path / "root", ["jsonrpc"])
    parent = root / "jsonrpc" / "subagent-spawn-in-process" / "session.jsonl"
    before = settled(parent, row=0)

    async def run_before(pilot: Pilot[Any]) -> None:
        await before(pilot)
        await redrawn_detail(pilot)
        await pilot.press("tab")
        await pilot.pause(0.3)

    assert snap_compare(make_app(root), terminal_size=SMALL, run_before=run_before)


def test_real_dsh_logs_200x50(
    snap_compare: SnapCompare, tmp_path: Path, fixtures_root: Path
) -> None:
    """200x50: every column, titles as wide as the pane, short ids that tell the
    `{{sessionId}}` logs apart, newest activity first (`a`) with subtree totals (`t`)."""
    root = copy_fixture_scenarios(
        fixtures_root, tmp_path / "root", ["jsonrpc", "python-sdk", "acp-snapshot-suite"]
    )
    parent = root / "jsonrpc" / "subagent-spawn-in-process" / "session.jsonl"
    before = settled(parent, row=0)

    async def run_before(pilot: Pilot[Any]) -> None:
        await before(pilot)
        app = pilot.app
        assert isinstance(app, TurnlineApp)
        await pilot.press("a", "t")
        tree = app.session_tree
        snapshot = app.snapshot
        assert snapshot is not None
        await wait_for(
            pilot, lambda: all(tree.subtree_total(p) is not None for p in snapshot.summaries)
        )
        await pilot.pause(0.2)

    assert snap_compare(make_app(root), terminal_size=LARGE, run_before=run_before)
