"""The `huge` group of `make bench` (issue 14 item 6): a log whose turn holds a 10 MB
assistant message and a 200 MB tool result (`tests.hardening.huge_logs`).

Figures, each beside a baseline from the same run:

- the app's first screen of that turn (the detail pane drawn with its "… N MB more"
  lines, from a fresh process) against reading the file once (8 MiB reads, nothing
  decoded), and its peak RSS against the same probe on a small log of the same shape;
- a key answered while the turn is on screen (down: the cursor moves and the next
  turn is drawn), against the issue's 1 s;
- `turnline show --json` on it: time against decoding each line with orjson (what a
  whole read costs) and reading the file once, peak RSS against the small log's.

`python -m benchmarks.huge probe LOG` is the app probe (one JSON line on stdout).
"""

from __future__ import annotations

import asyncio
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

KEY_GOAL = 1.0
RSS_GOAL_MIB = 64


def _probe(log: Path) -> None:
    """Open the app on `log`, time its first screen of turn 1 and one key (stdout)."""
    start = time.perf_counter()
    from turnline.tui import TurnlineApp

    async def run() -> dict[str, Any]:
        app = TurnlineApp(log, poll=True)
        async with app.run_test(size=(120, 36)) as pilot:
            detail = app.detail

            def shown(index: int) -> bool:
                verdict = detail._verdict
                return verdict is not None and verdict.index == index

            while app.view is None or app.timeline.row_count == 0:
                await pilot.pause(0.01)
            app.timeline.focus()
            app.timeline.move_cursor(row=0)
            while not shown(0):
                await pilot.pause(0.01)
            await pilot.pause()
            first = time.perf_counter() - start
            pressed = time.perf_counter()
            await pilot.press("down")
            while not shown(1):
                await pilot.pause(0.005)
            await pilot.pause()
            key = time.perf_counter() - pressed
        return {"first": first, "key": key}

    out = asyncio.run(run())
    out["rss_kib"] = _peak_rss_kib()
    print(orjson.dumps(out).decode(), flush=True)


def _peak_rss_kib() -> int:
    """This process's own peak RSS in KiB: Linux's `VmHWM` (the high-water mark of its
    memory map, which `exec` starts afresh). Not `getrusage`'s `ru_maxrss`: on Linux
    that survives `exec`, so a probe launched by the bench (which wrote the 241 MB
    log and peaked above 1 GiB) reported the bench's peak, the same for both logs."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # (bytes on macOS)


def _read_once(path: Path) -> float:
    start = time.perf_counter()
    with open(path, "rb") as fh:
        while fh.read(8 << 20):
            pass
    return time.perf_counter() - start


def _run_probe(log: Path) -> dict[str, Any] | str:
    from benchmarks.__main__ import cold_index

    cold_index()
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.huge", "probe", str(log)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if proc.returncode != 0:
        return f"probe failed: {proc.stderr[-300:]}"
    return orjson.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def bench_huge(work: Path, rows: list[Any], row: Any, timed_together: Any, tui: bool) -> None:
    """Append the huge-field figures to `rows` (`row` is the benchmark's `Row`)."""
    from benchmarks.__main__ import NAIVE, PYTHON, TURNLINE, fmt_mb, fmt_s
    from tests.hardening.huge_logs import write_huge_log

    huge = write_huge_log(work / "huge")
    small = write_huge_log(work / "huge-small", assistant_mb=0, result_mb=0, sid="small-1")
    size_mb = huge.path.stat().st_size / 1e6
    read = min(_read_once(huge.path) for _ in range(3))
    if tui:
        got, base = _run_probe(huge.path), _run_probe(small.path)
        if isinstance(got, str) or isinstance(base, str):
            rows.append(row("huge field: first screen (TUI)", str(got)[:60], "", "", "", False))
        else:
            rows.append(
                row(
                    f"huge field: first screen (TUI, {size_mb:.0f} MB log)",
                    fmt_s(got["first"]),
                    f"read the file once {fmt_s(read)}; small log {fmt_s(base['first'])}",
                    f"{got['first'] / read:.1f}× read",
                    "",
                    None,
                )
            )
            grown = (got["rss_kib"] - base["rss_kib"]) / 1024
            rows.append(
                row(
                    "huge field: first screen peak RSS",
                    fmt_mb(got["rss_kib"]),
                    f"small log {fmt_mb(base['rss_kib'])}",
                    f"+{grown:.0f} MiB",
                    f"≤ +{RSS_GOAL_MIB} MiB",
                    grown <= RSS_GOAL_MIB,
                )
            )
            rows.append(
                row(
                    "huge field: a key answered (down)",
                    fmt_s(got["key"]),
                    f"small log {fmt_s(base['key'])}",
                    "",
                    f"≤ {KEY_GOAL:.0f} s",
                    got["key"] <= KEY_GOAL,
                )
            )
    shown = timed_together(
        {
            "huge": [TURNLINE, "show", str(huge.path), "--json"],
            "small": [TURNLINE, "show", str(small.path), "--json"],
            "naive": [PYTHON, "-c", NAIVE, str(huge.path)],
        },
        runs=3,
    )
    wall, rss, _ = shown["huge"]
    _, base_rss, _ = shown["small"]
    naive, naive_rss, _ = shown["naive"]
    rows.append(
        row(
            "huge field: show --json",
            fmt_s(wall),
            f"naive (orjson each line) {fmt_s(naive)}; read once {fmt_s(read)}",
            f"{wall / naive:.2f}× naive",
            "≤ 1× naive",
            wall <= naive,
        )
    )
    grown = (rss - base_rss) / 1024
    rows.append(
        row(
            "huge field: show --json peak RSS",
            fmt_mb(rss),
            f"small log {fmt_mb(base_rss)}; naive {fmt_mb(naive_rss)}",
            f"+{grown:.0f} MiB",
            f"≤ +{RSS_GOAL_MIB} MiB",
            grown <= RSS_GOAL_MIB,
        )
    )


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "probe":
        _probe(Path(sys.argv[2]))
    else:
        sys.exit("usage: python -m benchmarks.huge probe LOG")
