"""Paths in the app: a relative root, with the real watcher (issue 14, item 3)."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest
from turnline.core.logfile import Encoding
from turnline.core.model import SessionEvent
from turnline.core.writer import append_events
from turnline.tui import TurnlineApp
from turnline.tui.widgets import TurnTimeline

from .conftest import T0, Family, wait_for
from .test_app import SIZE, open_session
from .test_live import last_seq


async def test_a_relative_root_shows_an_appended_session_once(
    family: Family, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cd ROOT && turnline .`: the scan and the real watcher key logs by one path."""
    monkeypatch.chdir(family.root)
    async with TurnlineApp(Path("."), tz=UTC).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.live)
        assert app.root is not None and app.root.path == family.root.resolve()
        seq = last_seq(family.live) + 1
        end = SessionEvent(
            "turn/end", seq, T0 + 3_600_000, {"turn": 2, "reason": {"kind": "completed"}}
        )
        append_events(family.live, [end], Encoding.RAW)
        timeline = app.query_one(TurnTimeline)
        await wait_for(pilot, lambda: len(timeline.turns) == 2 and timeline.turns[1].forkable)
        snapshot = app.snapshot
        assert snapshot is not None
        live = [p for p in snapshot.summaries if p.parent.name == family.live.parent.name]
        assert live == [family.live]
        assert not any(
            problem.kind == "duplicate-id"
            for path in snapshot.summaries
            for problem in snapshot.problems_of(path)
        )
