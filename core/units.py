"""Counts and times as people write them, one rule for the CLI and the app."""

from __future__ import annotations


def plural(n: int, word: str) -> str:
    """`1 turn`, `2 turns`, `1,234 turns` (thousands separated)."""
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def duration(ms: int | float) -> str:
    """A wall time as people write it: `3.2 s` under a minute, then its two largest
    units: `12m 5s`, `1h 0m`, `7d 4h`."""
    if ms < 60_000:
        return f"{max(ms, 0) / 1000:.1f} s"
    seconds = int(ms) // 1000
    minutes, s = divmod(seconds, 60)
    hours, m = divmod(minutes, 60)
    days, h = divmod(hours, 24)
    if days:
        return f"{days}d {h}h"
    if hours:
        return f"{hours}h {m}m"
    return f"{minutes}m {s}s"
