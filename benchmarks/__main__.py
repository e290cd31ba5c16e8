"""`python -m benchmarks` (or `make bench`): make the inputs, measure, print one table.

Every figure is printed beside its baseline measured in the same run on the same
input, with the issue's goal and PASS/FAIL. Inputs go to a temporary folder that is
removed at the end (`--keep` keeps it). Options: `--quick` (smaller inputs, for a
smoke run), `--no-toolong` (skip installing toolong), `--no-tui`, `--only GROUP`
(repeatable: show, wide, tui, fork, refresh, live, usage, search, huge). `tui` is the
app's first screens (the big log's first timeline rows, the wide root's cold tree)
against a bare Textual app's first screen launched in turns with them (the floor), and
toolong's first screen beside them (informational; `--no-toolong` skips it).

The big log, its zstd copy and the wide root also get V5 twins (dsh's current format,
`generate.v5_twin_log` / `v5_twin_root`): every figure on them is measured on the twin
too, in the same run with the same kind of baseline and goal, its row "(V5)" right
after the v0 row.
"""

from __future__ import annotations

import argparse
import compileall
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import orjson

from .generate import (
    header_line,
    v5_twin_log,
    v5_twin_root,
    write_big_log,
    write_wide_root,
    write_zstd_copy,
)

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
TURNLINE = str(Path(PYTHON).parent / "turnline")
TIME = "/usr/bin/time"
#: Figure groups `--only` can pick ("tui" is the floor, tree and first-rows probes).
GROUPS = ("show", "wide", "tui", "fork", "refresh", "live", "usage", "search", "huge")

NAIVE = """
import sys, orjson
n = 0
with open(sys.argv[1], "rb") as fh:
    for line in fh:
        orjson.loads(line)
        n += 1
print(n)
"""

#: The two floors' decoder: a Struct with just the type and the seqs (every line is
#: still checked as JSON).
_HEAD_DECODER = """
import os, sys, msgspec
class Head(msgspec.Struct):
    type: str
    seq: int | None = None
    seq0: int | None = None
decode = msgspec.json.Decoder(Head).decode
"""

#: msgspec's own per-line decode: the floor a reader that validates every line can
#: reach on one core.
MSGSPEC = (
    _HEAD_DECODER
    + """
n = 0
with open(sys.argv[1], "rb") as fh:
    for line in fh:
        decode(line)
        n += 1
print(n)
"""
)

#: The file cut into one byte range per usable core, at line breaks (`cuts`).
_CUTS = """
path = sys.argv[1]
size = os.path.getsize(path)
cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
fd = os.open(path, os.O_RDONLY)
cuts = [0]
for k in range(1, max(1, cores or 1)):
    at = max(size * k // cores, cuts[-1])
    nl = os.pread(fd, 1 << 20, at).find(b"\\n")
    cuts.append(size if nl < 0 else at + nl + 1)
cuts.append(size)
"""

#: `work(lo, hi)` (which the script defines before it) run on each range of `_CUTS`,
#: the first here and each other in a forked child; prints the lines of every share.
_ON_EVERY_CORE = """
children = []
for lo, hi in zip(cuts[1:-1], cuts[2:]):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(w, str(work(lo, hi)).encode())
        os._exit(0)
    os.close(w)
    children.append((pid, r))
n = work(cuts[0], cuts[1])
for pid, r in children:
    got = os.read(r, 64)
    if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0:
        sys.exit(1)
    n += int(got)
print(n)
"""

#: The same decode on every usable core: the file cut into one byte range per core (at
#: line breaks), each range decoded in a forked child. About the fastest a reader that
#: checks every line is one record can be on this machine, whatever else it does (one
#: msgspec call per block is faster only without checking that each line holds one
#: record: docs/benchmarks.md, seventeenth session).
MSGSPEC_PARALLEL = (
    _HEAD_DECODER
    + _CUTS
    + """
def work(lo, hi):
    n = 0
    for line in os.pread(fd, hi - lo, lo).split(b"\\n"):
        if line:
            decode(line)
            n += 1
    return n
"""
    + _ON_EVERY_CORE
)

#: msgspec's JSON check alone, with nothing built (a Struct with no fields: every value
#: is still parsed and checked) and no line checked as one record: one call per 8 MiB
#: block, on every usable core. Less than any reader that checks every record must do,
#: so with a Python start that loads msgspec and orjson ("libs" in `bench_show`) it
#: bounds what any exact reader built on them can take here, before any work of its own.
MSGSPEC_BLOCKS = (
    """
import os, sys, msgspec
class Nothing(msgspec.Struct):
    pass
decode_lines = msgspec.json.Decoder(Nothing).decode_lines
"""
    + _CUTS
    + """
def work(lo, hi):
    n = 0
    while lo < hi:
        block = os.pread(fd, min(8 << 20, hi - lo), lo)
        end = block.rfind(b"\\n") + 1 if lo + len(block) < hi else len(block)
        if end <= 0:
            sys.exit("a line longer than a block")
        n += len(decode_lines(block[:end]))
        lo += end
    return n
"""
    + _ON_EVERY_CORE
)

HEADER_LOOP = """
import os, sys, orjson
out = []
for folder, _, files in os.walk(sys.argv[1]):
    for name in files:
        if name.endswith(".jsonl"):
            with open(os.path.join(folder, name), "rb") as fh:
                out.append(orjson.loads(fh.readline()))
print(len(out))
"""


@dataclass
class Row:
    figure: str
    value: str
    baseline: str
    ratio: str
    goal: str
    ok: bool | None  # None: not measured

    @property
    def verdict(self) -> str:
        return "n/a" if self.ok is None else ("PASS" if self.ok else "FAIL")


def cold_index(env: dict[str, str] | None = None) -> None:
    """Forget the indexes turnline keeps of big logs (`core.indexcache`, under the
    `$XDG_CACHE_HOME` of `env`, else of this process): the next command indexes cold."""
    base = (os.environ if env is None else env).get("XDG_CACHE_HOME")
    if base:
        shutil.rmtree(Path(base) / "turnline" / "index", ignore_errors=True)


def timed(
    cmd: list[str], runs: int = 3, *, warm: bool = False, **kw: object
) -> tuple[float, int, str]:
    """Median wall seconds, max peak RSS (KiB) and the last stdout of `cmd`; each run
    cold (no kept index, `cold_index`) unless `warm`."""
    walls: list[float] = []
    rss = 0
    out = ""
    for _ in range(runs):
        if not warm:
            cold_index(kw.get("env"))  # type: ignore[arg-type]
        with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
            start = time.perf_counter()
            proc = subprocess.run(
                [TIME, "-f", "%M", "-o", tf.name, *cmd],
                capture_output=True,
                check=False,
                **kw,  # type: ignore[arg-type]
            )
            walls.append(time.perf_counter() - start)
            lines = [x for x in tf.read().split() if x.isdigit()]
            rss = max(rss, int(lines[-1]) if lines else 0)
        if proc.returncode != 0:
            raise RuntimeError(f"{cmd} failed: {proc.stderr.decode()[-500:]}")
        out = proc.stdout.decode()
    return statistics.median(walls), rss, out


def timed_together(
    cmds: dict[str, list[str]], runs: int = 3, warm: dict[str, dict[str, str]] | None = None
) -> dict[str, tuple[float, int, str]]:
    """`timed` for several commands, run in turns (a, b, c, a, b, c, ...): this VM's
    speed drifts over seconds, and a figure and its baseline must see the same drift.
    The commands named in `warm` run in the environment it gives them and keep their
    indexes between runs; the others are cold."""
    warm = warm or {}
    walls: dict[str, list[float]] = {name: [] for name in cmds}
    rss: dict[str, int] = dict.fromkeys(cmds, 0)
    outs: dict[str, str] = dict.fromkeys(cmds, "")
    for _ in range(runs):
        for name, cmd in cmds.items():
            if name in warm:
                wall, peak, out = timed(cmd, runs=1, warm=True, env=warm[name])
            else:
                wall, peak, out = timed(cmd, runs=1)
            walls[name].append(wall)
            rss[name] = max(rss[name], peak)
            outs[name] = out
    return {name: (statistics.median(walls[name]), rss[name], outs[name]) for name in cmds}


def fmt_s(x: float) -> str:
    return f"{x:.3f} s"


def fmt_mb(kib: int) -> str:
    return f"{kib / 1024:.0f} MiB"


def print_table(rows: list[Row]) -> None:
    head = ("figure", "turnline", "baseline", "ratio", "goal", "")
    table = [head, *[(r.figure, r.value, r.baseline, r.ratio, r.goal, r.verdict) for r in rows]]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(head))]
    line = "| " + " | ".join("-" * w for w in widths) + " |"
    for k, row in enumerate(table):
        print("| " + " | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
        if k == 0:
            print(line)


@dataclass(frozen=True)
class Input:
    """One format generation's copy of an input: the v0 log and its V5 twin (`label`
    is what its rows add to the figure's name: "" for v0, " (V5)" for the twin)."""

    label: str
    path: Path
    size: int = 0
    zst: Path | None = None


def bench_show(inputs: list[Input], rows: list[Row]) -> None:
    """show --json against the naive reader (and the floor, RSS, zstd), for each input,
    all commands in one interleaved series; a V5 row right after its v0 row."""
    from turnline.core.parallel import usable_cores

    work = inputs[0].path.parent
    naive = Path(work / "naive.py")
    naive.write_text(NAIVE)
    floor = Path(work / "msgspec_lines.py")
    floor.write_text(MSGSPEC)
    cores_floor = Path(work / "msgspec_cores.py")
    cores_floor.write_text(MSGSPEC_PARALLEL)
    blocks_floor = Path(work / "msgspec_blocks.py")
    blocks_floor.write_text(MSGSPEC_BLOCKS)
    # turnline's own start: `show --json` of a log of one event (imports, argument
    # parsing, the answer); a Python that only loads the two libraries; and a bare
    # Python's start, which the block floor pays too.
    tiny = Path(work / "tiny" / "session.jsonl")
    tiny.parent.mkdir(exist_ok=True)
    tiny.write_bytes(
        header_line("tiny")
        + b'{"type":"turn/start","seq":0,"time":1785000000000,"data":{"turn":1}}\n'
    )
    cmds: dict[str, list[str]] = {
        "start": [TURNLINE, "show", "--json", str(tiny)],
        "libs": [PYTHON, "-c", "import msgspec, orjson"],
        "python": [PYTHON, "-c", "pass"],
    }
    for k, inp in enumerate(inputs):
        cmds[f"wc{k}"] = ["wc", "-l", str(inp.path)]
        cmds[f"naive{k}"] = [PYTHON, str(naive), str(inp.path)]
        cmds[f"msgspec{k}"] = [PYTHON, str(floor), str(inp.path)]
        cmds[f"cores{k}"] = [PYTHON, str(cores_floor), str(inp.path)]
        cmds[f"blocks{k}"] = [PYTHON, str(blocks_floor), str(inp.path)]
        cmds[f"show{k}"] = [TURNLINE, "show", "--json", str(inp.path)]
        # The same again, its index kept from the run before (`core.indexcache`), in
        # a cache folder of its own (the cold runs empty theirs).
        cmds[f"again{k}"] = [TURNLINE, "show", "--json", str(inp.path)]
        if inp.zst is not None:
            cmds[f"zstd{k}"] = [TURNLINE, "show", "--json", str(inp.zst)]
    kept_in = Path(tempfile.mkdtemp(prefix="turnline-bench-kept-"))
    kept = {**os.environ, "XDG_CACHE_HOME": str(kept_in)}
    warm = {f"again{k}": kept for k in range(len(inputs))}
    for name, env in warm.items():
        timed(cmds[name], runs=1, warm=True, env=env)  # keeps its index
    try:
        got = timed_together(cmds, warm=warm)
    finally:
        shutil.rmtree(kept_in, ignore_errors=True)
    per: list[list[Row]] = []
    first_turns: list[object] | None = None
    for k, inp in enumerate(inputs):
        out_rows: list[Row] = []
        per.append(out_rows)
        lab = inp.label
        wc = got[f"wc{k}"][0]
        naive_s, naive_rss, _ = got[f"naive{k}"]
        show_s, show_rss, out = got[f"show{k}"]
        shown = orjson.loads(out)["turns"]
        turns = len(shown)
        if first_turns is None:
            first_turns = shown
        # The twin's turns are the v0 log's but for their seqs (chunks fold away).
        differ = k > 0 and _unseq(shown) != _unseq(first_turns)
        out_rows.append(
            Row(
                f"big log show --json ({turns} turns){lab}"
                + (" (TURNS DIFFER FROM V0)" if differ else ""),
                fmt_s(show_s),
                f"naive {fmt_s(naive_s)}; wc -l {fmt_s(wc)}",
                f"{show_s / naive_s:.2f}× naive",
                "≤ 0.5× naive",
                not differ and show_s <= 0.5 * naive_s,
            )
        )
        again_s, _, again_out = got[f"again{k}"]
        same = again_out == out
        out_rows.append(
            Row(
                f"big log show --json again (index kept){lab}"
                + ("" if same else " (ANSWER DIFFERS FROM COLD)"),
                fmt_s(again_s),
                f"naive {fmt_s(naive_s)}; cold {fmt_s(show_s)}",
                f"{again_s / naive_s:.2f}× naive",
                "≤ 0.5× naive",
                same and again_s <= 0.5 * naive_s,
            )
        )
        floor_s = got[f"msgspec{k}"][0]
        out_rows.append(
            Row(
                f"msgspec per-line decode (the floor){lab}",
                fmt_s(floor_s),
                f"naive {fmt_s(naive_s)}; show {fmt_s(show_s)}",
                f"{floor_s / naive_s:.2f}× naive; show {show_s / floor_s:.2f}× it",
                "baseline",
                None,
            )
        )
        cores_s = got[f"cores{k}"][0]
        out_rows.append(
            Row(
                f"the same on every core (the parallel floor){lab}",
                fmt_s(cores_s),
                f"naive {fmt_s(naive_s)}; {usable_cores()} cores",
                f"{cores_s / naive_s:.2f}× naive; show {show_s / cores_s:.2f}× it",
                "baseline",
                None,
            )
        )
        # The least a cold `show` that checks every record can take on this machine:
        # a Python that loads msgspec and orjson, then msgspec's check of the JSON alone
        # on every core (its own bare Python start taken off). turnline's own start is
        # printed beside it.
        least = got["libs"][0] + max(0.0, got[f"blocks{k}"][0] - got["python"][0])
        out_rows.append(
            Row(
                f"libraries loaded + msgspec's block check on every core (the least){lab}",
                fmt_s(least),
                f"naive {fmt_s(naive_s)}; turnline's start {fmt_s(got['start'][0])}",
                f"{least / naive_s:.2f}× naive; show {show_s / least:.2f}× it",
                "baseline",
                None,
            )
        )
        out_rows.append(
            Row(
                f"big log show --json peak RSS{lab}",
                fmt_mb(show_rss),
                f"file {inp.size / 2**20:.0f} MiB; naive {fmt_mb(naive_rss)}",
                f"{show_rss * 1024 / inp.size:.2f}× file",
                "≤ 1.3× file",
                show_rss * 1024 <= 1.3 * inp.size,
            )
        )
        if inp.zst is None:
            continue
        zst_s, zst_rss, zout = got[f"zstd{k}"]
        same = orjson.loads(zout)["turns"] == shown
        out_rows.append(
            Row(
                f"big zstd log show --json{lab}" + ("" if same else " (TURNS DIFFER)"),
                f"{fmt_s(zst_s)}, {fmt_mb(zst_rss)}",
                f"raw {fmt_s(show_s)}",
                f"{zst_s / show_s:.2f}× raw",
                "≤ 1.5× raw",
                same and zst_s <= 1.5 * show_s,
            )
        )
    rows.extend(interleave(*per))


def _unseq(value: object) -> object:
    """`value` without its seqs (keys naming a seq): what a v0 log and its V5 twin share."""
    if isinstance(value, dict):
        return {k: _unseq(v) for k, v in value.items() if "seq" not in k.lower()}
    if isinstance(value, list):
        return [_unseq(v) for v in value]
    return value


def interleave(*groups: list[Row]) -> list[Row]:
    """The rows of each input's run of a figure group, each V5 row right after its v0
    row (matched by the figure's name up to its first parenthesis)."""

    def key(row: Row) -> str:
        return row.figure.split(" (")[0]

    out: list[Row] = []
    rest = [list(g) for g in groups[1:]]
    for row in groups[0]:
        out.append(row)
        for other in rest:
            match = next((r for r in other if key(r) == key(row)), None)
            if match is not None:
                other.remove(match)
                out.append(match)
    for other in rest:
        out.extend(other)
    return out


def bench_wide(roots: list[Input], rows: list[Row]) -> None:
    """ls --json against the header loop, for each root in one interleaved series (a
    V5 row right after its v0 row)."""
    loop = roots[0].path.parent / "header_loop.py"
    loop.write_text(HEADER_LOOP)
    cmds: dict[str, list[str]] = {}
    for k, inp in enumerate(roots):
        cmds[f"loop{k}"] = [PYTHON, str(loop), str(inp.path)]
        cmds[f"ls{k}"] = [TURNLINE, "ls", "--json", str(inp.path)]
    got = timed_together(cmds, runs=5)
    for k, inp in enumerate(roots):
        base_s = got[f"loop{k}"][0]
        ls_s, _, out = got[f"ls{k}"]
        listed = len(orjson.loads(out))
        rows.append(
            Row(
                f"wide root ls --json ({listed} sessions){inp.label}",
                fmt_s(ls_s),
                f"header loop {fmt_s(base_s)}",
                f"{ls_s / base_s:.2f}× loop",
                "≤ 2× loop",
                ls_s <= 2 * base_s,
            )
        )


def probe(
    mode: str,
    target: Path | None,
    *extra: str,
    timeout: float = 240,
    env: dict[str, str] | None = None,
) -> dict[str, object] | str:
    """Run a headless TUI probe; its JSON result, or why it could not run."""
    args = [] if target is None else [str(target)]
    cold_index(env)
    try:
        proc = subprocess.run(
            [PYTHON, "-m", "benchmarks.tui_probe", mode, *args, *extra],
            capture_output=True,
            timeout=timeout,
            cwd=REPO,
            check=False,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout:.0f} s"
    if proc.returncode != 0:
        return "failed: " + proc.stderr.decode(errors="replace").strip().splitlines()[-1][:80]
    result = orjson.loads(proc.stdout.splitlines()[-1])
    if not isinstance(result, dict) or result.get("shown", 0) is None:
        return "never shown"
    return result


def toolong_first_screen(workdir: Path, log: Path) -> float | str:
    """Seconds from launching toolong (own venv) in tmux to its first lines on screen."""
    if shutil.which("tmux") is None:
        return "tmux is not installed"
    venv = workdir / "toolong-venv"
    if not (venv / "bin" / "tl").exists():
        made = subprocess.run([PYTHON, "-m", "venv", str(venv)], capture_output=True, check=False)
        if made.returncode != 0:
            return "venv creation failed"
        pip = subprocess.run(
            [str(venv / "bin" / "pip"), "install", "--quiet", "toolong"],
            capture_output=True,
            check=False,
            timeout=300,
        )
        if pip.returncode != 0:
            return "pip install toolong failed: " + pip.stderr.decode()[-120:]
    marker = "big-session-0001"  # in the log's first line
    name = f"tlbench{os.getpid()}"
    start = time.time()
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", name, "-x", "160", "-y", "50",
         f"{venv / 'bin' / 'tl'} {log}"],
        check=True,
    )  # fmt: skip
    try:
        deadline = start + 120
        while time.time() < deadline:
            screen = subprocess.run(
                ["tmux", "capture-pane", "-p", "-t", name], capture_output=True, check=False
            ).stdout.decode(errors="replace")
            if marker in screen:
                return time.time() - start
            time.sleep(0.01)
        return "no first screen within 120 s"
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True, check=False)


def launched(
    mode: str, target: Path | None, env: dict[str, str] | None = None
) -> tuple[float, dict[str, object]] | str:
    """Seconds from launching a TUI probe to what it waits for on screen, and its result
    (with `final_s`, the seconds to the tree drawn from the finished scan, for `tree`)."""
    start = time.time()
    got = probe(mode, target, env=env)
    if isinstance(got, str):
        return got
    if "final" in got:
        got = {**got, "final_s": float(str(got["final"])) - start}
    return float(str(got["shown"])) - start, got


#: Turns the live probe appends (one per 50 ms). Its p95 is the 190th of 200: with 40,
#: it was the second slowest of 40, and one pause (a collection, a frame that laid
#: out every widget) moved it by a factor of two between runs.
LIVE_TURNS = 200

#: The TUI's goals, as multiples of a bare Textual app's first screen (issue 22).
ROWS_GOAL = 1.5
TREE_GOAL = 3.0
#: Rounds of TUI launches; each figure is the median of its launches. With three, the
#: floor's median moved from 0.21 to 0.30 s between two runs of the same code.
TUI_ROUNDS = 5


def bench_tui(
    workdir: Path, logs: list[Input], roots: list[Input], rows: list[Row], toolong: bool
) -> None:
    """The app's first screens against the floor: a bare Textual app's first screen
    (`tui_probe floor`), launched in the same run in turns with them.

    `TUI_ROUNDS` rounds, each launching the floor, then the first timeline rows of each
    big log, then the cold tree of each wide root (no summary cache: an empty cache
    folder), then toolong on each big log; each figure is the median of its rounds
    (this VM's speed drifts over seconds, and one launch varies by a few hundred ms:
    a figure and its floor must see the same drift). toolong's first screen is
    informational only (the goals are against the floor); it is not retried after a
    failed launch.
    """
    cold = tempfile.mkdtemp(prefix="turnline-bench-cold-")
    env = {**os.environ, "XDG_CACHE_HOME": cold}
    # What each launch waits for: (mode, target, input, env).
    kinds = [("floor", None, None, None)]
    kinds += [("rows", inp.path, inp, None) for inp in logs]
    kinds += [("tree", inp.path, inp, env) for inp in roots]
    walls: dict[int, list[float]] = {k: [] for k in range(len(kinds))}
    #: The tree's: when it was drawn from the finished scan, and whether its preview
    #: drew the same lines.
    finals: dict[int, list[float]] = {k: [] for k in range(len(kinds))}
    sames: dict[int, list[bool]] = {k: [] for k in range(len(kinds))}
    failed: dict[int, str] = {}
    results: dict[int, dict[str, object]] = {}
    theirs: dict[int, list[float]] = {k: [] for k in range(len(logs))}
    theirs_failed: str | None = None if toolong else "skipped"
    try:
        for _ in range(TUI_ROUNDS):
            for k, (mode, target, _inp, penv) in enumerate(kinds):
                if k in failed:
                    continue
                got = launched(mode, target, penv)
                if isinstance(got, str):
                    failed[k] = got
                    continue
                walls[k].append(got[0])
                results[k] = got[1]
                if mode == "tree":
                    finals[k].append(float(str(got[1]["final_s"])))
                    sames[k].append(bool(got[1]["same"]))
            for k, inp in enumerate(logs):
                if theirs_failed is not None:
                    break
                tl = toolong_first_screen(workdir, inp.path)
                if isinstance(tl, str):
                    theirs_failed = tl
                else:
                    theirs[k].append(tl)
    finally:
        shutil.rmtree(cold, ignore_errors=True)
    floor = statistics.median(walls[0]) if walls[0] else None
    rows.append(
        Row(
            "bare Textual app, first screen (the floor)",
            fmt_s(floor) if floor is not None else failed.get(0, "not run"),
            "header, tree, 5-row table",
            "",
            "baseline",
            None,
        )
    )
    for k, (mode, _target, inp, _env) in enumerate(kinds):
        if inp is None:
            continue
        if mode == "rows":
            figure, goal = f"big log, TUI first timeline rows{inp.label}", ROWS_GOAL
        else:
            figure, goal = f"wide root, tree shown (TUI, cold){inp.label}", TREE_GOAL
        if k in failed or not walls[k]:
            rows.append(Row(figure, failed.get(k, "not run"), "", "", f"≤ {goal:g}× floor", None))
            continue
        ours = statistics.median(walls[k])
        detail = results[k]
        what = f"{detail['rows']} rows" if mode == "rows" else f"{detail['nodes']} nodes"
        same = True
        if mode == "tree":
            # Drawn first from the scan's preview (the same lines: the probe checks),
            # then from the finished scan.
            final = statistics.median(finals[k])
            same = all(sames[k])
            what += f"; finished {fmt_s(final)}" if same else "; PREVIEW DIFFERED"
        rows.append(
            Row(
                figure,
                f"{fmt_s(ours)} ({what})",
                "floor " + (fmt_s(floor) if floor is not None else "not measured"),
                f"{ours / floor:.2f}× floor" if floor else "",
                f"≤ {goal:g}× floor",
                None if not floor else same and ours <= goal * floor,
            )
        )
    for k, inp in enumerate(logs):
        ours_k = 1 + k  # the rows launches follow the floor in `kinds`
        if theirs[k]:
            tl_s = statistics.median(theirs[k])
            ratio = (
                f"{statistics.median(walls[ours_k]) / tl_s:.2f}× toolong" if walls[ours_k] else ""
            )
            value = fmt_s(tl_s)
        else:
            ratio, value = "", theirs_failed or "not run"
        rows.append(
            Row(
                f"toolong first screen (informational){inp.label}",
                value,
                "turnline's first rows",
                ratio,
                "-",
                None,
            )
        )


def bench_live(big: Path, rows: list[Row], turns: int, label: str = "") -> None:
    result = probe("live", big, str(turns), timeout=400)
    if isinstance(result, str):
        rows.append(Row(f"live write → row on screen{label}", result, "", "", "p95 ≤ 100 ms", None))
        return
    lat = [float(x) for x in result["latencies"]]  # type: ignore[union-attr]
    if not lat:
        rows.append(
            Row(f"live write → row on screen{label}", "no rows appeared", "", "", "", False)
        )
        return
    p50 = statistics.median(lat) * 1000
    p95 = lat[min(len(lat) - 1, int(0.95 * len(lat)))] * 1000
    rows.append(
        Row(
            f"live write → row ({len(lat)}/{turns} turns){label}",
            f"p50 {p50:.0f} ms, p95 {p95:.0f} ms",
            "1 turn / 50 ms",
            "",
            "p95 ≤ 100 ms",
            p95 <= 100 and len(lat) == turns,
        )
    )


def bench_refresh(big: Path, rows: list[Row], label: str = "") -> None:
    """Bytes a tail refresh reads per append, on the big log (the watcher's resume path)."""
    from turnline.core.logfile import LogReader
    from turnline.core.root import SessionRoot

    from .generate import BigLog, turn_writer

    root = SessionRoot(big)
    summary = root.summaries()[0]
    reader = LogReader.resume(
        big, summary.header, summary.size, summary.events, summary.last_seq, True
    )
    log = BigLog(big, summary.events, summary.turns, summary.size, ())
    writer = turn_writer(log, summary.header.version if summary.header else None, seed=5)
    exact = True
    costs: list[float] = []
    appended = 0
    for _ in range(20):
        chunk, end_seq = writer.next_turn()
        writer.append(chunk)
        before = reader.offset
        start = time.perf_counter()
        batch = reader.read()
        costs.append(time.perf_counter() - start)
        exact &= reader.offset - before == len(chunk) and batch.events[-1].seq == end_seq
        appended += len(chunk)
    rows.append(
        Row(
            f"live refresh cost (tail from offset){label}",
            f"median {statistics.median(costs) * 1000:.1f} ms",
            f"bytes read = bytes appended: {'yes' if exact else 'NO'} ({appended // 20} B/turn)",
            "",
            "reads only appended bytes",
            exact,
        )
    )


def copy_floor(big: Path, length: int) -> tuple[float, float]:
    """Seconds to copy `length` bytes of `big` in the kernel into a new file, and of
    that, the fsync: what any durable fork of that size costs on this disk."""
    target = big.parent / ".floor-copy"
    src = os.open(big, os.O_RDONLY)
    dst = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        start = time.perf_counter()
        done = 0
        while done < length:
            n = os.copy_file_range(src, dst, length - done, done)
            if n == 0:
                break
            done += n
        synced = time.perf_counter()
        os.fsync(dst)
        end = time.perf_counter()
    finally:
        os.close(src)
        os.close(dst)
        target.unlink()
    return end - start, end - synced


def bench_fork(big: Path, rows: list[Row], label: str = "") -> None:
    from turnline.core.root import SessionRoot

    before = hashlib.sha256(big.read_bytes()).hexdigest()
    cold_index()
    root = SessionRoot(big.parent)
    summary = root.resolve(str(big))
    loaded = root.load(summary)  # the session is open, as in the TUI
    start = time.perf_counter()
    result = root.fork(loaded.summary, loaded.turn_ends[-1])
    took = time.perf_counter() - start
    after = hashlib.sha256(big.read_bytes()).hexdigest()
    floor, fsync = copy_floor(big, result.bytes_written)
    cold_index()
    cold_start = time.perf_counter()
    SessionRoot(big.parent).fork(str(big), loaded.turn_ends[-1])
    cold = time.perf_counter() - cold_start
    rows.append(
        Row(
            f"fork big log at last turn/end{label}",
            fmt_s(took),
            f"{result.bytes_written / 2**20:.0f} MiB written; parent "
            + ("unchanged" if before == after else "CHANGED")
            + f"; copy+fsync floor {fmt_s(floor)} (fsync {fmt_s(fsync)})"
            + f"; cold (index + fork) {fmt_s(cold)}",
            f"{took / floor:.2f}× floor",
            "≤ 1.0 s",
            took <= 1.0 and before == after,
        )
    )


def as_installed() -> None:
    """Run every measured command as an installed turnline runs: with its bytecode
    compiled. pip compiles a package when it installs it, but an editable install
    (`make setup`) leaves that to the first import, and a machine that sets
    PYTHONDONTWRITEBYTECODE (this one does) never writes it, so each new process
    would compile turnline's modules from source again: 10 ms for a search, more
    than 100 ms for the app, none of which a user pays."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    for package in ("core", "cli", "tui", "demo"):
        compileall.compile_dir(str(REPO / package), quiet=1)


def run_installed() -> None:
    """Run this benchmark again under turnline installed as a user installs it, then
    exit: a wheel of this checkout in a throwaway venv, its bytecode compiled by pip.

    The development install (`pip install -e`) puts an import hook in every Python
    start (setuptools' editable finder loads pathlib, re and more for it, 10 to 15 ms
    a process) that no installed turnline has; the baselines (`python -c ...`) run
    under the same throwaway interpreter, so both sides start alike. Its
    dependencies are the development venv's, through a path file. If anything of
    this fails, the benchmark measures the development install instead, and says so.
    """
    if os.environ.get("TURNLINE_BENCH_INSTALLED") == "1":
        as_installed()  # the wheel's modules are compiled; a fallback run's are not
        return
    work = Path(tempfile.mkdtemp(prefix="turnline-bench-install-"))
    venv = work / "venv"
    python = venv / "bin" / "python"
    try:
        steps = [
            [
                PYTHON,
                "-m",
                "pip",
                "wheel",
                "--quiet",
                "--no-deps",
                "-w",
                str(work / "wheel"),
                str(REPO),
            ],
            [PYTHON, "-m", "venv", "--without-pip", str(venv)],
        ]
        for cmd in steps:
            subprocess.run(cmd, check=True, capture_output=True, cwd=REPO)
        site = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        deps = subprocess.run(
            [PYTHON, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        Path(site, "turnline-bench-deps.pth").write_text(deps + "\n")
        wheel = next((work / "wheel").glob("turnline-*.whl"))
        subprocess.run(
            [
                PYTHON,
                "-m",
                "pip",
                "--python",
                str(python),
                "install",
                "--quiet",
                "--no-deps",
                "--no-index",
                str(wheel),
            ],
            check=True,
            capture_output=True,
        )
    except (subprocess.CalledProcessError, OSError, StopIteration) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        print(
            f"bench: could not install a wheel ({exc}; {detail.decode(errors='replace')[-200:]})"
            " -- measuring the development install",
            file=sys.stderr,
        )
        shutil.rmtree(work, ignore_errors=True)
        as_installed()
        return
    print(f"bench: measuring {wheel.name}, installed in a throwaway venv", flush=True)
    env = {**os.environ, "TURNLINE_BENCH_INSTALLED": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    try:
        status = subprocess.call(
            [str(python), "-m", "benchmarks", *sys.argv[1:]], env=env, cwd=REPO
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(status)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("--quick", action="store_true", help="small inputs (smoke run)")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder")
    parser.add_argument("--no-toolong", action="store_true", help="skip toolong")
    parser.add_argument("--no-tui", action="store_true", help="skip the TUI figures")
    parser.add_argument(
        "--only",
        action="append",
        choices=GROUPS,
        help="run only this group (repeatable): " + ", ".join(GROUPS),
    )
    args = parser.parse_args()
    run_installed()
    only = set(args.only or GROUPS)
    if args.no_tui:
        only -= {"tui", "live"}
    events = 100_000 if args.quick else 1_000_000
    sessions = 1_000 if args.quick else 10_000
    work = Path(tempfile.mkdtemp(prefix="turnline-bench-"))
    # Every command keeps its caches here, not in the user's ~/.cache; each figure
    # but the one that says so runs with no kept index (`cold_index`).
    os.environ["XDG_CACHE_HOME"] = str(work / "xdg-cache")
    rows: list[Row] = []
    try:
        started = time.perf_counter()
        big_dir = work / "big" / "--home-dev-turnline-bench--" / "big-session-0001"
        big_dir.mkdir(parents=True)
        zst_dir = work / "zst" / "--home-dev-turnline-bench--" / "big-session-0001"
        zst_dir.mkdir(parents=True)
        big = write_big_log(big_dir / "session.jsonl", events=events)
        zst = zst_dir / "session.jsonl.zstd"
        zsize = write_zstd_copy(big, zst) if "show" in only else 0
        wanted_wide = only & {"wide", "usage", "search", "tui"}
        wide = write_wide_root(work / "wide", sessions=sessions) if wanted_wide else None
        made = time.perf_counter()
        # The V5 twins (dsh's current format) of the same inputs: same sessions, same
        # folders, `session.v5.jsonl[.zstd]`; every figure on them is measured too.
        big5_dir = work / "big5" / big_dir.relative_to(work / "big")
        big5_dir.mkdir(parents=True)
        big5 = big5_dir / "session.v5.jsonl"
        uses_big = only & {"show", "usage", "tui", "fork", "refresh", "live"}
        size5 = v5_twin_log(big.path, big5) if uses_big else 0
        zst5: Path | None = None
        zsize5 = 0
        if "show" in only:
            zst5 = work / "zst5" / zst_dir.relative_to(work / "zst") / "session.v5.jsonl.zstd"
            zst5.parent.mkdir(parents=True)
            zsize5 = v5_twin_log(zst, zst5)
        wide5 = work / "wide5"
        wsize5 = v5_twin_root(wide.path, wide5) if wide is not None else 0
        print(
            f"inputs in {made - started:.1f} s: big log {big.events} events, "
            f"{big.turns} turns, {big.size / 1e6:.0f} MB (zstd {zsize / 1e6:.0f} MB)"
            + (
                f"; wide root {wide.sessions} sessions ({wide.forks} forks, "
                f"{wide.subagents} subagents), {wide.bytes / 1e6:.0f} MB"
                if wide is not None
                else ""
            )
            + f"\nV5 twins in {time.perf_counter() - made:.1f} s: big log {size5 / 1e6:.0f} MB"
            + f" (zstd {zsize5 / 1e6:.0f} MB)"
            + (f"; wide root {wsize5 / 1e6:.0f} MB" if wide is not None else ""),
            flush=True,
        )
        logs = [Input("", big.path, big.size, zst if "show" in only else None)]
        if uses_big:
            logs.append(Input(" (V5)", big5, size5, zst5))
        roots = [] if wide is None else [Input("", wide.path), Input(" (V5)", wide5)]
        if "show" in only:
            bench_show(logs, rows)
        if roots and "wide" in only:
            bench_wide(roots, rows)
        if "usage" in only:
            from benchmarks.usage import bench_usage

            bench_usage(
                [(r.label, r.path) for r in roots],
                [(x.label, x.path) for x in logs],
                rows,
                Row,
                timed_together,
            )
        if roots and "search" in only:
            from .search import bench_search

            found: list[list[Row]] = []
            words: tuple[str, str | None] | None = None
            for inp in roots:
                found.append([])
                words = bench_search(inp.path, found[-1], Row, TURNLINE, "tui" in only, words=words)
                for row in found[-1]:
                    row.figure += inp.label
            rows.extend(interleave(*found))
        if "tui" in only:
            bench_tui(work, logs, roots, rows, not args.no_toolong)
        if "fork" in only:
            for inp in logs:
                bench_fork(inp.path, rows, inp.label)
                for child in inp.path.parent.parent.iterdir():  # forks: keep one log only
                    if child != inp.path.parent:
                        shutil.rmtree(child)
        if "refresh" in only:
            for inp in logs:
                bench_refresh(inp.path, rows, inp.label)
        if "live" in only:
            for inp in logs:
                bench_live(inp.path, rows, turns=LIVE_TURNS, label=inp.label)
        if "huge" in only:
            from .huge import bench_huge

            bench_huge(work, rows, Row, timed_together, tui=not args.no_tui)
        print(f"\nmachine: {os.cpu_count()} cores, {sys.platform}, Python {sys.version.split()[0]}")
        print(f"total {time.perf_counter() - started:.0f} s\n")
        print_table(rows)
    finally:
        if args.keep:
            print(f"inputs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
