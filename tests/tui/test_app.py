"""Pilot tests: the real app on real logs in tmp_path."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path
from typing import Any

import orjson
import pytest
from textual.pilot import Pilot
from turnline.core.layout import session_dir
from turnline.core.root import SessionRoot
from turnline.core.view import SessionView
from turnline.tui import TurnlineApp, run_app
from turnline.tui.app import snapshot_of
from turnline.tui.messages import Appended, RootChanged
from turnline.tui.screens import ForkScreen
from turnline.tui.widgets import SessionTree, TurnDetail, TurnTimeline

from .conftest import CWD, Family, make_family, wait_for

SIZE = (120, 36)


def make_app(root: Path) -> TurnlineApp:
    return TurnlineApp(root, tz=UTC)


async def ready(pilot: Pilot[Any]) -> TurnlineApp:
    app = pilot.app
    assert isinstance(app, TurnlineApp)

    def loaded() -> bool:
        """the first session to load"""
        return app.view is not None and not app.query_one(TurnTimeline).loading

    await wait_for(pilot, loaded)
    return app


async def open_session(pilot: Pilot[Any], path: Path) -> TurnlineApp:
    app = await ready(pilot)
    app.open_session(path)

    def shown() -> bool:
        """the session's timeline"""
        return app.view is not None and app.view.path == path and app._wanted is None

    await wait_for(pilot, shown)
    await pilot.pause()
    return app


def notifications(app: TurnlineApp) -> list[str]:
    return [n.message for n in app._notifications]


def session_logs(root: Path) -> set[Path]:
    return set(root.rglob("session*.jsonl"))


async def test_selecting_sessions_shows_their_timelines(family: Family) -> None:
    async with make_app(family.root).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.parent)
        timeline = app.query_one(TurnTimeline)
        assert [t.reason for t in timeline.turns] == [
            "completed",
            "completed",
            "max-tokens",
            "error",
        ]
        assert timeline.row_count == 4
        tree = app.query_one(SessionTree)
        assert tree.highlighted_path == family.parent
        # Moving the tree cursor onto another session loads it.
        await pilot.press("down")
        await wait_for(pilot, lambda: app.view is not None and app.view.path != family.parent)
        assert app.view is not None
        assert app.view.path == tree.highlighted_path


async def test_child_shows_seed_divider_and_dims_inherited_rows(family: Family) -> None:
    async with make_app(family.root).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.child)
        timeline = app.query_one(TurnTimeline)
        # Two inherited turns, the divider, then the child's own turn.
        assert timeline.row_count == 4
        assert timeline.turn_index_at(2) is None
        divider = timeline.divider
        assert divider is not None
        assert divider.parent_id == "aaaa1111-parent"
        row = timeline.get_row_at(2)
        assert row[1].plain.startswith(f"forked from aaaa1111 at seq {divider.boundary} · ")
        assert "Refactor the tokenizer" in row[1].plain
        views = timeline.turn_views
        assert views[0].inherited and not views[2].inherited
        assert "dim" in str(timeline.get_row_at(0)[3].style)


async def test_detail_shows_conversation_and_tool_calls(family: Family) -> None:
    async with make_app(family.root).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.parent)
        timeline = app.query_one(TurnTimeline)
        timeline.focus()
        timeline.move_cursor(row=0)
        detail = app.query_one(TurnDetail)

        def has_tools() -> bool:
            """the first turn's tool calls in the detail pane"""
            return "tokenizer.py" in " ".join(str(w.render()) for w in detail.query("Static"))

        await wait_for(pilot, has_tools)
        texts = " ".join(str(w.render()) for w in detail.query("Static"))
        assert "Refactor the tokenizer into its own module" in texts
        assert "Done: tokenizer.py." in texts
        titles = [str(c.title) for c in detail.query("Collapsible")]
        assert any(t.startswith("⚒ read(") for t in titles)
        # v shows the raw events of the turn as JSON.
        await pilot.press("v")
        await pilot.pause()
        raw = " ".join(str(w.render()) for w in detail.query(".raw"))
        assert '"type": "turn/end"' in raw


async def test_fork_end_to_end(family: Family) -> None:
    async with make_app(family.root).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.parent)
        timeline = app.query_one(TurnTimeline)
        timeline.focus()
        timeline.move_cursor(row=1)
        await pilot.pause()
        boundary = timeline.turns[1].end_seq
        assert boundary is not None
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ForkScreen))
        await pilot.press(*"my-branch")
        await pilot.press("enter")
        expected = session_dir(family.root, "my-branch", CWD) / "session.jsonl"
        await wait_for(pilot, expected.exists)
        await wait_for(pilot, lambda: app.view is not None and app.view.path == expected)
        header = orjson.loads(expected.read_bytes().split(b"\n", 1)[0])
        assert header["parentSession"] == "aaaa1111-parent"
        assert header["seedLength"] == boundary + 1
        tree = app.query_one(SessionTree)
        assert tree.node_of(expected) is not None
        assert tree.highlighted_path == expected
        # The child shows its seed (2 turns), then the divider.
        assert app.query_one(TurnTimeline).row_count == 3
        assert any("my-branch" in m for m in notifications(app))


async def test_fork_cancelled_writes_nothing(family: Family) -> None:
    before = session_logs(family.root)
    async with make_app(family.root).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.parent)
        app.query_one(TurnTimeline).focus()
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ForkScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ForkScreen))
        await pilot.pause(0.2)
    assert session_logs(family.root) == before


async def test_fork_refused_on_open_turn(family: Family) -> None:
    before = session_logs(family.root)
    async with make_app(family.root).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.live)
        timeline = app.query_one(TurnTimeline)
        timeline.focus()
        timeline.move_cursor(row=1)
        await pilot.pause()
        assert timeline.current_turn is not None and timeline.current_turn.is_open
        # The footer shows the fork binding dimmed.
        assert app.active_bindings["f"].enabled is False
        await pilot.press("f")
        await pilot.pause()
        assert not isinstance(app.screen, ForkScreen)
        assert "turn 2 is still open: it has no turn/end yet" in notifications(app)
        # Moving to the completed turn enables it again.
        timeline.move_cursor(row=0)
        await pilot.pause()
        assert app.active_bindings["f"].enabled is True
    assert session_logs(family.root) == before


async def test_fork_refused_on_divider(family: Family) -> None:
    before = session_logs(family.root)
    async with make_app(family.root).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.child)
        timeline = app.query_one(TurnTimeline)
        timeline.focus()
        timeline.move_cursor(row=2)
        await pilot.pause()
        assert timeline.on_divider
        await pilot.press("f")
        await pilot.pause()
        assert any(m.startswith("not a turn boundary") for m in notifications(app))
    assert session_logs(family.root) == before


async def test_inherited_seed_rows_are_forkable(family: Family) -> None:
    async with make_app(family.root).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.child)
        timeline = app.query_one(TurnTimeline)
        timeline.focus()
        timeline.move_cursor(row=0)
        await pilot.pause()
        assert app.fork_refusal() is None
        plan = app.fork_plan()
        assert plan is not None and plan.parent_id == "bbbb2222-child"


async def test_fork_with_existing_id_reports_the_core_code(family: Family) -> None:
    before = session_logs(family.root)
    async with make_app(family.root).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.parent)
        app.query_one(TurnTimeline).focus()
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ForkScreen))
        await pilot.press(*"eeee5555-other", "enter")
        await wait_for(
            pilot,
            lambda: "SESSION_ALREADY_EXISTS" in str(app.screen.query_one("#fork-error").render()),
        )
    assert session_logs(family.root) == before


async def test_filter_narrows_the_tree_and_escape_clears_it(family: Family) -> None:
    async with make_app(family.root).run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        tree = app.query_one(SessionTree)
        await pilot.press("slash")
        await pilot.press(*"footer")
        await pilot.pause()
        assert tree.node_of(family.other) is not None
        assert tree.node_of(family.parent) is None
        assert tree.node_of(family.live) is None
        # A filter on a child keeps its ancestors visible.
        await pilot.press(*["backspace"] * 6, *"bbbb2222")
        await pilot.pause()
        assert tree.node_of(family.child) is not None
        assert tree.node_of(family.parent) is not None
        assert tree.node_of(family.other) is None
        await pilot.press("escape")
        await pilot.pause()
        assert all(tree.node_of(p) is not None for p in (family.parent, family.live, family.other))
        assert app.focused is tree


async def test_jump_to_parent_lands_on_the_fork_turn(family: Family) -> None:
    async with make_app(family.root).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.child)
        await pilot.press("p")
        await wait_for(
            pilot,
            lambda: app.view is not None and app.view.path == family.parent and app._wanted is None,
        )
        await pilot.pause()
        timeline = app.query_one(TurnTimeline)
        assert timeline.current_turn is not None
        assert timeline.current_turn.number == 2
        assert app.query_one(SessionTree).highlighted_path == family.parent


async def test_enter_on_divider_jumps_to_parent(family: Family) -> None:
    async with make_app(family.root).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.child)
        timeline = app.query_one(TurnTimeline)
        timeline.focus()
        timeline.move_cursor(row=2)
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(
            pilot,
            lambda: app.view is not None and app.view.path == family.parent and app._wanted is None,
        )


async def test_help_screen_opens_and_closes(family: Family) -> None:
    async with make_app(family.root).run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen).__name__ == "Screen"


def test_run_app_on_missing_root_says_so(tmp_path: Path, capsys: Any) -> None:
    assert run_app(tmp_path / "nope") == 1
    err = capsys.readouterr().err
    assert "does not exist" in err
    assert "Traceback" not in err


async def test_log_text_is_shown_literally(tmp_path: Path) -> None:
    from turnline.core.model import SessionHeader

    from .conftest import HOSTILE, T0, turn, write_session

    root = tmp_path / "root"
    evil_id = "[red]id[/red]\x1b[31m\u202e"
    path = write_session(
        root,
        SessionHeader(id=evil_id, created_at=T0, cwd="/srv/[b]x[/b]"),
        turn(0, 1, HOSTILE, HOSTILE, tools=[(HOSTILE, {"arg": HOSTILE}, HOSTILE)]),
    )
    async with make_app(root).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, path)
        node = app.session_tree.node_of(path)
        assert node is not None
        label = node.label
        plain = str(label)
        assert "[bold red]x[/]" in plain
        for bad in ("\x1b", "\x07", "\u202e"):
            assert bad not in plain
        # Markup in the log never became a style: only our own spans are present.
        assert all(span.style != "bold red" for span in getattr(label, "spans", []))
        timeline = app.timeline
        cell = timeline.get_row_at(0)[5]
        assert "[bold red]x[/]" in cell.plain and "\x1b" not in cell.plain

        def detail_shown() -> bool:
            """the turn's conversation"""
            return bool(app.detail.query("Collapsible"))

        await wait_for(pilot, detail_shown)
        texts = [str(w.render()) for w in app.detail.query("Static")]
        assert any("[bold red]x[/]" in t for t in texts)
        assert not any("\x1b" in t or "\u202e" in t for t in texts)
        title = app.detail.query("Collapsible").first().title
        assert "[bold red]x[/]" in str(title)
        # The whole screen as exported: no escape sequence from the log survives.
        svg = app.export_screenshot()
        assert "SGVsbG8" in svg and "\x1b]52" not in svg


async def test_problem_log_lists_problems_and_refuses_fork_past_the_gap(tmp_path: Path) -> None:
    from .test_snapshots import write_problem_log

    root = tmp_path / "root"
    path = write_problem_log(root)
    async with make_app(root).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, path)
        timeline = app.timeline
        timeline.focus()
        timeline.move_cursor(row=0)
        await wait_for(pilot, lambda: bool(app.detail.query(".problems")))
        problems = str(app.detail.query_one(".problems").render())
        assert "seq-gap" in problems and "torn-tail" in problems
        assert app.fork_refusal() is None
        timeline.move_cursor(row=1)
        await pilot.pause()
        refusal = app.fork_refusal()
        # The fork rule's own words (core.view), and the row drawn from the same verdict.
        view = app.view
        assert view is not None and refusal == view.turns[1].refusal
        assert refusal is not None and "not contiguous past seq 4" in refusal
        assert timeline.get_row_at(1)[0].plain.startswith("✖")
        await pilot.press("f")
        await pilot.pause()
        assert any("not contiguous past seq 4" in m for m in notifications(app))


async def test_filter_opens_the_session_it_lands_on(family: Family) -> None:
    async with make_app(family.root).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.parent)
        await pilot.press("slash", *"changelog", "enter")
        await wait_for(pilot, lambda: app.view is not None and app.view.path == family.live)
        assert app.session_tree.highlighted_path == family.live


async def test_a_scan_started_before_the_app_is_the_one_it_shows(family: Family) -> None:
    """`turnline ROOT` forks the scan before Textual loads and hands it to the app."""
    from turnline.core.root import SessionRoot

    pending = SessionRoot(family.root).scan_in_background()
    app = TurnlineApp(family.root, tz=UTC, scan=pending)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert app.root is pending.root
        assert app._pending_scan is None  # taken in, not scanned again
        assert app.snapshot is not None
        assert set(app.snapshot.summaries) == session_logs(family.root)
        assert app.session_tree.highlighted_path in session_logs(family.root)


async def test_a_fork_that_cannot_be_written_reports_write_failed(
    family: Family, monkeypatch: Any
) -> None:
    """A full disk (ENOSPC at fsync) during a fork: the core's WRITE_FAILED reaches the
    user, and nothing is left on disk."""
    from turnline.core.root import SessionRoot

    real_fork = SessionRoot.fork

    def fork_on_a_full_disk(self: SessionRoot, *args: Any, **kwargs: Any) -> Any:
        def fail(step: str) -> None:
            if step == "fsync":
                raise OSError(28, "No space left on device")

        return real_fork(self, *args, fault=fail, **kwargs)

    monkeypatch.setattr(SessionRoot, "fork", fork_on_a_full_disk)
    before = session_logs(family.root)
    async with make_app(family.root).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.parent)
        app.query_one(TurnTimeline).focus()
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ForkScreen))
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("WRITE_FAILED" in m for m in notifications(app)))
        message = next(m for m in notifications(app) if "WRITE_FAILED" in m)
        assert "No space left on device" in message
        assert not isinstance(app.screen, ForkScreen)
        assert app.view is not None and app.view.path == family.parent  # still where it was
    assert session_logs(family.root) == before
    leftovers = [p for p in family.root.rglob("*") if p.name.startswith(".")]
    assert leftovers == []  # no temporary file either


async def test_the_command_palette_runs_the_apps_actions(family: Family) -> None:
    from textual.command import CommandList, CommandPalette
    from textual.widgets import Input
    from turnline.tui.screens import HelpScreen

    async with make_app(family.root).run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))
        # Typed before the palette's input has focus, the letters would hit app keys.
        await wait_for(pilot, lambda: isinstance(app.focused, Input))
        await pilot.press(*"keys and markers")

        def listed() -> bool:
            """the help command in the palette's list"""
            found = app.screen.query(CommandList)
            return bool(found) and found.first().option_count > 0

        await wait_for(pilot, listed)
        options = app.screen.query_one(CommandList)
        first = str(options.get_option_at_index(0).prompt)
        assert "Help" in first, first
        await pilot.press("down", "enter")  # down: into the list, onto the first hit
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))


async def test_tab_moves_between_the_panes_and_enter_unfolds_the_detail(family: Family) -> None:
    """The detail pane's foldable blocks are not Tab stops: Tab cycles the three panes,
    and Enter in the detail pane folds or unfolds every block of the turn."""
    from turnline.tui.widgets._turn_detail import Fold

    async with make_app(family.root).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.parent)
        timeline = app.query_one(TurnTimeline)
        timeline.focus()
        timeline.move_cursor(row=0)
        detail = app.query_one(TurnDetail)

        def blocks() -> bool:
            """the first turn's tool-call blocks in the detail pane"""
            return len(detail.query(Fold)) >= 2

        await wait_for(pilot, blocks)
        assert not any(fold.collapsed for fold in detail.query(Fold))  # short: shown open
        tree = app.query_one(SessionTree)
        tree.focus()
        await pilot.pause()
        for expected in (timeline, detail, tree, timeline):
            await pilot.press("tab")
            assert app.focused is expected
        await pilot.press("shift+tab")
        assert app.focused is tree
        detail.focus()
        await pilot.press("enter")  # none folded: fold them all
        await pilot.pause()
        assert all(fold.collapsed for fold in detail.query(Fold))
        await pilot.press("enter")  # some folded: unfold them all
        await pilot.pause()
        assert not any(fold.collapsed for fold in detail.query(Fold))


def test_messages_before_the_first_frame_are_deferred_not_dropped() -> None:
    """A log head (or a scan) read before the app's first frame is handled after a
    refresh: dropping it left a big log on an empty timeline, never scanned."""
    import threading
    from types import SimpleNamespace

    from turnline.tui.app import while_shown

    seen: list[int] = []
    deferred: list[tuple[Any, ...]] = []

    @while_shown
    def handler(app: Any, value: int) -> None:
        seen.append(value)

    screen = SimpleNamespace(is_mounted=False)
    app = SimpleNamespace(
        _stop=threading.Event(),
        _first_frame=False,
        is_running=True,
        screen_stack=[screen],
        call_after_refresh=lambda *args: deferred.append(args),
    )
    handler(app, 1)  # before the first frame: deferred
    assert seen == [] and len(deferred) == 1
    app._first_frame = True
    screen.is_mounted = True
    callback, *args = deferred.pop()
    callback(*args)  # the refresh came: handled now
    assert seen == [1]
    app.is_running = False  # shutting down, the panes still being removed: dropped
    handler(app, 3)
    assert seen == [1]
    app.is_running = True
    screen.is_mounted = False  # the screen went away (shutting down): dropped
    handler(app, 2)
    assert seen == [1] and deferred == []
    screen.is_mounted = True
    app._stop.set()  # stopping: dropped
    handler(app, 3)
    assert seen == [1] and deferred == []


async def test_a_load_runs_outside_the_root_lock(
    family: Family, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Watcher batches never wait behind a big log's index: the root lock is free while
    `root.load` reads, and the app opens the core's own `SessionView`."""
    import threading

    held: list[bool] = []
    real = SessionRoot.load
    app = make_app(family.root)

    class OwnedLock:
        """The root lock, knowing which thread holds it (the watcher, which starts
        once the tree is drawn, may hold it meanwhile: that is no wait for a load)."""

        def __init__(self) -> None:
            self.lock = threading.Lock()
            self.owner: int | None = None

        def __enter__(self) -> OwnedLock:
            self.lock.acquire()
            self.owner = threading.get_ident()
            return self

        def __exit__(self, *exc: object) -> None:
            self.owner = None
            self.lock.release()

    owned = OwnedLock()
    app._root_lock = owned  # type: ignore[assignment]

    def load(self: SessionRoot, *args: Any, **kwargs: Any) -> Any:
        held.append(owned.owner == threading.get_ident())
        return real(self, *args, **kwargs)

    monkeypatch.setattr(SessionRoot, "load", load)
    async with app.run_test(size=SIZE) as pilot:
        await open_session(pilot, family.child)
        assert held and not any(held)
        assert isinstance(app.view, SessionView)
        assert [v.inherited for v in app.timeline.turn_views] == [
            v.inherited for v in app.view.turns
        ]


def test_coalescing_watcher_batches_changes_no_message(family: Family) -> None:
    """`can_replace` only answers: a batch with appended events is never folded away
    (nor does it write into the newer one), a snapshot-only batch gives way."""
    root = SessionRoot(family.root)
    snapshot = snapshot_of(root)
    summary = snapshot.summaries[family.live]
    older = RootChanged(snapshot, [Appended(summary, ())], [], [])
    newer = RootChanged(snapshot, [], [], [])
    assert not older.can_replace(newer)
    assert newer.appended == [] and len(older.appended) == 1
    assert RootChanged(snapshot, [], [], []).can_replace(newer)


async def test_filter_selects_the_match_not_its_ancestor(fixtures_root: Path) -> None:
    """`/ada8` shows ada8966c under its parent 96cf59c9; Enter leaves the cursor and
    the timeline on ada8966c, the session that matched."""
    async with make_app(fixtures_root).run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await pilot.press("slash", *"ada8", "enter")
        tree = app.session_tree

        def on_match() -> bool:
            """the cursor and the timeline on the match"""
            view = app.view
            return (
                view is not None
                and view.summary.id.startswith("ada8966c")
                and tree.highlighted_path == view.path
            )

        await wait_for(pilot, on_match)
        snapshot = app.snapshot
        assert snapshot is not None
        parent = snapshot.lineage.parent_of.get(tree.highlighted_path)  # type: ignore[arg-type]
        assert parent is not None and snapshot.summaries[parent].id.startswith("96cf59c9")


async def test_a_fork_under_a_filter_shows_its_child_selected(family: Family) -> None:
    """The filter matches the parent only; the fork's child still appears in the tree,
    selected and open, and Escape (clearing the filter) stays on it."""
    async with make_app(family.root).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.parent)
        await pilot.press("slash", *"aaaa1111", "enter", "tab")
        await wait_for(pilot, lambda: app.focused is app.timeline)
        app.timeline.move_cursor(row=1)
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ForkScreen))
        await pilot.press(*"my-branch", "enter")
        expected = session_dir(family.root, "my-branch", CWD) / "session.jsonl"
        tree = app.session_tree
        await wait_for(pilot, lambda: app.view is not None and app.view.path == expected)
        assert tree.node_of(expected) is not None and tree.highlighted_path == expected
        assert app.filter_box.value == "aaaa1111"
        await pilot.press("escape")
        await pilot.pause(0.3)
        await wait_for(pilot, lambda: app._wanted is None)
        assert app.view is not None and app.view.path == expected
        assert tree.highlighted_path == expected


async def test_the_fork_dialog_stays_open_on_a_taken_id(family: Family) -> None:
    """SESSION_ALREADY_EXISTS shows under the id field; a new id then forks."""
    async with make_app(family.root).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.parent)
        app.timeline.focus()
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ForkScreen))
        dialog = app.screen
        await pilot.press(*"eeee5555-other", "enter")

        def error_shown() -> bool:
            """the error under the id field"""
            error = dialog.query_one("#fork-error")
            return bool(error.display) and "SESSION_ALREADY_EXISTS" in str(error.render())

        await wait_for(pilot, error_shown)
        assert app.screen is dialog
        # The taken id stays as typed, cursor at its end (issue 23, bug 6): erase it.
        await pilot.press(*["backspace"] * len("eeee5555-other"), *"fresh-id", "enter")
        expected = session_dir(family.root, "fresh-id", CWD) / "session.jsonl"
        await wait_for(pilot, lambda: app.view is not None and app.view.path == expected)
        assert not isinstance(app.screen, ForkScreen)


async def test_reload_says_what_it_found(family: Family) -> None:
    """`r` is not silent: it says how many sessions the rescan found."""
    async with make_app(family.root).run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        app.session_tree.focus()
        await pilot.press("r")
        note = "rescanned: 5 sessions, no change"
        await wait_for(pilot, lambda: note in notifications(app))


async def test_reload_counts_new_and_gone_sessions(
    family: Family, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What only a rescan can see (here the watcher is not started, as when its
    notifications were lost): two logs written and one removed behind the app's back."""
    import shutil

    from turnline.core.model import SessionHeader

    from .conftest import OTHER_CWD, T0, turn, write_session

    monkeypatch.setattr(TurnlineApp, "_watch", lambda self, root: None)
    async with make_app(family.root).run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        for n in (1, 2):
            write_session(
                family.root,
                SessionHeader(id=f"ffff000{n}-new", created_at=T0 + 9, cwd=OTHER_CWD),
                turn(0, 1, f"New session {n}", "Hello.", minute=80),
            )
        shutil.rmtree(family.other.parent)
        app.session_tree.focus()
        await pilot.press("r")
        note = "rescanned: 6 sessions, 2 new, 1 gone"
        await wait_for(pilot, lambda: note in notifications(app))


async def test_parent_key_says_why_there_is_no_parent(tmp_path: Path) -> None:
    """`p` on a session without a parent, or whose parent is not under the root, says
    why nothing happened (naming the missing parent); it stays where it was."""
    from turnline.core.model import SessionHeader

    from .conftest import T0, turn, write_session

    root = tmp_path / "root"
    family = make_family(root)
    orphan = write_session(
        root,
        SessionHeader(
            id="9999aaaa-orphan",
            created_at=T0 + 5,
            cwd=CWD,
            parent_session="7777beef-gone",
            seed_length=0,
        ),
        turn(0, 1, "Carry on without the parent", "Carried on.", minute=90),
    )
    async with make_app(root).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.parent)
        app.session_tree.focus()
        await pilot.press("p")
        no_parent = "this session has no parent: it was not forked from another"
        await wait_for(pilot, lambda: no_parent in notifications(app))
        assert app.view is not None and app.view.path == family.parent
        await open_session(pilot, orphan)
        app.session_tree.focus()
        await pilot.press("p")
        missing = "its parent session 7777beef-gone is not under this root"
        await wait_for(pilot, lambda: missing in notifications(app))
        assert app.view is not None and app.view.path == orphan


def tree_note(app: TurnlineApp) -> str:
    """The text of the tree's non-session rows, joined (wrapped lines rejoined)."""
    tree = app.session_tree
    return "".join(str(node.label) for node in tree.root.children if node.data is None)


async def test_an_empty_root_says_so_until_a_session_appears(tmp_path: Path) -> None:
    """An empty root shows the CLI's sentence in the tree, not a blank pane; the first
    session written under it replaces the note (and opens)."""
    from turnline.core.model import SessionHeader
    from turnline.core.root import no_sessions_message

    from .conftest import T0, turn, write_session

    root = tmp_path / "empty"
    root.mkdir()
    async with make_app(root).run_test(size=SIZE) as pilot:
        app = pilot.app
        assert isinstance(app, TurnlineApp)
        expected = no_sessions_message(root.resolve())
        assert expected.startswith("no sessions under ")

        def noted() -> bool:
            """the empty root's note in the tree"""
            return tree_note(app).replace(" ", "") == expected.replace(" ", "")

        await wait_for(pilot, noted)
        assert app.session_tree.border_subtitle == ""
        path = write_session(
            root,
            SessionHeader(id="abcd0001-first", created_at=T0, cwd=CWD),
            turn(0, 1, "The first session", "Here.", minute=1),
        )
        tree = app.session_tree
        await wait_for(pilot, lambda: tree.node_of(path) is not None)
        assert tree_note(app) == ""
        await wait_for(pilot, lambda: app.view is not None and app.view.path == path)


def test_the_cli_says_the_same_of_an_empty_root(tmp_path: Path, capsys: Any) -> None:
    from turnline.cli.main import main
    from turnline.core.root import no_sessions_message

    assert main(["ls", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == no_sessions_message(tmp_path.resolve())


def test_the_demo_shows_its_root_in_the_subtitle(tmp_path: Path, monkeypatch: Any) -> None:
    """`turnline demo` hands the app its root's path for the header's subtitle."""
    import turnline.tui
    from turnline.cli.main import main

    opened: list[tuple[Path, dict[str, Any]]] = []
    monkeypatch.setattr(turnline.tui, "run_app", lambda path, **kw: opened.append((path, kw)) or 0)
    assert main(["demo", "--dir", str(tmp_path / "demo")]) == 0
    [(root, kwargs)] = opened
    assert kwargs["subtitle"] == f"demo · {root}"


async def test_the_subtitle_is_literal_text(family: Family) -> None:
    """A subtitle (the demo's root path may hold anything) is shown as given: markup
    stays text, control characters are dropped."""
    from textual.widgets._header import HeaderTitle

    odd = "demo · /tmp/[b]x[/b]\x1b[2J\u202e"
    async with TurnlineApp(family.root, tz=UTC, subtitle=odd).run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        assert app.sub_title == "demo · /tmp/[b]x[/b][2J"
        shown = str(app.screen.query_one(HeaderTitle).render())
        assert "demo · /tmp/[b]x[/b][2J" in shown


async def test_a_root_that_cannot_be_opened_says_why_in_the_tree(tmp_path: Path) -> None:
    """A root gone before the app could scan it: the tree says what the CLI says of
    it (the core's `RootError`), not a blank pane."""
    from turnline.core.root import RootError

    root = tmp_path / "gone"
    root.mkdir()
    app = make_app(root)
    root.rmdir()
    with pytest.raises(RootError) as caught:
        SessionRoot(root)
    async with app.run_test(size=SIZE) as pilot:
        expected = caught.value.message

        def noted() -> bool:
            """the root's error in the tree"""
            return tree_note(app).replace(" ", "") == expected.replace(" ", "")

        await wait_for(pilot, noted)
        assert app.session_tree.border_subtitle == ""
