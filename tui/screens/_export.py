"""The export dialog: a format and a path; the app writes and says where."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import msgspec
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, RadioButton, RadioSet, Static

from ..widgets._footer import KeyFooter


class ExportRequest(msgspec.Struct, frozen=True):
    """What the user asked for."""

    fmt: str
    path: str


class FormatButton(RadioButton):
    """A radio button that tells chosen from not without colour: `●` / `○`."""

    def render(self) -> Content:
        # Read by the base class's render; set per frame, as the value may have changed.
        self.BUTTON_INNER = "●" if self.value else "○"
        return super().render()


def target_folder(path: str) -> Path:
    """The folder a typed export path writes into (`~` expanded, relative to the
    current folder, as the app resolves it when it writes)."""
    return (Path.cwd() / Path(path.strip() or ".").expanduser()).parent.resolve()


class ExportScreen(ModalScreen[ExportRequest | None]):
    """Ask for md or html and a file path (default: `<id>.<fmt>` in the current folder).

    The path field has the focus, so Enter exports at once; the line under it says
    which folder the file goes into.
    """

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
                yield FormatButton("Markdown (.md)", value=True, id="md")
                yield FormatButton("HTML (.html)", id="html")
            yield Input(value=self._default("md"), id="path", select_on_focus=False)
            yield Static(self._folder_line(self._default("md")), id="export-folder")
            yield Button("Export", id="go", variant="primary")
        yield KeyFooter()  # the dialog's own keys, over the main screen's

    def on_mount(self) -> None:
        self.query_one("#path", Input).focus()

    @staticmethod
    def _folder_line(path: str) -> Text:
        # A path, not markup: a folder may be called `[bold]`.
        return Text.assemble(("into ", "dim"), str(target_folder(path)), overflow="fold")

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_one("#export-folder", Static).update(self._folder_line(event.value))

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
