"""Issue 23's rough edges: the detail header at small heights, the one-line event view,
the search screen's fields and inherited copies, the usage and compare screens at
80x24 and 60x15."""

from __future__ import annotations

import dataclasses
from datetime import UTC
from pathlib import Path

import pytest
from rich.text import Text
from textual.widgets import Checkbox, DataTable, Sparkline, Static
from turnline.core.model import SessionHeader
from turnline.tui import TurnlineApp
from turnline.tui.screens import CompareScreen, SearchScreen
from turnline.tui.screens._usage import UsageScreen

from ..core.rich_logs import forked_pair
from .conftest import CWD, T0, make_family, turn, wait_for, write_session
from .test_after_fork import compare_before
from .test_detail import heading, open_turn, plain, readable_events
from .test_usage_screen import family as usage_family
from .test_usage_screen import open_usage

SMALL = (80, 24)
SIZE = (120, 36)


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def tool_root(root: Path) -> Path:
    """One session whose only tool result says `zebracorn` (no user or assistant text
    does)."""
    events = turn(0, 1, "look around", "done", tools=[("bash", {"command": "ls"}, "zebracorn.txt")])
    events += turn(len(events), 2, "thanks", "you are welcome")
    return write_session(root, SessionHeader(id="tool0001-search", created_at=T0, cwd=CWD), events)


# -- 1: the detail header is compact at 80x24 --------------------------------------------


async def test_at_80x24_the_header_is_two_lines_and_the_conversation_starts_at_once(
    tmp_path: Path,
) -> None:
    family = make_family(tmp_path / "root")
    app = TurnlineApp(family.root, tz=UTC)
    async with app.run_test(size=SMALL) as pilot:
        detail = await open_turn(pilot, app, family.parent, 0)
        await pilot.pause(0.2)
        assert detail.scrollable_content_region.height < 14
        lines = heading(detail).split("\n")
        assert len(lines) == 2, lines
        assert lines[0].startswith("turn 1 · completed")
        assert lines[1].startswith("▶ fork point") and "no usage" in lines[1]
        assert not any(ln.startswith("log ") for ln in lines)
        head = detail.query_one(".heading", Static)
        assert head.has_class("-compact")
        assert head.region.height == 2  # each line kept to one row, cut with an ellipsis
        # The user's message starts within the pane's first four rows.
        role = detail.query(".role-user").first()
        assert role.region.y - detail.content_region.y <= 4
        # At 120x36 the full header is back: the log's path has its own line.
    async with TurnlineApp(family.root, tz=UTC).run_test(size=SIZE) as pilot:
        app2 = pilot.app
        assert isinstance(app2, TurnlineApp)
        detail = await open_turn(pilot, app2, family.parent, 0)
        assert any(ln.startswith("log ") for ln in heading(detail).split("\n"))


async def test_the_header_follows_the_pane_across_the_compact_height(tmp_path: Path) -> None:
    family = make_family(tmp_path / "root")
    app = TurnlineApp(family.root, tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        detail = await open_turn(pilot, app, family.parent, 0)
        assert any(ln.startswith("log ") for ln in heading(detail).split("\n"))
        await pilot.resize_terminal(*SMALL)
        await wait_for(pilot, lambda: len(heading(detail).split("\n")) == 2)


# -- 4: one line per event -----------------------------------------------------------------


async def test_shift_v_shows_one_line_per_event_and_v_still_shows_json(tmp_path: Path) -> None:
    path = tool_root(tmp_path / "root")
    app = TurnlineApp(tmp_path / "root", tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        detail = await open_turn(pilot, app, path, 0)
        await pilot.press("V")
        await wait_for(pilot, lambda: bool(detail.query(".lines")))
        lines = str(detail.query_one(".lines", Static).content).split("\n")
        assert len(lines) == 7  # user, turn/start, step/start, call, result, assistant, end
        assert lines[0].split()[:3] == ["0", "12:05:00.000", "user/message"]
        assert lines[3].split()[2] == "tool/call" and '"command":"ls"' in lines[3]
        assert "zebracorn.txt" in lines[4]
        assert lines[-1].split()[2] == "turn/end"
        assert "one line per event" in heading(detail)
        # v: the JSON view; V again from there: the lines; V once more: the conversation.
        await pilot.press("v")
        await wait_for(pilot, lambda: detail.raw and bool(detail.query(".raw")))
        assert '"type": "turn/end"' in plain(detail)
        await pilot.press("V")
        await wait_for(pilot, lambda: bool(detail.query(".lines")))
        await pilot.press("V")
        await wait_for(pilot, lambda: bool(detail.query(".role-user")))
        assert not detail.query(".lines") and not detail.raw


# -- 3: search fields and inherited copies ---------------------------------------------------


async def test_search_finds_a_word_only_in_a_tool_result_once_tool_is_checked(
    tmp_path: Path,
) -> None:
    tool_root(tmp_path / "root")
    app = TurnlineApp(tmp_path / "root", tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen))
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        assert screen.fields == ("user", "assistant")
        status = screen.query_one("#search-status", Static)
        for ch in "zebracorn":
            await pilot.press(ch)
        await wait_for(pilot, lambda: str(status.content).startswith("0 hits"))
        assert screen.hits == []
        await pilot.press("f5")  # tool results too
        assert screen.query_one("#field-tool", Checkbox).value
        await wait_for(pilot, lambda: bool(screen.hits))
        assert [(h.turn, h.field) for h in screen.hits] == [(1, "tool")]
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, SearchScreen))
        await wait_for(pilot, lambda: bool(app.detail.matches))
        assert app.detail._verdict is not None and app.detail._verdict.turn.number == 1


async def test_search_lists_inherited_copies_when_f6_is_on(tmp_path: Path) -> None:
    family = make_family(tmp_path / "root")
    app = TurnlineApp(family.root, tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen))
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        for ch in "tokenizer":
            await pilot.press(ch)
        await wait_for(pilot, lambda: bool(screen.hits))
        assert not any(h.inherited_from for h in screen.hits)
        before = len(screen.hits)
        await pilot.press("f6")
        assert screen.include_inherited
        await wait_for(pilot, lambda: any(h.inherited_from for h in screen.hits))
        assert len(screen.hits) > before
        # No field checked: nothing is searched, and the status says what to do.
        await pilot.press("f6", "f2", "f3")
        status = screen.query_one("#search-status", Static)
        await wait_for(pilot, lambda: str(status.content).startswith("choose a field"))
        assert screen.hits == []


# -- 2: the usage and compare screens at 80x24 and 60x15 ------------------------------------


@pytest.mark.parametrize("size", [(80, 24), (60, 15)])
async def test_the_usage_table_stays_and_scrolls_sideways_when_small(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    root, parent, _ = usage_family(tmp_path)
    app = TurnlineApp(root, tz=UTC)
    async with app.run_test(size=size) as pilot:
        await open_usage(parent)(pilot)
        screen = app.screen
        assert isinstance(screen, UsageScreen)
        table = screen.query_one("#usage-sessions", DataTable)
        assert table.region.height >= 5  # header and the four sessions
        assert table.row_count == 4
        assert table.fixed_columns == 2  # session and own tokens stay in view
        assert table.virtual_size.width > table.size.width  # the rest scrolls
        await pilot.press("right", "right", "right")
        await wait_for(pilot, lambda: table.scroll_x > 0)
        chart = screen.query_one("#usage-days-box")
        assert chart.display is (size == (80, 24))
        assert screen.query_one("#usage-models", DataTable).region.height >= 3
        for one_line_static in ("#usage-title", "#usage-warning"):
            assert screen.query_one(one_line_static, Static).region.height <= 1


async def test_a_one_day_usage_chart_is_per_hour(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    events = readable_events()
    later = turn(len(events), 2, "more", "sure", minute=190)  # three hours later
    path = write_session(
        tmp_path / "root", SessionHeader(id="oneday", created_at=T0, cwd=CWD), events + later
    )
    app = TurnlineApp(tmp_path / "root", tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        await open_usage(path)(pilot)
        screen = app.screen
        assert isinstance(screen, UsageScreen)
        label = str(screen.query_one("#usage-days-label", Static).content)
        assert "per hour" in label and "one day: 2026-06-01" in label, label
        data = list(screen.query_one("#usage-days", Sparkline).data or [])
        assert len(data) == 24
        assert data[12] == 1200 + 34 + 1000  # the one sample, at 12:05 UTC
        assert sum(1 for value in data if value) == 1


@pytest.mark.parametrize("size", [(80, 24), (60, 15)])
async def test_the_compare_screen_fits_both_sides(tmp_path: Path, size: tuple[int, int]) -> None:
    root = forked_pair(tmp_path / "root")
    app = TurnlineApp(tmp_path / "root", tz=UTC)
    async with app.run_test(size=size) as pilot:
        await compare_before(root)(pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        table = screen.query_one("#rows", DataTable)
        assert table.virtual_size.width <= table.size.width  # the right column is all there
        right = table.get_row_at(0)[2]
        assert isinstance(right, Text) and right.plain.startswith("  2 [completed] question")
        assert table.region.height >= 3
        left_turn = screen.query_one("#left-turn", Static)
        right_turn = screen.query_one("#right-turn", Static)
        assert left_turn.region.y == right_turn.region.y  # side by side
        assert right_turn.region.right <= screen.size.width
        assert "question 3: right work" in str(right_turn.content)
        assert screen.query_one("#outcomes", Static).region.height == 3  # two lines + rule


async def test_usage_of_a_log_whose_times_pass_the_calendar_does_not_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A time past 64 bits (read as a float of 10^29 ms) names no date: such a day is
    not plotted, and the screen opens (it raised OverflowError)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    events = [
        dataclasses.replace(e, time=123456789012345678901234567890) for e in readable_events()
    ]
    path = write_session(tmp_path / "root", SessionHeader(id="far", created_at=T0, cwd=CWD), events)
    app = TurnlineApp(tmp_path / "root", tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        await open_usage(path)(pilot)
        assert isinstance(app.screen, UsageScreen)
        assert app.is_running and app._exception is None
        assert not list(app.screen.query_one("#usage-days", Sparkline).data or [])


async def test_y_copies_an_id_holding_a_lone_surrogate(tmp_path: Path) -> None:
    """No clipboard takes a lone surrogate as UTF-8: the id goes as it is shown."""
    path = write_session(
        tmp_path / "root",
        SessionHeader(id="ab\ud83d", created_at=T0, cwd=CWD),
        readable_events(),
    )
    app = TurnlineApp(tmp_path / "root", tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        app.open_session(path)
        await wait_for(pilot, lambda: app.view is not None and app.view.path == path)
        copied: list[str] = []
        real = app.copy_to_clipboard

        def copy(text: str) -> None:
            copied.append(text)
            real(text)  # Textual's own (OSC 52) raised UnicodeEncodeError on it

        app.copy_to_clipboard = copy  # type: ignore[method-assign]
        await pilot.press("y")
        await pilot.pause()
        assert copied == ["ab\ufffd"] and app.is_running and app._exception is None


async def test_the_app_leaves_when_its_terminal_hangs_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pty closed under the app without a SIGHUP reaching it (its parent outlived it)
    left Textual's input thread reading EOF at full CPU for good: the app exits."""
    import os
    import pty

    master, slave = pty.openpty()
    stdin = os.fdopen(slave, "rb", buffering=0)
    try:
        monkeypatch.setattr("sys.__stdin__", stdin)
        app = TurnlineApp(tmp_path, tz=UTC)
        async with app.run_test(size=(80, 24)) as pilot:
            app.watch_terminal()  # the terminal is there: nothing happens
            await pilot.pause()
            assert app.is_running and app.return_code is None
            os.close(master)  # the terminal hangs up
            app.watch_terminal()
            await pilot.pause()
        assert app.return_code == 1
    finally:
        stdin.close()
