"""Headless TUI probes, run in a subprocess by the benchmark (one figure per run).

`python -m benchmarks.tui_probe rows LOG`   time.time() when the first timeline rows show
`python -m benchmarks.tui_probe tree ROOT`  time.time() when the session tree has nodes
`python -m benchmarks.tui_probe live LOG N` write -> row latencies of N appended turns

Each prints one JSON line on stdout. The app runs under `App.run_test()` (no terminal),
and the probe polls the widgets every few milliseconds from the app's own event loop.
"""

from __future__ import annotations

import asyncio
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


async def rows(path: Path) -> dict[str, Any]:
    from turnline.tui import TurnlineApp

    app = TurnlineApp(path)
    async with app.run_test(size=(160, 50)) as pilot:
        await _until(lambda: _tree_nodes(app) > 0)
        shown = await _until(lambda: app.timeline.row_count > 0, timeout=5)
        if shown is None:
            # The app may wait for a choice: select the (only) session.
            app.session_tree.focus()
            await pilot.press("enter")
            shown = await _until(lambda: app.timeline.row_count > 0)
        return {"shown": shown, "rows": app.timeline.row_count}


async def tree(path: Path) -> dict[str, Any]:
    from turnline.tui import TurnlineApp

    app = TurnlineApp(path)
    async with app.run_test(size=(160, 50)):
        shown = await _until(lambda: _tree_nodes(app) > 0)
        return {"shown": shown, "nodes": _tree_nodes(app)}


async def live(path: Path, turns: int) -> dict[str, Any]:
    from turnline.core.summary import summarize
    from turnline.tui import TurnlineApp

    from benchmarks.generate import BigLog, TurnWriter

    summary = summarize(path)
    log = BigLog(path, summary.events, summary.turns, summary.size, ())
    writer = TurnWriter(log)
    app = TurnlineApp(path)
    async with app.run_test(size=(160, 50)) as pilot:
        await _until(lambda: _tree_nodes(app) > 0)
        if await _until(lambda: app.timeline.row_count > 0, timeout=5) is None:
            app.session_tree.focus()
            await pilot.press("enter")
            await _until(lambda: app.timeline.row_count > 0)
        base_rows = app.timeline.row_count
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
        seen: dict[int, float] = {}
        deadline = time.monotonic() + turns * 0.05 + 30
        while len(seen) < turns and time.monotonic() < deadline:
            count = app.timeline.row_count - base_rows
            now = time.time()
            for k in range(count):
                seen.setdefault(k, now)
            await asyncio.sleep(0.002)
        stop.set()
        thread.join()
        latencies = sorted(seen[k] - written[k] for k in seen if k in written)
        return {"latencies": latencies, "appended": sizes, "rows": app.timeline.row_count}


def main() -> None:
    mode, target = sys.argv[1], Path(sys.argv[2])
    if mode == "rows":
        result = asyncio.run(rows(target))
    elif mode == "tree":
        result = asyncio.run(tree(target))
    else:
        result = asyncio.run(live(target, int(sys.argv[3])))
    sys.stdout.write(orjson.dumps(result).decode() + "\n")


if __name__ == "__main__":
    main()
