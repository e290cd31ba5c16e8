"""A child and its parent that dsh migrated apart keep one seed: the ids each migration
minted from its own log's session id are told apart from every other difference."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from turnline.core.formats import (
    ANCHOR_REACH,
    MINTED_PREFIXES,
    same_but_minted,
    v2_to_v3_system_id,
)

CHILD = "c0ffee00-0000-4000-8000-000000000001"
PARENT = "beef0000-0000-4000-8000-000000000002"


def system_row(session: str, seq: int, anchor_seq: int, anchor_type: str) -> dict[str, Any]:
    msg_id = v2_to_v3_system_id(session, anchor_seq, anchor_type)
    return {
        "type": "system/message",
        "seq": seq,
        "time": 5,
        "data": {
            "turn": 1,
            "step": 1,
            "message": {
                "id": msg_id,
                "role": "system",
                "content": [],
                "source": {"kind": "system-prompt"},
            },
        },
        "surfaceOp": "append",
    }


def message_row(session: str, seq: int, prefix: str = "legacy-message:") -> dict[str, Any]:
    return {
        "type": "user/message",
        "seq": seq,
        "time": 9,
        "data": {"id": f"{prefix}{session}:{seq}", "role": "user", "content": "hi"},
    }


def test_dshs_own_vector() -> None:
    # dsh's V2 -> V3 snapshot test: session `{{session:1}}`, the first step/start at seq 1
    assert v2_to_v3_system_id("{{session:1}}", 1, "step/start") == (
        "v2-to-v3-system-590b72aa4994fd6d3c6e61bb4bf5bf2f80bae0bc7564d388378ba4f51b816fd6"
    )


@pytest.mark.parametrize("prefix", MINTED_PREFIXES)
def test_legacy_ids_minted_from_each_own_session_are_the_same(prefix: str) -> None:
    mine, theirs = message_row(CHILD, 7, prefix), message_row(PARENT, 7, prefix)
    assert mine != theirs
    assert same_but_minted(mine, theirs, CHILD, PARENT, 7)
    # the other way round, another seq, or from a third session: a real difference
    assert not same_but_minted(mine, theirs, PARENT, CHILD, 7)
    other = message_row(PARENT, 8, prefix)
    other["seq"] = 7
    assert not same_but_minted(mine, other, CHILD, PARENT, 7)
    third = message_row("d00d0000-0000-4000-8000-000000000003", 7, prefix)
    assert not same_but_minted(third, theirs, CHILD, PARENT, 7)
    # a prefix of the child's id is not its id
    assert not same_but_minted(
        message_row(CHILD[:-1], 7, prefix), message_row(PARENT[:-1], 7, prefix), CHILD, PARENT, 7
    )


@pytest.mark.parametrize("anchor_type", ["step/start", "request/header"])
@pytest.mark.parametrize(("seq", "anchor_seq"), [(2, 1), (3, 1), (40, 37), (5000, 4990)])
def test_a_system_message_minted_from_each_own_session_is_the_same(
    anchor_type: str, seq: int, anchor_seq: int
) -> None:
    mine = system_row(CHILD, seq, anchor_seq, anchor_type)
    theirs = system_row(PARENT, seq, anchor_seq, anchor_type)
    assert mine != theirs
    assert same_but_minted(mine, theirs, CHILD, PARENT, seq)
    # another anchor on one side, or the sessions swapped: different rows
    moved = system_row(PARENT, seq, anchor_seq - 1, anchor_type)
    assert not same_but_minted(mine, moved, CHILD, PARENT, seq)
    assert not same_but_minted(mine, theirs, PARENT, CHILD, seq)


def test_an_anchor_past_reach_or_after_the_row_is_not_looked_for() -> None:
    far = system_row(CHILD, ANCHOR_REACH + 10, 5, "step/start")
    far_parent = system_row(PARENT, ANCHOR_REACH + 10, 5, "step/start")
    assert not same_but_minted(far, far_parent, CHILD, PARENT, ANCHOR_REACH + 10)
    after = system_row(CHILD, 3, 4, "step/start")
    after_parent = system_row(PARENT, 3, 4, "step/start")
    assert not same_but_minted(after, after_parent, CHILD, PARENT, 3)


def test_any_other_difference_beside_a_minted_id_is_one() -> None:
    mine, theirs = system_row(CHILD, 4, 3, "step/start"), system_row(PARENT, 4, 3, "step/start")
    for path, value in [
        (("time",), 6),
        (("data", "turn"), 2),
        (("data", "message", "content"), [{"type": "text", "text": "x"}]),
        (("data", "message", "role"), "user"),
    ]:
        changed = copy.deepcopy(theirs)
        place = changed
        for key in path[:-1]:
            place = place[key]
        place[path[-1]] = value
        assert not same_but_minted(mine, changed, CHILD, PARENT, 4), path
    extra = copy.deepcopy(theirs)
    extra["data"]["extra"] = 1
    assert not same_but_minted(mine, extra, CHILD, PARENT, 4)
    assert not same_but_minted([mine], [theirs, theirs], CHILD, PARENT, 4)
    assert not same_but_minted("legacy-message:x", 1, CHILD, PARENT, 4)


def test_a_lone_surrogate_id_and_deep_nesting_are_answered() -> None:
    lone = "\ud83d"
    assert v2_to_v3_system_id(lone, 1, "step/start") is None
    assert not same_but_minted(
        system_row(CHILD, 2, 1, "step/start"),
        system_row(PARENT, 2, 1, "step/start"),
        lone,
        PARENT,
        2,
    )
    deep_a: Any = f"legacy-message:{CHILD}:3"
    deep_b: Any = f"legacy-message:{PARENT}:3"
    for _ in range(5000):
        deep_a, deep_b = [deep_a], [deep_b]
    assert same_but_minted(deep_a, deep_b, CHILD, PARENT, 3)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=12,
)


@given(json_values, json_values)
def test_rows_without_minted_ids_are_the_same_only_when_equal(a: Any, b: Any) -> None:
    assert same_but_minted(a, b, CHILD, PARENT, 3) == (a == b)
    assert same_but_minted(a, copy.deepcopy(a), CHILD, PARENT, 3)


def marker(seq: int, data: dict[str, Any]) -> dict[str, Any]:
    return {"type": "session/end-seed", "seq": seq, "time": 3, "data": data}


def test_the_parents_own_marker_left_untagged_in_a_grandchild_is_the_same() -> None:
    tagged, untagged = marker(46, {"inherited": True}), marker(46, {})
    assert same_but_minted(untagged, tagged, CHILD, PARENT, 46, 46)
    # only at the parent's cut, only untagged against tagged, only a marker
    assert not same_but_minted(untagged, tagged, CHILD, PARENT, 46, 47)
    assert not same_but_minted(untagged, tagged, CHILD, PARENT, 46, None)
    assert not same_but_minted(tagged, untagged, CHILD, PARENT, 46, 46)
    assert not same_but_minted(marker(46, {"x": 1}), tagged, CHILD, PARENT, 46, 46)
    other = {**untagged, "type": "session/title"}
    assert not same_but_minted(other, {**tagged, "type": "session/title"}, CHILD, PARENT, 46, 46)
    assert not same_but_minted({**untagged, "time": 4}, tagged, CHILD, PARENT, 46, 46)


def test_a_minted_looking_prefix_of_other_text_is_a_difference() -> None:
    mine = {"text": f"legacy-message:{CHILD}:7 and then some"}
    theirs = {"text": f"legacy-message:{PARENT}:7 and then some"}
    assert not same_but_minted(mine, theirs, CHILD, PARENT, 7)
    assert not same_but_minted(
        {"id": f"legacy-message:{CHILD}:٧"}, {"id": f"legacy-message:{PARENT}:٧"}, CHILD, PARENT, 7
    )  # (a digit, but not the ASCII seq dsh writes)
    assert same_but_minted(
        {"id": f"legacy-message:{CHILD}:7"}, {"id": f"legacy-message:{PARENT}:7"}, CHILD, PARENT, 7
    )
