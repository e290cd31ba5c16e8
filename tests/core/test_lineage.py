"""Lineage: the forest, missing parents, duplicate ids, cycles that cannot loop."""

from __future__ import annotations

from pathlib import Path

import pytest
from turnline.core.lineage import build_lineage, link_sessions
from turnline.core.logfile import Encoding
from turnline.core.model import ProblemKind, SessionHeader
from turnline.core.summary import SessionSummary


def s(
    path: str,
    sid: str,
    parent: str | None = None,
    seed: int | None = None,
    origin: str | None = None,
    created: int = 0,
) -> SessionSummary:
    header = SessionHeader(
        id=sid, created_at=created, parent_session=parent, seed_length=seed, origin=origin
    )
    return SessionSummary(sid, Path(path), Encoding.RAW, header, None, 0, None, 0, False)


def test_forest_edges_and_missing_parents() -> None:
    items = [
        s("/r/p.jsonl", "p", created=1),
        s("/r/c1.jsonl", "c1", "p", seed=4, created=3),
        s("/r/c2.jsonl", "c2", "p", origin="subagent", created=2),
        s("/r/g.jsonl", "g", "c1", seed=6, created=4),
        s("/r/o.jsonl", "o", "gone", created=5),
    ]
    lineage = build_lineage(items)
    (root,) = lineage.roots
    assert root.summary.id == "p"
    assert [c.summary.id for c in root.children] == ["c2", "c1"]  # oldest first
    c2, c1 = root.children
    assert (c2.seed_length, c2.origin) == (None, "subagent")
    assert (c1.seed_length, c1.origin) == (4, None)
    assert [g.summary.id for g in c1.children] == ["g"]
    (missing,) = lineage.missing
    assert missing.parent_id == "gone" and [c.summary.id for c in missing.children] == ["o"]
    assert [p.kind for p in lineage.problems[Path("/r/o.jsonl")]] == [ProblemKind.MISSING_PARENT]
    assert lineage.ancestors(Path("/r/g.jsonl")) == [Path("/r/c1.jsonl"), Path("/r/p.jsonl")]


def test_duplicate_ids_resolve_to_the_nearest_log_on_disk() -> None:
    items = [
        s("/r/a/session.jsonl", "p"),
        s("/r/b/session.jsonl", "p"),
        s("/r/b/session.1.jsonl", "c", "p"),
    ]
    lineage = build_lineage(items)
    assert lineage.parent_of[Path("/r/b/session.1.jsonl")] == Path("/r/b/session.jsonl")
    for path in ("/r/a/session.jsonl", "/r/b/session.jsonl"):
        assert [p.kind for p in lineage.problems[Path(path)]] == [ProblemKind.DUPLICATE_ID]


@pytest.mark.parametrize(
    ("older", "parent"),
    [
        ("/r/--p--/copy/session.jsonl", "/r/--p--/x/session.jsonl"),  # a copied folder
        ("/r/b/session.1.jsonl", "/r/a/session.jsonl"),  # a snapshot's child
    ],
)
def test_duplicate_ids_resolve_as_dsh_resolves_a_parent_first(older: str, parent: str) -> None:
    """A parent id claimed by several logs is the log in the folder dsh's layout names
    for it, though a copy of that folder (same id, another name) is as near and older;
    else a session's own log, not a snapshot's child (`session.1.jsonl`) that is older
    (a fork of `a/session.jsonl` was linked to `b/session.1.jsonl`, and then shown as
    a seed mismatch)."""
    items = [
        s(older, "x", created=1),
        s(parent, "x", created=2),
        s("/r/--p--/kid/session.jsonl", "kid", "x", seed=4, created=3),
    ]
    assert build_lineage(items).parent_of[Path("/r/--p--/kid/session.jsonl")] == Path(parent)


def test_cycles_are_cut_and_reported() -> None:
    items = [s("/r/a.jsonl", "a", "b"), s("/r/b.jsonl", "b", "a"), s("/r/x.jsonl", "x", "x")]
    lineage = build_lineage(items)
    seen = []
    stack = [*lineage.roots, *(c for m in lineage.missing for c in m.children)]
    while stack:
        node = stack.pop()
        seen.append(node.summary.id)
        stack.extend(node.children)
    assert sorted(seen) == ["a", "b", "x"]  # every session shown exactly once
    for path in ("/r/a.jsonl", "/r/b.jsonl"):
        assert ProblemKind.LINEAGE_CYCLE in [p.kind for p in lineage.problems[Path(path)]]


def test_deep_chains_do_not_recurse() -> None:
    items = [s("/r/0.jsonl", "0")] + [
        s(f"/r/{i}.jsonl", str(i), str(i - 1), created=i) for i in range(1, 5000)
    ]
    lineage = build_lineage(items)
    node = lineage.roots[0]
    depth = 0
    while node.children:
        node = node.children[0]
        depth += 1
    assert depth == 4999


def test_link_order_is_by_time_then_path_with_or_without_ties() -> None:
    """`link_sessions` sorts by createdAt alone when no two logs share an instant, and
    by (createdAt, path) otherwise: the same order either way."""
    unique = [
        ("c", None, 30, "/r/a.jsonl", True),
        ("a", None, 10, "/r/c.jsonl", True),
        ("b", None, 20, "/r/b.jsonl", True),
    ]
    assert link_sessions(unique).order == [1, 2, 0]
    tied = [
        ("c", None, 10, "/r/c.jsonl", True),
        ("a", None, 10, "/r/a.jsonl", True),
        ("z", None, 5, "/r/z.jsonl", True),
        ("b", None, 10, "/r/b.jsonl", True),
    ]
    assert link_sessions(tied).order == [2, 1, 3, 0]


def test_linking_by_unique_ids_matches_the_claims_rule() -> None:
    """Ids that never repeat take the one-claim path; a repeated id elsewhere in the root
    switches to every claim: a child's parent and the problems are the same rule."""
    keys = [
        ("p", None, 1, "/r/p/s.jsonl", True),
        ("c", "p", 2, "/r/c/s.jsonl", True),
        ("self", "self", 3, "/r/self/s.jsonl", True),
        ("o", "gone", 4, "/r/o/s.jsonl", True),
        ("h", "p", 5, "/r/h/s.jsonl", False),  # no usable header: never claims an id
        ("", "h", 6, "/r/e/s.jsonl", True),  # names a headerless log: its parent is missing
    ]
    links = link_sessions(keys)
    assert links.parent == {1: 0, 4: 0}
    assert links.missing == {"gone": [3], "h": [5]}
    assert [p.kind for p in links.problems[2]] == [ProblemKind.LINEAGE_CYCLE]
    dup = [*keys, ("q", None, 7, "/r/q1/s.jsonl", True), ("q", None, 8, "/r/q2/s.jsonl", True)]
    links2 = link_sessions(dup)
    assert links2.parent == links.parent and links2.missing == links.missing
    assert [p.kind for p in links2.problems[6]] == [ProblemKind.DUPLICATE_ID]
