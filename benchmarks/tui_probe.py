"""Headless TUI probes, run in a subprocess by the benchmark (one figure per run).

`python -m benchmarks.tui_probe rows LOG`   time.time() when the first timeline rows show
`python -m benchmarks.tui_probe tree ROOT`  time.time() when the session tree is drawn
                                            (from the scan's preview, if its lines are the
                                            finished tree's), and when it is drawn from
                                            the finished scan (started as `turnline ROOT`
                                            starts the app)
`python -m benchmarks.tui_probe live LOG N` write -> row latencies of N appended turns
`python -m benchmarks.tui_probe floor`      time.time() when a bare Textual app (a header,
                                            a tree, a table of a few rows; no turnline)
                                            drew its first screen: the floor the first
                                            two are measured against

Each prints one JSON line on stdout. The app runs under `App.run_test()` (no terminal),
and the probe polls the widgets every few milliseconds from the app's own event loop.

"Shown" means *rendered*: a widget holding the rows is not enough, the compositor must
have drawn them. The probe wraps the widget's `render_line` and records when it last
drew a line while the wanted state held (the rows present; the scan finished), so a
figure includes the layout and rendering a user waits for, not just the model update.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson

TIMEOUT = 120.0


def _tree_nodes(app: Any) -> int:
    tree = app.session_tree
    count = 0
    stack = list(tree.root.children)
    while stack:
        node = stack.pop()
        count += 1
        stack.extend(node.children)
    return count


class _Drawn:
    """Records, per widget, when its lines are drawn and what state they showed."""

    def __init__(self, widget: Any, state: Any, text: bool = False) -> None:
        self.draws: list[tuple[float, Any]] = []  # (time.time(), state when drawn)
        #: With `text`: (state, line, its text) of each line drawn.
        self.lines: list[tuple[Any, int, str]] = []
        original = widget.render_line

        def render_line(y: int) -> Any:
            strip = original(y)
            with contextlib.suppress(Exception):
                now = state()
                self.draws.append((time.time(), now))
                if text:
                    self.lines.append((now, y, strip.text))
            return strip

        widget.render_line = render_line

    def last_lines(self, wanted: Any) -> dict[int, str]:
        """Each line's text as last drawn in the state `wanted` (with `text`)."""
        return {y: line for now, y, line in self.lines if now == wanted}

    def first(self, check: Any) -> float | None:
        """When a line was first drawn in a state that passes `check`."""
        for when, state in self.draws:
            if check(state):
                return when
        return None


async def _until(check: Any, timeout: float = TIMEOUT, step: float = 0.005) -> float | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return time.time()
        except Exception:
            pass
        await asyncio.sleep(step)
    return None


def _watched_app(path: Path) -> tuple[Any, list[_Drawn]]:
    """The app on `path`, its timeline's drawn lines watched from its mount on.

    Hooked in `on_mount` (as `floor` hooks its table), not once `run_test` hands over
    the pilot: the first rows of a big log's head are in the app's first frame, which
    a hook installed after it would miss (it would count the next redraw instead).
    Textual calls `on_mount` of each class in the app's MRO, this one's first.
    """
    from turnline.tui import TurnlineApp

    drawn: list[_Drawn] = []

    class Watched(TurnlineApp):
        # Textual resolves a relative CSS path against the subclass's own module.
        CSS_PATH = str(Path(inspect.getfile(TurnlineApp)).parent / str(TurnlineApp.CSS_PATH))

        def on_mount(self) -> None:
            # The widget is looked up once: `timeline` queries the DOM, and the state
            # is read on every drawn line, so it must cost nothing.
            timeline = self.timeline
            drawn.append(_Drawn(timeline, lambda: timeline.row_count))

    return Watched(path), drawn


async def _first_rows(app: Any, pilot: Any, drawn: _Drawn) -> float | None:
    """When the timeline first drew rows (selecting the session if the app waits)."""
    await _until(lambda: drawn.first(bool) is not None or _tree_nodes(app) > 0)
    if await _until(lambda: drawn.first(bool) is not None, timeout=5) is None:
        # The app may wait for a choice: select the (only) session.
        app.session_tree.focus()
        await pilot.press("enter")
        await _until(lambda: drawn.first(bool) is not None)
    return drawn.first(bool)


async def rows(path: Path) -> dict[str, Any]:
    app, drawn = _watched_app(path)
    async with app.run_test(size=(160, 50)) as pilot:
        shown = await _first_rows(app, pilot, drawn[0])
        first_rows = next(state for _, state in drawn[0].draws if state)
        # Also when the whole timeline is drawn (the index finished): reported beside.
        total = await _until(lambda: app.view is not None)
        await pilot.pause()
        return {"shown": shown, "rows": first_rows, "all_rows": app.timeline.row_count,
                "loaded": total}  # fmt: skip


async def tree(path: Path, scan: Any) -> dict[str, Any]:
    """When the tree was first drawn (`shown`), and when it was first drawn from the
    finished scan (`final`). A big root's tree is first drawn from the scan's preview
    (`SessionTree.show_preview`: the first project's sessions summarized, the others'
    headers read); it counts as shown only if the preview's lines are the finished
    tree's (`same`: compared as text, line by line, as last drawn in each state)."""
    from turnline.tui import TurnlineApp

    app = TurnlineApp(path, scan=scan)
    async with app.run_test(size=(160, 50)):
        # Checked on every drawn line, so the state must cost nothing (counting the
        # nodes there took a quarter of a second of the app's own thread).
        tree = app.session_tree

        def state() -> str | None:
            if not tree.root.children:
                return None
            return "final" if app.root is not None else "preview" if tree.previewing else None

        drawn = _Drawn(tree, state, text=True)
        await _until(lambda: drawn.first(lambda s: s == "final") is not None)
        shown = drawn.first(bool)
        final = drawn.first(lambda s: s == "final")
        lines = {phase: drawn.last_lines(phase) for phase in ("preview", "final")}
        previewed = bool(lines["preview"])
        same = all(lines["final"].get(y) == text for y, text in lines["preview"].items())
        return {
            "shown": shown if same else final,
            "final": final,
            "previewed": previewed,
            "same": same,
            "nodes": _tree_nodes(app),
        }


async def floor() -> dict[str, Any]:
    """A bare Textual app's first screen: what any app of turnline's shape pays (Python,
    Textual's import, compose, the first frame) before it has read a byte of a log.

    Textual is imported here, as `rows` and `tree` import turnline's app, so the figure
    counts from the process's launch the same way. The table's lines are watched from
    its mount on: its rows are there before the first frame, which the probe would miss
    if it waited for `run_test` to hand over the pilot.
    """
    from textual.app import App, ComposeResult
    from textual.containers import Horizontal
    from textual.widgets import DataTable, Header, Tree

    drawn: list[_Drawn] = []

    class Floor(App[None]):
        def compose(self) -> ComposeResult:
            yield Header()
            with Horizontal():
                yield Tree("sessions")
                yield DataTable()

        def on_mount(self) -> None:
            tree = self.query_one(Tree)
            tree.root.expand()
            for k in range(5):
                tree.root.add_leaf(f"session {k}")
            table = self.query_one(DataTable)
            table.add_columns("#", "time", "turn")
            for k in range(5):
                table.add_row(str(k + 1), f"12:0{k}", f"turn {k + 1}")
            drawn.append(_Drawn(table, lambda: table.row_count))

    app = Floor()
    async with app.run_test(size=(160, 50)):
        await _until(lambda: drawn[0].first(bool) is not None)
        return {"shown": drawn[0].first(bool), "rows": app.query_one(DataTable).row_count}


async def live(path: Path, turns: int) -> dict[str, Any]:
    from turnline.core.summary import summarize

    from benchmarks.generate import BigLog, turn_writer

    summary = summarize(path)
    log = BigLog(path, summary.events, summary.turns, summary.size, ())
    # Turns in the log's own format (a V5 twin gets V5 turns).
    writer = turn_writer(log, summary.header.version if summary.header else None)
    app, first = _watched_app(path)
    async with app.run_test(size=(160, 50)) as pilot:
        await _first_rows(app, pilot, first[0])
        await _until(lambda: app.view is not None)  # appends follow the loaded session
        await pilot.pause()
        base_rows = app.timeline.row_count
        timeline = app.timeline  # looked up once (see `_first_rows`)
        drawn = _Drawn(timeline, lambda: timeline.row_count)
        written: dict[int, float] = {}
        sizes: list[int] = []
        stop = threading.Event()

        def write() -> None:
            for k in range(turns):
                chunk, _ = writer.next_turn()
                writer.append(chunk)
                written[k] = time.time()
                sizes.append(len(chunk))
                if stop.wait(0.05):
                    return

        thread = threading.Thread(target=write, daemon=True)
        thread.start()
        deadline = time.monotonic() + turns * 0.05 + 30
        while time.monotonic() < deadline:
            if drawn.first(lambda n: n >= base_rows + turns) is not None:
                break
            await asyncio.sleep(0.01)
        stop.set()
        thread.join()
        # Turn k is on screen when a line is drawn while the table holds its row.
        seen: dict[int, float] = {}
        for when, count in drawn.draws:
            for k in range(len(seen), max(0, min(turns, count - base_rows))):
                seen[k] = when
        latencies = sorted(seen[k] - written[k] for k in seen if k in written)
        return {"latencies": latencies, "appended": sizes, "rows": app.timeline.row_count}


def main() -> None:
    mode = sys.argv[1]
    if mode == "floor":
        sys.stdout.write(orjson.dumps(asyncio.run(floor())).decode() + "\n")
        return
    target = Path(sys.argv[2])
    # As `turnline PATH` starts (cli.main.cmd_open), before Textual is imported: for a
    # root the pool and the scan in it, which overlap with the imports; for one big
    # log the pool, which then takes the second half of its index.
    from turnline.core.root import SessionRoot

    scan = SessionRoot(target).start_before_ui()
    if mode == "rows":
        result = asyncio.run(rows(target))
    elif mode == "tree":
        result = asyncio.run(tree(target, scan))
    else:
        result = asyncio.run(live(target, int(sys.argv[3])))
    sys.stdout.write(orjson.dumps(result).decode() + "\n")


if __name__ == "__main__":
    main()
