"""Search figures for `make bench`, on the wide root, each beside a baseline from the
same run:

- the first search on a cold catalog (absolute goal), with the CPU seconds it used;
- a warm query (a new `turnline search --json` process each time) beside
  `grep -rlF WORD ROOT` on the same files with a warm page cache, run in turns so
  both see the same load (wall and CPU time, medians of seven);
- the same for a rare word (few hits: what the fixed cost of a query is);
- a warm `turnline ROOT` (the tree on screen, started as `turnline ROOT` starts it)
  from the catalog's summary cache, beside the same launch without a catalog.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parent.parent


def pick_word(root: Path) -> str:
    """A word of the generated text that occurs in some logs but not in most."""
    counts: dict[str, int] = {}
    logs = sorted(root.rglob("session*.jsonl"))[:300]
    for log in logs:
        words = set(re.findall(rb'"text":"([a-z]{6,12})', log.read_bytes()))
        for w in words:
            counts[w.decode()] = counts.get(w.decode(), 0) + 1
    if not counts:
        return "session"
    return min(counts, key=lambda w: abs(counts[w] - len(logs) // 10))


def _adopt_orphans(on: bool) -> bool:
    """Make this process the reaper of its descendants' orphans (Linux), or stop, so
    that the CPU of a process that a measured command forked and left running (a warm
    search's child, which exits after it) is counted too; False where not possible."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(36, int(on), 0, 0, 0) == 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def _reap_orphans() -> None:
    """Reap what the last command left running, once it has exited (at most 10 s)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # none left
        if pid == 0:
            time.sleep(0.001)


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds (until the command exited), CPU seconds (user + system, of every
    process it started, those it left running to exit after it included: reaped
    here once the wall time is taken) and stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    wall = time.perf_counter() - start
    _reap_orphans()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, proc.stdout


def _warm_row(
    root: Path, word: str, env: dict[str, str], turnline: str, label: str, row: Any, adopted: bool
) -> Any:
    grep = ["grep", "-rlF", word, str(root)]
    search = [turnline, "search", str(root), word, "--json"]
    subprocess.run(grep, capture_output=True)  # warm the page cache
    _run(search, env)
    ours: list[tuple[float, float]] = []
    theirs: list[tuple[float, float]] = []
    hits: object = "?"
    files = 0
    for _ in range(7):  # in turns: this VM's speed drifts over seconds
        wall, cpu, out = _run(grep, env)
        theirs.append((wall, cpu))
        files = len(out.splitlines())
        wall, cpu, out = _run(search, env)
        ours.append((wall, cpu))
        hits = orjson.loads(out)["total"] if out else "?"
    warm = statistics.median(w for w, _ in ours)
    base = statistics.median(w for w, _ in theirs)
    warm_cpu = statistics.median(c for _, c in ours)
    base_cpu = statistics.median(c for _, c in theirs)
    return row(
        f"search, warm query, {label} ({word!r}: {hits} hits; grep: {files} files)",
        f"{warm:.3f} s (CPU {warm_cpu:.3f} s{'' if adopted else ', its child not counted'})",
        f"grep -rlF {base:.3f} s (CPU {base_cpu:.3f} s)",
        f"{warm / base:.2f}× grep (CPU {warm_cpu / base_cpu:.2f}×)",
        "≤ 0.5× grep",
        warm <= 0.5 * base,
    )


def _rare_word(root: Path) -> str | None:
    """A word in a handful of logs (a typical "where did we discuss X" query): the
    first long word of the first logs that grep finds in 1 to 20 files."""
    tried = 0
    for log in sorted(root.rglob("session*.jsonl"))[:20]:
        for w in sorted(set(re.findall(rb'"text":"[^"]*?\b([a-z]{9,14})\b', log.read_bytes()))):
            tried += 1
            if tried > 30:
                return None
            grep = subprocess.run(["grep", "-rlF", w, str(root)], capture_output=True)
            if 1 <= len(grep.stdout.splitlines()) <= 20:
                return w.decode()
    return None


def _tree_shown(root: Path, env: dict[str, str]) -> float | str:
    """Seconds from launch to the tree drawn (`benchmarks.tui_probe tree`)."""
    start = time.time()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.tui_probe", "tree", str(root)],
            capture_output=True,
            timeout=240,
            cwd=REPO,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "timed out"
    if proc.returncode != 0:
        return "failed: " + proc.stderr.decode(errors="replace").strip().splitlines()[-1][:80]
    result = orjson.loads(proc.stdout.splitlines()[-1])
    shown = result.get("shown") if isinstance(result, dict) else None
    return "never shown" if shown is None else float(shown) - start


def bench_search(
    root: Path,
    rows: list[Any],
    row: Any,
    turnline: str,
    tui: bool = True,
    *,
    words: tuple[str, str | None] | None = None,
) -> tuple[str, str | None]:
    """Append the search rows (`row` is the table's Row class). `words` (common, rare)
    are picked from `root` unless given (a V5 twin is searched for its v0 root's
    words); returns them."""
    cache = Path(tempfile.mkdtemp(prefix="turnline-bench-cache-"))
    adopted = _adopt_orphans(True)
    try:
        return _bench_search(root, rows, row, turnline, tui, cache, adopted, words)
    finally:
        _adopt_orphans(False)
        shutil.rmtree(cache, ignore_errors=True)


def _bench_search(
    root: Path,
    rows: list[Any],
    row: Any,
    turnline: str,
    tui: bool,
    cache: Path,
    adopted: bool,
    words: tuple[str, str | None] | None,
) -> tuple[str, str | None]:
    word = pick_word(root) if words is None else words[0]
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    cold, cold_cpu, out = _run([turnline, "search", str(root), word, "--json"], env)
    total = orjson.loads(out)["total"] if out else "?"
    rows.append(
        row(
            f"search, cold catalog ({word!r}: {total} hits)",
            f"{cold:.2f} s",
            f"CPU {cold_cpu:.2f} s on {os.cpu_count()} cores",
            "",
            "≤ 5 s",
            cold <= 5.0,
        )
    )
    rows.append(_warm_row(root, word, env, turnline, "common word", row, adopted))
    rare = _rare_word(root) if words is None else words[1]
    if rare is not None:
        rows.append(_warm_row(root, rare, env, turnline, "rare word", row, adopted))
    if tui:
        bench_warm_tree(root, env, rows, row)
    return word, rare


def bench_warm_tree(root: Path, env: dict[str, str], rows: list[Any], row: Any) -> None:
    """The tree on screen from the catalog's summary cache, beside a launch without one
    (an empty cache folder), in turns, median of three each."""
    nocache = tempfile.mkdtemp(prefix="turnline-bench-nocache-")
    try:
        _warm_tree(root, env, {**env, "XDG_CACHE_HOME": nocache}, rows, row)
    finally:
        shutil.rmtree(nocache, ignore_errors=True)


def _warm_tree(
    root: Path, env: dict[str, str], empty: dict[str, str], rows: list[Any], row: Any
) -> None:
    warm_runs: list[float] = []
    cold_runs: list[float] = []
    failed: str | None = None
    for _ in range(3):
        for runs, where in ((warm_runs, env), (cold_runs, empty)):
            got = _tree_shown(root, where)
            if isinstance(got, str):
                failed = got
                break
            runs.append(got)
        if failed:
            break
    if failed or not warm_runs or not cold_runs:
        rows.append(row("wide root, warm tree shown (TUI)", failed or "?", "", "", "≤ 0.8 s", None))
        return
    warm, cold = statistics.median(warm_runs), statistics.median(cold_runs)
    rows.append(
        row(
            "wide root, warm tree shown (TUI, summary cache)",
            f"{warm:.3f} s",
            f"without a catalog {cold:.3f} s",
            f"{warm / cold:.2f}× uncached",
            "≤ 0.8 s",
            warm <= 0.8,
        )
    )
