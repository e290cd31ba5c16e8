"""The fork dialog: confirm the boundary, name the child (or let the core name it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import msgspec
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from .._text import line
from ..widgets._footer import KeyFooter


class ForkPlan(msgspec.Struct, frozen=True):
    """What the dialog proposes: fork `parent_id` through seq `boundary`."""

    parent_title: str
    parent_id: str
    turn_number: int
    boundary: int

    @property
    def inherits(self) -> int:
        """How many events the child inherits as its seed."""
        return self.boundary + 1


class ForkRequest(msgspec.Struct, frozen=True):
    """The user's confirmed fork; `child_id` None means "generate one"."""

    plan: ForkPlan
    child_id: str | None


class ForkScreen(ModalScreen[ForkRequest | None]):
    """Asks for the child id; Enter forks, Escape cancels.

    With `submit`, the dialog stays open while the fork is written: the app closes it
    when the child exists (`dismiss`), or shows why not under the id field
    (`show_error`, e.g. an id that is taken) so the user can change the id, the cursor
    at its end. Without it, Enter dismisses with the request.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(self, plan: ForkPlan, submit: Callable[[ForkRequest], None] | None = None) -> None:
        super().__init__()
        self.plan = plan
        self._on_submit = submit

    def compose(self) -> ComposeResult:
        plan = self.plan
        facts = Text(end="")
        facts.append("parent    ", style="bold")
        facts.append_text(line(plan.parent_title, limit=50))
        facts.append("\n          ")
        facts.append_text(line(plan.parent_id, style="dim", limit=50))
        facts.append("\nboundary  ", style="bold")
        facts.append(f"seq {plan.boundary}  (turn/end of turn {plan.turn_number})")
        facts.append("\ninherits  ", style="bold")
        facts.append(f"{plan.inherits} event{'s' if plan.inherits != 1 else ''}")
        with Vertical(id="fork-dialog"):
            yield Label(Text("Fork session", style="bold"), id="fork-title")
            yield Static(facts, id="fork-facts")
            yield Label("child id (blank = generated)")
            # Focused again after a refusal (even from the Fork button): no select-all.
            yield Input(placeholder="generated UUID", id="child-id", select_on_focus=False)
            error = Static("", id="fork-error")
            error.display = False
            yield error
            with Horizontal(id="fork-buttons"):
                yield Button("Fork", variant="primary", id="fork")
                yield Button("Cancel", id="cancel")
        yield KeyFooter()  # the dialog's own keys, over the main screen's

    def on_mount(self) -> None:
        self.query_one("#child-id", Input).focus()

    def _submit(self) -> None:
        value = self.query_one("#child-id", Input).value.strip()
        request = ForkRequest(self.plan, value or None)
        if self._on_submit is None:
            self.dismiss(request)
            return
        self._on_submit(request)

    def show_error(self, message: str) -> None:
        """Say under the id field why the fork was refused; the id stays editable."""
        error = self.query_one("#fork-error", Static)
        error.update(Text(message, style="bold red"))
        error.display = True
        field = self.query_one("#child-id", Input)
        field.focus()
        # The cursor at the end and nothing selected: the user fixes the id (a
        # Backspace takes one character, not the whole id).
        field.action_end()

    @on(Input.Submitted, "#child-id")
    def _on_child_id_submitted(self) -> None:
        self._submit()

    @on(Button.Pressed, "#fork")
    def _on_fork_pressed(self) -> None:
        self._submit()

    @on(Button.Pressed, "#cancel")
    def _on_cancel_pressed(self) -> None:
        self.dismiss(None)

    def action_cancel(self) -> None:
        """Close without forking."""
        self.dismiss(None)
