"""The export dialog: a format and a path; the app writes and says where."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, RadioButton, RadioSet


@dataclass(frozen=True, slots=True)
class ExportRequest:
    """What the user asked for."""

    fmt: str
    path: str


class ExportScreen(ModalScreen[ExportRequest | None]):
    """Ask for md or html and a file path (default: `<id>.<fmt>` in the current folder)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    ExportScreen { align: center middle; }
    ExportScreen > Vertical { width: 70; height: auto; border: thick $primary; padding: 1 2;
        background: $surface; }
    """

    def __init__(self, session_id: str) -> None:
        super().__init__()
        self.session_id = session_id

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text("Export the open session"))
            with RadioSet(id="format"):
                yield RadioButton("Markdown (.md)", value=True, id="md")
                yield RadioButton("HTML (.html)", id="html")
            yield Input(value=self._default("md"), id="path")
            yield Button("Export", id="go", variant="primary")

    def _default(self, fmt: str) -> str:
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in self.session_id)
        return f"{safe or 'session'}.{fmt}"

    @property
    def fmt(self) -> str:
        pressed = self.query_one(RadioSet).pressed_button
        return pressed.id if pressed is not None and pressed.id else "md"

    def on_radio_set_changed(self, event: RadioSet.Changed) -> None:
        path = self.query_one("#path", Input)
        for fmt in ("md", "html"):
            if path.value == self._default(fmt):
                path.value = self._default(self.fmt)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self._submit()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._submit()

    def _submit(self) -> None:
        path = self.query_one("#path", Input).value.strip()
        if path:
            self.dismiss(ExportRequest(self.fmt, path))

    def action_cancel(self) -> None:
        self.dismiss(None)
