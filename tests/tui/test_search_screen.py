"""The search screen: results as you type, Enter opens the hit's turn with the match
highlighted in the detail pane (n / N move), snapshots."""

from __future__ import annotations

import os
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import Static
from turnline.core.catalog import catalog_path
from turnline.core.model import SessionHeader
from turnline.tui import TurnlineApp
from turnline.tui.screens import SearchScreen
from turnline.tui.screens._search import HINT
from turnline.tui.widgets._turn_detail import CURRENT_STYLE, MATCH_STYLE

from .conftest import CWD, T0, make_family, turn, wait_for, write_session
from .test_detail import spans_of

SIZE = (120, 36)


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


async def _search(pilot: Pilot[Any], text: str) -> SearchScreen:
    app = pilot.app
    assert isinstance(app, TurnlineApp)
    await wait_for(pilot, lambda: app.snapshot is not None)

    def main_screen_drawn() -> bool:
        """the first session and its turn in the panes (a snapshot shows them beside
        the dialog: opened sooner, the detail pane could still be empty)"""
        return app.view is not None and bool(app.detail.query(".heading, .hint"))

    await wait_for(pilot, main_screen_drawn)
    await pilot.pause()
    await pilot.press("s")
    await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen))
    screen = app.screen
    assert isinstance(screen, SearchScreen)
    for ch in text:
        await pilot.press(ch)
    await wait_for(pilot, lambda: bool(screen.hits))
    await pilot.pause(0.1)
    return screen


async def test_typing_finds_and_enter_opens_the_turn(tmp_path: Path) -> None:
    family = make_family(tmp_path / "root")
    app = TurnlineApp(family.root, tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _search(pilot, "tokenizer")
        # the parent's turn 1 is inherited by the child: one hit, credited to the parent
        first = [(h.session, h.turn, h.inherited_by) for h in screen.hits]
        assert ("aaaa1111-parent", 1, 1) in first
        target = next(h for h in screen.hits if h.session == "aaaa1111-parent" and h.turn == 1)
        screen.hits = [target]
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, SearchScreen))
        await wait_for(pilot, lambda: app.view is not None and str(app.view.path) == target.path)


async def test_bad_query_says_why(tmp_path: Path) -> None:
    family = make_family(tmp_path / "root")
    app = TurnlineApp(family.root, tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen))
        await pilot.press("quotation_mark", "x")
        status = app.screen.query_one("#search-status")

        def said() -> bool:
            return "unbalanced quote" in str(status.render())

        await wait_for(pilot, said)


def test_search_screen_snapshot(snap_compare: Any, tmp_path: Path) -> None:
    family = make_family(tmp_path / "root")

    async def run_before(pilot: Pilot[Any]) -> None:
        await _search(pilot, "tokenizer")

    assert snap_compare(TurnlineApp(family.root, tz=UTC), terminal_size=SIZE, run_before=run_before)


async def test_opening_search_builds_the_catalog_showing_progress(tmp_path: Path) -> None:
    """The screen brings the catalog up to date as soon as it opens (the first time:
    builds it) and says how far it got; then it invites typing, and a query finds."""
    family = make_family(tmp_path / "root")
    said: list[str] = []

    class Recording(SearchScreen):
        def _status(self, text: str) -> None:
            said.append(text)
            super()._status(text)

    app = TurnlineApp(family.root, tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        screen = Recording(family.root)
        app.push_screen(screen)
        await wait_for(pilot, lambda: bool(said) and said[-1] == HINT)
        building = [s for s in said if s.startswith("building the search catalog")]
        assert building, said
        assert building[0].startswith("building the search catalog: 0/")
        assert building[-1].endswith("logs (100%)")
        assert catalog_path(family.root).exists()
        for ch in "tokenizer":
            await pilot.press(ch)
        await wait_for(pilot, lambda: bool(screen.hits))
        assert said[-1].split()[1] in ("hit", "hits")


def chinese_root(root: Path) -> Path:
    """A session whose middle turn says 分叉 five times (user text and assistant text)."""
    events = turn(0, 1, "先看看代码", "好的")
    events += turn(len(events), 2, "这里分叉吧。分叉之后再分叉", "已经分叉。fork 完成，分叉成功")
    events += turn(len(events), 3, "继续", "完成")
    write_session(root, SessionHeader(id="ffff6666-zh", created_at=T0, cwd=CWD), events)
    return root


async def _open_hit(pilot: Pilot[Any], query: str) -> TurnlineApp:
    app = pilot.app
    assert isinstance(app, TurnlineApp)
    await _search(pilot, query)
    await pilot.press("enter")
    await wait_for(pilot, lambda: not isinstance(app.screen, SearchScreen))
    detail = app.detail
    await wait_for(pilot, lambda: bool(detail.matches))
    await pilot.pause(0.2)
    return app


async def test_enter_opens_the_hits_turn_with_the_matches_highlighted_and_n_moves(
    tmp_path: Path,
) -> None:
    root = chinese_root(tmp_path / "root")
    app = TurnlineApp(root, tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        await _open_hit(pilot, "分叉")
        detail = app.detail
        # The hit's turn (turn 2 of 3), not the first or last row.
        assert app.timeline.current_turn_index == 1
        assert detail._verdict is not None and detail._verdict.turn.number == 2
        assert len(detail.matches) == 5
        status = str(detail.query_one("#find-status", Static).content)
        assert "match 1/5" in status
        assert detail.has_focus  # n / N work at once
        user = detail._fields[detail.matches[0].field].static
        assert spans_of(user) == [
            ("分叉", CURRENT_STYLE),
            ("分叉", MATCH_STYLE),
            ("分叉", MATCH_STYLE),
        ]
        await pilot.press("n")
        assert "match 2/5" in str(detail.query_one("#find-status", Static).content)
        assert spans_of(user) == [
            ("分叉", MATCH_STYLE),
            ("分叉", CURRENT_STYLE),
            ("分叉", MATCH_STYLE),
        ]
        await pilot.press("n", "n")
        assistant = detail._fields[detail.matches[3].field].static
        assert assistant is not user
        assert spans_of(assistant)[0] == ("分叉", CURRENT_STYLE)
        assert all(style == MATCH_STYLE for _, style in spans_of(user))
        await pilot.press("N")
        assert "match 3/5" in str(detail.query_one("#find-status", Static).content)
        # The log text is literal: the highlight is styles on the same characters.
        assert isinstance(user.content, Text)
        assert user.content.plain == "这里分叉吧。分叉之后再分叉"


def test_a_highlighted_match_snapshot(snap_compare: Any, tmp_path: Path) -> None:
    root = chinese_root(tmp_path / "root")

    async def run_before(pilot: Pilot[Any]) -> None:
        await _open_hit(pilot, "分叉")
        await pilot.press("n")
        await pilot.pause(0.2)

    assert snap_compare(TurnlineApp(root, tz=UTC), terminal_size=SIZE, run_before=run_before)


@pytest.mark.skipif(not hasattr(os, "fsencode"), reason="POSIX file names")
async def test_a_log_whose_path_is_not_utf8_is_said_unsearched(tmp_path: Path) -> None:
    """The catalog cannot hold such a path (`Catalog.unstorable`): the status line says
    how many logs were not searched, beside the hits of the others."""
    family = make_family(tmp_path / "root")
    odd = os.fsencode(family.parent.parent.parent) + b"/odd-\xff"
    os.makedirs(odd)
    with open(family.parent, "rb") as src, open(odd + b"/session.jsonl", "wb") as dst:
        dst.write(src.read())
    app = TurnlineApp(family.root, tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _search(pilot, "tokenizer")
        status = screen.query_one("#search-status")
        said = "1 log not searched: path or id not UTF-8"
        await wait_for(pilot, lambda: said in str(status.render()))
        assert all("odd-" not in h.path for h in screen.hits)
