"""The in-memory store and the RFC's fork rules, one test per rule and error code."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from turnline.core.model import REASON_KINDS, SessionEvent
from turnline.core.store import ForkErrorCode, Session, SessionForkError, SessionStore

from .gen_logs import build_session, logs


def seed_of(child: Any) -> list[SessionEvent]:
    """A fork child's seed: its events before dsh's `session/end-seed` marker, which
    must come right after the seed at seq = seedLength, with data `{}`."""
    *seed, marker = child.events
    assert (marker.type, marker.seq, marker.data) == ("session/end-seed", len(seed), {})
    assert child.header.seed_length == len(seed) and child.header.delegation_depth == 0
    return seed


def turn(session: Session, n: int, reason: str = "completed", *, close: bool = True) -> int:
    """Append one turn (user text, a step, a tool call); return the last seq."""
    session.append("turn/start", {"turn": n})
    session.append(
        "user/message",
        {"role": "user", "content": [{"type": "text", "text": f"ask {n}"}], "source": {}},
    )
    session.append("step/start", {"turn": n, "step": 1})
    session.append("tool/call", {"turn": n, "step": 1, "callId": f"c{n}", "name": "bash"})
    session.append("step/end", {"turn": n, "step": 1})
    if close:
        return session.append("turn/end", {"turn": n, "reason": {"kind": reason}}).seq
    return len(session) - 1


def fork_error(code: ForkErrorCode) -> Any:
    return pytest.raises(SessionForkError, match=code.value)


def test_empty_source_default_boundary_gives_empty_child() -> None:
    store = SessionStore()
    parent = store.create("p", meta={"cwd": "/w"})
    child = store.fork(parent)
    # dsh's constructor marks even an empty seed's end.
    assert [(e.type, e.seq, e.data) for e in child.events] == [("session/end-seed", 0, {})]
    assert child.header.seed_length == 0
    assert child.header.parent_session == "p"
    assert child.header.cwd == "/w"


def test_empty_source_explicit_boundary_is_invalid() -> None:
    store = SessionStore()
    store.create("p")
    with fork_error(ForkErrorCode.INVALID_BOUNDARY) as info:
        store.fork("p", 0)
    assert "no events" in info.value.message


def test_default_boundary_is_the_last_event_when_it_is_a_turn_end() -> None:
    store = SessionStore()
    parent = store.create("p")
    turn(parent, 1)
    last = turn(parent, 2)
    child = store.fork(parent)
    assert child.header.seed_length == last + 1
    assert [e.to_json_dict() for e in seed_of(child)] == [e.to_json_dict() for e in parent.events]


def test_default_boundary_on_an_open_tail_names_the_nearest_turn_end() -> None:
    store = SessionStore()
    parent = store.create("p")
    end1 = turn(parent, 1)
    turn(parent, 2, close=False)
    last = len(parent) - 1
    with fork_error(ForkErrorCode.INVALID_BOUNDARY) as info:
        store.fork(parent)
    message = info.value.message
    assert "session p" in message
    assert f"last seq {last}" in message
    assert f"nearest earlier turn/end is seq {end1}" in message
    assert "step/end" in message  # names what the requested event is instead


def test_explicit_earlier_boundary_with_an_open_tail() -> None:
    store = SessionStore()
    parent = store.create("p")
    end1 = turn(parent, 1)
    turn(parent, 2, close=False)
    child = store.fork(parent, end1)
    assert child.header.seed_length == end1 + 1
    assert [e.seq for e in child.events] == list(range(end1 + 2))
    assert seed_of(child)[-1].type == "turn/end"


@pytest.mark.parametrize("kind", REASON_KINDS)
def test_every_reason_kind_is_forkable(kind: str) -> None:
    store = SessionStore()
    parent = store.create("p")
    turn(parent, 1, "completed")
    end = turn(parent, 2, kind)
    turn(parent, 3, "completed")
    child = store.fork(parent, end)
    assert seed_of(child)[-1].data["reason"]["kind"] == kind
    assert len(child) == end + 2  # the seed, then the end-seed marker


def test_a_turn_end_of_an_unknown_shape_is_still_a_turn_end() -> None:
    store = SessionStore()
    parent = store.create("p")
    parent.append("turn/start", {"turn": 1})
    end = parent.append("turn/end", {"error": "model exploded"}).seq
    assert len(store.fork(parent, end)) == end + 2


@pytest.mark.parametrize(
    ("boundary", "why"),
    [
        (-1, ">= 0"),
        (-100, ">= 0"),
        (1.5, "integer"),
        (3.0, "integer"),
        (True, "integer"),
        (False, "integer"),
        ("3", "integer"),
        ([3], "integer"),
    ],
)
def test_non_integer_or_negative_boundaries_are_refused(boundary: object, why: str) -> None:
    store = SessionStore()
    parent = store.create("p")
    turn(parent, 1)
    with fork_error(ForkErrorCode.INVALID_BOUNDARY) as info:
        store.fork(parent, boundary)  # type: ignore[arg-type]
    assert why in info.value.message
    assert len(store.list()) == 1  # nothing was created


def test_past_end_boundary_is_refused_not_clipped() -> None:
    store = SessionStore()
    parent = store.create("p")
    end = turn(parent, 1)
    with fork_error(ForkErrorCode.INVALID_BOUNDARY) as info:
        store.fork(parent, end + 1)
    assert "past the last event" in info.value.message
    assert f"nearest earlier turn/end is seq {end}" in info.value.message


@pytest.mark.parametrize("offset", [0, 1, 2, 3, 4])
def test_every_non_turn_end_seq_is_refused(offset: int) -> None:
    store = SessionStore()
    parent = store.create("p")
    end1 = turn(parent, 1)
    turn(parent, 2)
    boundary = end1 + 1 + offset  # turn 2's events before its turn/end
    with fork_error(ForkErrorCode.INVALID_BOUNDARY) as info:
        store.fork(parent, boundary)
    assert parent.events[boundary].type in info.value.message
    assert f"nearest earlier turn/end is seq {end1}" in info.value.message


def test_first_turn_boundary_has_no_earlier_turn_end() -> None:
    store = SessionStore()
    parent = store.create("p")
    turn(parent, 1)
    with fork_error(ForkErrorCode.INVALID_BOUNDARY) as info:
        store.fork(parent, 1)
    assert "no earlier turn/end" in info.value.message


def test_unknown_source_id_is_not_found() -> None:
    store = SessionStore()
    with fork_error(ForkErrorCode.SESSION_NOT_FOUND):
        store.fork("nobody")


def test_session_object_from_another_store_is_not_found() -> None:
    other = SessionStore().create("p")
    with fork_error(ForkErrorCode.SESSION_NOT_FOUND):
        SessionStore().fork(other)


def test_stale_object_is_not_live() -> None:
    store = SessionStore()
    stale = store.create("p")
    turn(stale, 1)
    store.adopt(stale.header, list(stale.events))  # the id is now live on a new instance
    with fork_error(ForkErrorCode.SESSION_NOT_LIVE):
        store.fork(stale)
    with fork_error(ForkErrorCode.SESSION_NOT_LIVE):
        stale.append("turn/start", {"turn": 2})
    assert len(store.fork("p")) == len(stale) + 1  # the live instance still forks


def test_dropped_object_is_not_found() -> None:
    store = SessionStore()
    gone = store.create("p")
    store.drop("p")
    with fork_error(ForkErrorCode.SESSION_NOT_FOUND):
        store.fork(gone)


def test_duplicate_child_id_is_checked_before_the_boundary() -> None:
    store = SessionStore()
    parent = store.create("p")
    turn(parent, 1, close=False)
    store.create("taken")
    # The boundary is invalid too (open tail, past end, not an int): the id wins.
    for boundary in (None, 999, -1, 1.5):
        with fork_error(ForkErrorCode.SESSION_ALREADY_EXISTS):
            store.fork(parent, boundary, "taken")  # type: ignore[arg-type]
    # ... and before the source lookup.
    with fork_error(ForkErrorCode.SESSION_ALREADY_EXISTS):
        store.fork("nobody", None, "taken")
    assert [s.id for s in store.list()] == ["p", "taken"]


def test_child_id_may_not_be_the_source_id() -> None:
    store = SessionStore()
    parent = store.create("p")
    turn(parent, 1)
    with fork_error(ForkErrorCode.SESSION_ALREADY_EXISTS):
        store.fork(parent, None, "p")


def test_create_refuses_an_existing_id() -> None:
    store = SessionStore()
    store.create("p")
    with fork_error(ForkErrorCode.SESSION_ALREADY_EXISTS):
        store.create("p")


def test_create_refuses_a_non_contiguous_seed() -> None:
    store = SessionStore()
    with pytest.raises(ValueError, match="contiguous"):
        store.create(seed=[SessionEvent("x", 1, 0, {})])


def test_fork_deep_copies_child_changes_never_reach_the_parent() -> None:
    store = SessionStore()
    parent = store.create("p")
    parent.append("turn/start", {"turn": 1, "nested": {"list": [1, 2]}}, extra={"k": [1]})
    end = parent.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}}).seq
    child = store.fork(parent, end)
    child.events[0].data["nested"]["list"].append(3)
    child.events[0].extra["extra"]["k"].append(2)
    child.events[1].data["reason"]["kind"] = "error"
    child.append("turn/start", {"turn": 2})
    assert parent.events[0].data["nested"]["list"] == [1, 2]
    assert parent.events[0].extra["extra"]["k"] == [1]
    assert parent.events[1].data["reason"]["kind"] == "completed"
    assert len(parent) == 2


def test_fork_deep_copies_parent_changes_never_reach_the_child() -> None:
    store = SessionStore()
    parent = store.create("p")
    parent.append("turn/start", {"turn": 1, "nested": {"list": [1, 2]}})
    end = parent.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}}).seq
    child = store.fork(parent, end)
    parent.events[0].data["nested"]["list"].clear()
    parent.append("turn/start", {"turn": 2})
    assert child.events[0].data["nested"]["list"] == [1, 2]
    assert len(child) == 3  # two seed events and the marker


def test_append_copies_its_input() -> None:
    store = SessionStore()
    session = store.create("p")
    payload: dict[str, Any] = {"turn": 1, "items": [1]}
    session.append("turn/start", payload)
    payload["items"].append(2)
    assert session.events[0].data["items"] == [1]


def test_child_header_inherits_cwd_and_stamps_lineage() -> None:
    store = SessionStore()
    parent = store.create(
        "p", meta={"cwd": "/home/dev/app", "origin": "subagent", "delegationDepth": 2}
    )
    end = turn(parent, 1)
    child = store.fork(parent, end, "c")
    header = child.header
    assert (header.id, header.cwd, header.parent_session, header.seed_length) == (
        "c",
        "/home/dev/app",
        "p",
        end + 1,
    )
    assert header.origin is None  # a user fork, not a subagent spawn
    assert header.version == 0


def test_child_without_cwd_has_none() -> None:
    store = SessionStore()
    parent = store.create("p")
    assert store.fork(parent).header.cwd is None


def test_default_child_id_is_a_uuid4() -> None:
    store = SessionStore()
    parent = store.create("p")
    ids = {store.fork(parent).id for _ in range(5)}
    assert len(ids) == 5
    for sid in ids:
        assert uuid.UUID(sid).version == 4
        assert str(uuid.UUID(sid)) == sid


def test_id_policy_is_used_and_collisions_are_skipped() -> None:
    fresh = iter(["a", "a", "b"])
    store = SessionStore(id_policy=lambda: next(fresh))
    first = store.create()
    second = store.fork(first)
    assert (first.id, second.id) == ("a", "b")


def test_events_are_read_only_and_contiguous() -> None:
    store = SessionStore()
    session = store.create("p")
    turn(session, 1)
    events = session.events
    assert isinstance(events, tuple)
    assert all(e.seq == i for i, e in enumerate(events))
    assert [s.id for s in store.list()] == ["p"]
    assert store.get("p") is session
    assert store.get("q") is None


@given(logs(), st.data())
def test_child_events_equal_the_parent_prefix_for_any_turn_end(log: Any, data: Any) -> None:
    store = SessionStore()
    parent = build_session(store, "p", log)
    ends = parent.turn_ends
    if not ends:
        if len(parent):  # the default boundary (last event) is not a turn/end
            with fork_error(ForkErrorCode.INVALID_BOUNDARY):
                store.fork(parent)
        else:
            assert store.fork(parent).events == ()
        return
    boundary = data.draw(st.sampled_from(ends))
    child = store.fork(parent, boundary)
    assert [e.to_json_dict() for e in seed_of(child)] == [
        e.to_json_dict() for e in parent.events[: boundary + 1]
    ]
    assert child.header.seed_length == boundary + 1
    assert seed_of(child)[-1].type == "turn/end"


@given(logs(), st.data())
def test_non_turn_end_boundaries_are_always_refused(log: Any, data: Any) -> None:
    store = SessionStore()
    parent = build_session(store, "p", log)
    others = [e.seq for e in parent.events if e.type != "turn/end"]
    if not others:
        return
    boundary = data.draw(st.sampled_from(others))
    with fork_error(ForkErrorCode.INVALID_BOUNDARY):
        store.fork(parent, boundary)
    assert len(store.list()) == 1
