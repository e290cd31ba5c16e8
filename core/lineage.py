"""Lineage: the family forest of the sessions under a root.

Children hang under the session named by their `parentSession`. Ids can repeat
across logs (real fixture trees do that), so nodes are keyed by log path and a
parent id is resolved to the log nearest the child on disk. Cycles are broken,
never followed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import compress, repeat
from operator import is_not, itemgetter
from pathlib import Path
from typing import Final, TypeVar, cast

import msgspec

from .formats import generation_of
from .layout import layout_id
from .model import LogProblem, ProblemKind
from .summary import SessionSummary


class LineageNode(msgspec.Struct, frozen=True):
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


class MissingParent(msgspec.Struct, frozen=True):
    """A parent id that no log under the root claims, with the children naming it."""

    parent_id: str
    children: tuple[LineageNode, ...]


class Lineage(msgspec.Struct, frozen=True):
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
    parent_of: dict[Path, Path] = msgspec.field(default_factory=dict)
    problems: dict[Path, tuple[LogProblem, ...]] = msgspec.field(default_factory=dict)

    def ancestors(self, path: Path) -> list[Path]:
        """Parent, grandparent, ... of a log (stops on a cycle)."""
        out: list[Path] = []
        seen = {path}
        while (parent := self.parent_of.get(path)) is not None and parent not in seen:
            out.append(parent)
            seen.add(parent)
            path = parent
        return out


#: What linking needs of one log: (session id, parentSession, createdAt, path, whether
#: the header is usable). Plain values, so a listing can link sessions it never
#: turned into `SessionSummary` objects.
LinkKey = tuple[str, str | None, int, str, bool]
_ID = itemgetter(0)
_PARENT = itemgetter(1)
_CREATED = itemgetter(2)
_PATH = itemgetter(3)
_HEADED = itemgetter(4)


def link_key(summary: SessionSummary) -> LinkKey:
    """A summary's `LinkKey`."""
    return (
        summary.id,
        summary.parent_session,
        summary.created_at,
        str(summary.path),
        summary.header is not None,
    )


class Links(msgspec.Struct, frozen=True):
    """Who is whose parent, by index into the keys `link_sessions` was given.

    Attributes:
        order: Every index, oldest first (createdAt, then path).
        parent: Child index -> parent index (cycles already cut).
        missing: Absent parent id -> the indices of the children naming it, oldest first.
        problems: Index -> its cross-session problems, in the order found.
    """

    order: list[int]
    parent: dict[int, int]
    missing: dict[str, list[int]]
    problems: dict[int, list[LogProblem]]


def _likely_parents(candidates: list[int], keys: Sequence[LinkKey], pid: str) -> list[int]:
    """Of the logs claiming parent id `pid`, those dsh would take for it: in the folder
    dsh's layout names for that id (`--<project>--/<encoded id>/`), then under a
    session's own file name (a generation: `session.jsonl`, `session.v5.jsonl.zstd`;
    not a snapshot's child such as `session.1.jsonl`); each rule only where some log
    meets it."""
    for rule in (_in_own_folder, _session_log):
        kept = [c for c in candidates if rule(keys[c][3], pid)]
        if kept:
            candidates = kept
    return candidates


def _in_own_folder(path: str, pid: str) -> bool:
    parts = path.rsplit("/", 3)
    return len(parts) == 4 and layout_id(parts[3], parts[2], parts[1]) == pid


def _session_log(path: str, _pid: str) -> bool:
    return generation_of(path.rpartition("/")[2]) is not None


def _distance(a: list[str], b: list[str]) -> int:
    """Folder hops between two logs (path parts): smaller means closer kin on disk."""
    folders = min(len(a), len(b)) - 1
    common = 0
    while common < folders and a[common] == b[common]:
        common += 1
    return len(a) + len(b) - 2 - 2 * common


def link_sessions(keys: Sequence[LinkKey]) -> Links:
    """The lineage rules over plain values; never loops, never raises on odd lineage.

    Ids can repeat across logs (a copied session folder keeps its id; dsh's test
    corpus reuses ids), so a parent id claimed by several logs is resolved as dsh
    resolves it where it can (`_likely_parents`: the log in the folder named for the
    id, a session's own log rather than a snapshot's child), then to the log nearest
    the child on disk, then the oldest. A log naming itself is a cycle of one; in a
    longer cycle the edge into the log with the greatest path is cut.
    """
    # Sorted, filtered and indexed in C where it can be (a listing links ten thousand
    # logs before it prints): one Python step per child, not per log.
    created = list(map(_CREATED, keys))
    if len(set(created)) == len(created):  # no two at one instant: by time alone
        order = sorted(range(len(keys)), key=created.__getitem__)
    else:
        stamps = list(zip(created, map(_PATH, keys), strict=True))
        order = sorted(range(len(keys)), key=stamps.__getitem__)
    ranked = list(map(keys.__getitem__, order))
    headed = list(compress(order, map(_HEADED, ranked)))
    ids = list(map(_ID, map(keys.__getitem__, headed)))
    #: Each id's log, when no id repeats (nearly always); else `by_id` has every claim.
    one = dict(zip(ids, headed, strict=True))
    by_id: dict[str, list[int]] | None = None
    problems: dict[int, list[LogProblem]] = {}

    def add(i: int, problem: LogProblem) -> None:
        problems.setdefault(i, []).append(problem)

    if len(one) != len(ids):
        by_id = {}
        for sid, i in zip(ids, headed, strict=True):
            by_id.setdefault(sid, []).append(i)
        for sid, claims in by_id.items():
            if len(claims) > 1:
                for i in claims:
                    others = ", ".join(keys[o][3] for o in claims if o != i)
                    add(
                        i,
                        LogProblem(
                            ProblemKind.DUPLICATE_ID,
                            f"{len(claims)} logs claim session id {sid}; also at {others}",
                        ),
                    )
    parent: dict[int, int] = {}
    missing: dict[str, list[int]] = {}
    for i in compress(order, map(is_not, map(_PARENT, ranked), repeat(None))):
        sid, pid, _, path, has_header = keys[i]
        if pid is None:
            continue  # (filtered out above: for the type checker)
        if by_id is None:
            claim = one.get(pid)
            candidates = [] if claim is None or keys[claim][3] == path else [claim]
        else:
            candidates = [c for c in by_id.get(pid, ()) if keys[c][3] != path]
        if not candidates and pid == sid and has_header:
            # A log naming itself as its parent is a cycle of one, not a missing parent.
            add(
                i,
                LogProblem(
                    ProblemKind.LINEAGE_CYCLE,
                    "parentSession names this session itself; shown as a root here",
                ),
            )
            continue
        if not candidates:
            missing.setdefault(pid, []).append(i)
            add(
                i,
                LogProblem(
                    ProblemKind.MISSING_PARENT, f"parent session {pid} is not under this root"
                ),
            )
            continue
        if len(candidates) > 1:
            candidates = _likely_parents(candidates, keys, pid)
        if len(candidates) == 1:
            parent[i] = candidates[0]
        else:
            parts = path.split("/")
            parent[i] = min(
                candidates,
                key=lambda c: (_distance(keys[c][3].split("/"), parts), keys[c][2], keys[c][3]),
            )
    # Break cycles: walk up from every node; an edge that closes a loop is cut. Nodes
    # already known to reach a root end the walk, so a deep chain costs linear time.
    reaches_root: set[int] = set()
    for start in list(parent):
        walk = [start]
        on_walk = {start}
        cur = parent.get(start)
        while cur is not None and cur not in on_walk and cur not in reaches_root:
            walk.append(cur)
            on_walk.add(cur)
            cur = parent.get(cur)
        reaches_root.update(walk)
        if cur is not None and cur in on_walk:
            loop = walk[walk.index(cur) :]
            del parent[max(loop, key=lambda i: keys[i][3])]
            for member in loop:
                add(
                    member,
                    LogProblem(
                        ProblemKind.LINEAGE_CYCLE,
                        f"parentSession links form a cycle of {len(loop)} sessions; "
                        "shown as a root here",
                    ),
                )
    return Links(order, parent, missing, problems)


def build_lineage(summaries: Iterable[SessionSummary], links: Links | None = None) -> Lineage:
    """Build the forest; never loops, never raises on odd lineage.

    Args:
        links: `link_sessions` of these summaries' `link_key`s, in this order, if
            already worked out (a pool worker does it for a warm start).
    """
    items = list(summaries)
    if links is None:
        links = link_sessions([link_key(s) for s in items])
    rank = {i: r for r, i in enumerate(links.order)}
    children: dict[int, list[int]] = {}
    for child, parent in links.parent.items():
        children.setdefault(parent, []).append(child)
    built: dict[int, LineageNode] = {}
    # Build bottom-up without recursion: lineage chains can be thousands deep.
    order: list[int] = []
    stack = [i for i in links.order if i not in links.parent]
    while stack:
        i = stack.pop()
        order.append(i)
        kids = children.get(i)
        if kids is not None:
            stack.extend(kids)
    for i in reversed(order):
        kids = children.get(i)
        if kids is None:
            built[i] = LineageNode(items[i])  # a leaf: most sessions
            continue
        kids.sort(key=rank.__getitem__)
        built[i] = LineageNode(items[i], tuple(built[k] for k in kids))
    in_missing = {i for kids in links.missing.values() for i in kids}
    roots = tuple(built[i] for i in links.order if i not in links.parent and i not in in_missing)
    missing = tuple(
        MissingParent(pid, tuple(built[i] for i in kids)) for pid, kids in links.missing.items()
    )
    parent_of = {items[c].path: items[p].path for c, p in links.parent.items()}
    frozen = {items[i].path: tuple(found) for i, found in links.problems.items()}
    return Lineage(roots, missing, parent_of, frozen)


#: The project of sessions whose header names no cwd (shown after every other one).
NO_CWD: Final = "(no cwd)"

#: One entry of a project: a root session (`("session", node)`), or the children of a
#: parent no log claims (`("missing", (parent id, children))`).
ProjectItem = tuple[str, "LineageNode | tuple[str, tuple[LineageNode, ...]]"]

_N = TypeVar("_N")


def group_projects(
    roots: Iterable[_N],
    missing: Iterable[tuple[str, Sequence[_N]]],
    cwd_of: Callable[[_N], str | None],
) -> dict[str, list[tuple[str, _N | tuple[str, Sequence[_N]]]]]:
    """Lineage trees by project, in the order given within each: a root (`("session",
    root)`) under its own cwd, a missing parent's children (`("missing", (parent id,
    children))`) under the first child's cwd; `NO_CWD` for none. The session tree's
    projects (`project_groups`); `project_order` orders them."""
    by_project: dict[str, list[tuple[str, _N | tuple[str, Sequence[_N]]]]] = {}
    for root in roots:
        by_project.setdefault(cwd_of(root) or NO_CWD, []).append(("session", root))
    for parent_id, children in missing:
        cwd = (cwd_of(children[0]) or NO_CWD) if children else NO_CWD
        by_project.setdefault(cwd, []).append(("missing", (parent_id, children)))
    return by_project


def project_groups(lineage: Lineage) -> dict[str, list[ProjectItem]]:
    """`group_projects` of a lineage: its roots, then its missing parents' groups."""
    return cast(dict[str, list[ProjectItem]], _groups(lineage))


def _groups(
    lineage: Lineage,
) -> dict[str, list[tuple[str, LineageNode | tuple[str, Sequence[LineageNode]]]]]:
    missing = ((m.parent_id, m.children) for m in lineage.missing)
    return group_projects(lineage.roots, missing, _summary_cwd)


def _summary_cwd(node: LineageNode) -> str | None:
    return node.summary.cwd


def project_order(cwd: str) -> tuple[bool, str]:
    """Sort key of a project in lineage order: by cwd, `NO_CWD` last."""
    return (cwd == NO_CWD, cwd)


def first_project(
    by_project: dict[str, list[tuple[str, _N | tuple[str, Sequence[_N]]]]],
    children_of: Callable[[_N], Sequence[_N]],
) -> list[_N]:
    """Every session of the first project of `group_projects`' answer (`project_order`),
    descendants included, in display order: what the session tree shows unfolded when
    it opens on a big root."""
    if not by_project:
        return []
    found: list[_N] = []
    stack: list[_N] = []
    for kind, item in by_project[min(by_project, key=project_order)]:
        tops = (item,) if kind == "session" else cast(tuple[str, Sequence[_N]], item)[1]
        stack.extend(reversed(cast(Sequence[_N], tops)))
        while stack:
            node = stack.pop()
            found.append(node)
            stack.extend(reversed(children_of(node)))
    return found


def first_project_paths(lineage: Lineage) -> list[Path]:
    """`first_project` of a lineage, as log paths."""
    return [n.summary.path for n in first_project(_groups(lineage), _children)]


def _children(node: LineageNode) -> Sequence[LineageNode]:
    return node.children
