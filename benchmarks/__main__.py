"""`python -m benchmarks` (or `make bench`): make the inputs, measure, print one table.

Every figure is printed beside its baseline measured in the same run on the same
input, with the issue's goal and PASS/FAIL. Inputs go to a temporary folder that is
removed at the end (`--keep` keeps it). Options: `--quick` (smaller inputs, for a
smoke run), `--no-toolong` (skip installing toolong), `--no-tui`, `--only GROUP`
(repeatable: show, wide, tui, fork, refresh, live, usage, search, huge).
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

from .generate import write_big_log, write_wide_root, write_zstd_copy

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
TURNLINE = str(Path(PYTHON).parent / "turnline")
TIME = "/usr/bin/time"
#: Figure groups `--only` can pick ("tui" is the tree and first-rows probes).
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

#: msgspec's own per-line decode (a Struct with just the type and the seqs, every
#: line still checked as JSON): the floor a reader that validates every line can reach.
MSGSPEC = """
import sys, msgspec
class Head(msgspec.Struct):
    type: str
    seq: int | None = None
    seq0: int | None = None
decode = msgspec.json.Decoder(Head).decode
n = 0
with open(sys.argv[1], "rb") as fh:
    for line in fh:
        decode(line)
        n += 1
print(n)
"""

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


def timed(cmd: list[str], runs: int = 3, **kw: object) -> tuple[float, int, str]:
    """Median wall seconds, max peak RSS (KiB) and the last stdout of `cmd`."""
    walls: list[float] = []
    rss = 0
    out = ""
    for _ in range(runs):
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


def timed_together(cmds: dict[str, list[str]], runs: int = 3) -> dict[str, tuple[float, int, str]]:
    """`timed` for several commands, run in turns (a, b, c, a, b, c, ...): this VM's
    speed drifts over seconds, and a figure and its baseline must see the same drift."""
    walls: dict[str, list[float]] = {name: [] for name in cmds}
    rss: dict[str, int] = dict.fromkeys(cmds, 0)
    outs: dict[str, str] = dict.fromkeys(cmds, "")
    for _ in range(runs):
        for name, cmd in cmds.items():
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


def bench_show(big: Path, zst: Path, size: int, rows: list[Row]) -> None:
    naive = Path(big.parent / "naive.py")
    naive.write_text(NAIVE)
    floor = Path(big.parent / "msgspec_lines.py")
    floor.write_text(MSGSPEC)
    got = timed_together(
        {
            "wc": ["wc", "-l", str(big)],
            "naive": [PYTHON, str(naive), str(big)],
            "msgspec": [PYTHON, str(floor), str(big)],
            "show": [TURNLINE, "show", "--json", str(big)],
            "zstd": [TURNLINE, "show", "--json", str(zst)],
        }
    )
    wc = got["wc"][0]
    naive_s, naive_rss, _ = got["naive"]
    show_s, show_rss, out = got["show"]
    turns = len(orjson.loads(out)["turns"])
    zst_s, zst_rss, zout = got["zstd"]
    same = orjson.loads(zout)["turns"] == orjson.loads(out)["turns"]
    rows.append(
        Row(
            f"big log show --json ({turns} turns)",
            fmt_s(show_s),
            f"naive {fmt_s(naive_s)}; wc -l {fmt_s(wc)}",
            f"{show_s / naive_s:.2f}× naive",
            "≤ 0.5× naive",
            show_s <= 0.5 * naive_s,
        )
    )
    floor_s = got["msgspec"][0]
    rows.append(
        Row(
            "msgspec per-line decode (the floor)",
            fmt_s(floor_s),
            f"naive {fmt_s(naive_s)}; show {fmt_s(show_s)}",
            f"{floor_s / naive_s:.2f}× naive; show {show_s / floor_s:.2f}× it",
            "baseline",
            None,
        )
    )
    rows.append(
        Row(
            "big log show --json peak RSS",
            fmt_mb(show_rss),
            f"file {size / 2**20:.0f} MiB; naive {fmt_mb(naive_rss)}",
            f"{show_rss * 1024 / size:.2f}× file",
            "≤ 1.3× file",
            show_rss * 1024 <= 1.3 * size,
        )
    )
    rows.append(
        Row(
            "big zstd log show --json" + ("" if same else " (TURNS DIFFER)"),
            f"{fmt_s(zst_s)}, {fmt_mb(zst_rss)}",
            f"raw {fmt_s(show_s)}",
            f"{zst_s / show_s:.2f}× raw",
            "≤ 1.5× raw",
            same and zst_s <= 1.5 * show_s,
        )
    )


def bench_wide(root: Path, rows: list[Row], tui: bool) -> None:
    loop = root.parent / "header_loop.py"
    loop.write_text(HEADER_LOOP)
    got = timed_together(
        {
            "loop": [PYTHON, str(loop), str(root)],
            "ls": [TURNLINE, "ls", "--json", str(root)],
        },
        runs=5,
    )
    base_s = got["loop"][0]
    ls_s, _, out = got["ls"]
    listed = len(orjson.loads(out))
    rows.append(
        Row(
            f"wide root ls --json ({listed} sessions)",
            fmt_s(ls_s),
            f"header loop {fmt_s(base_s)}",
            f"{ls_s / base_s:.2f}× loop",
            "≤ 2× loop",
            ls_s <= 2 * base_s,
        )
    )
    if not tui:
        return
    runs: list[float] = []
    for _ in range(3):  # median of three launches
        start = time.time()
        shown = probe("tree", root)
        if isinstance(shown, str):
            rows.append(Row("wide root, tree shown (TUI)", shown, "", "", "≤ 1.5 s", None))
            return
        runs.append(float(str(shown["shown"])) - start)
    elapsed = statistics.median(runs)
    rows.append(
        Row(
            "wide root, tree shown (TUI)",
            fmt_s(elapsed),
            f"{shown['nodes']} nodes",
            "",
            "≤ 1.5 s",
            elapsed <= 1.5,
        )
    )


def probe(mode: str, target: Path, *extra: str, timeout: float = 240) -> dict[str, object] | str:
    """Run a headless TUI probe; its JSON result, or why it could not run."""
    try:
        proc = subprocess.run(
            [PYTHON, "-m", "benchmarks.tui_probe", mode, str(target), *extra],
            capture_output=True,
            timeout=timeout,
            cwd=REPO,
            check=False,
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


def bench_tui_big(workdir: Path, big: Path, rows: list[Row], toolong: bool) -> None:
    # Ours and toolong's in turns, three each (median): one launch of either varies
    # by a few hundred ms on this VM. toolong is not retried after a failed launch.
    ours_runs: list[float] = []
    theirs_runs: list[float] = []
    ours: float | str = "not run"
    theirs: float | str = "skipped"
    for _ in range(3):
        start = time.time()
        shown = probe("rows", big)
        if isinstance(shown, str):
            ours = shown
            break
        ours_runs.append(float(str(shown["shown"])) - start)
        if toolong:
            got = toolong_first_screen(workdir, big)
            if isinstance(got, str):
                theirs = got
                toolong = False
            else:
                theirs_runs.append(got)
    if ours_runs:
        ours = statistics.median(ours_runs)
    if theirs_runs:
        theirs = statistics.median(theirs_runs)
    ok = None
    ratio = ""
    if isinstance(ours, float) and isinstance(theirs, float):
        ok = ours <= 0.5 * theirs
        ratio = f"{ours / theirs:.2f}× toolong"
    rows.append(
        Row(
            "big log, TUI first timeline rows",
            fmt_s(ours) if isinstance(ours, float) else ours,
            "toolong " + (fmt_s(theirs) if isinstance(theirs, float) else theirs),
            ratio,
            "≤ 0.5× toolong",
            ok,
        )
    )


def bench_live(big: Path, rows: list[Row], turns: int) -> None:
    result = probe("live", big, str(turns), timeout=400)
    if isinstance(result, str):
        rows.append(Row("live write → row on screen", result, "", "", "p95 ≤ 100 ms", None))
        return
    lat = [float(x) for x in result["latencies"]]  # type: ignore[union-attr]
    if not lat:
        rows.append(Row("live write → row on screen", "no rows appeared", "", "", "", False))
        return
    p50 = statistics.median(lat) * 1000
    p95 = lat[min(len(lat) - 1, int(0.95 * len(lat)))] * 1000
    rows.append(
        Row(
            f"live write → row ({len(lat)}/{turns} turns)",
            f"p50 {p50:.0f} ms, p95 {p95:.0f} ms",
            "1 turn / 50 ms",
            "",
            "p95 ≤ 100 ms",
            p95 <= 100 and len(lat) == turns,
        )
    )


def bench_refresh(big: Path, rows: list[Row]) -> None:
    """Bytes a tail refresh reads per append, on the big log (the watcher's resume path)."""
    from turnline.core.logfile import LogReader
    from turnline.core.root import SessionRoot

    from .generate import BigLog, TurnWriter

    root = SessionRoot(big)
    summary = root.summaries()[0]
    reader = LogReader.resume(
        big, summary.header, summary.size, summary.events, summary.last_seq, True
    )
    writer = TurnWriter(BigLog(big, summary.events, summary.turns, summary.size, ()), seed=5)
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
            "live refresh cost (tail from offset)",
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


def bench_fork(big: Path, rows: list[Row]) -> None:
    from turnline.core.root import SessionRoot

    before = hashlib.sha256(big.read_bytes()).hexdigest()
    root = SessionRoot(big.parent)
    summary = root.resolve(str(big))
    loaded = root.load(summary)  # the session is open, as in the TUI
    start = time.perf_counter()
    result = root.fork(loaded.summary, loaded.turn_ends[-1])
    took = time.perf_counter() - start
    after = hashlib.sha256(big.read_bytes()).hexdigest()
    floor, fsync = copy_floor(big, result.bytes_written)
    cold_start = time.perf_counter()
    SessionRoot(big.parent).fork(str(big), loaded.turn_ends[-1])
    cold = time.perf_counter() - cold_start
    rows.append(
        Row(
            "fork big log at last turn/end",
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
        wanted_wide = only & {"wide", "usage", "search"}
        wide = write_wide_root(work / "wide", sessions=sessions) if wanted_wide else None
        print(
            f"inputs in {time.perf_counter() - started:.1f} s: big log {big.events} events, "
            f"{big.turns} turns, {big.size / 1e6:.0f} MB (zstd {zsize / 1e6:.0f} MB)"
            + (
                f"; wide root {wide.sessions} sessions ({wide.forks} forks, "
                f"{wide.subagents} subagents), {wide.bytes / 1e6:.0f} MB"
                if wide is not None
                else ""
            ),
            flush=True,
        )
        if "show" in only:
            bench_show(big.path, zst, big.size, rows)
        if wide is not None and "wide" in only:
            bench_wide(wide.path, rows, tui="tui" in only)
        if "usage" in only:
            from benchmarks.usage import bench_usage

            bench_usage(wide.path if wide else None, big.path, rows, Row, timed_together)
        if wide is not None and "search" in only:
            from .search import bench_search

            bench_search(wide.path, rows, Row, TURNLINE, tui="tui" in only)
        if "tui" in only:
            bench_tui_big(work, big.path, rows, toolong=not args.no_toolong)
        if "fork" in only:
            bench_fork(big.path, rows)
            for child in big_dir.parent.iterdir():  # forks made above: keep one log only
                if child != big_dir:
                    shutil.rmtree(child)
        if "refresh" in only:
            bench_refresh(big.path, rows)
        if "live" in only:
            bench_live(big.path, rows, turns=40)
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
