"""The `usage` group of `make bench`: `usage --json` against `ls --json` over the wide
root (same run, interleaved), and one live update on a 1M-event log against the same
update on a small log (the fold is fed only the appended events)."""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import orjson
from turnline.core.logfile import LogReader
from turnline.core.model import SessionEvent
from turnline.core.usage import UsageFold, fold_log


def _appended(start_seq: int, n: int) -> list[SessionEvent]:
    out: list[SessionEvent] = []
    for i in range(n):
        seq = start_seq + i
        usage = {"inputTokens": 100 + i, "outputTokens": 10, "cacheReadTokens": 1000}
        out.append(
            SessionEvent(
                "assistant/message",
                seq,
                1_700_000_000_000 + seq,
                {"turn": 10_000 + i, "step": 0, "message": {}, "usage": usage},
            )
        )
    return out


def _update_cost(fold: UsageFold, start_seq: int, runs: int = 200) -> float:
    """Median seconds to feed a batch of 20 appended events and read the own view."""
    walls = []
    for k in range(runs):
        batch = _appended(start_seq + k * 20, 20)
        t = time.perf_counter()
        fold.feed(batch)
        fold.own()
        walls.append(time.perf_counter() - t)
    return statistics.median(walls)


def bench_usage(
    wides: list[tuple[str, Path]],
    bigs: list[tuple[str, Path]],
    rows: list[Any],
    row: Any,
    timed_together: Any,
) -> None:
    """Append the usage figures to `rows` (`row` is the benchmark's `Row` class), for
    each (label, input): a V5 twin's row right after its v0 row. The roots' commands
    run in one interleaved series."""
    from benchmarks.__main__ import TURNLINE, fmt_s

    if wides:
        cmds: dict[str, list[str]] = {}
        for k, (_, wide) in enumerate(wides):
            cmds[f"ls{k}"] = [TURNLINE, "ls", "--json", str(wide)]
            cmds[f"usage{k}"] = [TURNLINE, "usage", "--json", str(wide)]
        got = timed_together(cmds, runs=5)
        totals: Any = None
        for k, (label, _) in enumerate(wides):
            ls_s, usage_s = got[f"ls{k}"][0], got[f"usage{k}"][0]
            report = orjson.loads(got[f"usage{k}"][2])
            sessions = len(report["sessions"])
            # A V5 twin holds the same usage as its v0 root: the totals must agree.
            differ = k > 0 and report.get("totals") != totals
            totals = report.get("totals") if k == 0 else totals
            rows.append(
                row(
                    f"wide root usage --json ({sessions} sessions){label}"
                    + (" (TOTALS DIFFER FROM V0)" if differ else ""),
                    fmt_s(usage_s),
                    f"ls --json {fmt_s(ls_s)}",
                    f"{usage_s / ls_s:.2f}× ls",
                    "≤ 2× ls",
                    not differ and usage_s <= 2 * ls_s,
                )
            )
    per = [_big_rows(big, label, row) for label, big in bigs]
    for k in range(len(per[0]) if per else 0):
        rows.extend(group[k] for group in per)


def _big_rows(big: Path, label: str, row: Any) -> list[Any]:
    from benchmarks.__main__ import fmt_s

    out: list[Any] = []
    reader = LogReader(big)
    events = reader.read().events
    big_fold = UsageFold(0).feed(events)
    last = events[-1].seq + 1 if events else 0
    del events
    small_fold = UsageFold(0).feed(_appended(0, 100))
    big_s = _update_cost(big_fold, last)
    small_s = _update_cost(small_fold, 100)
    out.append(
        row(
            f"usage live update (20 events, 1M-event log){label}",
            f"{big_s * 1e6:.0f} µs",
            f"small log {small_s * 1e6:.0f} µs",
            f"{big_s / small_s:.2f}× small",
            "≈ small (≤ 2×)",
            big_s <= 2 * small_s,
        )
    )
    # The full fold of the big log (the first read), for scale.
    t = time.perf_counter()
    fold_log(big, 0)
    out.append(
        row(
            f"usage fold, 1M-event log (first read){label}",
            fmt_s(time.perf_counter() - t),
            "",
            "",
            "",
            None,
        )
    )
    return out
