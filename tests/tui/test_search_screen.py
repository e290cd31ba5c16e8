"""The search screen: results as you type, Enter opens the hit's turn, a snapshot."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from turnline.tui import TurnlineApp
from turnline.tui.screens import SearchScreen

from .conftest import make_family, wait_for

SIZE = (120, 36)


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


async def _search(pilot: Pilot[Any], text: str) -> SearchScreen:
    app = pilot.app
    assert isinstance(app, TurnlineApp)
    await wait_for(pilot, lambda: app.snapshot is not None)
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


async def test_first_search_shows_catalog_progress(tmp_path: Path) -> None:
    """The first search of a root builds its catalog and says how far it got."""
    family = make_family(tmp_path / "root")
    app = TurnlineApp(family.root, tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen))
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        said: list[str] = []
        shown = screen._status

        def status(text: str) -> None:
            said.append(text)
            shown(text)

        screen._status = status  # type: ignore[method-assign]
        for ch in "tokenizer":
            await pilot.press(ch)
        await wait_for(pilot, lambda: bool(screen.hits))
        building = [s for s in said if s.startswith("building the search catalog")]
        assert building, said
        assert building[-1].endswith("logs (100%)")
        assert said[-1].endswith("hits") or said[-1].endswith("hit")
