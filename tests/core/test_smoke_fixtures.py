"""Every real dsh fixture loads; the fast listing agrees with a full read."""

from __future__ import annotations

from pathlib import Path

from turnline.core.root import SessionRoot
from turnline.core.summary import summarize

from ..conftest import fixture_logs


def test_all_fixtures_scan_and_load(fixtures_root: Path) -> None:
    logs = fixture_logs()
    assert len(logs) == 151
    root = SessionRoot(fixtures_root)
    summaries = root.scan()
    assert sorted(s.path for s in summaries) == logs
    for summary in summaries:
        assert summary.header is not None, summary.path
        loaded = root.load(summary)
        full = loaded.summary
        fast = summarize(summary.path)
        assert (fast.events, fast.last_seq, fast.turns, fast.open_turn, fast.title) == (
            full.events,
            full.last_seq,
            full.turns,
            full.open_turn,
            full.title,
        ), summary.path
