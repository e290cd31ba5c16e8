"""Live refresh: another process appends, adds and removes logs while the app runs."""

from __future__ import annotations

import shutil
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from turnline.core.logfile import Encoding
from turnline.core.model import SessionEvent, SessionHeader
from turnline.core.writer import append_events
from turnline.tui import TurnlineApp
from turnline.tui.messages import RootScanned
from turnline.tui.widgets import SessionTree, TurnTimeline

from .conftest import OTHER_CWD, T0, Family, turn, wait_for, write_session
from .test_app import SIZE, notifications, open_session


def last_seq(path: Path) -> int:
    from turnline.core.summary import summarize

    seq = summarize(path).last_seq
    assert seq is not None
    return seq


@pytest.mark.parametrize("poll", [False, True], ids=["native", "poll"])
async def test_open_turn_becomes_forkable_when_its_turn_end_lands(
    family: Family, poll: bool
) -> None:
    async with TurnlineApp(family.root, poll=poll, tz=UTC).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.live)
        timeline = app.query_one(TurnTimeline)
        tree = app.query_one(SessionTree)
        timeline.focus()
        timeline.move_cursor(row=1)  # the open turn: the user follows the end
        await pilot.pause()
        assert app.fork_refusal() == "turn 2 is still open: it has no turn/end yet"
        node = tree.node_of(family.live)
        assert node is not None and str(node.label).startswith("● ")

        seq = last_seq(family.live) + 1
        end = SessionEvent(
            "turn/end", seq, T0 + 3_600_000, {"turn": 2, "reason": {"kind": "completed"}}
        )
        append_events(family.live, [end], Encoding.RAW)

        def closed() -> bool:
            """the open turn to become a fork point"""
            return len(timeline.turns) == 2 and timeline.turns[1].forkable

        await wait_for(pilot, closed)
        assert app.fork_refusal() is None
        assert app.active_bindings["f"].enabled is True
        label = tree.node_of(family.live)
        assert label is not None and not str(label.label).startswith("● ")

        # A whole new turn appended: the timeline grows in place, following the end.
        more = turn(seq + 1, 3, "Tag the release", "Tagged v1.2.", minute=70)
        append_events(family.live, more, Encoding.RAW)
        await wait_for(pilot, lambda: len(timeline.turns) == 3)
        assert timeline.row_count == 3
        assert timeline.current_turn is not None and timeline.current_turn.number == 3


async def test_cursor_stays_put_when_not_following(family: Family) -> None:
    async with TurnlineApp(family.root, tz=UTC).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.live)
        timeline = app.query_one(TurnTimeline)
        timeline.focus()
        timeline.move_cursor(row=0)
        await pilot.pause()
        seq = last_seq(family.live) + 1
        events = [
            SessionEvent(
                "turn/end", seq, T0 + 3_600_000, {"turn": 2, "reason": {"kind": "completed"}}
            )
        ]
        events += turn(seq + 1, 3, "Tag the release", "Tagged.", minute=70)
        append_events(family.live, events, Encoding.RAW)
        await wait_for(pilot, lambda: len(timeline.turns) == 3)
        assert timeline.cursor_row == 0


async def test_new_and_removed_sessions_join_and_leave_the_tree(family: Family) -> None:
    async with TurnlineApp(family.root, tz=UTC).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.parent)
        tree = app.query_one(SessionTree)
        new = write_session(
            family.root,
            SessionHeader(id="ffff6666-new", created_at=T0 + 9, cwd=OTHER_CWD),
            turn(0, 1, "Brand new session", "Hello.", minute=80),
        )
        await wait_for(pilot, lambda: tree.node_of(new) is not None)
        node = tree.node_of(new)
        assert node is not None and "Brand new session" in str(node.label)
        # The cursor stayed on the session the user was reading.
        assert tree.highlighted_path == family.parent

        shutil.rmtree(family.other.parent)
        await wait_for(pilot, lambda: tree.node_of(family.other) is None)
        assert app.snapshot is not None and family.other not in app.snapshot.summaries
        assert not any("Traceback" in m for m in notifications(app))


async def test_removing_the_open_session_clears_the_timeline(family: Family) -> None:
    async with TurnlineApp(family.root, tz=UTC).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.other)
        # The tree then highlights a neighbour, which loads at once: the cleared state is
        # recorded when the pane says so, not polled for (a poll can miss it).
        cleared: list[tuple[bool, int, bool]] = []
        show_turn = app.detail.show_turn

        def recording(*args: Any, **kwargs: Any) -> None:
            if kwargs.get("note") == "this session's log was removed":
                rows = app.query_one(TurnTimeline).row_count
                cleared.append((app.view is None, rows, app.fork_plan() is None))
            show_turn(*args, **kwargs)

        app.detail.show_turn = recording  # type: ignore[method-assign]
        shutil.rmtree(family.other.parent)
        await wait_for(pilot, lambda: bool(cleared))
        assert cleared == [(True, 0, True)]


@pytest.mark.parametrize("poll", [False, True], ids=["native", "poll"])
async def test_a_renamed_project_folder_keeps_the_open_session(family: Family, poll: bool) -> None:
    """Issue 14 item 10: renaming the open session's project folder (then its session
    folder) follows the session to its new path: the same timeline, the cursor where
    it was, the tree on it (not on a neighbour), never "this session's log was
    removed"; `p` still finds its parent, which moved with it."""
    async with TurnlineApp(family.root, poll=poll, tz=UTC).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.child)
        timeline = app.query_one(TurnTimeline)
        tree = app.query_one(SessionTree)
        timeline.focus()
        timeline.move_cursor(row=1)  # the second inherited turn: not the end
        await pilot.pause()
        rows, cursor = timeline.row_count, timeline.cursor_row
        turn_index = timeline.current_turn_index
        notes: list[str] = []
        show_turn = app.detail.show_turn

        def recording(*args: Any, **kwargs: Any) -> None:
            if kwargs.get("note"):
                notes.append(kwargs["note"])
            show_turn(*args, **kwargs)

        app.detail.show_turn = recording  # type: ignore[method-assign]
        project = family.child.parent.parent
        moved_project = project.rename(project.with_name("--home-dev-parser-moved--"))
        moved = moved_project / family.child.parent.name / family.child.name

        def followed() -> bool:
            """the open session at its new path"""
            return app.view is not None and app.view.path == moved and app._wanted is None

        await wait_for(pilot, followed)
        await pilot.pause(0.3)  # a neighbour's highlight, if any, would have landed
        assert app.view is not None and app.view.path == moved
        assert tree.highlighted_path == moved
        assert (timeline.row_count, timeline.cursor_row) == (rows, cursor)
        assert timeline.current_turn_index == turn_index
        assert "this session's log was removed" not in notes
        assert app.focused is timeline

        # The session folder alone, renamed: followed too.
        again = moved.parent.rename(moved.parent.with_name("bbbb2222-renamed")) / moved.name
        await wait_for(pilot, lambda: app.view is not None and app.view.path == again)
        await pilot.pause(0.3)
        assert tree.highlighted_path == again and timeline.cursor_row == cursor
        assert "this session's log was removed" not in notes

        # Its parent moved with it: `p` finds it at its new path.
        await pilot.press("p")
        parent = moved_project / family.parent.parent.name / family.parent.name
        await wait_for(pilot, lambda: app.view is not None and app.view.path == parent)


async def test_an_appended_turn_is_searchable_without_a_rebuild(
    family: Family, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 12: while the app is open its watcher feeds an existing catalog: an
    appended turn is found by a search that does not refresh the catalog, a removed
    log leaves no hit, and a new log is found."""
    from turnline.core.catalog import Catalog
    from turnline.core.search import search

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = family.root.resolve()
    catalog = Catalog(root)
    catalog.refresh()
    catalog.close()

    def indexed_size(path: Path) -> int | None:
        db = Catalog(root)
        try:
            row = next(db.query("SELECT size FROM logs WHERE path=?", (str(path),)), None)
            return None if row is None else int(row[0])
        finally:
            db.close()

    def hits(word: str) -> list[str]:
        db = Catalog(root)
        try:
            return [h.path for h in search(db, word, refresh=False).hits]
        finally:
            db.close()

    before = indexed_size(family.live)
    assert before is not None and hits("zanzibar") == [] and hits("footer")
    async with TurnlineApp(family.root, tz=UTC).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.live)
        seq = last_seq(family.live) + 1
        end = SessionEvent(
            "turn/end", seq, T0 + 3_600_000, {"turn": 2, "reason": {"kind": "completed"}}
        )
        events = [end, *turn(seq + 1, 3, "Ship it to zanzibar", "Shipped.", minute=70)]
        append_events(family.live, events, Encoding.RAW)

        def grown() -> bool:
            """the catalog to hold the appended turn"""
            size = indexed_size(family.live)
            return size is not None and size > before and bool(hits("zanzibar"))

        await wait_for(pilot, grown)
        assert indexed_size(family.live) == family.live.stat().st_size
        assert hits("zanzibar") == [str(family.live)]

        shutil.rmtree(family.other.parent)

        def dropped() -> bool:
            """the removed log to leave the catalog and the app's snapshot"""
            # Two consumers of one watcher batch: the catalog thread may commit before
            # the app has handled the same batch's message (or after), so both are
            # waited for; each must happen.
            snapshot = app.snapshot
            return (
                indexed_size(family.other) is None
                and snapshot is not None
                and family.other not in snapshot.summaries
            )

        await wait_for(pilot, dropped)
        assert hits("footer") == []

        new = write_session(
            family.root,
            SessionHeader(id="ffff6666-new", created_at=T0 + 9, cwd=OTHER_CWD),
            turn(0, 1, "A quokka session", "Hello.", minute=80),
        )
        await wait_for(pilot, lambda: hits("quokka") == [str(new)])


async def test_the_app_builds_no_catalog_unasked(
    family: Family, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Without a catalog for the root (no search was made), live changes index
    nothing: opening the app never builds a whole catalog."""
    from turnline.core.catalog import catalog_path

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    async with TurnlineApp(family.root, tz=UTC).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.live)
        timeline = app.query_one(TurnTimeline)
        seq = last_seq(family.live) + 1
        more = turn(seq, 3, "Another turn", "Done.", minute=70)
        append_events(family.live, more, Encoding.RAW)
        await wait_for(pilot, lambda: len(timeline.turns) == 3)
        new = write_session(
            family.root,
            SessionHeader(id="ffff6666-new", created_at=T0 + 9, cwd=OTHER_CWD),
            turn(0, 1, "Brand new session", "Hello.", minute=80),
        )
        tree = app.query_one(SessionTree)
        await wait_for(pilot, lambda: tree.node_of(new) is not None)
        await pilot.pause(0.5)  # the catalog worker takes each batch within 0.25 s
    assert not catalog_path(family.root).exists()


async def test_a_rename_is_followed_under_a_filter_that_matched_the_old_path(
    family: Family,
) -> None:
    """The filter matched the open session by its old path: after the rename it stays
    shown and open (not replaced by whatever the filter still matches)."""
    async with TurnlineApp(family.root, tz=UTC).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.child)
        tree = app.query_one(SessionTree)
        await pilot.press("slash", *"parser--/bbbb", "enter")
        await wait_for(pilot, lambda: tree.node_of(family.other) is None)
        assert tree.highlighted_path == family.child
        project = family.child.parent.parent
        moved = project.rename(project.with_name("--elsewhere--")) / family.child.relative_to(
            project
        )
        await wait_for(pilot, lambda: app.view is not None and app.view.path == moved)
        await pilot.pause(0.3)
        assert app.view is not None and app.view.path == moved
        assert tree.highlighted_path == moved


@pytest.mark.parametrize("poll", [False, True], ids=["native", "poll"])
async def test_changes_made_as_the_scan_lands_still_show(family: Family, poll: bool) -> None:
    """The watcher starts once the first tree is drawn, after the scan: a log added
    and a turn appended the moment the scan lands (before the watcher exists) still
    reach the tree and the timeline, with nothing else touched afterwards."""
    written: list[Path] = []

    def write_now(message: object) -> None:
        if isinstance(message, RootScanned) and not written:
            seq = last_seq(family.live) + 1
            end = SessionEvent(
                "turn/end", seq, T0 + 3_600_000, {"turn": 2, "reason": {"kind": "completed"}}
            )
            append_events(family.live, [end], Encoding.RAW)
            written.append(
                write_session(
                    family.root,
                    SessionHeader(id="ffff6666-early", created_at=T0 + 9, cwd=OTHER_CWD),
                    turn(0, 1, "Written as the scan landed", "Hello.", minute=80),
                )
            )

    app = TurnlineApp(family.root, poll=poll, tz=UTC)
    async with app.run_test(size=SIZE, message_hook=write_now) as pilot:
        tree = app.query_one(SessionTree)
        await wait_for(pilot, lambda: bool(written) and tree.node_of(written[0]) is not None)
        node = tree.node_of(written[0])
        assert node is not None and "Written as the scan landed" in str(node.label)

        def closed() -> bool:
            """the live session's open turn to close"""
            snapshot = app.snapshot
            return snapshot is not None and not snapshot.summaries[family.live].open_turn

        await wait_for(pilot, closed)
        live = tree.node_of(family.live)
        assert live is not None and not str(live.label).startswith("● ")


async def test_the_watcher_starts_after_the_first_tree_is_drawn(
    family: Family, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Priming the watcher (a watch per folder, a stat of every log, a walk) would hold
    the interpreter while the first tree is laid out: it starts once the tree has
    drawn its sessions."""
    drew_sessions: list[bool] = []
    at_watch: list[bool] = []
    render_line = SessionTree.render_line

    def recording_render_line(self: SessionTree, y: int) -> Any:
        strip = render_line(self, y)
        if self.root.children:
            drew_sessions.append(True)
        return strip

    watch = TurnlineApp._watch

    def recording_watch(self: TurnlineApp, root: Any) -> Any:
        at_watch.append(bool(drew_sessions))
        return watch(self, root)

    monkeypatch.setattr(SessionTree, "render_line", recording_render_line)
    monkeypatch.setattr(TurnlineApp, "_watch", recording_watch)
    async with TurnlineApp(family.root, tz=UTC).run_test(size=SIZE) as pilot:
        app = await open_session(pilot, family.live)
        await wait_for(pilot, lambda: bool(at_watch))
        assert at_watch == [True]
        # and it watches: a turn appended now reaches the timeline
        timeline = app.query_one(TurnTimeline)
        seq = last_seq(family.live) + 1
        more = turn(seq, 3, "Another turn", "Done.", minute=70)
        append_events(family.live, more, Encoding.RAW)
        await wait_for(pilot, lambda: len(timeline.turns) == 3)
