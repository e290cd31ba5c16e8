"""A dsh fork cut inside an open turn (V4 and later).

dsh's `buildForkSeed` copies the parent's events up to the boundary, appends the
inherited `session/end-seed` timed as the boundary's row and, when the boundary falls
inside an open turn, the closers `openTurnClosers` makes, owned by the child: an error
`tool/result` for each unanswered call of the open step, the `step/end`, and a `turn/end`
whose reason is `forked` (the fact sheet's §9, `../shared/docs/dsh-format-generations.md`).
turnline never writes such a child (it forks at a `turn/end` only), but it must read one
exactly: the turn the cut falls inside is the child's own (it ends there), the seed
divider says the seed ends inside it, and a compare of the two counts that turn's
calls and time from the split on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from turnline.cli import render
from turnline.core.compare import compare
from turnline.core.model import ProblemKind
from turnline.core.root import SessionRoot
from turnline.core.usage import fold_log
from turnline.core.view import SessionView

from .test_generations import V5_SAMPLES, lines_of, persisted, write_lines

#: The parent's `tool/call` of `list_agents` in turn 3: the fork's boundary (its result
#: is not in the seed).
BOUNDARY = 36


def family(root: Path, version: int) -> tuple[Path, Path, list[dict[str, Any]]]:
    """dsh's three-turn sample as a parent and the child dsh makes when forking it at
    `BOUNDARY`, inside turn 3; the parent's rows."""
    (source,) = [p for p in V5_SAMPLES if p.parent.name == "subagent-list-agents"]
    rows = persisted(lines_of(source), sid="parent-1")
    rows[0] = {**rows[0], "version": version}
    name = f"session.v{version}.jsonl"
    parent = write_lines(root / "--work-project--" / "parent-1" / name, rows)
    assert rows[1 + BOUNDARY]["type"] == "tool/call"
    call = rows[1 + BOUNDARY]["data"]
    time = rows[1 + BOUNDARY]["time"]
    header = {
        "type": "session",
        "version": version,
        "id": "child-1",
        "createdAt": time + 1,
        "cwd": "/work/project",
        "parentSession": "parent-1",
        "isSeeded": True,
        "delegationDepth": 0,
    }
    closers = [
        {
            "type": "session/end-seed",
            "seq": BOUNDARY + 1,
            "time": time,
            "data": {"inherited": True},
        },
        {
            "type": "tool/result",
            "seq": BOUNDARY + 2,
            "time": time,
            "data": {
                "turn": call["turn"],
                "step": call["step"],
                "message": {
                    "role": "tool",
                    "toolCallId": call["callId"],
                    "content": [{"type": "text", "text": "not started before the fork"}],
                    "isError": True,
                    "id": f"forked-tool-result-{call['callId']}-{BOUNDARY}",
                },
                "error": {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"},
            },
            "surfaceOp": "append",
        },
        {
            "type": "step/end",
            "seq": BOUNDARY + 3,
            "time": time,
            "data": {"turn": call["turn"], "step": call["step"]},
        },
        {
            "type": "turn/end",
            "seq": BOUNDARY + 4,
            "time": time,
            "data": {"turn": call["turn"], "reason": {"kind": "forked"}},
        },
    ]
    child = write_lines(
        root / "--work-project--" / "child-1" / name,
        [header, *rows[1 : BOUNDARY + 2], *closers],
    )
    return parent, child, rows


@pytest.mark.parametrize("version", [4, 5, 6])
def test_a_child_cut_inside_a_turn_reads_exactly(tmp_path: Path, version: int) -> None:
    parent, child, _ = family(tmp_path, version)
    root = SessionRoot(tmp_path)
    by_id = {s.id: s for s in root.scan()}
    summary = by_id["child-1"]
    assert summary.seed_length == BOUNDARY + 1
    loaded = root.load(summary)
    assert loaded.problems == ()  # the seed is the parent's, byte for byte
    assert loaded.parent_path == parent
    assert root.lineage().parent_of[child] == parent
    view = SessionView(loaded)
    turns = view.turns
    assert [(t.turn.number, t.turn.reason) for t in turns] == [
        (1, "completed"),
        (2, "completed"),
        (3, "forked"),
    ]
    # Turns 1 and 2 ended in the seed; turn 3 starts there and ends with the child's
    # own closers, so it is the child's, and its turn/end can be forked at.
    assert [t.inherited for t in turns] == [True, True, False]
    assert turns[2].forkable and turns[2].turn.end_seq == BOUNDARY + 4
    split = view.timeline.split_at(view.seed_length)
    assert split is not None and split.number == 3
    assert view.timeline.split_at(turns[2].turn.first_seq) is None  # between turns
    # The closers carry no usage: the child's own is empty, its inherited usage is the
    # parent's up to the boundary.
    fold = fold_log(child, summary.seed_length)
    assert fold.own().tokens == {}
    parent_cut = fold_log(parent, BOUNDARY + 1)  # the parent's usage, split where the seed ends
    assert fold.inherited().tokens == parent_cut.inherited().tokens != {}


def test_show_puts_the_divider_before_the_turn_the_seed_ends_inside(tmp_path: Path) -> None:
    family(tmp_path, 5)
    root = SessionRoot(tmp_path)
    (summary,) = [s for s in root.scan() if s.id == "child-1"]
    lines = render.show_lines(SessionView(root.load(summary)), 120)
    divider = f"── forked from parent-1 at seq {BOUNDARY}, inside turn 3 ──"
    assert divider in lines
    at = lines.index(divider)
    row = [line.split() for line in lines]
    # turn 2's row just above, turn 3's row just below
    assert row[at - 1][1:3] == ["2", "22–29"]
    assert row[at + 1][1] == "3" and row[at + 1][3] == "forked"


def test_compare_counts_the_split_turn_from_the_split(tmp_path: Path) -> None:
    parent, _, rows = family(tmp_path, 5)
    root = SessionRoot(tmp_path)
    by_id = {s.id: s for s in root.scan()}
    result = compare(root, by_id["parent-1"], by_id["child-1"])
    assert result.diverged_at == BOUNDARY + 1
    assert result.shared_turns == 2 and result.split_turn == 3
    left, right = result.left, result.right
    assert [(t.number, t.reason) for t in left.turns] == [(3, "completed")]
    assert [(t.number, t.reason) for t in right.turns] == [(3, "forked")]
    # The list_agents call was made before the split: neither side made it.
    assert left.tool_calls == {} and right.tool_calls == {}
    assert right.tokens.total == 0 and right.wall_ms == 0
    # The parent's side: its events from the split on, timed from the shared call.
    after = [r for r in rows[1:] if r["seq"] > BOUNDARY]
    end = next(r for r in after if r["type"] == "turn/end")
    assert left.wall_ms == end["time"] - rows[1 + BOUNDARY]["time"]
    assert left.tokens.total == fold_log(parent, BOUNDARY + 1).own().total_tokens > 0
    payload = orjson.loads(orjson.dumps(result.to_json_dict()))  # plain JSON
    assert payload["splitTurn"] == 3


def test_a_child_whose_seed_ends_between_turns_has_no_split(tmp_path: Path) -> None:
    """turnline's own fork, at a turn/end: no turn is split, and the divider says
    nothing more."""
    family(tmp_path, 5)
    root = SessionRoot(tmp_path)
    (summary,) = [s for s in root.scan() if s.id == "parent-1"]
    view = SessionView(root.load(summary))
    end = view.turns[1].turn.end_seq
    assert end is not None
    made = root.fork(summary, end, "own-fork")
    loaded = root.load(made.child)
    assert not any(p.kind is ProblemKind.SEED_MISMATCH for p in loaded.problems)
    child_view = SessionView(loaded)
    assert child_view.timeline.split_at(child_view.seed_length) is None
    lines = render.show_lines(child_view, 120)
    assert f"── forked from parent-1 at seq {end} ──" in lines
    by_id = {s.id: s for s in SessionRoot(tmp_path).scan()}
    result = compare(SessionRoot(tmp_path), by_id["parent-1"], by_id["own-fork"])
    assert result.split_turn is None and result.shared_turns == 2
