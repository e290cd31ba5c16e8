"""The key footer: Textual's `Footer`, recomposed only when what it shows changes."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    """Textual's `Footer`, that recomposes once for a burst of binding updates and not
    at all when they leave its keys as they are.

    Textual's footer recomposes (every key widget made, styled and mounted anew) after
    each `bindings_updated_signal`, and a screen sends several for one change: at the
    app's start the focus, the screen stack and an idle callback each send one, and the
    footer was built three times over, the same keys each time (50 ms of the main
    screen's first frame, while the session tree waited to be drawn). Here an update
    asks for one recompose after the next refresh, unless one is already asked for,
    and that recompose only happens if the keys it would show differ from the ones on
    screen: what a key shows (its key, text, whether it is enabled, its tooltip) is
    read from the screen's active bindings when it runs, so the footer always ends up
    showing the latest bindings, as Textual's does.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._pending = False
        #: What the keys on screen show (`_shown`), None before the first compose.
        self._composed: tuple[Any, ...] | None = None

    def bindings_changed(self, screen: Screen[Any]) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._pending:
            self._pending = True
            self.call_after_refresh(self._recompose_if_changed)

    async def _recompose_if_changed(self) -> None:
        self._pending = False
        if not self.is_attached:
            return
        if self._shown() != self._composed:
            await self.recompose()

    def _shown(self) -> tuple[Any, ...]:
        """What `Footer.compose` builds its keys from: the screen's active bindings
        (each binding, whether it is enabled and its tooltip) and the command palette's
        settings."""
        return (
            self.show_command_palette,
            self.app.ENABLE_COMMAND_PALETTE,
            tuple(
                (key, binding, enabled, tooltip)
                for key, (_node, binding, enabled, tooltip) in self.screen.active_bindings.items()
            ),
        )

    def compose(self) -> ComposeResult:
        if self._bindings_ready:
            self._composed = self._shown()
        return super().compose()
