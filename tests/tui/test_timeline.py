"""The timeline widget on its own: rows, keys, mouse, and the per-row render cache."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import msgspec
from textual.app import App, ComposeResult
from turnline.core.logfile import read_log
from turnline.core.timeline import Timeline, build_timeline
from turnline.core.view import OPEN_TURN, TurnView
from turnline.tui.widgets import Divider, TurnTimeline
from turnline.tui.widgets._timeline import NO_TIME, format_time

from .conftest import T0, Family

SIZE = (100, 12)  # a 10-line timeline: header + 9 rows


class Host(App[None]):
    """Just the timeline, recording what it says."""

    def __init__(self) -> None:
        super().__init__()
        self.said: list[Any] = []

    def compose(self) -> ComposeResult:
        yield TurnTimeline(tz=UTC, id="timeline")

    def on_turn_timeline_turn_highlighted(self, message: TurnTimeline.TurnHighlighted) -> None:
        self.said.append(("turn", message.turn_index, message.live))

    def on_turn_timeline_divider_chosen(self, message: TurnTimeline.DividerChosen) -> None:
        self.said.append(("divider", message.divider.parent_id))


def timeline_of(family: Family, name: str = "parent") -> Timeline:
    log = read_log(getattr(family, name))
    seed = log.header.seed_length if log.header is not None else None
    return build_timeline(log.events, seed or 0)


def many(base: Timeline, count: int) -> Timeline:
    """`count` turns, cycling the base's (each a distinct object, as a real log gives)."""
    turns = tuple(msgspec.structs.replace(base.turns[i % len(base.turns)]) for i in range(count))
    return msgspec.structs.replace(base, turns=turns)


def rows(timeline: Timeline, refused: frozenset[int] = frozenset()) -> tuple[TurnView, ...]:
    """The turns as verdicts: closed turns forkable unless their index is in `refused`."""
    seed = timeline.seed_length
    return tuple(
        TurnView(
            turn,
            index,
            turn.end_seq is not None and turn.end_seq < seed,
            OPEN_TURN.format(number=turn.number)
            if turn.end_seq is None
            else ("refused" if index in refused else None),
        )
        for index, turn in enumerate(timeline.turns)
    )


def screen_text(app: Host) -> list[str]:
    timeline = app.query_one(TurnTimeline)
    return [timeline.render_line(y).text for y in range(timeline.size.height)]


async def test_header_rows_and_keys(family: Family) -> None:
    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        timeline = app.query_one(TurnTimeline)
        timeline.focus()
        timeline.show(rows(many(timeline_of(family), 30)), None, cursor_turn=0)
        await pilot.pause()
        lines = screen_text(app)
        assert lines[0].split() == ["turn", "reason", "steps", "tools", "tokens", "time", "user"]
        assert lines[1].lstrip().startswith("▶ 1") and "completed" in lines[1]
        # The user column runs to the right edge: the row is as wide as the widget.
        assert len(lines[1]) == timeline.scrollable_content_region.width
        await pilot.press("j", "j", "k")
        assert timeline.cursor_row == 1
        await pilot.press("end")
        assert timeline.cursor_row == 29
        # The last row is on screen, under the header that stays on top.
        assert screen_text(app)[0].split()[0] == "turn"
        assert timeline.scroll_offset.y == 30 + 1 - timeline.size.height
        await pilot.press("home", "pagedown")
        assert timeline.cursor_row == timeline.size.height - 1
        await pilot.press("pageup", "up")
        assert timeline.cursor_row == 0
        assert ("turn", 1, False) in app.said and ("turn", 29, False) in app.said


async def test_click_selects_and_divider_chooses_the_parent(family: Family) -> None:
    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        timeline = app.query_one(TurnTimeline)
        divider = Divider("the parent", "aaaa1111-parent", 9)
        timeline.show(rows(timeline_of(family, "child")), divider, cursor_turn=0)
        await pilot.pause()
        assert timeline.row_count == 4 and timeline.turn_index_at(2) is None
        lines = screen_text(app)
        assert "forked from aaaa1111 at seq 9 · the parent" in lines[3]
        await pilot.click(TurnTimeline, offset=(10, 2))  # header is line 0: row 1
        assert timeline.cursor_row == 1 and timeline.current_turn_index == 1
        assert not any(said[0] == "divider" for said in app.said)
        await pilot.click(TurnTimeline, offset=(10, 3))
        await pilot.pause()
        assert timeline.on_divider
        assert ("divider", "aaaa1111-parent") in app.said


async def test_grow_renders_only_new_and_changed_rows(family: Family) -> None:
    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        timeline = app.query_one(TurnTimeline)
        full = timeline_of(family, "live")  # turn 1 closed, turn 2 open
        assert full.turns[1].is_open
        views = rows(full)
        timeline.show(views[:1], None, cursor_turn=None)
        await pilot.pause()
        width = timeline.scrollable_content_region.width
        first = timeline._row_strip(0, width)
        assert timeline._row_strip(0, width) is first  # a cache hit
        timeline.grow(views)
        await pilot.pause()
        # The cursor followed the end; row 0 lost the cursor, so it was drawn again.
        assert timeline.cursor_row == 1 and ("turn", 1, True) in app.said
        unfocused = timeline._row_strip(0, width)
        assert unfocused is not first
        open_row = timeline._row_strip(1, width)
        assert "●" in open_row.text
        # The open turn closes: a new object at the same index, so its row is redrawn;
        # the unchanged closed turn keeps its cached strip.
        closed = msgspec.structs.replace(full.turns[1], end_seq=99, reason="completed")
        # (the core's view keeps the same TurnView for a turn that did not change)
        timeline.grow((views[0], TurnView(closed, 1, False, None)))
        await pilot.pause()
        assert timeline._row_strip(0, width) is unfocused
        redrawn = timeline._row_strip(1, width)
        assert redrawn is not open_row and "▶" in redrawn.text and "●" not in redrawn.text


async def test_the_turn_column_fits_four_digit_turn_numbers(family: Family) -> None:
    """A session of thousands of turns shows `▶ 2173`, not `▶ 21…`; the column grows
    when a live append brings a longer number."""
    base = timeline_of(family)
    numbered = tuple(
        msgspec.structs.replace(base.turns[i % len(base.turns)], number=990 + i) for i in range(9)
    )
    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        timeline = app.query_one(TurnTimeline)
        timeline.show(rows(msgspec.structs.replace(base, turns=numbered)), None, cursor_turn=0)
        await pilot.pause()
        lines = screen_text(app)
        assert "990" in lines[1] and "998" in lines[9]
        assert all("…" not in line.split()[1] for line in lines[1:10])
        longer = (*numbered, msgspec.structs.replace(base.turns[0], number=12345))
        timeline.grow(rows(msgspec.structs.replace(base, turns=longer)))
        timeline.move_cursor(row=9)
        await pilot.pause()
        assert "12345" in "\n".join(screen_text(app))


class NarrowHost(Host):
    """The timeline in a 45-column pane (a sessions pane beside it at 80 columns)."""

    CSS = "TurnTimeline { width: 45; }"


async def test_a_narrow_timeline_drops_steps_and_tools_before_the_user_text(
    family: Family,
) -> None:
    """At 80x24 the timeline pane is about 45 columns: the user text stays (issue 10),
    the columns of lower priority go."""
    app = NarrowHost()
    async with app.run_test(size=(80, 12)) as pilot:
        timeline = app.query_one(TurnTimeline)
        timeline.clock = lambda: T0 / 1000 + 86_400 * 3  # the turns' times show a date
        timeline.show(rows(timeline_of(family)), None, cursor_turn=0)
        await pilot.pause()
        lines = screen_text(app)
        assert timeline.columns() == ("turn", "reason", "user")
        assert lines[0].split() == ["turn", "reason", "user"]
        assert "Refactor the tokenizer" in lines[1]
        assert "Now add tests for" in lines[2]
        # nothing runs past the pane: every line is the pane's width
        assert {len(line) for line in lines} == {timeline.scrollable_content_region.width}
        # the columns come back, in priority order, as the pane widens
        assert timeline.columns(55) == ("turn", "reason", "time", "user")
        assert timeline.columns(60) == ("turn", "reason", "tokens", "time", "user")
        assert timeline.columns(75) == ("turn", "reason", "tools", "tokens", "time", "user")
        assert len(timeline.columns(80)) == len(timeline.columns(200)) == 7
        # times of today need no date: the time column narrows to `12:05:01`, and so
        # fits in a pane where a dated one does not
        assert timeline.columns(48) == ("turn", "reason", "user")
        timeline.clock = lambda: T0 / 1000
        assert timeline.columns(48) == ("turn", "reason", "time", "user")


async def test_tokens_column_and_dates(family: Family) -> None:
    """Tokens are compact (`12.3k`); a time on another day shows its date, and a time
    of 0 shows as `—`, not 1970."""
    base = timeline_of(family)
    views = list(rows(base))
    views[0] = msgspec.structs.replace(views[0], tokens=12_345)
    views[1] = msgspec.structs.replace(views[1], tokens=950)
    views[2] = msgspec.structs.replace(
        views[2], turn=msgspec.structs.replace(base.turns[2], started=0)
    )
    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        timeline = app.query_one(TurnTimeline)
        timeline.clock = lambda: T0 / 1000 + 86_400 * 3  # three days after the turns
        timeline.show(views, None, cursor_turn=0)
        await pilot.pause()
        lines = screen_text(app)
        assert "12.3k" in lines[1] and "06-01 12:05" in lines[1]
        assert " 950 " in lines[2]
        assert NO_TIME in lines[3].split() and "1970" not in lines[3]
        assert "06-01 12:20" in lines[4]
    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        timeline = app.query_one(TurnTimeline)
        timeline.clock = lambda: T0 / 1000  # the same day: the time alone
        timeline.show(views, None, cursor_turn=0)
        await pilot.pause()
        lines = screen_text(app)
        assert "12:05:01" in lines[1] and "06-01" not in lines[1]


def test_format_time() -> None:
    ms = datetime(2026, 6, 1, 12, 5, 1, tzinfo=UTC).timestamp() * 1000
    assert format_time(ms, UTC, date(2026, 6, 1)) == "12:05:01"
    assert format_time(ms, UTC, date(2026, 6, 2)) == "06-01 12:05"
    assert format_time(ms, UTC, date(2027, 1, 1)) == "2026-06-01"
    assert format_time(0, UTC, date(2026, 6, 1)) == "—"
    assert format_time(None, UTC, date(2026, 6, 1)) == ""


async def test_the_divider_shows_the_trees_short_id(family: Family) -> None:
    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        timeline = app.query_one(TurnTimeline)
        divider = Divider("the parent", "{{sessionId}}", 9, parent_short="{{sessio@acp/cancel")
        timeline.show(rows(timeline_of(family, "child")), divider, cursor_turn=0)
        await pilot.pause()
        assert "forked from {{sessio@acp/cancel at seq 9 · the parent" in screen_text(app)[3]
