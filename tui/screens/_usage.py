"""The usage screen: what the selected session's subtree spent, session by session.

A table per session sorted by own spend (Enter opens that session; the session and
its own tokens stay while the other columns scroll sideways), a per-model breakdown,
a per-day chart of own spend (Textual's `Sparkline`; per UTC hour when everything
fell on one day; hidden when the screen is too small for it) and the unmetered LLM
calls as a warning line. It updates live: the app hands it each `RootChanged`,
and only the appended events are fed to the folds.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Sparkline, Static
from turnline.core.ids import short_ids
from turnline.core.prices import PriceTable
from turnline.core.summary import SessionSummary
from turnline.core.usage import RootUsage, UsageFold, UsageTotals, combine, fold_log
from turnline.core.usage import compact_tokens as compact
from turnline.core.usage import format_cost as _cost

from .._text import line
from ..messages import RootChanged, RootSnapshot
from ..widgets._footer import KeyFooter

#: The days (since 1970-01-01) of `datetime.date.min` and `datetime.date.max`.
_FIRST_DAY = (datetime.date.min - datetime.date(1970, 1, 1)).days
_LAST_DAY = (datetime.date.max - datetime.date(1970, 1, 1)).days


class UsageScreen(Screen[Path | None]):
    """Usage of a session and its subtree; dismisses with the log to open (or None)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        # A pushed screen: q goes back to the browser, it does not quit the app.
        Binding("q", "back", "Back", show=False),
        # Priority: over the table's own (hidden) Enter, so the footer shows it.
        Binding("enter", "open", "Open", priority=True),
    ]

    DEFAULT_CSS = """
    UsageScreen #usage-title { padding: 0 1; text-style: bold; }
    UsageScreen #usage-title, UsageScreen #usage-warning, UsageScreen #usage-days-label {
        text-wrap: nowrap; text-overflow: ellipsis;
    }
    UsageScreen #usage-warning { padding: 0 1; color: $warning; }
    UsageScreen #usage-sessions { height: 1fr; min-height: 4; }
    UsageScreen #usage-bottom { height: 40%; min-height: 3; max-height: 12; }
    UsageScreen #usage-models { width: 2fr; }
    UsageScreen #usage-days-box { width: 1fr; padding: 0 1; }
    UsageScreen Sparkline { height: 1fr; }
    UsageScreen.-cramped #usage-days-box { display: none; }
    """

    #: Below this width or height the chart gives its room to the tables.
    CHART_MIN: ClassVar[tuple[int, int]] = (70, 20)

    def __init__(self, snapshot: RootSnapshot, selected: Path, prices: PriceTable | None) -> None:
        super().__init__()
        self.snapshot = snapshot
        self.selected = selected
        self.prices = prices
        self.folds: dict[Path, UsageFold] = {}
        self.usage: RootUsage | None = None
        self._paths = self._subtree(snapshot, selected)
        for path in self._paths:
            self.folds[path] = self._fold(snapshot.summaries[path])

    @staticmethod
    def _subtree(snapshot: RootSnapshot, top: Path) -> list[Path]:
        children: dict[Path, list[Path]] = {}
        for child, parent in snapshot.lineage.parent_of.items():
            children.setdefault(parent, []).append(child)
        out: list[Path] = []
        stack = [top]
        while stack:
            path = stack.pop()
            if path in snapshot.summaries and path not in out:
                out.append(path)
                stack.extend(children.get(path, ()))
        return out

    @staticmethod
    def _fold(summary: SessionSummary) -> UsageFold:
        return fold_log(summary.path, summary.seed_length)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(id="usage-title")
            yield Static(id="usage-warning")
            # The session and its own tokens stay put while the rest scrolls sideways.
            yield DataTable(
                id="usage-sessions", cursor_type="row", zebra_stripes=True, fixed_columns=2
            )
            with Horizontal(id="usage-bottom"):
                yield DataTable(id="usage-models", cursor_type="none")
                with Vertical(id="usage-days-box"):
                    yield Static(id="usage-days-label")
                    yield Sparkline([], id="usage-days")
        yield KeyFooter()

    def on_mount(self) -> None:
        sessions = self.query_one("#usage-sessions", DataTable)
        sessions.add_columns(
            "session",
            "own tokens",
            "input",
            "output",
            "cache r",
            "calls",
            "turns",
            "tools",
            "own cost",
            "subtree tokens",
        )
        models = self.query_one("#usage-models", DataTable)
        models.add_columns("model", "input", "output", "cache r", "cache w", "calls", "cost")
        self.refresh_usage()
        sessions.focus()
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        width, height = self.CHART_MIN
        self.set_class(self.size.width < width or self.size.height < height, "-cramped")

    # -- live ------------------------------------------------------------------------

    def apply(self, message: RootChanged) -> None:
        """Feed a `RootChanged`'s appended events to the folds of this subtree."""
        self.snapshot = message.snapshot
        paths = self._subtree(message.snapshot, self.selected)
        changed = paths != self._paths
        for change in message.appended:
            path = change.summary.path
            if path not in self.folds or path not in paths:
                continue
            if change.reset:
                self.folds[path] = self._fold(change.summary)
            else:
                self.folds[path].feed(change.events)
            changed = True
        for path in paths:
            if path not in self.folds:
                self.folds[path] = self._fold(message.snapshot.summaries[path])
                changed = True
        self._paths = paths
        if changed:
            self.refresh_usage()

    # -- drawing ---------------------------------------------------------------------

    def refresh_usage(self) -> None:
        """Recompute the sums (cheap: from the folds) and redraw."""
        snapshot = self.snapshot
        folds = {
            str(p): (
                snapshot.summaries[p].id,
                snapshot.summaries[p].parent_session,
                snapshot.summaries[p].seed_length,
                self.folds[p],
            )
            for p in self._paths
        }
        parent_of = {str(c): str(p) for c, p in snapshot.lineage.parent_of.items()}
        has_parent = {str(p): snapshot.summaries[p].parent_session is not None for p in self._paths}
        usage = combine(folds, parent_of, has_parent, str(self.selected))
        self.usage = usage
        prices = self.prices
        top = snapshot.summaries[self.selected]
        title = Text("usage of ", end="")
        title.append_text(line(top.title or top.id, style="bold", limit=60))
        subtree = next((s.subtree for s in usage.sessions if s.path == str(self.selected)), None)
        if subtree is not None:
            title.append(
                f" · subtree {compact(subtree.total_tokens)} tokens,"
                f" cost {_cost(subtree.cost(prices))}"
                f"  ({len(usage.sessions)} sessions)"
            )
        self.query_one("#usage-title", Static).update(title)
        warning = Text(end="")
        unmetered = usage.totals.unmetered
        if unmetered:
            kinds = ", ".join(f"{k} ×{n}" for k, n in sorted(unmetered.items()))
            warning.append(f"⚠ {sum(unmetered.values())} LLM calls without usage: ")
            warning.append_text(line(kinds))
        unpriced = usage.unpriced_models(prices) if prices is not None else []
        if unpriced:
            warning.append("  unpriced: " if warning.plain else "unpriced: ")
            warning.append_text(line(", ".join(unpriced)))
        self.query_one("#usage-warning", Static).update(warning)

        def spend(s: object) -> tuple[float, int]:
            own: UsageTotals = s.own  # type: ignore[attr-defined]
            cost = own.cost(prices)
            return (cost if cost is not None else -1.0, own.total_tokens)

        table = self.query_one("#usage-sessions", DataTable)
        table.clear()
        # The tree's short ids: logs that share an id are told apart the same way here.
        shorts = short_ids((x.id, path) for path, x in snapshot.summaries.items())
        for s in sorted(usage.sessions, key=spend, reverse=True):
            b = s.own.buckets()
            summary = snapshot.summaries[Path(s.path)]
            label = line(f"{summary.title or s.id}  {shorts[Path(s.path)]}", limit=48)
            table.add_row(
                label,
                compact(s.own.total_tokens),
                compact(b[0]),
                compact(b[1]),
                compact(b[2]),
                str(b[5]),
                str(s.own.turns),
                str(s.own.tool_calls),
                _cost(s.own.cost(prices)),
                compact(s.subtree.total_tokens),
                key=s.path,
            )
        models = self.query_one("#usage-models", DataTable)
        models.clear()
        for model, row in sorted(usage.totals.by_model().items(), key=lambda kv: -sum(kv[1][:4])):
            models.add_row(
                line(model, limit=40),
                compact(row[0]),
                compact(row[1]),
                compact(row[2]),
                compact(row[3]),
                str(row[5]),
                _cost(usage.totals.cost(prices, model)),
            )
        priced = prices is not None
        per_day = usage.totals.cost_by_day(prices) if priced else usage.totals.tokens_by_day()
        # A day outside the calendar's years 1 to 9999 (a log's time past them counts as
        # no time, as everywhere else) is not plotted: no date names it.
        days = sorted(d for d in per_day if _FIRST_DAY <= d <= _LAST_DAY)
        what = "cost" if priced else "tokens"
        series: list[float]
        if len(days) == 1:
            # One day: a single bar would fill the box; its hours say something.
            (day,) = days
            hours = (
                usage.totals.cost_by_hour(prices, day)
                if priced
                else usage.totals.tokens_by_hour(day)
            )
            series = [float(value) for value in hours]
            label = Text(f"own spend per hour ({what}, UTC)", end="")
            date = datetime.date(1970, 1, 1) + datetime.timedelta(days=day)
            label.append(f"\none day: {date.isoformat()}, 00–23 h", style="dim")
        else:
            series = (
                [float(per_day.get(d, 0)) for d in range(days[0], days[-1] + 1)] if days else []
            )
            label = Text(f"own spend per day ({what})", end="")
        if len(days) > 1:
            first = datetime.date(1970, 1, 1) + datetime.timedelta(days=days[0])
            last = datetime.date(1970, 1, 1) + datetime.timedelta(days=days[-1])
            label.append(f"\n{first.isoformat()} … {last.isoformat()}", style="dim")
        self.query_one("#usage-days-label", Static).update(label)
        self.query_one("#usage-days", Sparkline).data = series

    @on(DataTable.RowSelected, "#usage-sessions")
    def _open(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value
        if key is not None:
            self.dismiss(Path(key))

    def action_open(self) -> None:
        """Open the highlighted session (back in the browser)."""
        table = self.query_one("#usage-sessions", DataTable)
        if not table.row_count:
            return
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        if key is not None:
            self.dismiss(Path(key))

    def action_back(self) -> None:
        """Back to the browser."""
        self.dismiss(None)
