"""The turnline app: session tree, turn timeline, turn detail; fork; live refresh."""

from __future__ import annotations

import contextlib
import functools
import os
import queue
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, NamedTuple, TypeVar, cast

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult, ScreenStackError
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.timer import Timer
from textual.widgets import Header, Input
from textual.worker import Worker, WorkerState, get_current_worker
from turnline.core.content import turn_blocks
from turnline.core.formats import seed_seqs_note
from turnline.core.index import IndexCancelled
from turnline.core.model import LogProblem, SessionEvent
from turnline.core.preview import HeadPreview, head_preview, worth_previewing
from turnline.core.root import (
    BackgroundScan,
    RootError,
    ScanPreview,
    SessionLookupError,
    SessionRoot,
    layout_session_id,
    no_gc,
    no_sessions_message,
)
from turnline.core.store import ForkErrorCode, SessionForkError
from turnline.core.summary import SessionSummary
from turnline.core.timeline import Turn
from turnline.core.view import OPEN_TURN, SessionView, TurnView

from ._text import line, one_line
from .after_fork import AFTER_FORK_BINDINGS, AfterForkActions
from .commands import TurnlineCommands
from .messages import (
    Appended,
    Forked,
    IndexProgress,
    PreviewRead,
    RootChanged,
    RootFailed,
    RootPreviewed,
    RootScanned,
    RootSnapshot,
    SessionLoaded,
    TokensRead,
)
from .pane_keys import PANE_BINDINGS, PaneActions
from .screens import ForkPlan, ForkRequest, ForkScreen
from .widgets import Divider, KeyFooter, SessionTree, TurnDetail, TurnTimeline, turn_content
from .widgets._session_tree import short_id

if TYPE_CHECKING:
    from .screens._usage import UsageScreen

_Handler = TypeVar("_Handler", bound=Callable[..., None])

#: Seconds a live session must stay quiet before the detail pane follows its last turn.
LIVE_DETAIL_DELAY = 0.3


def while_shown(handler: _Handler) -> _Handler:
    """Handle a message only while the main screen is up.

    Workers keep posting until they notice the stop; by then the panes may be unmounted:
    such a message is dropped. One that comes before the app's first frame (a scan or a
    log head read while the app starts) is handled after a refresh instead: dropping it
    would leave the app waiting for it.
    """

    @functools.wraps(handler)
    def guarded(self: TurnlineApp, *args: Any) -> None:
        if self._stop.is_set():
            return  # shutting down
        if not self._first_frame:
            self.call_after_refresh(guarded, self, *args)  # starting: the first frame is near
            return
        if not self.is_running:
            # Shutting down (`App._shutdown` stops running first, then removes the panes
            # while messages are still handled): a load that lands now has no timeline.
            return
        try:
            if not self.screen_stack[0].is_mounted:
                return
        except (ScreenStackError, IndexError):
            return
        handler(self, *args)

    return cast(_Handler, guarded)


#: The verdict on a turn of a big log's head preview: the fork rule needs the whole log.
PREVIEW_REFUSAL = "the log is still being indexed: fork once it is loaded"


def preview_verdict(index: int, turn: Turn) -> TurnView:
    """A big log's head turn before the core has judged it: no fork is offered yet, and
    a closed turn is `pending` (not past a seq gap: the verdict waits for the index)."""
    if turn.end_seq is None:
        return TurnView(turn, index, False, OPEN_TURN.format(number=turn.number))
    return TurnView(turn, index, False, PREVIEW_REFUSAL, pending=True)


def preview_turns(preview: HeadPreview) -> tuple[TurnView, ...]:
    """A big log's head turns as rows (the same verdicts the detail pane shows)."""
    return tuple(preview_verdict(i, t) for i, t in enumerate(preview.timeline.turns))


def snapshot_of(root: SessionRoot) -> RootSnapshot:
    """A frozen picture of the root's sessions and lineage (call under the root lock)."""
    return RootSnapshot({s.path: s for s in root.summaries()}, root.lineage(), root.path)


def plural(count: int, noun: str) -> str:
    """`1 session`, `2 sessions`."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def rescan_note(before: RootSnapshot | None, after: RootSnapshot) -> str:
    """What `r` found, compared with what the tree showed before it."""
    note = f"rescanned: {plural(len(after.summaries), 'session')}"
    if before is None:
        return note
    new = sum(1 for path in after.summaries if path not in before.summaries)
    gone = sum(1 for path in before.summaries if path not in after.summaries)
    if not new and not gone:
        return f"{note}, no change"
    return note + (f", {new} new" if new else "") + (f", {gone} gone" if gone else "")


class CatalogUpdate(NamedTuple):
    """Logs the watcher saw change, for the worker that keeps the search catalog current."""

    changed: frozenset[Path]
    """Logs appended to (or rewritten): re-indexed from where the catalog stopped."""
    structural: bool
    """Logs were added, removed or renamed: the catalog walks the root (and relinks)."""


class TurnlineApp(AfterForkActions, PaneActions, App[int]):
    """Browse, follow and fork the dsh session logs under a root (or one log).

    Args:
        path: A root directory or a single `.jsonl` / `.jsonl.zstd` log.
        poll: Watch by polling file sizes instead of OS notifications.
        tz: The time zone turn times are shown in (None: the local one). Times come
            from the logs only, never from the clock, so a fixed zone gives a fixed
            screen.
    """

    CSS_PATH = "app.tcss"
    TITLE = "turnline"
    AUTO_FOCUS = "#sessions"
    COMMANDS = App.COMMANDS | {TurnlineCommands}

    BINDINGS: ClassVar[list[BindingType]] = [
        # First: the footer drops what does not fit at the right, and Help must stay.
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
        Binding("f", "fork", "Fork"),
        # When `fork` is disabled the key falls through to this one, which says why.
        Binding("f", "explain_fork", "Fork", show=False),
        Binding("p", "parent", "Parent"),
        # When `parent` is disabled the key falls through to this one, which says why.
        Binding("p", "explain_parent", "Parent", show=False),
        Binding("v", "toggle_raw", "Raw"),
        Binding("V", "toggle_lines", "Event lines", show=False),
        Binding("slash", "filter", "Filter"),
        Binding("r", "reload", "Reload"),
        # Shown when the window is wide enough (the footer drops the rest at the right;
        # `?` lists every key).
        Binding("s", "search", "Search"),
        Binding("u", "usage", "Usage"),
        Binding("w", "conversation", "Conversation"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        *AFTER_FORK_BINDINGS,
        *PANE_BINDINGS,
    ]

    def __init__(
        self,
        path: Path,
        *,
        poll: bool = False,
        tz: tzinfo | None = None,
        scan: BackgroundScan | None = None,
        subtitle: str | None = None,
    ) -> None:
        """Args:
        path: A root folder or one log.
        poll: Watch by polling sizes instead of file-system events.
        tz: Time zone for times shown (the local one by default).
        scan: The root's scan, already started (`SessionRoot.scan_in_background`)
            before Textual was imported, so the two overlap.
        subtitle: The header's subtitle (e.g. the demo's root); by default the root
            folder's name, or for one log its session's title and short id.
        """
        super().__init__()
        self.path = Path(path)
        self._subtitle = subtitle
        #: `r` was pressed: the scan that follows says what it found.
        self._rescanning = False
        #: The open session's log before and after its folder was renamed, while the
        #: new path loads.
        self._moved: tuple[Path, Path] | None = None
        #: What the watcher saw change, for `_feed_catalog`.
        self._catalog_updates: queue.Queue[CatalogUpdate] = queue.Queue()
        self._pending_scan = scan
        self._first_frame = False  # the first frame is on screen (`on_ready`)
        self.poll = poll
        self.tz = tz
        self.root: SessionRoot | None = None
        self.snapshot: RootSnapshot | None = None
        self.view: SessionView | None = None
        self._root_lock = threading.Lock()
        self._stop = threading.Event()
        self._wanted: Path | None = None
        self._pending_seq: int | None = None
        #: The session the detail pane's find belongs to: moving to another closes it.
        self._find_path: Path | None = None
        self._watching = False
        self._early: list[tuple[SessionEvent, ...]] = []
        #: Set to stop the load under way (the user chose another session, or quit).
        self._load_cancel = threading.Event()
        #: The first turns of a big log, shown while it is indexed (until it loads).
        self.preview: HeadPreview | None = None
        self._binding_state: tuple[bool | None, ...] | None = None
        self._detail_timer: Timer | None = None
        self._head: Future[HeadPreview | None] | None = None
        if worth_previewing(self.path):
            # Read while Textual starts up (a few hundred ms), so the first turns are
            # ready when the screen is.
            pool = ThreadPoolExecutor(1, thread_name_prefix="turnline-head")
            self._head = pool.submit(head_preview, self.path)
            pool.shutdown(wait=False)

    # -- layout --------------------------------------------------------------------

    # The panes are looked up on the main screen, not `self.screen`: bindings are
    # re-checked while a modal (fork, help) is on top.
    @property
    def session_tree(self) -> SessionTree:
        """The session tree."""
        return self.screen_stack[0].query_one(SessionTree)

    @property
    def timeline(self) -> TurnTimeline:
        """The turn timeline."""
        return self.screen_stack[0].query_one(TurnTimeline)

    @property
    def detail(self) -> TurnDetail:
        """The detail pane."""
        return self.screen_stack[0].query_one(TurnDetail)

    @property
    def filter_box(self) -> Input:
        """The session filter."""
        return self.screen_stack[0].query_one("#filter", Input)

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with Vertical(id="left"):
            yield Input(placeholder="filter: title, id, cwd or path", id="filter")
            yield SessionTree(id="sessions")
        with Vertical(id="right"):
            yield TurnTimeline(tz=self.tz, id="timeline")
            yield TurnDetail(tz=self.tz, id="detail")
        yield KeyFooter()

    def on_mount(self) -> None:
        if not self.is_headless and _is_terminal(sys.__stdin__):
            # A terminal that goes away without a SIGHUP reaching us (its pty closed
            # under a parent that outlived it) leaves Textual's input thread reading
            # EOF in a loop at full CPU: leave when stdin stops being a terminal.
            self.set_interval(TERMINAL_CHECK, self.watch_terminal)
        if self._subtitle is not None:
            self.sub_title = one_line(self._subtitle)  # `Content`, never markup
        elif self.path.is_file():
            # Until the scan names the session: its id from the folder, not `session.jsonl`.
            self.sub_title = one_line(layout_session_id(self.path) or self.path.name, 60)
        else:
            self.sub_title = one_line(self.path.name or str(self.path), 60)
        tree = self.session_tree
        # Text, not the loading overlay: its animation would take the interpreter
        # from the scan (a third of a 10,000-session scan went to redrawing it).
        tree.border_subtitle = "scanning…"
        tree.focus()
        self.timeline.border_title = Text("turns")
        self.detail.border_title = Text("detail")
        if self._head is not None:
            # One big log: show its first turns, then index it (the scan does), as
            # toolong shows a file's first lines before its index is built. (The head
            # is often read before the first frame: `while_shown` holds it until then.)
            head = self._head
            if head.done() and head.exception() is None:
                # Read already (while the app was composed): its rows go into the first
                # frame, rather than into the one after it.
                self._show_preview(head.result())
            else:
                self._preview(head)
        else:
            self._scan()

    def on_ready(self) -> None:
        self._first_frame = True

    def on_unmount(self) -> None:
        self._stop.set()
        self._load_cancel.set()

    # -- workers (all file I/O happens here; they only post messages) ---------------

    # Every worker has a fixed description: without one, Textual builds it from the
    # repr of the arguments, and a session view's repr holds its whole timeline (tens
    # of ms per highlighted turn on a big log, on the UI thread).

    @work(
        thread=True, exclusive=True, group="scan", exit_on_error=False, description="scan the root"
    )
    def _scan(self) -> None:
        with self._root_lock:
            pending, self._pending_scan = self._pending_scan, None
            if pending is not None:
                root = pending.root
            else:
                root = self.root if self.root is not None else SessionRoot(self.path)
            with no_gc(freeze=True):  # thousands of long-lived summaries: see `no_gc`
                if pending is not None:
                    pending.result(on_preview=self._post_preview)
                else:
                    root.scan()
                snapshot = snapshot_of(root)
        self.post_message(RootScanned(root, snapshot))

    def _post_preview(self, preview: ScanPreview) -> None:
        """Hand a scan's preview to the UI thread (called in the scan's thread)."""
        self.post_message(RootPreviewed(preview))

    @work(
        thread=True,
        exclusive=True,
        group="watch",
        exit_on_error=False,
        description="watch the root",
    )
    def _watch(self, root: SessionRoot) -> None:
        """The one long-lived watcher of the root; ends when `_stop` is set."""
        # Imported here: watchfiles costs tens of ms at startup, before the first screen.
        from turnline.core.watcher import (
            EventsAppended,
            ProblemFound,
            RootGone,
            RootWatcher,
            SessionAdded,
            SessionRemoved,
        )

        with self._root_lock:
            # The watcher keeps its own root current; ours is updated from its changes
            # under the lock, so loads and forks never see a half-applied batch.
            shadow = SessionRoot(root.single or root.path)
            shadow.adopt_summaries(root.summaries())
        watcher = RootWatcher(shadow, poll=self.poll)
        for batch in watcher.watch(self._stop):
            if not batch:
                continue
            appended: list[Appended] = []
            removed: list[Path] = []
            moved: dict[Path, Path] = {}
            problems: list[LogProblem] = []
            gone: str | None = None
            structural = False
            with self._root_lock:
                for change in batch:
                    if isinstance(change, SessionAdded):
                        root.update(change.summary)
                        structural = True
                    elif isinstance(change, EventsAppended):
                        root.update(change.summary)
                        appended.append(Appended(change.summary, change.events, change.reset))
                    elif isinstance(change, SessionRemoved):
                        root.remove(change.path)
                        removed.append(change.path)
                        structural = True
                        if change.moved_to is not None:
                            moved[change.path] = change.moved_to
                    elif isinstance(change, ProblemFound):
                        problems.append(change.problem)
                    elif isinstance(change, RootGone):
                        gone = change.message
                snapshot = snapshot_of(root)
            self.post_message(RootChanged(snapshot, appended, removed, problems, moved))
            changed = frozenset(a.summary.path for a in appended)
            if changed or structural:
                self._catalog_updates.put(CatalogUpdate(changed, structural))
            if gone is not None:
                self.post_message(RootFailed(gone))
                return

    @work(
        thread=True,
        exclusive=True,
        group="catalog",
        exit_on_error=False,
        description="keep the search catalog current",
    )
    def _feed_catalog(self, root: Path) -> None:
        """Bring the root's search catalog current with what the watcher saw, while the
        app is open; ends when `_stop` is set.

        Only a catalog that exists is fed (a search made one, here or in another
        process): opening the app never builds a whole catalog unasked. The catalog
        is opened in this thread, which alone uses it (sqlite connections are
        per-thread). Appends re-index just the logs that grew (the catalog reads only
        their new turns); added, removed or renamed logs make it walk the root, which
        also re-links parents and children.
        """
        import sqlite3

        from turnline.core.catalog import Catalog, CatalogError, catalog_path

        catalog: Catalog | None = None
        try:
            while not self._stop.is_set():
                try:
                    update = self._catalog_updates.get(timeout=0.25)
                except queue.Empty:
                    continue
                changed, structural = set(update.changed), update.structural
                with contextlib.suppress(queue.Empty):
                    while True:  # a burst of batches: one pass over what they touched
                        more = self._catalog_updates.get_nowait()
                        changed |= more.changed
                        structural = structural or more.structural
                if not catalog_path(root).exists():
                    if catalog is not None:
                        catalog.close()  # deleted meanwhile: a search will make a new one
                        catalog = None
                    continue
                try:
                    if catalog is None:
                        catalog = Catalog(root)
                    if structural:
                        catalog.refresh()
                    else:
                        for path in sorted(changed):
                            catalog.index(path)
                except (CatalogError, sqlite3.Error, OSError):
                    # Only a cache: the next search brings it current (and reports what
                    # stops it). Start afresh with the next batch.
                    if catalog is not None:
                        with contextlib.suppress(sqlite3.Error):
                            catalog.close()
                    catalog = None
        finally:
            if catalog is not None:
                catalog.close()

    @work(
        thread=True,
        exclusive=True,
        group="preview",
        exit_on_error=False,
        description="read a big log's head",
    )
    def _preview(self, head: Future[HeadPreview | None]) -> None:
        self.post_message(PreviewRead(head.result()))

    @work(
        thread=True, exclusive=True, group="load", exit_on_error=False, description="load a session"
    )
    def _load(self, root: SessionRoot, summary: SessionSummary, cancel: threading.Event) -> None:
        path = summary.path

        def progress(fraction: float) -> None:
            self.post_message(IndexProgress(path, fraction))

        try:
            # Outside the root lock: watcher batches never wait behind a big log's index.
            # Without collections, and what is alive afterwards frozen (see `no_gc`): the
            # session's index and turns are long-lived, and the collections of a live
            # session would otherwise walk them, and every widget, again (tens of ms on
            # the UI thread, between a write and its row).
            with no_gc(freeze=True):
                loaded = root.load(summary, progress=progress, cancel=cancel)
                view = SessionView(loaded)
        except IndexCancelled:
            return  # the user moved on (or quit): not an error
        if get_current_worker().is_cancelled or cancel.is_set():
            return
        with self._root_lock:
            snapshot = snapshot_of(root)
        self.post_message(SessionLoaded(view, snapshot))

    @work(
        thread=True,
        exclusive=True,
        group="detail",
        exit_on_error=False,
        description="read a turn's content",
    )
    def _read_turn(self, view: SessionView | HeadPreview, index: int, turn: Turn) -> None:
        """Read one turn and build what the detail pane draws, off the UI thread: the
        fork rule's verdict, the content blocks and the bounded raw text (core values)."""
        if isinstance(view, SessionView):
            verdict = view.turn_view(index)
            if verdict is None:
                return
            events = view.turn_events(index)
            blocks = view.blocks(index, events)
        else:
            events = view.events_between(turn.first_seq, turn.end_seq)
            verdict = preview_verdict(index, turn)
            blocks = turn_blocks(events)
        if get_current_worker().is_cancelled:
            return
        content = turn_content(view, index, verdict, blocks, events, root=self.root, tz=self.tz)
        if not get_current_worker().is_cancelled:
            self.post_message(TurnDetail.ContentRead(view.path, index, content))

    @work(
        thread=True, exclusive=True, group="fork", exit_on_error=False, description="fork a session"
    )
    def _fork(self, root: SessionRoot, summary: SessionSummary, request: ForkRequest) -> None:
        with self._root_lock:
            result = root.fork(summary, request.plan.boundary, request.child_id)
            snapshot = snapshot_of(root)
        self.post_message(Forked(result, snapshot))

    @on(Worker.StateChanged)
    @while_shown
    def _on_worker_state(self, event: Worker.StateChanged) -> None:
        """The one place worker failures become something the user can read."""
        worker = event.worker
        if event.state is not WorkerState.ERROR:
            return
        error = worker.error
        if worker.group == "load":
            self.timeline.loading = False
            self._moved = None  # a renamed session that could not be read: not followed
        if isinstance(error, SessionForkError):
            screen = self.screen
            if isinstance(screen, ForkScreen):
                if error.code is ForkErrorCode.SESSION_ALREADY_EXISTS:
                    screen.show_error(f"{error.code}: {error.message}")
                    return
                screen.dismiss(None)
            self.notify(
                f"{error.code}: {error.message}",
                title="Fork failed",
                severity="error",
                markup=False,
                timeout=8,
            )
        elif isinstance(error, RootError):
            self.post_message(RootFailed(str(error)))
        elif isinstance(error, SessionLookupError):
            self.notify(f"{error.code}: {error.message}", severity="error", markup=False)
        else:
            self.notify(
                f"{worker.group} failed: {type(error).__name__}: {error}",
                severity="error",
                markup=False,
                timeout=8,
            )

    # -- root ----------------------------------------------------------------------

    @on(RootPreviewed)
    @while_shown
    def _on_root_previewed(self, message: RootPreviewed) -> None:
        if self.snapshot is None:  # (a scan that ended first shows the real tree)
            self.session_tree.show_preview(message.preview)

    @on(RootScanned)
    @while_shown
    def _on_root_scanned(self, message: RootScanned) -> None:
        before = self.snapshot
        self.root = message.root
        self.snapshot = message.snapshot
        tree = self.session_tree
        tree.border_subtitle = ""
        first = self.view is None and self._wanted is None
        select = self._wanted
        if select is None and self.view is not None:
            select = self.view.path
        tree.show(message.snapshot, select=select)
        self._note_empty_root()
        self._name_single_session()
        if self._rescanning:
            self._rescanning = False
            self.notify(rescan_note(before, message.snapshot), title="Reload", markup=False)
        if self.focused is None:
            tree.focus()  # e.g. the filter box was closed while scanning
        if first and tree.highlighted_path is None:
            tree.select_first_session()
        if self.view is not None and self.view.path in message.snapshot.summaries:
            self._start_load(self.view.path, force=True)
        if not self._watching:
            self._watching = True
            # Once the tree is drawn: the watcher's start (watchfiles' import, a watch
            # on every folder, a `stat` of every log and a walk to prime itself) would
            # otherwise hold the interpreter while the first tree is laid out and drawn.
            # Nothing written meanwhile is missed: its first batch is what changed since
            # the scan.
            self.call_after_refresh(self._start_watching, message.root)

    def _start_watching(self, root: SessionRoot) -> None:
        """Start the root's watcher and the worker that feeds its changes to the search
        catalog (once, after the first tree is on screen)."""
        if self._stop.is_set():
            return  # closed before the first tree was drawn
        self._watch(root)
        self._feed_catalog(root.path)

    def _note_empty_root(self) -> None:
        """A root with no session says so in the tree (the CLI's words), with the
        folders that could not be listed; the note goes with the next rebuild."""
        snapshot, root = self.snapshot, self.root
        if snapshot is None or root is None or snapshot.summaries:
            return
        lines = [no_sessions_message(root.path)]
        lines += [
            f"cannot list {one_line(str(f))}: {one_line(why)}" for f, why in root.scan_problems
        ]
        self._note_in_tree(lines)

    def _note_in_tree(self, lines: list[str]) -> None:
        """Sentences in the empty tree pane, wrapped to its width (literal text)."""
        tree = self.session_tree
        if tree.root.children:
            return  # already said (a filter rebuild, or a batch that changed nothing)
        width = max(tree.scrollable_content_region.width - 2, 16)
        for sentence in lines:
            wrapped = Text(sentence, style="italic").wrap(self.console, width, overflow="fold")
            for part in wrapped:
                tree.root.add_leaf(part)

    def _name_single_session(self) -> None:
        """For one log, the header names its session (title and short id)."""
        root, snapshot = self.root, self.snapshot
        if self._subtitle is not None or root is None or root.single is None or snapshot is None:
            return
        summary = snapshot.summaries.get(root.single)
        if summary is not None:
            title = one_line(summary.display_title(), 60)
            sid = short_id(summary.id)
            self.sub_title = title if title.startswith(sid) else f"{title} · {sid}"

    @on(RootChanged)
    @while_shown
    def _on_root_changed(self, message: RootChanged) -> None:
        # The usage screen's module (and its imports: a tenth of a second) is loaded by
        # `u`; until then no usage screen can be up, and a live append must not wait
        # for that import.
        usage = sys.modules.get(f"{__package__}.screens._usage")
        screen = self.screen
        if usage is not None and isinstance(screen, usage.UsageScreen):
            # It feeds only the appended events to its folds.
            cast("UsageScreen", screen).apply(message)
        old, new = self.snapshot, message.snapshot
        self.snapshot = new
        # Before the tree is rebuilt: it then keeps the cursor on the renamed session,
        # whose load is under way, rather than on a neighbour.
        followed = self._follow_rename(message)
        tree = self.session_tree
        if (
            old is None
            or old.summaries.keys() != new.summaries.keys()
            or old.lineage.parent_of != new.lineage.parent_of
        ):
            # Revealed: a filter that matched its old path may not match the new one.
            tree.show(new, select=followed, reveal=followed is not None)
            self._note_empty_root()
            if old is not None and not old.summaries and self.view is None:
                tree.select_first_session()  # the first session of an empty root
            self._name_single_session()
        else:
            changed = [
                path
                for path, summary in new.summaries.items()
                if old.summaries.get(path) != summary
                or old.problems_of(path) != new.problems_of(path)
            ]
            tree.relabel(new, changed)
        tree.apply_appended(new, message.appended)
        for problem in message.problems:
            self.notify(problem.message, title=str(problem.kind), severity="warning", markup=False)
        if self._wanted is not None:
            # Appends that race a load in progress: applied (deduplicated) when it lands.
            self._early.extend(c.events for c in message.appended if c.summary.path == self._wanted)
        view = self.view
        if view is None:
            return
        if self._moved is not None and view.path == self._moved[0]:
            return  # its folder was renamed: the load of its new path takes over
        if view.path not in new.summaries:
            self.view = None
            timeline = self.timeline
            timeline.clear()
            timeline.show_empty()
            self.detail.show_turn(None, [], (), note="this session's log was removed")
            self._refresh_bindings()
            return
        if view.path == self._wanted:
            return  # a reload is under way: its result (plus `_early`) supersedes this
        batches: list[tuple[SessionEvent, ...]] = []
        for change in message.appended:
            if change.summary.path != view.path:
                continue
            if change.reset:
                self._start_load(view.path, force=True)
                return
            batches.append(change.events)
        if view.extend(batches):
            self.timeline.grow(view.turns)
            self._refresh_bindings()

    def _follow_rename(self, message: RootChanged) -> Path | None:
        """If the open (or loading) session's folder was renamed, load it from its new
        path, keeping the timeline on screen and the cursor where it is; its new path."""
        view = self.view
        current = self._wanted or (view.path if view is not None else None)
        target = message.moved.get(current) if current is not None else None
        if target is None or target not in message.snapshot.summaries:
            return None
        self._start_load(target, force=True, quiet=True)
        if self._find_path == current:
            self._find_path = target  # the same session: its find stays
        if view is not None and message.moved.get(view.path) == target:
            self._moved = (view.path, target)
        return target

    @on(RootFailed)
    @while_shown
    def _on_root_failed(self, message: RootFailed) -> None:
        self.session_tree.border_subtitle = ""
        self._note_in_tree([one_line(message.message)])  # if no session was shown
        self.detail.show_turn(None, [], (), note=message.message)
        self.notify(message.message, title="Cannot open root", severity="error", markup=False)

    # -- selecting sessions and turns ----------------------------------------------

    @on(SessionTree.SessionHighlighted)
    @while_shown
    def _on_session_highlighted(self, message: SessionTree.SessionHighlighted) -> None:
        if message.path is not None:
            self._leave_find(message.path)
            self._start_load(message.path)

    def _leave_find(self, path: Path) -> None:
        """A find (Ctrl+F, or a search hit's) belongs to its session: moving to another
        session clears it and closes its bar."""
        if path == self._find_path:
            return
        self._find_path = path
        detail = self.detail
        if detail.check_action("clear_find", ()):
            detail.action_clear_find()

    @on(SessionTree.NodeSelected)
    @while_shown
    def _on_node_selected(self, event: SessionTree.NodeSelected[Any]) -> None:
        data = event.node.data
        if data is not None and data.path is not None:
            self.timeline.focus()

    def _start_load(self, path: Path, *, force: bool = False, quiet: bool = False) -> None:
        """Load a session (unless it is the one shown or loading, or `force`); `quiet`
        keeps the timeline as it is until the load lands (no loading overlay)."""
        if self.root is None or self.snapshot is None:
            return
        if not force and (
            self._wanted == path or (self._wanted is None and self.view and self.view.path == path)
        ):
            return
        summary = self.snapshot.summaries.get(path)
        if summary is None:
            return
        self._moved = None  # a rename being followed gives way to this load
        self._wanted = path
        self._early = []
        self._load_cancel.set()  # a big log still being indexed for another choice
        self._load_cancel = threading.Event()
        timeline = self.timeline
        if self.preview is not None and self.preview.path != path:
            self._drop_preview()
        if self.preview is None and not quiet:
            timeline.loading = True
        self._load(self.root, summary, self._load_cancel)

    @on(SessionLoaded)
    @while_shown
    def _on_session_loaded(self, message: SessionLoaded) -> None:
        view = message.view
        if view.path != self._wanted:
            return  # the user moved on before this load finished
        self._wanted = None
        early, self._early = self._early, []
        view.extend(early)
        shown = self.view.path if self.view is not None else None
        # The same session at a new path (its folder was renamed) keeps its cursor too.
        same = shown == view.path or (shown, view.path) == self._moved
        self._moved = None
        timeline = self.timeline
        cursor = timeline.current_turn_index if same else None
        preview, self.preview = self.preview, None
        if preview is not None and preview.path == view.path and timeline.cursor_row > 0:
            cursor = timeline.current_turn_index  # the user moved while it was indexed
        timeline.border_subtitle = ""
        self.view = view
        self.snapshot = message.snapshot
        self.session_tree.relabel(message.snapshot, [view.path])
        if self._pending_seq is not None:
            seq, self._pending_seq = self._pending_seq, None
            from turnline.core.find import turn_holding

            # A search hit's seq may lie inside a turn; a parent's boundary ends one.
            target = turn_holding(view.turns, seq) or view.turn_of_seq(seq)
            if target is not None:
                cursor = target.index
        timeline.loading = False
        summary = view.loaded.summary
        title = Text("turns · ", end="")
        title.append_text(line(summary.display_title(), limit=50))
        timeline.border_title = title
        timeline.show(view.turns, self._divider_of(view), cursor_turn=cursor)
        if not timeline.turns:
            self._show_detail_note("this session has no turns yet")
        self._refresh_bindings()
        if view.usage_pending:  # a big log: its tokens column fills in after the load
            self._scan_tokens(view, self._load_cancel)

    @work(
        thread=True,
        exclusive=True,
        group="tokens",
        exit_on_error=False,
        description="read a big log's tokens",
    )
    def _scan_tokens(self, view: SessionView, cancel: threading.Event) -> None:
        tokens = view.scan_usage(cancel)
        if tokens is not None and not get_current_worker().is_cancelled:
            self.post_message(TokensRead(view, tokens))

    @on(TokensRead)
    @while_shown
    def _on_tokens_read(self, message: TokensRead) -> None:
        view = message.view
        if view is self.view and view.install_usage(message.tokens):
            self.timeline.grow(view.turns)

    @on(PreviewRead)
    @while_shown
    def _on_preview_read(self, message: PreviewRead) -> None:
        self._show_preview(message.preview)

    def _show_preview(self, preview: HeadPreview | None) -> None:
        # The scan (which indexes the log) starts once the preview is on screen: run
        # beside it, the two would share one interpreter lock and both be late.
        self.call_after_refresh(self._scan)
        if preview is None or self.view is not None or self._wanted is not None:
            return
        self.preview = preview
        timeline = self.timeline
        timeline.loading = False
        title = Text("turns · ", end="")
        title.append_text(line(preview.timeline.title or preview.path.name, limit=50))
        timeline.border_title = title
        timeline.border_subtitle = "indexing…"
        timeline.show(preview_turns(preview), None, cursor_turn=0)
        self._refresh_bindings()

    def _show_preview_turn(self, preview: HeadPreview, index: int) -> None:
        timeline = self.timeline
        if self.preview is not preview or timeline.current_turn_index != index:
            return
        self._read_turn(preview, index, timeline.turns[index])

    def _drop_preview(self) -> None:
        self.preview = None
        timeline = self.timeline
        timeline.border_subtitle = ""
        timeline.show_empty()

    @on(IndexProgress)
    @while_shown
    def _on_index_progress(self, message: IndexProgress) -> None:
        if message.path != self._wanted:
            return
        timeline = self.timeline
        text = f"indexing {message.fraction:.0%}"
        if self.preview is not None:
            timeline.border_subtitle = text
        else:
            timeline.loading = False
            timeline.border_subtitle = text
            if not timeline.turns:
                timeline.show_empty()

    def _divider_of(self, view: SessionView) -> Divider | None:
        header = view.loaded.summary.header
        if header is None or header.parent_session is None or header.seed_length is None:
            return None
        parent_path = view.loaded.parent_path
        parent = None
        if self.snapshot is not None and parent_path is not None:
            parent = self.snapshot.summaries.get(parent_path)
        title = (
            parent.display_title() if parent is not None else f"{header.parent_session} (missing)"
        )
        short = self.session_tree.short_id_of(parent_path) if parent_path is not None else None
        split = view.timeline.split_at(header.seed_length)
        note = "" if parent_path is None else seed_seqs_note(parent_path, header.version)
        return Divider(
            title,
            header.parent_session,
            header.seed_length - 1,
            short or "",
            None if split is None else split.number,
            note,
        )

    def watch_terminal(self) -> None:
        """Exit (status 1) once stdin is no longer the terminal it was: a hang-up."""
        if not _is_terminal(sys.__stdin__):
            self.exit(return_code=1)

    def _problems(self) -> tuple[Any, ...]:
        return self.view.loaded.problems if self.view is not None else ()

    def _show_detail_note(self, note: str) -> None:
        self.detail.show_turn(None, (), self._problems(), note=note)

    @on(TurnTimeline.TurnHighlighted)
    @while_shown
    def _on_turn_highlighted(self, message: TurnTimeline.TurnHighlighted) -> None:
        self._refresh_bindings()
        view = self.view
        timeline = message.timeline
        if view is None:
            preview = self.preview
            index = timeline.current_turn_index
            if preview is not None and index is not None:
                # After the rows are drawn: the detail pane mounts many widgets.
                self.call_after_refresh(self._show_preview_turn, preview, index)
            return
        # The message may be stale (rows replaced since): read the cursor as it is now.
        index = timeline.current_turn_index
        if index is None:
            if timeline.divider is not None and timeline.on_divider:
                divider = timeline.divider
                self._show_detail_note(
                    f"Forked from {one_line(divider.parent_title, 60)} "
                    f"({divider.parent_id}) at seq {divider.boundary}: the rows above are "
                    "the inherited seed. Enter jumps to the parent at that turn."
                )
            return
        if self._detail_timer is not None:
            self._detail_timer.stop()
            self._detail_timer = None
        if message.live:
            # A live session moved the cursor: the new row is drawn now, the detail
            # (many widgets) once the stream pauses, so appends never queue behind it.
            self._detail_timer = self.set_timer(LIVE_DETAIL_DELAY, self._read_current_turn)
            return
        self._read_turn(view, index, timeline.turns[index])

    def _read_current_turn(self) -> None:
        self._detail_timer = None
        view = self.view
        timeline = self.timeline
        index = timeline.current_turn_index
        if view is not None and index is not None:
            self._read_turn(view, index, timeline.turns[index])

    @on(TurnDetail.ContentRead)
    @while_shown
    def _on_turn_events(self, message: TurnDetail.ContentRead) -> None:
        timeline = self.timeline
        if timeline.current_turn_index != message.turn_index:
            return
        view, preview = self.view, self.preview
        if view is not None and view.path == message.path:
            problems = self._problems()
        elif view is None and preview is not None and preview.path == message.path:
            problems = ()
        else:
            return
        self.detail.show_content(message.content, problems)

    @on(TurnTimeline.DividerChosen)
    @while_shown
    def _on_divider_chosen(self, message: TurnTimeline.DividerChosen) -> None:
        self.action_parent()

    # -- filter --------------------------------------------------------------------

    @on(Input.Changed, "#filter")
    def _on_filter_changed(self, event: Input.Changed) -> None:
        self.session_tree.set_filter(event.value)
        self._note_empty_root()  # the rebuild dropped it

    @on(Input.Submitted, "#filter")
    def _on_filter_submitted(self) -> None:
        self.session_tree.focus()

    def action_filter(self) -> None:
        """Show the filter box and focus it."""
        box = self.filter_box
        box.display = True
        box.focus()

    def action_clear_filter(self) -> None:
        """Clear and hide the filter."""
        box = self.filter_box
        box.value = ""
        box.display = False
        tree = self.session_tree
        tree.set_filter("")
        tree.focus()

    # -- actions -------------------------------------------------------------------

    #: The actions whose availability depends on the app's state (see `check_action`).
    _STATEFUL_ACTIONS: ClassVar[tuple[str, ...]] = (
        "fork",
        "explain_fork",
        "parent",
        "explain_parent",
        "toggle_raw",
        "toggle_lines",
        "clear_filter",
    )

    def _refresh_bindings(self) -> None:
        """Refresh the footer if an action's availability changed.

        Every refresh recomposes the footer (tens of ms): on a live session that
        grows every few ms, refreshing on each append would cost more than the
        append itself.
        """
        # Messages can still arrive while the app shuts down, after its screens are gone.
        with contextlib.suppress(ScreenStackError):
            state = tuple(self.check_action(a, ()) for a in self._STATEFUL_ACTIONS)
            if state != self._binding_state:
                self._binding_state = state
                self.refresh_bindings()

    #: The main screen's own actions: off (and out of the footer) while a pushed screen
    #: (usage, compare, conversation) covers it, so its keys never act on the session behind it.
    #: Help and quit stay (`q` on a pushed screen is that screen's own "back").
    _MAIN_SCREEN_ACTIONS: ClassVar[frozenset[str]] = frozenset(
        binding.action
        for binding in BINDINGS
        if isinstance(binding, Binding) and binding.action not in ("help", "quit")
    )

    def main_screen_covered(self) -> bool:
        """True while a full screen (usage, compare, conversation) is over the main screen.

        Dialogs and the command palette do not count: they are modal, so the app's
        keys never reach past them, and the palette lists the actions of the screen
        it was opened from.
        """
        stack = self.screen_stack
        top = next((screen for screen in reversed(stack) if not screen.is_modal), stack[0])
        return top is not stack[0]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Disable (dim) actions that make no sense on the current row, and hide the
        main screen's actions while another screen covers it."""
        try:
            if not self.screen_stack[0].is_mounted:
                return True
            if action in self._MAIN_SCREEN_ACTIONS and self.main_screen_covered():
                return False
        except (ScreenStackError, IndexError):
            return True
        if action == "fork":
            return True if self.fork_refusal() is None else None
        if action == "explain_fork":
            return self.fork_refusal() is not None
        if action == "parent":
            return True if self._parent_target() is not None else None
        if action == "explain_parent":
            return self._parent_target() is None
        if action in ("toggle_raw", "toggle_lines"):
            return True if self.timeline.current_turn is not None else None
        if action == "conversation":
            return True if self.view is not None else None
        if action == "clear_filter":
            return bool(self.filter_box.display)
        return True

    def fork_refusal(self) -> str | None:
        """Why `f` cannot fork at the highlighted row, or None if it can."""
        view = self.view
        if self.preview is not None:
            return "the log is still being indexed: forks are checked against all of it"
        if view is None or self._wanted is not None:
            return "no session is open yet"
        timeline = self.timeline
        if not timeline.turns and not timeline.divider:
            return "this session has no turns to fork at"
        if timeline.on_divider:
            return "not a turn boundary: this is the seed divider (Enter jumps to the parent)"
        turn = timeline.current_view
        if turn is None:
            return "no turn is highlighted"
        return turn.refusal

    def fork_plan(self) -> ForkPlan | None:
        """The fork the highlighted row offers."""
        view = self.view
        turn = self.timeline.current_turn
        if view is None or turn is None or turn.end_seq is None or self.fork_refusal():
            return None
        summary = view.loaded.summary
        return ForkPlan(summary.display_title(), summary.id, turn.number, turn.end_seq)

    def action_fork(self) -> None:
        """Open the fork dialog for the highlighted turn/end."""
        plan = self.fork_plan()
        view = self.view
        if plan is None or view is None:
            self.action_explain_fork()
            return
        summary = view.loaded.summary

        def submit(request: ForkRequest) -> None:
            if self.root is not None:
                self._fork(self.root, summary, request)

        # The dialog stays open until the child is written (or a taken id is changed).
        self.push_screen(ForkScreen(plan, submit))

    def action_explain_fork(self) -> None:
        """Say why the highlighted row cannot be forked."""
        why = self.fork_refusal() or "cannot fork here"
        self.notify(why, title="Cannot fork here", severity="warning", markup=False)

    @on(Forked)
    @while_shown
    def _on_forked(self, message: Forked) -> None:
        result = message.result
        self.snapshot = message.snapshot
        if isinstance(self.screen, ForkScreen):
            self.screen.dismiss(None)
        child = result.child
        # Shown even when an active filter would hide it.
        self.session_tree.show(message.snapshot, select=child.path, reveal=True)
        self._start_load(child.path)
        self.timeline.focus()
        # The seed, as the dialog counted it: not `child.events`, which from V2 on
        # also holds the `session/end-seed` marker after the seed.
        inherited = child.seed_length
        if inherited is None and result.boundary is not None:
            inherited = result.boundary + 1
        self.notify(
            f"{one_line(child.id)} ← {one_line(result.parent_id)} at seq {result.boundary} "
            f"({inherited if inherited is not None else child.events} events inherited)",
            title="Forked",
            markup=False,
        )

    def _parent_target(self) -> tuple[Path, int | None] | None:
        view = self.view
        if view is None or view.loaded.parent_path is None:
            return None
        # (where the seed ends in the parent as shown: a child seeded from an older
        # generation dsh renumbered counts its seed in that generation's seqs)
        summary = view.loaded.summary
        cut = summary.seed_length if self.root is None else self.root.seed_cut(summary)
        return view.loaded.parent_path, (cut - 1 if cut else None)

    def parent_refusal(self) -> str | None:
        """Why `p` cannot go to a parent session, or None if it can."""
        if self._parent_target() is not None:
            return None
        view = self.view
        if view is None or self._wanted is not None:
            return "no session is open yet"
        pid = view.loaded.summary.parent_session
        if pid:
            return f"its parent session {one_line(pid)} is not under this root"
        return "this session has no parent: it was not forked from another"

    def action_explain_parent(self) -> None:
        """Say why `p` has no parent session to go to."""
        why = self.parent_refusal() or "no parent session to go to"
        self.notify(why, title="No parent here", severity="warning", markup=False)

    def action_parent(self) -> None:
        """Go to the parent session, at the turn the child was forked from."""
        target = self._parent_target()
        if target is None:
            self.action_explain_parent()
            return
        path, seq = target
        tree = self.session_tree
        if tree.node_of(path) is None:
            self.action_clear_filter()
        self._pending_seq = seq
        tree.select_path(path)
        self._start_load(path)

    def open_session(self, path: Path, seq: int | None = None, find: str | None = None) -> None:
        """Select a session in the tree (clearing a filter that hides it) and open it
        (at the turn holding `seq`, if given), highlighting the search QUERY `find` in
        the detail pane (which then has the focus, for n / N)."""
        self._leave_find(path)
        if find is not None:
            self.detail.find(find, search=True)
            self.call_after_refresh(self.detail.focus)  # after a dialog hands focus back
        tree = self.session_tree
        if tree.node_of(path) is None:
            self.action_clear_filter()
        if seq is not None:
            self._pending_seq = seq
        tree.select_path(path)
        self._start_load(path)
        view = self.view
        if seq is not None and self._wanted is None and view is not None and view.path == path:
            # Already open: no load will take the seq, so move to its turn now.
            self._pending_seq = None
            from turnline.core.find import turn_holding

            target = turn_holding(view.turns, seq) or view.turn_of_seq(seq)
            row = self.timeline.row_of_turn(target.index) if target is not None else None
            if row is not None:
                self.timeline.move_cursor(row=row)

    def action_toggle_raw(self) -> None:
        """Toggle the raw JSON events of the highlighted turn."""
        self.detail.toggle_raw()

    def action_toggle_lines(self) -> None:
        """Toggle the highlighted turn's events one line each (seq, time, type, data)."""
        self.detail.toggle_lines()

    def action_reload(self) -> None:
        """Rescan the root from disk (and say what the rescan found)."""
        self.session_tree.border_subtitle = "scanning…"
        self._rescanning = True
        self._scan()

    def action_search(self) -> None:
        """Search the text of every session (the catalog is built on first use)."""
        from .screens import SearchScreen

        root = self.root.path if self.root is not None else self.path
        if root.is_file():
            root = root.parent

        def opened(hit: object) -> None:
            path, seq = getattr(hit, "path", None), getattr(hit, "seq", None)
            query = getattr(hit, "query", None)
            if isinstance(path, str) and isinstance(seq, int):
                self.open_session(Path(path), seq, query if isinstance(query, str) else None)

        self.push_screen(SearchScreen(root), opened)

    def action_help(self) -> None:
        """Show keys and markers."""
        from .screens import HelpScreen

        self.push_screen(HelpScreen())

    def action_usage(self) -> None:
        """Show the usage of the selected session's subtree (Enter there opens a session)."""
        from turnline.core.prices import load_prices
        from turnline.core.xdg import ConfigError

        from .screens._usage import UsageScreen

        snapshot, view = self.snapshot, self.view
        if snapshot is None or view is None or view.path not in snapshot.summaries:
            self.notify("open a session first", severity="warning", markup=False)
            return
        try:
            prices = load_prices()
        except ConfigError as exc:
            self.notify(exc.message, title="prices.toml", severity="error", markup=False)
            prices = None

        def opened(path: Path | None) -> None:
            if path is not None and path != view.path:
                self.open_session(path)

        self.push_screen(UsageScreen(snapshot, view.path, prices), opened)

    def action_conversation(self) -> None:
        """Show every turn of the open session in one scroll."""
        from .screens import ConversationScreen

        view, snapshot = self.view, self.snapshot
        if view is None or self._wanted is not None:
            self.notify("open a session first", severity="warning", markup=False)
            return
        summary = snapshot.summaries.get(view.path) if snapshot is not None else None
        title = (summary or view.summary).display_title()
        self.push_screen(ConversationScreen(view, title))


def run_app(
    path: Path,
    *,
    poll: bool = False,
    scan: BackgroundScan | None = None,
    subtitle: str | None = None,
) -> int:
    """Open the app on a root or log; returns the exit status.

    A missing or unusable path prints one clear line to stderr and returns 1.
    `subtitle` replaces the header's subtitle (the demo shows its root's path there).
    """
    try:
        SessionRoot(Path(path))
    except RootError as exc:
        print(f"turnline: {exc}", file=sys.stderr)
        return 1
    app = TurnlineApp(Path(path), poll=poll, scan=scan, subtitle=subtitle)
    app.run()
    return app.return_code or 0


#: Seconds between two looks at whether the app's terminal is still there.
TERMINAL_CHECK: Final = 1.0


def _is_terminal(stream: Any) -> bool:
    """Whether `stream` is open on a terminal (False after a hang-up, or for none)."""
    try:
        return stream is not None and os.isatty(stream.fileno())
    except (OSError, ValueError):
        return False
