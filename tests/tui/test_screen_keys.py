"""Keys on the dialogs and the pushed screens (issue 23): each dialog has a focused
field, each pushed screen its own keys and footer, and the main screen's session
keys never act from under another screen."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Input
from turnline.tui import TurnlineApp
from turnline.tui.screens import CompareScreen, ExportScreen, ForkScreen, HelpScreen
from turnline.tui.screens._usage import UsageScreen

from ..core.rich_logs import forked_pair
from .conftest import Family, opened, wait_for

SIZE = (120, 36)
SMALL = (80, 24)
#: The main screen's session keys: none may act from under another screen.
SESSION_KEYS = ("f", "p", "e", "c", "m", "d", "y", "o", "v", "r", "slash", "a", "t", "u", "s")


def footer_keys(app: TurnlineApp) -> dict[str, str]:
    """What the top screen's footer offers: key -> description (enabled, shown)."""
    return {
        key: active.binding.description
        for key, active in app.screen.active_bindings.items()
        if active.binding.show and active.enabled
    }


def bound(app: TurnlineApp, key: str) -> str:
    """The action `key` runs on the top screen."""
    return app.screen.active_bindings[key].binding.action


def session_actions(app: TurnlineApp) -> list[str]:
    """The app's actions bound to the main screen's session keys."""
    return [b.action for key, b in app._bindings if key in SESSION_KEYS]


def session_logs(root: Path) -> set[Path]:
    return set(root.rglob("session*.jsonl"))


# -- bug 4: the export dialog ------------------------------------------------------------


async def test_enter_in_the_export_dialog_exports_to_the_folder_it_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = forked_pair(tmp_path / "root")
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(out)
    async with TurnlineApp(tmp_path / "root", tz=UTC).run_test(size=SIZE) as pilot:
        app = await opened(pilot, root.resolve("left").path)
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportScreen))
        await pilot.pause()
        dialog = app.screen
        assert isinstance(app.focused, Input) and app.focused.id == "path"
        folder = str(dialog.query_one("#export-folder").render())
        assert f"into {out}" in folder, folder
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, ExportScreen))
        assert f"wrote {out / 'left.md'}" in [n.message for n in app._notifications]
    assert (out / "left.md").exists()


async def test_the_export_dialog_folder_follows_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = forked_pair(tmp_path / "root")
    monkeypatch.chdir(tmp_path)
    async with TurnlineApp(tmp_path / "root", tz=UTC).run_test(size=SIZE) as pilot:
        app = await opened(pilot, root.resolve("left").path)
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportScreen))
        await pilot.pause()
        field = app.screen.query_one("#path", Input)
        field.value = "reports/x.md"
        await pilot.pause()
        folder = str(app.screen.query_one("#export-folder").render())
        assert f"into {tmp_path / 'reports'}" in folder, folder


# -- bug 5: the help scrolls by keyboard ------------------------------------------------


async def test_help_scrolls_by_keyboard_at_80x24(family: Family) -> None:
    async with TurnlineApp(family.root, tz=UTC).run_test(size=SMALL) as pilot:
        app = pilot.app
        await wait_for(pilot, lambda: app.snapshot is not None)  # type: ignore[attr-defined]
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.pause()
        body = app.screen.query_one(VerticalScroll)
        assert app.focused is body
        assert body.max_scroll_y > 0  # the Markers are below the fold
        await pilot.press("down")
        await pilot.pause()
        assert body.scroll_y == 1
        await pilot.press("pagedown", "pagedown", "pagedown")
        await pilot.pause(0.3)
        assert body.scroll_y == body.max_scroll_y


# -- bug 6: the fork dialog after a refused id ------------------------------------------


async def test_a_refused_child_id_stays_editable_with_the_cursor_at_its_end(
    family: Family,
) -> None:
    before = session_logs(family.root)
    async with TurnlineApp(family.root, tz=UTC).run_test(size=SIZE) as pilot:
        app = await opened(pilot, family.parent)
        app.timeline.focus()
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ForkScreen))
        dialog = app.screen
        await pilot.press(*"eeee5555-other", "enter")

        def error_shown() -> bool:
            """the error under the id field"""
            error = dialog.query_one("#fork-error")
            return bool(error.display) and "SESSION_ALREADY_EXISTS" in str(error.render())

        await wait_for(pilot, error_shown)
        await pilot.pause()
        field = dialog.query_one("#child-id", Input)
        assert field.selection.is_empty
        assert field.cursor_position == len("eeee5555-other")
        await pilot.press("backspace")
        assert field.value == "eeee5555-othe"
    assert session_logs(family.root) == before


async def test_a_refused_id_after_the_fork_button_keeps_the_cursor_at_the_end(
    family: Family,
) -> None:
    """Clicked, not Enter: the field gets the focus back without selecting its text."""
    async with TurnlineApp(family.root, tz=UTC).run_test(size=SIZE) as pilot:
        app = await opened(pilot, family.parent)
        app.timeline.focus()
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ForkScreen))
        dialog = app.screen
        await pilot.press(*"eeee5555-other")
        await pilot.click("#fork")
        await wait_for(pilot, lambda: bool(dialog.query_one("#fork-error").display))
        await pilot.pause()
        field = dialog.query_one("#child-id", Input)
        assert app.focused is field
        assert field.selection.is_empty and field.cursor_position == len(field.value)


# -- bug 10: the usage and compare screens have their own keys --------------------------


async def test_the_usage_screen_has_its_own_keys_and_footer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    root = forked_pair(tmp_path / "root")
    before = session_logs(tmp_path / "root")
    parent = root.resolve("parent-1").path
    async with TurnlineApp(tmp_path / "root", tz=UTC).run_test(size=SIZE) as pilot:
        app = await opened(pilot, parent)
        app.timeline.focus()
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, UsageScreen))
        await pilot.pause()
        screen = app.screen
        keys = footer_keys(app)
        assert keys.get("escape") == "Back" and bound(app, "q") == "back", keys
        assert keys.get("enter") == "Open", keys
        assert not {"f", "p", "v", "slash", "r"} & set(keys), keys
        assert not [a for a in session_actions(app) if app.check_action(a, ())], keys
        table = screen.query_one("#usage-sessions", DataTable)
        table.move_cursor(row=1)
        await pilot.press("f", "p", "m", "d", "e", "y")
        await pilot.pause()
        assert app.screen is screen  # no dialog over it, no jump
        assert app.view is not None and app.view.path == parent
        await pilot.press("q")
        await wait_for(pilot, lambda: not isinstance(app.screen, UsageScreen))
        assert app.is_running  # q went back, it did not quit
    assert session_logs(tmp_path / "root") == before


async def test_the_compare_screen_has_its_own_keys_and_footer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = forked_pair(tmp_path / "root")
    before = session_logs(tmp_path / "root")
    async with TurnlineApp(tmp_path / "root", tz=UTC).run_test(size=SIZE) as pilot:
        app = await opened(pilot, root.resolve("left").path)
        await pilot.press("m")
        app = await opened(pilot, root.resolve("right").path)
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))
        await pilot.pause()
        screen = app.screen
        keys = footer_keys(app)
        assert keys.get("escape") == "Back" and bound(app, "q") == "back", keys
        assert not {"f", "p", "v", "slash", "r"} & set(keys), keys
        copied: list[str] = []
        monkeypatch.setattr(app, "copy_to_clipboard", copied.append)
        await pilot.press("f", "p", "e", "m", "d", "y", "c")
        await pilot.pause()
        assert app.screen is screen and copied == []
        await pilot.press("q")
        await wait_for(pilot, lambda: not isinstance(app.screen, CompareScreen))
        assert app.is_running
        # Back on the main screen, its keys work again.
        await pilot.press("y")
        assert copied == ["right"]
    assert session_logs(tmp_path / "root") == before


# -- rough edges: dialog footers, the mark, the format buttons --------------------------


async def test_each_dialog_shows_its_own_keys_in_a_footer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from textual.widgets import Footer
    from turnline.tui.screens import SearchScreen

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = forked_pair(tmp_path / "root")
    async with TurnlineApp(tmp_path / "root", tz=UTC).run_test(size=SIZE) as pilot:
        app = await opened(pilot, root.resolve("left").path)
        app.timeline.focus()
        for key, screen_type, description in (
            ("question_mark", HelpScreen, "Close"),
            ("e", ExportScreen, "Cancel"),
            ("f", ForkScreen, "Cancel"),
            ("s", SearchScreen, "Close"),
        ):
            await pilot.press(key)
            await wait_for(pilot, lambda t=screen_type: isinstance(app.screen, t))  # type: ignore[misc]
            await pilot.pause()
            assert app.screen.query(Footer), screen_type
            keys = footer_keys(app)
            assert keys.get("escape") == description, (screen_type, keys)
            assert not {"f", "p", "q", "v"} & set(keys), (screen_type, keys)
            await pilot.press("escape")
            await wait_for(pilot, lambda: len(app.screen_stack) == 1)


async def test_m_marks_the_session_in_the_tree(tmp_path: Path) -> None:
    from turnline.tui.screens._help import MARKERS

    root = forked_pair(tmp_path / "root")
    left, right = root.resolve("left").path, root.resolve("right").path
    async with TurnlineApp(tmp_path / "root", tz=UTC).run_test(size=SIZE) as pilot:
        app = await opened(pilot, left)
        tree = app.session_tree

        def label(path: Path) -> str:
            node = tree.node_of(path)
            assert node is not None
            return str(node.label)

        assert not label(left).startswith("◆")
        await pilot.press("m")
        await pilot.pause()
        assert label(left).startswith("◆ ") and not label(right).startswith("◆")
        await opened(pilot, right)
        await pilot.press("m")
        await pilot.pause()
        assert label(right).startswith("◆ ") and not label(left).startswith("◆")
    assert any(mark == "◆" for mark, _ in MARKERS)


async def test_the_chosen_format_has_its_own_glyph(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without colour the two radio buttons still differ: ● chosen, ○ not."""
    root = forked_pair(tmp_path / "root")
    monkeypatch.chdir(tmp_path)
    async with TurnlineApp(tmp_path / "root", tz=UTC).run_test(size=SIZE) as pilot:
        app = await opened(pilot, root.resolve("left").path)
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportScreen))
        await pilot.pause()
        md, html = app.screen.query_one("#md"), app.screen.query_one("#html")
        assert "●" in str(md.render()) and "○" in str(html.render())
        await pilot.click("#html")
        await pilot.pause()
        assert "○" in str(md.render()) and "●" in str(html.render())
