"""Issue 23, the app's panes: a torn tail of a live session is no problem in the tree,
a big log's preview rows are not seq gaps, a filter with no match says so, a find
stays with its session, subtree totals carry their unit, the usage title's spacing."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Static
from turnline.core.model import SessionHeader
from turnline.core.preview import head_preview
from turnline.core.root import SessionRoot
from turnline.core.summary import counted_problems, summarize
from turnline.tui import TurnlineApp
from turnline.tui.app import preview_turns
from turnline.tui.screens._help import MARKERS
from turnline.tui.screens._usage import UsageScreen
from turnline.tui.widgets import SessionTree, TurnTimeline
from turnline.tui.widgets._session_tree import subtree_total_text

from tests.core.test_usage import build_root

from .conftest import CWD, T0, Family, turn, wait_for, write_session
from .test_scale import long_log
from .test_search_screen import _open_hit, chinese_root
from .test_timeline import Host, screen_text
from .test_usage_screen import open_usage

SIZE = (120, 36)
#: Half a record: the agent is writing this line (no newline yet).
TORN = b'{"type":"assistant/chunk","seq":'


async def ready(pilot: Pilot[Any]) -> TurnlineApp:
    app = pilot.app
    assert isinstance(app, TurnlineApp)
    await wait_for(pilot, lambda: app.snapshot is not None and app.view is not None)
    await pilot.pause()
    return app


def label_of(tree: SessionTree, path: Path) -> str:
    node = tree.node_of(path)
    assert node is not None
    return str(node.label)


def tree_lines(tree: SessionTree) -> list[str]:
    return [tree.render_line(y).text for y in range(tree.size.height)]


async def test_a_torn_tail_of_an_open_turn_is_no_problem_in_the_tree(tmp_path: Path) -> None:
    """An agent mid-write (open last turn, last line without its newline) shows `●`
    and no `⚠`; a torn tail after a closed turn still counts."""
    root = tmp_path / "root"
    events = turn(0, 1, "first", "ok")
    events += turn(len(events), 2, "second", "", close=False)
    live = write_session(root, SessionHeader(id="live-1", created_at=T0, cwd=CWD), events)
    closed_events = turn(0, 1, "only", "done")
    closed = write_session(
        root, SessionHeader(id="closed-1", created_at=T0, cwd=CWD), closed_events
    )
    for path in (live, closed):
        with open(path, "ab") as fh:
            fh.write(TORN)
    live_summary, closed_summary = summarize(live), summarize(closed)
    assert live_summary.open_turn and not closed_summary.open_turn
    assert [p.kind.value for p in live_summary.problems] == ["torn-tail"]
    assert counted_problems(live_summary, live_summary.problems) == ()
    assert len(counted_problems(closed_summary, closed_summary.problems)) == 1
    async with TurnlineApp(root, tz=UTC).run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        tree = app.session_tree
        assert "●" in label_of(tree, live) and "⚠" not in label_of(tree, live)
        assert "⚠1" in label_of(tree, closed)


async def test_preview_rows_wait_and_are_not_seq_gaps(tmp_path: Path) -> None:
    """A big log's head preview: closed rows show `…` (not judged yet), never `✖`."""
    path = long_log(tmp_path / "root", 40)
    preview = head_preview(path, head_bytes=path.stat().st_size // 3)
    assert preview is not None
    views = preview_turns(preview)
    assert views and all(v.pending and not v.past_gap and not v.forkable for v in views)
    app = Host()
    async with app.run_test(size=(100, 12)) as pilot:
        timeline = app.query_one(TurnTimeline)
        timeline.show(views, None, cursor_turn=0)
        await pilot.pause()
        rows = screen_text(app)[1:]
        assert rows[0].lstrip().startswith("… 1")
        assert not any("✖" in row for row in rows)
    legend = dict(MARKERS)
    assert "…" in legend and "gap" not in legend["…"]


async def test_a_filter_with_no_match_says_so(family: Family) -> None:
    async with TurnlineApp(family.root, tz=UTC).run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        tree = app.session_tree
        await pilot.press("slash", *"zq[b]x")
        await pilot.pause()
        lines = tree_lines(tree)
        assert any("no session matches 'zq[b]x'" in ln for ln in lines), lines
        await pilot.press(*["backspace"] * 5, *"ooter")  # "zooter": still nothing
        await pilot.pause()
        assert any("no session matches 'zooter'" in ln for ln in tree_lines(tree))
        await pilot.press(*["backspace"] * 6, *"footer")
        await pilot.pause()
        assert tree.node_of(family.other) is not None
        assert not any("no session matches" in ln for ln in tree_lines(tree))


async def test_a_search_hits_find_closes_on_another_session(tmp_path: Path) -> None:
    root = chinese_root(tmp_path / "root")
    other = write_session(
        root, SessionHeader(id="9999-other", created_at=T0 + 5, cwd=CWD), turn(0, 1, "hi", "yo")
    )
    app = TurnlineApp(root, tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        await _open_hit(pilot, "分叉")
        detail = app.detail
        bar = detail.query_one("#find-bar")
        assert detail.finder is not None and bar.has_class("-active")
        app.session_tree.select_path(other)
        await wait_for(pilot, lambda: app.view is not None and app.view.path == other)
        await pilot.pause()
        assert detail.finder is None and not detail.matches
        assert not bar.has_class("-active")
        status = str(detail.query_one("#find-status", Static).content)
        assert "match" not in status


def test_subtree_totals_carry_their_unit() -> None:
    assert subtree_total_text(12_345, None) == "12.3k tok"
    assert subtree_total_text(950, None) == "950 tok"
    assert subtree_total_text(12_345, 0.00213) == "0.00"
    assert subtree_total_text(12_345, 1.372) == "1.37"


async def test_usage_title_spaces_the_label_from_the_subtree(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The title reads "usage of p · subtree …", never "psubtree" (a separator that is
    not only spaces, which a text copy of the screen may drop)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    root = tmp_path / "root"
    build_root(root, 5, False)
    parent = SessionRoot(root).resolve("p").path
    app = TurnlineApp(root, tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        await open_usage(parent)(pilot)
        screen = app.screen
        assert isinstance(screen, UsageScreen)
        title = str(screen.query_one("#usage-title", Static).content)
        assert title.startswith("usage of p · subtree "), title


async def test_the_usage_screen_names_logs_by_the_trees_short_ids(
    fixtures_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two logs that claim one id (`{{sessionId}}`) read apart on the usage screen as
    in the tree: title, then the short id with the folder part that tells them apart."""
    from textual.widgets import DataTable

    from .conftest import copy_fixture_scenarios

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    root = copy_fixture_scenarios(
        fixtures_root, tmp_path / "root", ["acp/cancel", "acp/bash-spill"]
    )
    path = root / "acp" / "cancel" / "session.jsonl"
    app = TurnlineApp(root, tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        await open_usage(path)(pilot)
        table = app.screen.query_one("#usage-sessions", DataTable)
        label = str(table.get_row_at(0)[0])
        assert label.endswith("{{sessio@cancel"), label
