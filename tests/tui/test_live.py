"""Live refresh: another process appends, adds and removes logs while the app runs."""

from __future__ import annotations

import shutil
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from turnline.core.logfile import Encoding
from turnline.core.model import SessionEvent, SessionHeader
from turnline.core.writer import append_events
from turnline.tui import TurnlineApp
from turnline.tui.widgets import SessionTree, TurnTimeline

from .conftest import OTHER_CWD, T0, Family, turn, wait_for, write_session
from .test_app import SIZE, notifications, open_session


def last_seq(path: Path) -> int:
    from turnline.core.summary import summarize

    seq = summarize(path).last_seq
    assert seq is not None
    return seq


@pytest.mark.parametrize("poll", [False, True], ids=["native", "poll"])
async def test_open_turn_becomes_forkable_when_its_turn_end_lands(
    family: Family, poll: bool
) -> None:
    async with TurnlineApp(family.root, poll=poll, tz=UTC).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.live)
        timeline = app.query_one(TurnTimeline)
        tree = app.query_one(SessionTree)
        timeline.focus()
        timeline.move_cursor(row=1)  # the open turn: the user follows the end
        await pilot.pause()
        assert app.fork_refusal() == "turn 2 is still open: it has no turn/end yet"
        node = tree.node_of(family.live)
        assert node is not None and str(node.label).startswith("● ")

        seq = last_seq(family.live) + 1
        end = SessionEvent(
            "turn/end", seq, T0 + 3_600_000, {"turn": 2, "reason": {"kind": "completed"}}
        )
        append_events(family.live, [end], Encoding.RAW)

        def closed() -> bool:
            """the open turn to become a fork point"""
            return len(timeline.turns) == 2 and timeline.turns[1].forkable

        await wait_for(pilot, closed)
        assert app.fork_refusal() is None
        assert app.active_bindings["f"].enabled is True
        label = tree.node_of(family.live)
        assert label is not None and not str(label.label).startswith("● ")

        # A whole new turn appended: the timeline grows in place, following the end.
        more = turn(seq + 1, 3, "Tag the release", "Tagged v1.2.", minute=70)
        append_events(family.live, more, Encoding.RAW)
        await wait_for(pilot, lambda: len(timeline.turns) == 3)
        assert timeline.row_count == 3
        assert timeline.current_turn is not None and timeline.current_turn.number == 3


async def test_cursor_stays_put_when_not_following(family: Family) -> None:
    async with TurnlineApp(family.root, tz=UTC).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.live)
        timeline = app.query_one(TurnTimeline)
        timeline.focus()
        timeline.move_cursor(row=0)
        await pilot.pause()
        seq = last_seq(family.live) + 1
        events = [
            SessionEvent(
                "turn/end", seq, T0 + 3_600_000, {"turn": 2, "reason": {"kind": "completed"}}
            )
        ]
        events += turn(seq + 1, 3, "Tag the release", "Tagged.", minute=70)
        append_events(family.live, events, Encoding.RAW)
        await wait_for(pilot, lambda: len(timeline.turns) == 3)
        assert timeline.cursor_row == 0


async def test_new_and_removed_sessions_join_and_leave_the_tree(family: Family) -> None:
    async with TurnlineApp(family.root, tz=UTC).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.parent)
        tree = app.query_one(SessionTree)
        new = write_session(
            family.root,
            SessionHeader(id="ffff6666-new", created_at=T0 + 9, cwd=OTHER_CWD),
            turn(0, 1, "Brand new session", "Hello.", minute=80),
        )
        await wait_for(pilot, lambda: tree.node_of(new) is not None)
        node = tree.node_of(new)
        assert node is not None and "Brand new session" in str(node.label)
        # The cursor stayed on the session the user was reading.
        assert tree.highlighted_path == family.parent

        shutil.rmtree(family.other.parent)
        await wait_for(pilot, lambda: tree.node_of(family.other) is None)
        assert app.snapshot is not None and family.other not in app.snapshot.summaries
        assert not any("Traceback" in m for m in notifications(app))


async def test_removing_the_open_session_clears_the_timeline(family: Family) -> None:
    async with TurnlineApp(family.root, tz=UTC).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.other)
        # The tree then highlights a neighbour, which loads at once: the cleared state is
        # recorded when the pane says so, not polled for (a poll can miss it).
        cleared: list[tuple[bool, int, bool]] = []
        show_turn = app.detail.show_turn

        def recording(*args: Any, **kwargs: Any) -> None:
            if kwargs.get("note") == "this session's log was removed":
                rows = app.query_one(TurnTimeline).row_count
                cleared.append((app.view is None, rows, app.fork_plan() is None))
            show_turn(*args, **kwargs)

        app.detail.show_turn = recording  # type: ignore[method-assign]
        shutil.rmtree(family.other.parent)
        await wait_for(pilot, lambda: bool(cleared))
        assert cleared == [(True, 0, True)]
