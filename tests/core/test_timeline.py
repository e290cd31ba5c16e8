"""Turn timelines: rows, reasons, steps, tools, excerpts; incremental == whole."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from turnline.core.model import SessionEvent
from turnline.core.timeline import TimelineBuilder, build_timeline

from .gen_logs import logs


def ev(seq: int, etype: str, **data: Any) -> SessionEvent:
    return SessionEvent(etype, seq, 100 + seq, data)


def user(seq: int, text: str, kind: str = "user") -> SessionEvent:
    return ev(
        seq,
        "user/message",
        role="user",
        content=[{"type": "text", "text": text}],
        source={"kind": kind},
    )


def assistant(seq: int, text: str) -> SessionEvent:
    return ev(
        seq,
        "assistant/message",
        turn=1,
        step=1,
        message={"role": "assistant", "content": [{"type": "text", "text": text}]},
    )


def test_rows_reasons_steps_tools_and_excerpts() -> None:
    events = [
        user(0, "plugin context", kind="plugin"),
        user(1, "fix the bug\nplease"),
        ev(2, "turn/start", turn=1),
        ev(3, "step/start", turn=1, step=1),
        ev(4, "tool/call", turn=1, step=1, callId="a", name="bash"),
        ev(5, "tool/call", turn=1, step=1, callId="b", name="read"),
        ev(6, "step/start", turn=1, step=2),
        assistant(7, "first"),
        assistant(8, "done"),
        ev(9, "turn/end", turn=1, reason={"kind": "error", "error": {"message": "boom"}}),
        ev(10, "turn/start", turn=2),
        ev(11, "turn/end", turn=2, reason={"kind": "aborted", "reason": {"kind": "user"}}),
        ev(12, "turn/start", turn=3),
        ev(13, "tool/call", turn=3, step=1, callId="c", name=7),
    ]
    timeline = build_timeline(events)
    one, two, three = timeline.turns
    assert (one.number, one.first_seq, one.start_seq, one.end_seq) == (1, 0, 2, 9)
    assert (one.reason, one.detail, one.steps, one.tools) == ("error", "boom", 2, ("bash", "read"))
    assert (one.user, one.assistant) == ("fix the bug\nplease", "done")
    assert (one.started, one.ended) == (102, 109)
    assert (two.reason, two.detail, two.first_seq) == ("aborted", "user", 10)
    assert (three.reason, three.end_seq, three.tools, three.forkable) == (
        "open",
        None,
        ("?",),
        False,
    )
    assert one.forkable and two.forkable and three.is_open
    assert timeline.turn_ends == (9, 11)
    assert timeline.title == "fix the bug…"  # cut from "fix the bug\nplease" (issue 10)
    assert timeline.turn_at(5) is one and timeline.turn_at(13) is three
    assert one.to_json_dict() == {
        "turn": 1,
        "startSeq": 0,
        "endSeq": 9,
        "turnStartSeq": 2,
        "reason": "error",
        "steps": 2,
        "tools": ["bash", "read"],
        "user": "fix the bug\nplease",
        "assistant": "done",
        "forkable": True,
    }


def test_odd_turn_ends_never_crash() -> None:
    events = [
        ev(0, "turn/start", turn=1),
        SessionEvent("turn/end", 1, 5, {"error": "model exploded"}),
        SessionEvent("turn/end", 2, 6, None),
        SessionEvent("turn/end", 3, 7, {"reason": "completed"}),
        SessionEvent("turn/start", 4, 8, "not a dict"),
    ]
    timeline = build_timeline(events)
    assert [(t.reason, t.detail) for t in timeline.turns[:3]] == [
        ("error", "model exploded"),
        ("unknown", None),
        ("unknown", None),
    ]
    assert timeline.turns[-1].is_open


def test_title_event_wins_and_the_latest_one_counts() -> None:
    events = [
        user(0, "hello"),
        ev(1, "session/title", title="A"),
        ev(2, "session/title", title="B"),
    ]
    assert build_timeline(events).title == "B"


def test_seed_length_and_end_seed_marker() -> None:
    events = [
        ev(0, "turn/start", turn=1),
        ev(1, "turn/end", turn=1, reason={"kind": "completed"}),
        ev(2, "session/end-seed"),
    ]
    timeline = build_timeline(events, seed_length=2)
    assert (timeline.seed_length, timeline.end_seed_seq) == (2, 2)


@given(logs(), st.data())
def test_feeding_in_pieces_equals_feeding_whole(events: list[SessionEvent], data: Any) -> None:
    whole = build_timeline(events)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(events)), max_size=4)))
    builder = TimelineBuilder()
    start = 0
    for cut in [*cuts, len(events)]:
        builder.feed(events[start:cut])
        builder.snapshot()  # taking a snapshot midway must not disturb the builder
        start = cut
    assert builder.snapshot() == whole
    closed = [t for t in whole.turns if t.forkable]
    assert [t.end_seq for t in closed] == [e.seq for e in events if e.type == "turn/end"]
    assert all(events[t.end_seq].type == "turn/end" for t in closed if t.end_seq is not None)


_JSON_SCALARS = (str, int, bool, type(None))


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["turn/start", "turn/end", "step/start", "tool/call", "user/message"]),
            st.one_of(
                st.integers(-3, 9), st.floats(allow_nan=True), st.booleans(), st.text(max_size=3)
            ),
        ),
        max_size=12,
    )
)
def test_a_turns_json_holds_no_float(records: list[tuple[str, Any]]) -> None:
    """`turnline show --json` checks only the session's fields for floats (the JSON is
    written by orjson, not `json`, when there is none): a turn's JSON holds ints,
    strings and bools whatever a log spells its turn numbers, names and reasons with."""
    events = [
        SessionEvent(kind, seq, 1.5, {"turn": value, "name": value, "reason": value})
        for seq, (kind, value) in enumerate(records)
    ]
    for turn in build_timeline(events).turns:
        for key, value in turn.to_json_dict().items():
            if key == "tools":
                assert all(type(name) is str for name in value)
            else:
                assert type(value) in _JSON_SCALARS, (key, value)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["turn/start", "turn/end", "step/start", "tool/call", "user/message"]),
            st.one_of(st.integers(-3, 9), st.booleans(), st.text(max_size=3), st.none()),
        ),
        max_size=14,
    )
)
def test_counting_steps_and_tools_equals_feeding_them(records: list[tuple[str, Any]]) -> None:
    """The index counts a `step/start` and takes a `tool/call`'s name with
    `count_step`/`add_tool` (no data dict made) and feeds the event only when they
    refuse (no turn open): the same builder as feeding every event."""
    fed, counted = TimelineBuilder(), TimelineBuilder()
    for seq, (kind, value) in enumerate(records):
        data = {"turn": value, "name": value}
        fed.feed_fields(kind, seq, 1, data)
        if kind == "step/start" and counted.count_step():
            continue
        if kind == "tool/call" and counted.add_tool(value):
            continue
        counted.feed_fields(kind, seq, 1, data)
    assert counted.state() == fed.state()
    assert counted.snapshot() == fed.snapshot()
