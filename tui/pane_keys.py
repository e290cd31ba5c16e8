"""The app's keys for the sessions pane: its width (`[` narrower, `]` wider), its order
(`a`: lineage / newest activity) and subtree totals (`t`).

A mixin of `TurnlineApp`, like `after_fork.py`, so the app's own file changes little.
The width is a share of the screen (it follows the terminal when that is resized),
stepped by `STEP` between `NARROWEST` and `WIDEST`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.binding import Binding, BindingType
from textual.css.scalar import Scalar, Unit
from textual.widget import Widget

if TYPE_CHECKING:
    from .app import TurnlineApp

#: The sessions pane's share of the screen's width, in percent.
DEFAULT_SHARE = 38
NARROWEST = 15
WIDEST = 80
STEP = 6

PANE_BINDINGS: list[BindingType] = [
    Binding("left_square_bracket", "narrow_sessions", "Narrower", show=False),
    Binding("right_square_bracket", "widen_sessions", "Wider", show=False),
    Binding("a", "toggle_sort", "Sort"),
    Binding("t", "toggle_totals", "Totals"),
]


class PaneActions:
    """Actions for the keys above (mixed into `TurnlineApp`)."""

    sessions_share: int = DEFAULT_SHARE
    """The sessions pane's width, in percent of the screen."""

    def _pane_app(self) -> TurnlineApp:
        return self  # type: ignore[return-value]

    def _left_pane(self) -> Widget:
        return self._pane_app().screen_stack[0].query_one("#left")

    def set_sessions_share(self, share: int) -> None:
        """Give the sessions pane `share` percent of the width (clamped)."""
        share = max(NARROWEST, min(WIDEST, share))
        self.sessions_share = share
        left = self._left_pane()
        # A share, not columns: the pane keeps following the terminal's width (and
        # app.tcss's min-width keeps it usable on a small one).
        left.styles.width = Scalar(share, Unit.PERCENT, Unit.WIDTH)

    def action_narrow_sessions(self) -> None:
        """Make the sessions pane narrower (the timeline and detail get the room)."""
        self.set_sessions_share(self.sessions_share - STEP)

    def action_widen_sessions(self) -> None:
        """Make the sessions pane wider (longer titles)."""
        self.set_sessions_share(self.sessions_share + STEP)

    def action_toggle_sort(self) -> None:
        """Sessions in lineage order <-> newest activity first."""
        self._pane_app().session_tree.action_toggle_sort()

    def action_toggle_totals(self) -> None:
        """Show or hide each session's subtree total (tokens, or cost when priced)."""
        self._pane_app().session_tree.action_toggle_totals()
