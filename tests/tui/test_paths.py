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


async def test_the_filter_matches_log_paths_under_the_root(fixtures_root: Path) -> None:
    """`/web/` finds every fixture under `web/` (by its path: their ids, titles and cwd
    need not say "web")."""
    from .test_app import ready

    web = sorted((fixtures_root / "web").rglob("session*.jsonl"))
    assert len(web) > 3
    async with TurnlineApp(fixtures_root, tz=UTC).run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        tree = app.session_tree
        await pilot.press("slash", *"web/")
        await pilot.pause()
        assert [p for p in web if tree.node_of(p) is None] == []


async def test_the_filter_still_matches_ids_titles_and_cwd(family: Family) -> None:
    async with TurnlineApp(family.root, tz=UTC).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.parent)
        tree = app.session_tree
        for needle, expected in (
            ("eeee5555", family.other),  # id
            ("footer links", family.other),  # title
            ("dev/site", family.live),  # cwd
            ("dddd4444-live/session", family.live),  # path
            ("--home-dev-site--/eeee", family.other),  # the project folder in the path
        ):
            await pilot.press("slash", *needle)
            await pilot.pause()
            assert tree.node_of(expected) is not None, needle
            assert tree.node_of(family.parent) is None, needle
            await pilot.press("escape")
            await pilot.pause()
        # The path is matched relative to the root: the root's own name ("root") is not.
        await pilot.press("slash", *family.root.name)
        await pilot.pause()
        assert app.snapshot is not None
        assert [p for p in app.snapshot.summaries if tree.node_of(p) is not None] == []


async def test_one_log_is_named_by_its_session_in_the_header(tmp_path: Path) -> None:
    """`turnline path/session.jsonl`: the header names the session (title and short
    id), not `session.jsonl`; the title is log text, shown literally."""
    from turnline.core.model import SessionHeader

    from .conftest import CWD, HOSTILE, turn, write_session
    from .test_app import ready

    root = tmp_path / "root"
    path = write_session(
        root,
        SessionHeader(id="1234abcd-one", created_at=T0, cwd=CWD),
        turn(0, 1, HOSTILE, "Done."),
    )
    assert path.name == "session.jsonl"
    async with TurnlineApp(path, tz=UTC).run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await wait_for(pilot, lambda: app.sub_title.endswith(" · 1234abcd"))
        title = app.sub_title
        assert "session.jsonl" not in title
        assert title.startswith("[bold red]x[/]")
        assert not any(c in title for c in ("\x1b", "\x07", "\u202e"))
