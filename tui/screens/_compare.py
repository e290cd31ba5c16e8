"""The compare screen: two sessions side by side from the seq where they split."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from turnline.core.compare import Comparison, Side
from turnline.core.textsafe import one_line, safe_text
from turnline.core.timeline import Turn


def _cell(turn: Turn | None) -> Text:
    if turn is None:
        return Text("—", style="dim")
    return Text.assemble(
        (f"{turn.number:>3} ", "bold"), (f"[{turn.reason}] ", "cyan"), one_line(turn.user, 50)
    )


def outcome(label: str, side: Side) -> Text:
    """One side's outcome, for the summary bar."""
    tools = ", ".join(f"{one_line(k)}×{v}" for k, v in side.tool_calls.items()) or "no tools"
    return Text.assemble(
        (f"{label} ", "bold"),
        one_line(side.summary.id, 24),
        f": {len(side.turns)} turns, last {side.last_reason or '—'}, ",
        f"{side.tokens.total} tokens, {side.errors} errors, {side.wall_ms / 1000:.1f} s, ",
        f"{tools}, {len(side.files)} files",
    )


def _turn_text(label: str, turn: Turn | None) -> Text:
    if turn is None:
        return Text(f"{label}: no turn here", style="dim")
    return Text.assemble(
        (f"{label} · turn {turn.number} · {turn.reason}\n", "bold"),
        ("user: ", "green"),
        safe_text(turn.user, keep_newlines=True),
        "\n",
        ("assistant: ", "magenta"),
        safe_text(turn.assistant, keep_newlines=True),
    )


class CompareScreen(Screen[None]):
    """Rows aligned by position after the split; the shared prefix folded into one line."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        # A pushed screen: q goes back to the browser, it does not quit the app.
        Binding("q", "back", "Back", show=False),
    ]
    DEFAULT_CSS = """
    CompareScreen #compare { width: 1fr; height: 1fr; }
    CompareScreen #shared { height: 1; color: $text-muted; }
    CompareScreen #outcomes { height: auto; border-bottom: solid $primary; }
    CompareScreen #rows { height: 1fr; }
    CompareScreen .turn { height: auto; max-height: 8; border-top: solid $secondary; }
    """

    def __init__(self, comparison: Comparison) -> None:
        super().__init__()
        self.comparison = comparison

    def compose(self) -> ComposeResult:
        # The app's stylesheet lays screens out horizontally: one vertical column here.
        with Vertical(id="compare"):
            yield from self._parts()
        yield Footer()

    def _parts(self) -> ComposeResult:
        c = self.comparison
        yield Static(
            Text(
                f"shared: {c.shared_turns} turns of {one_line(c.ancestor.id)} "
                f"(diverged at seq {c.diverged_at})"
            ),
            id="shared",
        )
        yield Static(
            Text("\n").join([outcome("left ", c.left), outcome("right", c.right)]), id="outcomes"
        )
        with Vertical():
            yield DataTable(id="rows", cursor_type="row", zebra_stripes=True)
            yield Static(id="left-turn", classes="turn")
            yield Static(id="right-turn", classes="turn")

    def on_mount(self) -> None:
        c = self.comparison
        table = self.query_one("#rows", DataTable)
        table.add_column(Text("#"), key="k")
        table.add_column(Text(one_line(c.left.summary.id, 30)), key="left")
        table.add_column(Text(one_line(c.right.summary.id, 30)), key="right")
        for k, (left, right) in enumerate(c.rows, 1):
            table.add_row(Text(str(k)), _cell(left), _cell(right))
        if not c.rows:
            self.query_one("#left-turn", Static).update(Text("no turns after the split"))
        table.focus()
        self._show(0)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show(event.cursor_row)

    def _show(self, index: int) -> None:
        rows = self.comparison.rows
        if not 0 <= index < len(rows):
            return
        left, right = rows[index]
        self.query_one("#left-turn", Static).update(_turn_text("left", left))
        self.query_one("#right-turn", Static).update(_turn_text("right", right))

    def action_back(self) -> None:
        """Back to the browser."""
        self.dismiss(None)
