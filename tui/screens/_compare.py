"""The compare screen: two sessions side by side from the seq where they split.

The two columns share the screen's width (each cell cut to its column, so the right
one is never pushed off the screen), each outcome is one line, and the highlighted
row's two turns sit side by side under the table.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Static
from turnline.core.compare import Comparison, Side
from turnline.core.textsafe import one_line, safe_text
from turnline.core.timeline import Turn
from turnline.core.units import duration, plural
from turnline.core.usage import compact_tokens

from ..widgets._footer import KeyFooter

#: The narrowest a side's column gets (below it the table scrolls sideways).
MIN_SIDE = 16


def _cell(turn: Turn | None, width: int = 80) -> Text:
    """One side of a row, cut to `width` cells."""
    if turn is None:
        return Text("—", style="dim")
    text = Text.assemble(
        (f"{turn.number:>3} ", "bold"),
        (f"[{one_line(turn.reason, 20)}] ", "cyan"),
        one_line(turn.user, max(width, 1)),
        no_wrap=True,
    )
    text.truncate(width, overflow="ellipsis")
    return text


def outcome(label: str, side: Side) -> Text:
    """One side's outcome, for the summary bar."""
    tools = ", ".join(f"{one_line(k)}×{v}" for k, v in side.tool_calls.items()) or "no tools"
    return Text.assemble(
        (f"{label} ", "bold"),
        one_line(side.summary.id, 24),
        f": {plural(len(side.turns), 'turn')}, last {side.last_reason or '—'}, ",
        f"{compact_tokens(side.tokens.total)} tokens, {plural(side.errors, 'error')}, ",
        f"{duration(side.wall_ms)}, {tools}, {plural(len(side.files), 'file')}",
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
    CompareScreen #shared, CompareScreen #outcomes { text-wrap: nowrap; text-overflow: ellipsis; }
    CompareScreen #outcomes { height: auto; border-bottom: solid $primary; }
    CompareScreen #rows { height: 1fr; min-height: 3; }
    CompareScreen #turns { height: 45%; max-height: 10; border-top: solid $secondary; }
    CompareScreen .turn { width: 1fr; height: 1fr; padding: 0 1 0 0; }
    """

    def __init__(self, comparison: Comparison) -> None:
        super().__init__()
        self.comparison = comparison
        #: The width each side's column was last drawn for.
        self._side = 0

    def compose(self) -> ComposeResult:
        # The app's stylesheet lays screens out horizontally: one vertical column here.
        with Vertical(id="compare"):
            yield from self._parts()
        yield KeyFooter()

    def _parts(self) -> ComposeResult:
        c = self.comparison
        yield Static(
            Text(
                f"shared: {plural(c.shared_turns, 'turn')} of {one_line(c.ancestor.id)} "
                f"(diverged at seq {c.diverged_at}"
                + ("" if c.split_turn is None else f", inside turn {c.split_turn}")
                + ")"
            ),
            id="shared",
        )
        yield Static(
            Text("\n").join([outcome("left ", c.left), outcome("right", c.right)]), id="outcomes"
        )
        with Vertical():
            yield DataTable(id="rows", cursor_type="row", zebra_stripes=True)
            with Horizontal(id="turns"):
                yield Static(id="left-turn", classes="turn")
                yield Static(id="right-turn", classes="turn")

    def on_mount(self) -> None:
        c = self.comparison
        table = self.query_one("#rows", DataTable)
        self._fill(table)
        if not c.rows:
            self.query_one("#left-turn", Static).update(Text("no turns after the split"))
        table.focus()
        self._show(0)

    def on_resize(self) -> None:
        table = self.query_one("#rows", DataTable)
        if self._side_width() != self._side:
            row = table.cursor_row
            self._fill(table)
            if 0 <= row < table.row_count:
                table.move_cursor(row=row)

    def _side_width(self) -> int:
        """Each side's share of the width: the row number column, the cells' padding
        and the scrollbar taken off."""
        digits = len(str(len(self.comparison.rows)))
        return max((self.size.width - digits - 2 - 4 - 2) // 2, MIN_SIDE)

    def _fill(self, table: DataTable[Text]) -> None:
        c = self.comparison
        side = self._side = self._side_width()
        table.clear(columns=True)
        table.add_column(Text("#"), key="k")
        table.add_column(Text(one_line(c.left.summary.id, side)), key="left", width=side)
        table.add_column(Text(one_line(c.right.summary.id, side)), key="right", width=side)
        for k, (left, right) in enumerate(c.rows, 1):
            table.add_row(Text(str(k)), _cell(left, side), _cell(right, side))

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
