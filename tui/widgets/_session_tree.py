"""The session tree: projects (cwd), then lineage, one node per log."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode
from turnline.core.lineage import LineageNode
from turnline.core.summary import SessionSummary

from .._text import line
from ..messages import RootSnapshot

NO_CWD = "(no cwd)"
TITLE_WIDTH = 34
MIN_TITLE_WIDTH = 12


def _depth(node: TreeNode[Any]) -> int:
    """How many ancestors a node has below the tree's hidden root (project nodes: 0)."""
    depth = -1
    parent = node.parent
    while parent is not None:
        depth += 1
        parent = parent.parent
    return depth


#: A root showing more sessions than this starts with its projects folded, and a
#: project's nodes are made only when it is unfolded (or a session in it is selected):
#: ten thousand Textual nodes with their labels cost seconds, forty cost nothing.
EAGER_SESSIONS = 400

_Item = tuple[str, "LineageNode | tuple[str, tuple[LineageNode, ...]]"]


@dataclass(frozen=True)
class TreeEntry:
    """What a tree node stands for.

    Attributes:
        kind: `project`, `session` or `missing` (a parent absent from the root).
        key: The project cwd, the log path, or the missing parent's id.
        path: The log path for a session node.
    """

    kind: str
    key: str
    path: Path | None = None


def short_id(session_id: str) -> str:
    """The first 8 characters of an id (UUIDs are unique enough there)."""
    return session_id[:8]


def session_label(
    summary: SessionSummary,
    problems: int,
    *,
    width: int = TITLE_WIDTH,
    room: int | None = None,
    filtered: bool = False,
) -> Text:
    """The label of a session node: markers first (so a narrow pane never hides them),
    then the title, short id and turn count.

    Args:
        width: The most columns the title may take.
        room: Columns the whole label may take (the pane less its guides): the title
            is cut further so that the short id and turn count stay in view.
    """
    markers = Text(no_wrap=True, end="")
    if summary.open_turn:
        markers.append("● ", style="bold green")
    if problems:
        markers.append(f"⚠{problems} ", style="bold yellow")
    if summary.origin == "subagent":
        markers.append("⚙ ", style="magenta")
    elif summary.parent_session is not None and summary.seed_length is not None:
        markers.append("↳ ", style="cyan")
    suffix = Text(no_wrap=True, end="")
    if summary.title:
        suffix.append(" ")
        suffix.append_text(line(short_id(summary.id), style="dim"))
    suffix.append(f" {summary.turns}t", style="dim")
    if room is not None:
        width = min(width, room - markers.cell_len - suffix.cell_len)
    width = max(MIN_TITLE_WIDTH, width)
    label = markers
    if summary.title:
        label.append_text(line(summary.title, limit=width))
    else:
        label.append_text(line(summary.id, style="italic", limit=width))
    label.append_text(suffix)
    if filtered:
        label.stylize("bold")
    return label


class SessionTree(Tree[TreeEntry]):
    """Sessions grouped by project, each fork child nested under its parent.

    The tree keeps a node per log path so live changes relabel one node instead of
    rebuilding; a structural change (a session added or removed) rebuilds it while
    keeping the cursor on the same session and the same folds open. In a big root
    (more than `EAGER_SESSIONS` shown) projects start folded and their session nodes
    are made when a project is first unfolded.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
    ]

    class SessionHighlighted(Message):
        """The cursor moved onto a session node (None: onto something else)."""

        def __init__(self, path: Path | None) -> None:
            super().__init__()
            self.path = path

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("sessions", id=id)
        self.show_root = False
        self.guide_depth = 2
        self._session_nodes: dict[Path, TreeNode[TreeEntry]] = {}
        self._snapshot: RootSnapshot | None = None
        self._filter = ""
        #: Sessions shown whatever the filter says (a fork child made under a filter).
        self._revealed: set[Path] = set()
        #: Folds the user left open (True) or closed (False), by `kind:key`.
        self._folds: dict[str, bool] = {}
        self._eager = True  # this build unfolds projects by default
        #: Every session shown, in display order, to the project node holding it.
        self._project_of: dict[Path, str] = {}
        #: Projects whose session nodes are not made yet: their node and items.
        self._unbuilt: dict[str, tuple[TreeNode[TreeEntry], list[_Item]]] = {}
        self._visible_cache: dict[Path, bool] = {}
        self._target: Path | None = None  # where select_path is moving the cursor
        self._announce_target = False

    @property
    def snapshot(self) -> RootSnapshot | None:
        """The snapshot the tree shows."""
        return self._snapshot

    @property
    def highlighted_path(self) -> Path | None:
        """The log under the cursor, if the cursor is on a session."""
        node = self.cursor_node
        if node is None or node.data is None:
            return None
        return node.data.path

    def node_of(self, path: Path) -> TreeNode[TreeEntry] | None:
        """The node showing a log, if it is shown (made now if its project was folded)."""
        node = self._session_nodes.get(path)
        if node is None:
            project = self._project_of.get(path)
            if project is not None and project in self._unbuilt:
                self._build_project(project)
                node = self._session_nodes.get(path)
        return node

    def show(
        self, snapshot: RootSnapshot, *, select: Path | None = None, reveal: bool = False
    ) -> None:
        """Rebuild from a snapshot; keep (or move) the cursor to a session.

        Args:
            select: The session to move the cursor to.
            reveal: Show `select` even if the filter would hide it (until the filter
                changes).
        """
        if reveal and select is not None:
            self._revealed.add(select)
        keep = select or self._target or self.highlighted_path
        self._remember_folds()
        self._snapshot = snapshot
        self._rebuild()
        if keep is not None:
            # A rebuild only restores the cursor; it is not the user choosing a session.
            self.select_path(keep, announce=select is not None)

    def on_resize(self) -> None:
        """Titles are cut to the pane's width: cut them again when it changes."""
        if self._snapshot is not None:
            self.relabel(self._snapshot, list(self._session_nodes))

    def relabel(self, snapshot: RootSnapshot, paths: list[Path]) -> None:
        """Refresh the labels of some sessions (counts, live marker) in place."""
        self._snapshot = snapshot
        for path in paths:
            node = self._session_nodes.get(path)
            summary = snapshot.summaries.get(path)
            if node is not None and summary is not None:
                node.set_label(self._label(summary, _depth(node) - 1))

    def set_filter(self, text: str) -> None:
        """Show only sessions whose title, id, cwd or path contains `text` (and kin)."""
        text = text.strip().lower()
        if text == self._filter:
            return
        keep = self.highlighted_path
        self._remember_folds()
        self._filter = text
        self._revealed.clear()
        self._rebuild()
        snapshot = self._snapshot
        summary = snapshot.summaries.get(keep) if snapshot and keep else None
        # The cursor stays only on a session the filter matches, not on an ancestor
        # shown for a descendant's sake.
        if keep in self._project_of and (summary is None or self._matches(summary)):
            assert keep is not None
            self.select_path(keep)
        else:
            self.select_first_match()

    def select_path(self, path: Path, *, announce: bool = True) -> bool:
        """Move the cursor to a session (unfolding its ancestors).

        Args:
            path: The session's log.
            announce: Post `SessionHighlighted` even if the cursor line does not change.
        """
        node = self.node_of(path)
        if node is None:
            return False
        self._target = path
        self._announce_target = announce
        parent = node.parent
        while parent is not None:
            parent.expand()
            parent = parent.parent
        # The line index is only known after the tree re-lays out its lines.
        self.call_after_refresh(self._move_to, node)
        self._move_to(node)
        return True

    def _move_to(self, node: TreeNode[TreeEntry]) -> None:
        if node.tree is self and node.line >= 0:
            self.move_cursor(node, animate=False)
            # After a rebuild the cursor line may be unchanged while the node under it
            # is another session, and Tree only reports line changes: say it ourselves.
            path = node.data.path if node.data is not None else None
            if path is not None and path == self._target:
                if self._announce_target:
                    self.post_message(self.SessionHighlighted(path))
                self._target = None

    def select_first_session(self) -> None:
        """Move the cursor to the first session shown."""
        for path in self._project_of:
            self.select_path(path)
            return

    def select_first_match(self) -> None:
        """Move the cursor to the first session the filter matches (not an ancestor
        shown only for its descendant's sake)."""
        snapshot = self._snapshot
        if snapshot is not None:
            for path in self._project_of:
                summary = snapshot.summaries.get(path)
                if summary is not None and self._matches(summary):
                    self.select_path(path)
                    return
        self.select_first_session()

    # -- building ------------------------------------------------------------------

    def _label(self, summary: SessionSummary, depth: int) -> Text:
        """A session's label; deeper nodes get shorter titles so that the short id and
        turn count stay in view however deep the lineage goes."""
        snapshot = self._snapshot
        problems = len(snapshot.problems_of(summary.path)) if snapshot else 0
        pane = self.scrollable_content_region.width
        # less the fold toggle ("▼ ") that a node with children shows, and a spare column
        room = pane - self.guide_depth * (depth + 1) - 3 if pane else None
        return session_label(summary, problems, room=room, filtered=bool(self._filter))

    def _remember_folds(self) -> None:
        stack = list(self.root.children)
        while stack:
            child = stack.pop()
            if child.data is not None and child.allow_expand:
                self._folds[f"{child.data.kind}:{child.data.key}"] = child.is_expanded
            stack.extend(child.children)

    def _unfolded(self, key: str) -> bool:
        return self._folds.get(key, self._eager)

    def _matches(self, summary: SessionSummary) -> bool:
        needle = self._filter
        if not needle or summary.path in self._revealed:
            return True
        snapshot = self._snapshot
        return snapshot is not None and snapshot.matches(summary, needle)

    def _visible(self, node: LineageNode, cache: dict[Path, bool]) -> bool:
        """A lineage node is shown if it or any descendant matches the filter."""
        hit = cache.get(node.summary.path)
        if hit is None:
            hit = self._matches(node.summary) or any(self._visible(c, cache) for c in node.children)
            cache[node.summary.path] = hit
        return hit

    def _rebuild(self) -> None:
        self.clear()
        self._session_nodes = {}
        self._project_of = {}
        self._unbuilt = {}
        self._visible_cache = {}
        snapshot = self._snapshot
        if snapshot is None:
            return
        lineage = snapshot.lineage
        by_project: dict[str, list[_Item]] = {}
        for root in lineage.roots:
            cwd = root.summary.cwd or NO_CWD
            by_project.setdefault(cwd, []).append(("session", root))
        for missing in lineage.missing:
            cwd = missing.children[0].summary.cwd or NO_CWD if missing.children else NO_CWD
            orphans = (missing.parent_id, missing.children)
            by_project.setdefault(cwd, []).append(("missing", orphans))
        projects: list[tuple[str, list[_Item], int]] = []
        for cwd in sorted(by_project, key=lambda c: (c == NO_CWD, c)):
            items = by_project[cwd]
            shown = [item for item in items if self._item_visible(item[1])]
            if not shown:
                continue
            key = f"project:{cwd}"
            for path in self._shown_paths(shown):
                self._project_of[path] = key
            count = sum(1 for item in items if isinstance(item[1], LineageNode))
            projects.append((cwd, shown, count))
        self._eager = len(self._project_of) <= EAGER_SESSIONS
        for cwd, shown, count in projects:
            project_label = Text(no_wrap=True, end="")
            project_label.append_text(line(cwd, style="bold", limit=60))
            project_label.append(f"  {count}", style="dim")
            key = f"project:{cwd}"
            project = self.root.add(
                project_label,
                data=TreeEntry("project", cwd),
                expand=self._unfolded(key),
                allow_expand=True,
            )
            self._unbuilt[key] = (project, shown)
            if self._unfolded(key):
                self._build_project(key)

    def _item_visible(self, item: LineageNode | tuple[str, tuple[LineageNode, ...]]) -> bool:
        cache = self._visible_cache
        if isinstance(item, LineageNode):
            return self._visible(item, cache)
        return any(self._visible(c, cache) for c in item[1])

    def _shown_paths(self, shown: list[_Item]) -> list[Path]:
        """The sessions a project's items show, in display order (no nodes made)."""
        cache = self._visible_cache
        paths: list[Path] = []
        stack: list[LineageNode] = []
        for _kind, item in shown:
            roots = [item] if isinstance(item, LineageNode) else list(item[1])
            stack.extend(reversed([r for r in roots if self._visible(r, cache)]))
            while stack:
                node = stack.pop()
                paths.append(node.summary.path)
                stack.extend(reversed([c for c in node.children if self._visible(c, cache)]))
        return paths

    def _build_project(self, key: str) -> None:
        """Make the session nodes of one project (once)."""
        unbuilt = self._unbuilt.pop(key, None)
        if unbuilt is None:
            return
        project, shown = unbuilt
        cache = self._visible_cache
        for _kind, item in shown:
            if isinstance(item, LineageNode):
                self._add_session(project, item, cache)
            else:
                parent_id, children = item
                label = Text("missing parent ", style="italic red", end="")
                label.append_text(line(short_id(parent_id), style="red"))
                mkey = f"missing:{parent_id}"
                group = project.add(
                    label,
                    data=TreeEntry("missing", parent_id),
                    expand=self._folds.get(mkey, True),
                )
                for child in children:
                    if self._visible(child, cache):
                        self._add_session(group, child, cache)

    def _add_session(
        self, parent: TreeNode[TreeEntry], root: LineageNode, cache: dict[Path, bool]
    ) -> None:
        # Iterative: real lineage chains can be thousands of forks deep.
        stack: list[tuple[TreeNode[TreeEntry], LineageNode]] = [(parent, root)]
        while stack:
            under, lineage_node = stack.pop()
            summary = lineage_node.summary
            entry = TreeEntry("session", str(summary.path), summary.path)
            kids = [c for c in lineage_node.children if self._visible(c, cache)]
            label = self._label(summary, _depth(under))
            if kids:
                expand = self._folds.get(f"session:{summary.path}", True)
                node = under.add(label, data=entry, expand=expand)
            else:
                node = under.add_leaf(label, data=entry)
            self._session_nodes[summary.path] = node
            stack.extend((node, kid) for kid in reversed(kids))

    def _on_tree_node_expanded(self, event: Tree.NodeExpanded[TreeEntry]) -> None:
        data = event.node.data
        if data is not None and data.kind == "project":
            self._build_project(f"project:{data.key}")

    def _on_tree_node_highlighted(self, event: Tree.NodeHighlighted[TreeEntry]) -> None:
        event.stop()
        data = event.node.data
        self.post_message(self.SessionHighlighted(data.path if data is not None else None))
