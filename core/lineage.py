"""Lineage: the family forest of the sessions under a root.

Children hang under the session named by their `parentSession`. Ids can repeat
across logs (real fixture trees do that), so nodes are keyed by log path and a
parent id is resolved to the log nearest the child on disk. Cycles are broken,
never followed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .model import LogProblem, ProblemKind
from .summary import SessionSummary


@dataclass(frozen=True, slots=True)
class LineageNode:
    """One session in the forest.

    Attributes:
        summary: The session.
        children: Child sessions, oldest first.
        seed_length: The edge's `seedLength` (None: spawned fresh, nothing inherited).
        origin: The edge's origin (`subagent`, or None for a user fork).
    """

    summary: SessionSummary
    children: tuple[LineageNode, ...] = ()

    @property
    def seed_length(self) -> int | None:
        """How many parent events this child inherited."""
        return self.summary.seed_length

    @property
    def origin(self) -> str | None:
        """`subagent` for a tool-spawned child."""
        return self.summary.origin


@dataclass(frozen=True, slots=True)
class MissingParent:
    """A parent id that no log under the root claims, with the children naming it."""

    parent_id: str
    children: tuple[LineageNode, ...]


@dataclass(frozen=True, slots=True)
class Lineage:
    """The forest over all sessions of a root.

    Attributes:
        roots: Sessions with no parent, oldest first.
        missing: Groups of children whose parent is absent.
        parent_of: Log path -> parent log path, for every resolved edge.
        problems: Cross-session problems by log path (duplicate id, missing
            parent, lineage cycle).
    """

    roots: tuple[LineageNode, ...]
    missing: tuple[MissingParent, ...]
    parent_of: dict[Path, Path] = field(default_factory=dict)
    problems: dict[Path, tuple[LogProblem, ...]] = field(default_factory=dict)

    def ancestors(self, path: Path) -> list[Path]:
        """Parent, grandparent, ... of a log (stops on a cycle)."""
        out: list[Path] = []
        seen = {path}
        while (parent := self.parent_of.get(path)) is not None and parent not in seen:
            out.append(parent)
            seen.add(parent)
            path = parent
        return out


def _distance(a: Path, b: Path) -> int:
    """Folder hops between two logs: smaller means closer kin on disk."""
    # Path parts are already normalised, so their common prefix is the common folder
    # (`os.path.commonpath` would re-parse both paths for every candidate parent).
    pa, pb = a.parts, b.parts
    folders = min(len(pa), len(pb)) - 1
    common = 0
    while common < folders and pa[common] == pb[common]:
        common += 1
    return len(pa) + len(pb) - 2 - 2 * common


def _sort_key(summary: SessionSummary) -> tuple[int, str]:
    return (summary.created_at, str(summary.path))


def build_lineage(summaries: Iterable[SessionSummary]) -> Lineage:
    """Build the forest; never loops, never raises on odd lineage."""
    items = sorted(summaries, key=_sort_key)
    by_id: dict[str, list[SessionSummary]] = {}
    for summary in items:
        if summary.header is not None:
            by_id.setdefault(summary.id, []).append(summary)
    problems: dict[Path, list[LogProblem]] = {}

    def add(path: Path, problem: LogProblem) -> None:
        problems.setdefault(path, []).append(problem)

    for sid, claims in by_id.items():
        if len(claims) > 1:
            for summary in claims:
                others = ", ".join(str(o.path) for o in claims if o is not summary)
                add(
                    summary.path,
                    LogProblem(
                        ProblemKind.DUPLICATE_ID,
                        f"{len(claims)} logs claim session id {sid}; also at {others}",
                    ),
                )
    parent_of: dict[Path, Path] = {}
    missing_children: dict[str, list[SessionSummary]] = {}
    for summary in items:
        pid = summary.parent_session
        if pid is None:
            continue
        candidates = [c for c in by_id.get(pid, []) if c.path != summary.path]
        if not candidates and pid == summary.id and summary.header is not None:
            # A log naming itself as its parent is a cycle of one, not a missing parent.
            add(
                summary.path,
                LogProblem(
                    ProblemKind.LINEAGE_CYCLE,
                    "parentSession names this session itself; shown as a root here",
                ),
            )
            continue
        if not candidates:
            missing_children.setdefault(pid, []).append(summary)
            add(
                summary.path,
                LogProblem(
                    ProblemKind.MISSING_PARENT,
                    f"parent session {pid} is not under this root",
                ),
            )
            continue
        if len(candidates) == 1:
            parent = candidates[0]
        else:
            parent = min(candidates, key=lambda c: (_distance(c.path, summary.path), _sort_key(c)))
        parent_of[summary.path] = parent.path
    # Break cycles: walk up from every node; an edge that closes a loop is cut. Nodes
    # already known to reach a root end the walk, so a deep chain costs linear time.
    reaches_root: set[Path] = set()
    for path in list(parent_of):
        seen = [path]
        on_walk = {path}
        cur = parent_of.get(path)
        while cur is not None and cur not in on_walk and cur not in reaches_root:
            seen.append(cur)
            on_walk.add(cur)
            cur = parent_of.get(cur)
        reaches_root.update(seen)
        if cur is not None and cur in on_walk:
            loop = seen[seen.index(cur) :]
            cut = max(loop, key=str)
            del parent_of[cut]
            for member in loop:
                add(
                    member,
                    LogProblem(
                        ProblemKind.LINEAGE_CYCLE,
                        f"parentSession links form a cycle of {len(loop)} sessions; "
                        "shown as a root here",
                    ),
                )
    by_path = {s.path: s for s in items}
    children: dict[Path, list[SessionSummary]] = {}
    for child_path, parent_path in parent_of.items():
        children.setdefault(parent_path, []).append(by_path[child_path])
    built: dict[Path, LineageNode] = {}
    # Build bottom-up without recursion: lineage chains can be thousands deep.
    order: list[SessionSummary] = []
    stack = [s for s in items if s.path not in parent_of]
    while stack:
        summary = stack.pop()
        order.append(summary)
        kids = children.get(summary.path)
        if kids is not None:
            stack.extend(kids)
    for summary in reversed(order):
        kids = children.get(summary.path)
        if kids is None:
            built[summary.path] = LineageNode(summary)  # a leaf: most sessions
            continue
        kids.sort(key=_sort_key)
        built[summary.path] = LineageNode(summary, tuple(built[k.path] for k in kids))
    in_missing = {c.path for kids in missing_children.values() for c in kids}
    roots = tuple(
        built[s.path] for s in items if s.path not in parent_of and s.path not in in_missing
    )
    missing = tuple(
        MissingParent(pid, tuple(built[c.path] for c in kids))
        for pid, kids in missing_children.items()
    )
    frozen = {path: tuple(found) for path, found in problems.items()}
    return Lineage(roots, missing, parent_of, frozen)
