"""The session tree: projects (cwd), then lineage, one node per log."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import msgspec
from rich.text import Text
from textual import on, work
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode
from textual.worker import get_current_worker
from turnline.core.ids import WHERE, short_ids
from turnline.core.lineage import LineageNode, ProjectItem, project_groups, project_order
from turnline.core.summary import SessionSummary, counted_problems
from turnline.core.textsafe import middle_cut
from turnline.core.usage import UsageFold, UsageTotals, combine, compact_tokens, fold_events

from .._text import line, one_line
from ..messages import Appended, RootSnapshot

if TYPE_CHECKING:
    from turnline.core.prices import PriceTable  # loaded when totals are first folded
    from turnline.core.root import ScanPreview

#: Title width before the pane is laid out (then the pane's width decides).
TITLE_WIDTH = 34
#: The fewest title characters a label keeps beside the short id; below this the
#: short id goes, and the title takes what is left (markers and turn count stay).
MIN_TITLE_WIDTH = 8
TINY_TITLE_WIDTH = 3

#: How the tree orders sessions: `lineage` (oldest first, as the lineage gives them)
#: or `activity` (newest activity first: see `SessionTree.sort`).
SortOrder = Literal["lineage", "activity"]


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

_Item = ProjectItem


class TreeEntry(msgspec.Struct, frozen=True):
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
    """The first 8 characters of an id (the tree shows `short_ids`' unique ones)."""
    return session_id[:8]


def activity_of(summary: SessionSummary) -> int:
    """When a session was last active: its last event's time, else its creation."""
    return summary.last_activity or summary.created_at or 0


def compact_cost(value: float) -> str:
    """A subtree's cost with two decimals, always (`0.00`, `1.37`, `21054.20`): in the
    price table's own unit, which names no currency (`prices.toml` prices are plain
    numbers per million tokens)."""
    return f"{value:.2f}"


def subtree_total_text(tokens: int, cost: float | None) -> str:
    """A subtree total as the tree shows it after `Σ`: the cost when known (`1.37`),
    else the tokens with their unit (`12.3k tok`)."""
    return compact_cost(cost) if cost is not None else f"{compact_tokens(tokens)} tok"


def session_label(
    summary: SessionSummary,
    problems: int,
    *,
    width: int | None = None,
    room: int | None = None,
    filtered: bool = False,
    short: str | None = None,
    total: str | None = None,
    marked: bool = False,
) -> Text:
    """The label of a session node: markers first (so a narrow pane never hides them),
    then the title, short id, turn count and (when shown) the subtree total.

    Args:
        width: The most columns the title may take (None: as many as `room` leaves).
        room: Columns the whole label may take (the pane less its guides): the title
            is cut so that the turn count (and, if the title can keep
            `MIN_TITLE_WIDTH` columns, the short id) stay in view.
        short: The short id to show (default: the id's first 8 characters).
        total: The subtree's total (tokens or cost), shown after the turn count.
        marked: The session is the one `m` marked for `d` (compare): `◆` first.
    """
    shown_id = short if short is not None else short_id(summary.id)
    markers = Text(no_wrap=True, end="")
    if marked:
        markers.append("◆ ", style="bold yellow")
    if summary.open_turn:
        markers.append("● ", style="bold green")
    if problems:
        markers.append(f"⚠{problems} ", style="bold yellow")
    if summary.origin == "subagent":
        markers.append("⚙ ", style="magenta")
    elif summary.parent_session is not None and summary.seed_length is not None:
        markers.append("↳ ", style="cyan")
    count = Text(f" {summary.turns}t", style="dim", no_wrap=True, end="")
    if total is not None:
        count.append(f" Σ{total}", style="bold magenta")
    ident = Text(no_wrap=True, end="")
    if summary.title:
        ident.append(" ")
        ident.append_text(line(shown_id, style="dim"))
    if room is None:
        width = TITLE_WIDTH if width is None else width
    else:
        rest = room - markers.cell_len - count.cell_len
        if rest - ident.cell_len < MIN_TITLE_WIDTH:
            ident = Text(end="")  # too narrow for both: the title (or id) wins
        fit = max(TINY_TITLE_WIDTH, rest - ident.cell_len)
        width = fit if width is None else min(width, fit)
    label = markers
    if summary.title:
        label.append_text(line(summary.title, limit=width))
    else:
        # An untitled session shows its id; one several logs claim gets the folder
        # part that tells it apart (`{{sessionId}}@acp/cancel`).
        untitled = shown_id if WHERE in shown_id else summary.id
        label.append_text(line(untitled, style="italic", limit=width))
    label.append_text(ident)
    label.append_text(count)
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

    Two orders (the app's `a` toggles, the border title says which): `lineage`, oldest first as
    the lineage gives them, and `activity`, newest first: children still sit under
    their parents, and projects, roots and siblings are ordered by the newest
    activity anywhere in their subtree (so a family where a child is busy comes
    first). `t` (an app key) shows each node's subtree total (tokens, or cost when every sample
    is priced), folded off the UI thread and kept current from appended events.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
    ]

    class TotalsFolded(Message):
        """The worker folded the subtree totals (path -> subtree usage)."""

        def __init__(self, totals: dict[Path, UsageTotals], prices: PriceTable | None) -> None:
            super().__init__()
            self.totals = totals
            self.prices = prices

    class SessionHighlighted(Message):
        """The cursor moved onto a session node (None: onto something else)."""

        def __init__(self, path: Path | None) -> None:
            super().__init__()
            self.path = path

    def __init__(self, *, id: str | None = None) -> None:
        # Text, not a string: Tree parses a string as markup, which loads rich's emoji
        # table (a few ms of the app's start) for a root label never shown.
        super().__init__(Text("sessions"), id=id)
        self.show_root = False
        self.guide_depth = 2
        self._session_nodes: dict[Path, TreeNode[TreeEntry]] = {}
        self._snapshot: RootSnapshot | None = None
        self._filter = ""
        self._filter_typed = ""
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
        self._sort: SortOrder = "lineage"
        #: Newest activity in each session's subtree (activity order only).
        self._newest: dict[Path, int] = {}
        #: path -> the short id shown (unique under the root).
        self._shorts: dict[Path, str] = {}
        self._project_nodes: dict[str, tuple[TreeNode[TreeEntry], int]] = {}
        #: Subtree totals are shown (`t`); their folds belong to the totals worker.
        self._totals_on = False
        #: The session `m` marked for compare (`◆` in its label).
        self._marked: Path | None = None
        self._totals: dict[Path, UsageTotals] = {}
        self._prices: PriceTable | None = None
        self._usage_folds: dict[Path, UsageFold] = {}
        self._usage_next: dict[Path, int] = {}  # the first seq a fold has not seen
        self._usage_lock = threading.Lock()  # held by the worker folding
        self._pending_lock = threading.Lock()  # only around `_pending_usage`
        self._pending_usage: list[tuple[RootSnapshot, tuple[Appended, ...]]] = []
        self._usage_generation = 0  # bumped when totals are switched off
        self._usage_folded_generation = 0
        #: The scan's preview the tree shows (`show_preview`), until `show`.
        self._preview: ScanPreview | None = None

    @property
    def snapshot(self) -> RootSnapshot | None:
        """The snapshot the tree shows (None while it shows a preview)."""
        return None if self._preview is not None else self._snapshot

    @property
    def previewing(self) -> bool:
        """The tree shows a scan's preview (`show_preview`), not a snapshot yet."""
        return self._preview is not None

    @property
    def highlighted_path(self) -> Path | None:
        """The log under the cursor, if the cursor is on a session (None while the
        tree shows a preview: nothing is selected until the scan ends)."""
        if self._preview is not None:
            return None
        return self._cursor_path()

    def _cursor_path(self) -> Path | None:
        node = self.cursor_node
        if node is None or node.data is None:
            return None
        return node.data.path

    def node_of(self, path: Path) -> TreeNode[TreeEntry] | None:
        """The node showing a log, if it is shown (made now if its project was folded)."""
        node = self._session_nodes.get(path)
        if node is None:
            project = self._project_of.get(path)
            if project is not None and project in self._unbuilt and self._buildable(project):
                self._build_project(project)
                node = self._session_nodes.get(path)
        return node

    def show_preview(self, preview: ScanPreview) -> None:
        """Show a big root's tree before its scan ends: every project, the first one
        unfolded with the cursor on its first session, as `show` will show them once
        the scan ends. Only the first project's sessions are known yet: another project
        unfolded meanwhile waits for `show`, and nothing is selected until then
        (`highlighted_path` is None). A tree already showing a snapshot, a filter or
        the activity order (which needs every summary) shows no preview."""
        if self._snapshot is not None or self._filter or self._sort != "lineage":
            return
        self._preview = preview
        self._snapshot = RootSnapshot(preview.summaries, preview.lineage, preview.root)
        self._shorts = dict(preview.shorts)
        self._rebuild()
        for path in self._project_of:
            self.select_path(path, announce=False)
            break

    def _end_preview(self) -> None:
        """Drop a preview (the next `show` draws the tree again)."""
        if self._preview is not None:
            self._preview = None
            self._snapshot = None
            self._shorts = {}
            self.clear()
            self._session_nodes, self._unbuilt, self._project_nodes = {}, {}, {}
            self._project_of = {}

    def _buildable(self, key: str) -> bool:
        """Whether a project's nodes can be made now: always, but while the tree shows
        a preview only for the project it knows the sessions of (the first one)."""
        if self._preview is None:
            return True
        unbuilt = self._unbuilt.get(key)
        return unbuilt is None or bool(unbuilt[1])

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
        # Out of a preview: its cursor stays, and is announced (nothing was selected).
        previewed = self._cursor_path() if self._preview is not None else None
        self._preview = None
        keep = select or self._target or self.highlighted_path
        self._remember_folds()
        old = self._snapshot
        self._snapshot = snapshot
        if old is None or old.summaries.keys() != snapshot.summaries.keys() or not self._shorts:
            self._shorts = short_ids((s.id, path) for path, s in snapshot.summaries.items())
        if self._sort == "activity":
            self._newest = self._subtree_newest(snapshot)
        self._rebuild()
        self._show_title()
        if self._totals_on:
            self._queue_totals(snapshot, ())
        if keep is not None:
            # A rebuild only restores the cursor; it is not the user choosing a session.
            self.select_path(keep, announce=select is not None or keep == previewed)

    def on_mount(self) -> None:
        self._show_title()

    def on_resize(self) -> None:
        """Titles are cut to the pane's width: cut them again when it changes."""
        self._relabel_projects()
        if self._snapshot is not None:
            self.relabel(self._snapshot, list(self._session_nodes))

    def relabel(self, snapshot: RootSnapshot, paths: list[Path]) -> None:
        """Refresh the labels of some sessions (counts, live marker) in place; in
        activity order, rebuild instead if their activity changed the order."""
        old = self._snapshot
        self._snapshot = snapshot
        if self._sort == "activity" and old is not None and old is not snapshot:
            newest = self._subtree_newest(snapshot)
            if newest != self._newest:
                before = (list(self._project_of), list(self._project_nodes))
                self._newest = newest
                order = self._layout()
                if (list(order[1]), [f"project:{cwd}" for cwd, _, _ in order[0]]) != before:
                    self.show(snapshot)
                    return
        for path in paths:
            node = self._session_nodes.get(path)
            summary = snapshot.summaries.get(path)
            if node is not None and summary is not None:
                node.set_label(self._label(summary, _depth(node) - 1, toggle=node.allow_expand))

    @property
    def marked(self) -> Path | None:
        """The session marked for compare (`m`), if any."""
        return self._marked

    def set_marked(self, path: Path | None) -> None:
        """Mark a session for compare (`◆` before its label); the old mark goes."""
        old, self._marked = self._marked, path
        if self._snapshot is not None:
            self.relabel(self._snapshot, [p for p in (old, path) if p is not None])

    @property
    def shown_paths(self) -> list[Path]:
        """Every session shown (folded projects included), in display order."""
        return list(self._project_of)

    def short_id_of(self, path: Path) -> str | None:
        """The short id the tree shows for a log (unique under the root), if known."""
        return self._shorts.get(path)

    @property
    def sort(self) -> SortOrder:
        """The order sessions are shown in: `lineage` or `activity`."""
        return self._sort

    def set_sort(self, order: SortOrder) -> None:
        """Show sessions in lineage order or by newest activity (cursor kept)."""
        if order == self._sort:
            return
        self._end_preview()  # its summaries cannot order by activity
        self._sort = order
        self._newest = {}
        if self._snapshot is not None:
            self.show(self._snapshot)
        self._show_title()

    def action_toggle_sort(self) -> None:
        """`a`: lineage order <-> newest activity first."""
        self.set_sort("lineage" if self._sort == "activity" else "activity")

    @property
    def totals_shown(self) -> bool:
        """Each node's subtree total is shown beside its label."""
        return self._totals_on

    def subtree_total(self, path: Path) -> UsageTotals | None:
        """The subtree usage a session's label shows (None until folded)."""
        return self._totals.get(path)

    def action_toggle_totals(self) -> None:
        """`t`: show or hide each node's subtree total."""
        self._totals_on = not self._totals_on
        if self._totals_on:
            if self._snapshot is not None:
                self._queue_totals(self._snapshot, ())
        else:
            self._usage_generation += 1
            self._totals = {}
            if self._snapshot is not None:
                self.relabel(self._snapshot, list(self._session_nodes))
        self._show_title()

    def apply_appended(self, snapshot: RootSnapshot, appended: Sequence[Appended]) -> None:
        """Live: feed appended events to the subtree totals (off the UI thread)."""
        if self._totals_on and appended:
            self._queue_totals(snapshot, tuple(appended))

    def _show_title(self) -> None:
        title = Text("sessions", end="")
        title.append(" · by activity" if self._sort == "activity" else " · by lineage", "dim")
        if self._totals_on:
            title.append(" · Σ", style="bold magenta")
        self.border_title = title

    # -- subtree totals ----------------------------------------------------------------

    def _queue_totals(self, snapshot: RootSnapshot, appended: tuple[Appended, ...]) -> None:
        """Hand a snapshot (and the events appended since the last one) to the totals
        worker; batches are folded in the order they came, whichever worker runs (not
        a preview's: `show` hands over the scan's own)."""
        if self._preview is not None:
            return
        with self._pending_lock:
            self._pending_usage.append((snapshot, appended))
        self._fold_totals(self._usage_generation)

    @work(
        thread=True,
        group="tree-totals",
        exit_on_error=False,
        description="fold the subtree totals",
    )
    def _fold_totals(self, generation: int) -> None:
        """Fold each session once (then only its appended events) and add them up by
        lineage with the core's `combine`. One worker at a time holds the folds."""
        from turnline.core.logfile import LogReader
        from turnline.core.prices import load_prices
        from turnline.core.xdg import ConfigError

        with self._usage_lock:
            with self._pending_lock:
                pending, self._pending_usage = self._pending_usage, []
            if not pending:
                return  # an earlier worker folded these batches already
            folds, next_seq = self._usage_folds, self._usage_next
            if self._usage_folded_generation != generation:
                folds.clear()  # totals were off: appends were not fed meanwhile
                next_seq.clear()
                self._usage_folded_generation = generation
            snapshot = pending[-1][0]
            for _, appended in pending:
                for change in appended:
                    path = change.summary.path
                    if path not in folds:
                        continue  # folded whole below
                    if change.reset:
                        del folds[path]
                        continue
                    fresh = [e for e in change.events if e.seq >= next_seq[path]]
                    if fresh:
                        folds[path].feed(fresh)
                        next_seq[path] = fresh[-1].seq + 1
            for path in [p for p in folds if p not in snapshot.summaries]:
                del folds[path]
            for path, summary in snapshot.summaries.items():
                if get_current_worker().is_cancelled or generation != self._usage_generation:
                    return
                if path not in folds:
                    # Read whole (not `fold_log`'s fast pass): the last seq read tells
                    # which appended events this fold already holds.
                    events = LogReader(path).read().events
                    folds[path] = fold_events(events, summary.seed_length)
                    next_seq[path] = events[-1].seq + 1 if events else 0
            usage = combine(
                {
                    str(p): (s.id, s.parent_session, s.seed_length, folds[p])
                    for p, s in snapshot.summaries.items()
                },
                {str(c): str(p) for c, p in snapshot.lineage.parent_of.items()},
                {str(p): s.parent_session is not None for p, s in snapshot.summaries.items()},
            )
        try:
            prices = load_prices()
        except ConfigError:
            prices = None  # the usage screen says what is wrong with the file
        totals = {Path(s.path): s.subtree for s in usage.sessions}
        if generation == self._usage_generation:
            self.post_message(self.TotalsFolded(totals, prices))

    @on(TotalsFolded)
    def _on_totals_folded(self, message: TotalsFolded) -> None:
        message.stop()
        if not self._totals_on:
            return
        old, self._totals = self._totals, message.totals
        repriced = message.prices != self._prices
        self._prices = message.prices
        if self._snapshot is not None:
            # A live append changes its session's and its ancestors' totals: only
            # those labels are drawn again.
            changed = [
                path
                for path in self._session_nodes
                if repriced or old.get(path) != message.totals.get(path)
            ]
            self.relabel(self._snapshot, changed)

    def _total_text(self, path: Path) -> str | None:
        if not self._totals_on:
            return None
        totals = self._totals.get(path)
        if totals is None:
            return "…"
        cost = totals.cost(self._prices) if self._prices is not None else None
        return subtree_total_text(totals.total_tokens, cost)

    # -- order -------------------------------------------------------------------------

    @staticmethod
    def _subtree_newest(snapshot: RootSnapshot) -> dict[Path, int]:
        """Each session's newest activity, its descendants' included."""
        lineage = snapshot.lineage
        newest: dict[Path, int] = {}
        tops = [*lineage.roots, *(c for m in lineage.missing for c in m.children)]
        # Iterative post-order: lineage chains can be thousands of forks deep.
        stack: list[tuple[LineageNode, bool]] = [(n, False) for n in tops]
        entered: set[Path] = set()
        while stack:
            node, done = stack.pop()
            path = node.summary.path
            if done:
                value = activity_of(node.summary)
                for child in node.children:
                    value = max(value, newest.get(child.summary.path, 0))
                newest[path] = value
            elif path not in entered:
                entered.add(path)
                stack.append((node, True))
                stack.extend((c, False) for c in node.children)
        return newest

    def _ordered(self, nodes: Sequence[LineageNode]) -> list[LineageNode]:
        """Siblings in display order: as given, or newest subtree activity first."""
        if self._sort != "activity":
            return list(nodes)
        newest = self._newest
        return sorted(nodes, key=lambda n: -newest.get(n.summary.path, 0))

    def _item_newest(self, item: _Item) -> int:
        node = item[1]
        if isinstance(node, LineageNode):
            return self._newest.get(node.summary.path, 0)
        return max((self._newest.get(c.summary.path, 0) for c in node[1]), default=0)

    def set_filter(self, text: str) -> None:
        """Show only sessions whose title, id, cwd or path contains `text` (and kin)."""
        typed = text.strip()
        text = typed.lower()
        self._filter_typed = typed  # as typed, for the "no session matches" line
        if text == self._filter:
            return
        self._end_preview()  # its summaries cannot answer a filter
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

    def _label(self, summary: SessionSummary, depth: int, *, toggle: bool = True) -> Text:
        """A session's label; deeper nodes get shorter titles so that the short id and
        turn count stay in view however deep the lineage goes.

        Args:
            depth: The node's depth under its project.
            toggle: The node has children, so it shows a fold toggle (`▼ `).
        """
        snapshot = self._snapshot
        problems = (
            len(counted_problems(summary, snapshot.problems_of(summary.path))) if snapshot else 0
        )
        pane = self.scrollable_content_region.width
        # less the guides, the fold toggle if any, and a spare column
        room = pane - self.guide_depth * (depth + 1) - (2 if toggle else 0) - 1 if pane else None
        return session_label(
            summary,
            problems,
            room=room,
            filtered=bool(self._filter),
            short=self._shorts.get(summary.path),
            total=self._total_text(summary.path),
            marked=summary.path == self._marked,
        )

    def _project_label(self, cwd: str, count: int) -> Text:
        """A project's cwd, cut in the middle to the pane (its last folder stays)."""
        suffix = f"  {count}"
        pane = self.scrollable_content_region.width
        room = pane - self.guide_depth - 3 - len(suffix) if pane else 60
        label = Text(no_wrap=True, end="")
        label.append(middle_cut(one_line(cwd), max(room, 8)), style="bold")
        label.append(suffix, style="dim")
        return label

    def _relabel_projects(self) -> None:
        for key, (node, count) in self._project_nodes.items():
            node.set_label(self._project_label(key.removeprefix("project:"), count))

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
        if not self._filter:
            return True  # everything matches: no need to ask (or cache) per node
        hit = cache.get(node.summary.path)
        if hit is None:
            hit = self._matches(node.summary) or any(self._visible(c, cache) for c in node.children)
            cache[node.summary.path] = hit
        return hit

    def _layout(self) -> tuple[list[tuple[str, list[_Item], int]], dict[Path, str]]:
        """The projects shown (cwd, items, session count) in display order, and every
        session shown, in display order, to its project's key (no nodes made)."""
        self._visible_cache = {}
        snapshot = self._snapshot
        projects: list[tuple[str, list[_Item], int]] = []
        project_of: dict[Path, str] = {}
        if snapshot is None:
            return projects, project_of
        needle = self._filter
        by_project = project_groups(snapshot.lineage)
        if self._preview is not None:
            # Every project, as the scan's preview lists them; only the first one's
            # sessions are in the snapshot (no filter: `show_preview`).
            for cwd, count in self._preview.projects:
                shown = by_project.get(cwd, [])
                project_of.update(dict.fromkeys(self._shown_paths(shown), f"project:{cwd}"))
                projects.append((cwd, shown, count))
            return projects, project_of
        cwds = sorted(by_project, key=project_order)
        if self._sort == "activity":
            for items in by_project.values():
                items.sort(key=lambda item: -self._item_newest(item))
            cwds.sort(key=lambda c: -max(self._item_newest(i) for i in by_project[c]))
        for cwd in cwds:
            items = by_project[cwd]
            shown = [item for item in items if self._item_visible(item[1])] if needle else items
            if not shown:
                continue
            key = f"project:{cwd}"
            project_of.update(dict.fromkeys(self._shown_paths(shown), key))
            count = sum(1 for item in items if isinstance(item[1], LineageNode))
            projects.append((cwd, shown, count))
        return projects, project_of

    def _rebuild(self) -> None:
        self.clear()
        self._session_nodes = {}
        self._unbuilt = {}
        self._project_nodes = {}
        projects, self._project_of = self._layout()
        total = self._preview.total if self._preview is not None else len(self._project_of)
        self._eager = total <= EAGER_SESSIONS
        for cwd, shown, count in projects:
            key = f"project:{cwd}"
            project = self.root.add(
                self._project_label(cwd, count),
                data=TreeEntry("project", cwd),
                expand=self._unfolded(key),
                allow_expand=True,
            )
            self._project_nodes[key] = (project, count)
            self._unbuilt[key] = (project, shown)
            if self._unfolded(key) and self._buildable(key):
                self._build_project(key)
        snapshot = self._snapshot
        if not projects and self._filter and snapshot is not None and snapshot.summaries:
            # A filter that matches nothing says so (literal text: never markup).
            note = Text("no session matches '", style="italic", no_wrap=True, end="")
            note.append_text(line(self._filter_typed, style="italic bold", limit=60))
            note.append("'")
            self.root.add_leaf(note)

    def _item_visible(self, item: LineageNode | tuple[str, tuple[LineageNode, ...]]) -> bool:
        cache = self._visible_cache
        if isinstance(item, LineageNode):
            return self._visible(item, cache)
        return any(self._visible(c, cache) for c in item[1])

    def _shown_paths(self, shown: list[_Item]) -> list[Path]:
        """The sessions a project's items show, in display order (no nodes made)."""
        cache = self._visible_cache
        every = not self._filter  # all shown: no visibility to ask per node
        paths: list[Path] = []
        stack: list[LineageNode] = []
        for _kind, item in shown:
            roots = [item] if isinstance(item, LineageNode) else self._ordered(item[1])
            stack.extend(reversed([r for r in roots if every or self._visible(r, cache)]))
            while stack:
                node = stack.pop()
                paths.append(node.summary.path)
                if node.children:  # most sessions have none
                    kids = self._ordered(node.children)
                    stack.extend(reversed([c for c in kids if every or self._visible(c, cache)]))
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
                for child in self._ordered(children):
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
            kids = [c for c in self._ordered(lineage_node.children) if self._visible(c, cache)]
            label = self._label(summary, _depth(under), toggle=bool(kids))
            if kids:
                expand = self._folds.get(f"session:{summary.path}", True)
                node = under.add(label, data=entry, expand=expand)
            else:
                node = under.add_leaf(label, data=entry)
            self._session_nodes[summary.path] = node
            stack.extend((node, kid) for kid in reversed(kids))

    def _on_tree_node_expanded(self, event: Tree.NodeExpanded[TreeEntry]) -> None:
        data = event.node.data
        key = f"project:{data.key}" if data is not None and data.kind == "project" else None
        if key is not None and self._buildable(key):
            self._build_project(key)
        elif key is not None and key in self._unbuilt and not event.node.children:
            # A preview's project whose summaries are still being read: `show` builds it
            # (the fold is remembered) when the scan ends.
            event.node.add_leaf(Text("reading the logs…", style="dim italic"))

    def _on_tree_node_highlighted(self, event: Tree.NodeHighlighted[TreeEntry]) -> None:
        event.stop()
        data = event.node.data
        path = data.path if data is not None and self._preview is None else None
        self.post_message(self.SessionHighlighted(path))
