"""Search figures for `make bench`: the first search on a cold catalog, and a warm query
(a new `turnline search --json` process each time) beside `grep -rlF WORD ROOT` on the
same files with a warm page cache, both measured in the same run."""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson


def pick_word(root: Path) -> str:
    """A word of the generated text that occurs in some logs but not in most."""
    counts: dict[str, int] = {}
    logs = sorted(root.rglob("session.jsonl"))[:300]
    for log in logs:
        words = set(re.findall(rb'"text":"([a-z]{6,12})', log.read_bytes()))
        for w in words:
            counts[w.decode()] = counts.get(w.decode(), 0) + 1
    if not counts:
        return "session"
    return min(counts, key=lambda w: abs(counts[w] - len(logs) // 10))


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    return time.perf_counter() - start, proc.stdout


def bench_search(root: Path, rows: list[Any], row: Any, turnline: str) -> None:
    """Append the search rows (`row` is the table's Row class)."""
    word = pick_word(root)
    cache = Path(tempfile.mkdtemp(prefix="turnline-bench-cache-"))
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    cold, out = _run([turnline, "search", str(root), word, "--json"], env)
    total = orjson.loads(out)["total"] if out else "?"
    rows.append(
        row(
            f"search, cold catalog ({word!r}: {total} hits)",
            f"{cold:.2f} s",
            "",
            "",
            "≤ 5 s",
            cold <= 5.0,
        )
    )
    grep = ["grep", "-rlF", word, str(root)]
    subprocess.run(grep, capture_output=True)  # warm the page cache
    warm_runs: list[float] = []
    grep_runs: list[float] = []
    for _ in range(5):
        grep_runs.append(_run(grep, env)[0])
        warm_runs.append(_run([turnline, "search", str(root), word, "--json"], env)[0])
    warm, base = statistics.median(warm_runs), statistics.median(grep_runs)
    rows.append(
        row(
            "search, warm query (new process)",
            f"{warm:.2f} s",
            f"grep -rlF {base:.2f} s",
            f"{warm / base:.2f}× grep",
            "≤ 0.5× grep",
            warm <= 0.5 * base,
        )
    )
