"""KeyFooter: Textual's footer, rebuilt once per burst of binding updates and only when
the keys it shows change."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static
from textual.widgets._footer import FooterKey
from turnline.tui.widgets import KeyFooter


class FooterApp(App[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f", "fork", "Fork"),
        Binding("d", "diff", "Diff"),
        Binding("x", "hidden", "Hidden", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.can_fork = True
        self.composes = 0

    def compose(self) -> ComposeResult:
        yield Static("body")
        yield KeyFooter()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "fork":
            return True if self.can_fork else None  # None: shown, disabled
        return True

    def action_fork(self) -> None: ...
    def action_diff(self) -> None: ...
    def action_hidden(self) -> None: ...


def keys(app: App[Any]) -> list[tuple[str, str, bool]]:
    return [(k.key, k.description, k.has_class("-disabled")) for k in app.query(FooterKey)]


async def test_footer_shows_the_bindings_like_textuals() -> None:
    app = FooterApp()
    async with app.run_test() as pilot:
        await pilot.pause()
        shown = keys(app)
        assert ("f", "Fork", False) in shown
        assert ("d", "Diff", False) in shown
        assert all(key != "x" for key, _, _ in shown)


async def test_a_burst_of_unchanged_updates_keeps_the_keys() -> None:
    app = FooterApp()
    async with app.run_test() as pilot:
        await pilot.pause()
        before = list(app.query(FooterKey))
        assert before
        for _ in range(5):
            app.screen.refresh_bindings()
        await pilot.pause()
        await pilot.pause()
        after = list(app.query(FooterKey))
        assert [id(k) for k in after] == [id(k) for k in before]  # not rebuilt


async def test_a_change_rebuilds_once_and_shows_the_latest_state() -> None:
    app = FooterApp()
    async with app.run_test() as pilot:
        await pilot.pause()
        footer = app.query_one(KeyFooter)
        recomposed = 0
        original = footer.recompose

        async def counting() -> None:
            nonlocal recomposed
            recomposed += 1
            await original()

        footer.recompose = counting  # type: ignore[method-assign]
        app.can_fork = False
        for _ in range(4):
            app.screen.refresh_bindings()
        await pilot.pause()
        await pilot.pause()
        assert recomposed == 1
        assert ("f", "Fork", True) in keys(app)
        # and back: a later change is seen too
        app.can_fork = True
        app.screen.refresh_bindings()
        await pilot.pause()
        await pilot.pause()
        assert recomposed == 2
        assert ("f", "Fork", False) in keys(app)
