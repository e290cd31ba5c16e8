"""The usage screen: a snapshot, Enter opens a session, live updates from appended
events, Escape goes back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Sparkline, Static
from turnline.core.model import SessionEvent
from turnline.core.root import SessionRoot
from turnline.core.usage import root_usage
from turnline.tui import TurnlineApp
from turnline.tui.messages import Appended, RootChanged
from turnline.tui.screens._usage import UsageScreen

from tests.core.test_usage import build_root

from .conftest import user_prices, wait_for

SIZE = (120, 36)


def open_usage(path: Path) -> Callable[[Pilot[Any]], Awaitable[None]]:
    async def run_before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, TurnlineApp)
        await wait_for(pilot, lambda: app.snapshot is not None)
        app.open_session(path)
        await wait_for(
            pilot, lambda: app.view is not None and app.view.path == path and not app._wanted
        )
        await pilot.pause()
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, UsageScreen))
        await pilot.pause(0.2)

    return run_before


def family(tmp_path: Path) -> tuple[Path, Path, Path]:
    root = tmp_path / "root"
    build_root(root, 5, False)
    sroot = SessionRoot(root)
    return root, sroot.resolve("p").path, sroot.resolve("c").path


PRICES = """\
[deepseek.deepseek-chat]
input = 0.27
output = 1.10
cacheRead = 0.07
cacheWrite = 0.27

[deepseek.deepseek-reasoner]
input = 0.55
output = 2.19
cacheRead = 0.14
cacheWrite = 0.55
"""


def test_usage_screen_snapshot(
    snap_compare: Callable[..., bool], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parent's subtree (fork, grandchild, subagent), sorted by own spend; two of the
    three models priced (the user's prices.toml), so costs are shown where known."""
    root, parent, _ = family(tmp_path)
    user_prices(tmp_path, monkeypatch, PRICES)
    assert snap_compare(
        TurnlineApp(root, tz=UTC), terminal_size=SIZE, run_before=open_usage(parent)
    )


async def test_screen_rows_live_update_enter_and_escape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    root, parent, child = family(tmp_path)
    expected = root_usage(SessionRoot(root), SessionRoot(root).resolve("p"))
    app = TurnlineApp(root, tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        await open_usage(parent)(pilot)
        screen = app.screen
        assert isinstance(screen, UsageScreen)
        table = screen.query_one("#usage-sessions", DataTable)
        assert table.row_count == 4  # p, c, g and the subagent s
        # Sorted by own spend (billed tokens: no price table here).
        order = [str(k.value) for k in table.rows]
        by_tokens = sorted(expected.sessions, key=lambda s: s.own.total_tokens, reverse=True)
        assert order == [s.path for s in by_tokens]
        assert screen.query_one("#usage-days", Sparkline).data
        assert (
            "LLM calls without usage" in str(screen.query_one("#usage-warning", Static).render())
            or not expected.totals.unmetered
        )
        # Live: appended events reach the folds (and only those are fed).
        before = screen.folds[child].events
        snapshot = app.snapshot
        assert snapshot is not None
        extra = SessionEvent(
            "assistant/message",
            10_000,
            1_700_000_000_000,
            {
                "turn": 99,
                "step": 0,
                "message": {},
                "usage": {"inputTokens": 1, "outputTokens": 1_000_000},
            },
        )
        summary = snapshot.summaries[child]
        screen.apply(RootChanged(snapshot, [Appended(summary, (extra,))], [], []))
        await pilot.pause()
        assert screen.folds[child].events == before + 1
        assert str(next(iter(table.rows)).value) == str(child)  # now the top spender
        # Enter opens the highlighted session; Escape came back before that.
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, UsageScreen))
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, UsageScreen))
        await pilot.pause(0.1)
        again = app.screen.query_one("#usage-sessions", DataTable)
        target = next(k for k in again.rows if str(k.value) != str(parent))
        again.move_cursor(row=again.get_row_index(target))
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, UsageScreen))
        await wait_for(
            pilot, lambda: app.view is not None and str(app.view.path) == str(target.value)
        )
