"""The app on dsh's V5 logs: the tree shows one session per folder, the timeline and
the detail read V5 events (with the older generation named in the header), `f` forks
in V5, a V5 log's appends grow the timeline live, and a newer generation published
while the app is open replaces the old one, cursor kept."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path
from typing import Any

import orjson
from textual.widgets import Static
from turnline.core.layout import session_dir
from turnline.tui import TurnlineApp
from turnline.tui.screens import ForkScreen
from turnline.tui.widgets import SessionTree, TurnTimeline

from ..core.test_generations import V5_SAMPLES, lines_of, persisted, write_lines
from .conftest import wait_for

SIZE = (120, 36)
CWD = "/work/project"


def v5_root(root: Path) -> tuple[Path, Path]:
    """dsh's three-turn V5 sample, persisted, with a V3 generation of it beside it."""
    (source,) = [p for p in V5_SAMPLES if p.parent.name == "subagent-list-agents"]
    rows = persisted(lines_of(source))
    folder = session_dir(root, "s1", CWD)
    older = write_lines(folder / "session.v3.jsonl", [{**rows[0], "version": 3}, *rows[1:]])
    return write_lines(folder / "session.v5.jsonl", rows), older


async def opened(pilot: Any, app: TurnlineApp, path: Path) -> TurnTimeline:
    await wait_for(pilot, lambda: app.snapshot is not None)
    app.open_session(path)

    def shown() -> bool:
        """the session's timeline"""
        return app.view is not None and app.view.path == path and app._wanted is None

    await wait_for(pilot, shown)
    await pilot.pause()
    return app.query_one(TurnTimeline)


def detail_text(app: TurnlineApp) -> str:
    return "\n".join(str(getattr(w.content, "plain", w.content)) for w in app.detail.query(Static))


async def test_a_v5_session_shows_forks_and_grows(tmp_path: Path) -> None:
    root = tmp_path / "root"
    log, older = v5_root(root)
    app = TurnlineApp(root, tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        timeline = await opened(pilot, app, log)
        tree = app.query_one(SessionTree)
        # one session for the folder: the older generation is history, not a row
        assert tree.node_of(log) is not None and tree.node_of(older) is None
        assert [t.reason for t in timeline.turns] == ["completed"] * 3
        timeline.focus()
        timeline.move_cursor(row=0)

        def detail_read() -> bool:
            """the first turn's detail"""
            verdict = app.detail._verdict
            return verdict is not None and verdict.index == 0 and app.detail._content is not None

        await wait_for(pilot, detail_read)
        await pilot.pause()
        text = detail_text(app)
        assert "also session.v3.jsonl (v3)" in text
        assert "Call the subagent tool once" in text  # the user's prompt, from V5 events
        assert "fork point: f forks here" in text

        # a V5 log grows by whole rows with their seqs: the timeline follows
        rows = lines_of(log)
        n = len(rows) - 1
        start = rows[-1]["time"] + 1
        appended = [
            {"type": "turn/start", "seq": n, "time": start, "data": {"turn": 4}},
            {
                "type": "user/message",
                "seq": n + 1,
                "time": start + 1,
                "data": {
                    "role": "user",
                    "id": "m-live",
                    "content": [{"type": "text", "text": "one more, live"}],
                    "source": {"kind": "user"},
                },
                "surfaceOp": "append",
            },
            {
                "type": "turn/end",
                "seq": n + 2,
                "time": start + 2,
                "data": {"turn": 4, "reason": {"kind": "completed"}},
            },
        ]
        with log.open("ab") as fh:
            fh.write(b"".join(orjson.dumps(r) + b"\n" for r in appended))
        await wait_for(pilot, lambda: len(timeline.turns) == 4, timeout=20)
        assert timeline.turns[-1].user.startswith("one more, live")

        # `f` on the first turn writes a V5 child, as dsh's V5 fork does
        timeline.focus()
        timeline.move_cursor(row=0)
        await pilot.pause()
        boundary = timeline.turns[0].end_seq
        assert boundary is not None
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ForkScreen))
        await pilot.press(*"v5-branch")
        await pilot.press("enter")
        child = session_dir(root, "v5-branch", CWD) / "session.v5.jsonl"
        await wait_for(pilot, lambda: app.view is not None and app.view.path == child)
        header = orjson.loads(child.read_bytes().split(b"\n", 1)[0])
        assert header["version"] == 5 and header["isSeeded"] is True
        assert "seedLength" not in header
        assert lines_of(child)[-1] == {
            "type": "session/end-seed",
            "seq": boundary + 1,
            "time": rows[boundary + 1]["time"],
            "data": {"inherited": True},
        }
        # the child shows its one inherited turn, then the divider
        assert app.query_one(TurnTimeline).row_count == 2


async def test_a_new_generation_replaces_the_open_session_live(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (source,) = [p for p in V5_SAMPLES if p.parent.name == "subagent-list-agents"]
    rows = persisted(lines_of(source))
    folder = session_dir(root, "s1", CWD)
    old = write_lines(folder / "session.v4.jsonl", [{**rows[0], "version": 4}, *rows[1:]])
    app = TurnlineApp(root, tz=UTC, poll=True)
    async with app.run_test(size=SIZE) as pilot:
        timeline = await opened(pilot, app, old)
        timeline.focus()
        timeline.move_cursor(row=1)
        await pilot.pause(0.5)  # the watcher is primed once the tree is drawn
        # dsh resumes the session: it publishes a V5 successor beside the V4 file
        new = write_lines(folder / "session.v5.jsonl", rows)
        await wait_for(pilot, lambda: app.view is not None and app.view.path == new, timeout=20)
        tree = app.query_one(SessionTree)
        assert tree.node_of(new) is not None and tree.node_of(old) is None
        assert len(timeline.turns) == 3
        assert timeline.cursor_row == 1


async def test_the_fork_notification_counts_the_seed_as_the_dialog_does(tmp_path: Path) -> None:
    """Issue 23, bug 7: a V5 child ends its seed with a `session/end-seed` marker; the
    notification counts the inherited events as the dialog and the child's header do
    (boundary + 1), not the marker too."""
    root = tmp_path / "root"
    log, _older = v5_root(root)
    app = TurnlineApp(root, tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        timeline = await opened(pilot, app, log)
        timeline.focus()
        timeline.move_cursor(row=1)
        await pilot.pause()
        boundary = timeline.turns[1].end_seq
        assert boundary is not None
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ForkScreen))
        dialog = app.screen
        assert isinstance(dialog, ForkScreen)
        assert dialog.plan.inherits == boundary + 1
        await pilot.press(*"v5-seeded", "enter")
        child = session_dir(root, "v5-seeded", CWD) / "session.v5.jsonl"
        await wait_for(pilot, lambda: app.view is not None and app.view.path == child)
        assert app.view is not None
        assert app.view.loaded.summary.seed_length == boundary + 1
        assert app.view.loaded.summary.events == boundary + 2  # the seed and its marker
        forked = [n.message for n in app._notifications if n.title == "Forked"]
        assert forked == [f"v5-seeded ← s1 at seq {boundary} ({boundary + 1} events inherited)"]


async def test_a_child_cut_inside_a_turn_shows_where_its_seed_ends(tmp_path: Path) -> None:
    """dsh (V4+) may fork inside an open turn: the divider comes before that turn, which
    is the child's (it ends with the child's `forked` closers), and says so."""
    from ..core.test_midturn_fork import BOUNDARY, family

    _, child, _ = family(tmp_path, 5)
    app = TurnlineApp(tmp_path, tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        timeline = await opened(pilot, app, child)
        assert timeline.row_count == 4  # two seed turns, the divider, turn 3
        assert timeline.turn_index_at(2) is None
        text = timeline.get_row_at(2)[1].plain
        assert text.startswith(f"forked from parent-1 at seq {BOUNDARY}, inside turn 3 · ")
        views = timeline.turn_views
        assert [v.inherited for v in views] == [True, True, False]
        assert views[2].turn.reason == "forked"


async def test_a_v0_child_of_a_migrated_parent_jumps_to_the_same_turn(tmp_path: Path) -> None:
    """The demo's V0 subagent child counts its seed in its parent's V0 seqs (807 events
    of turns 1-4); the parent is shown from its V5 generation (97 events): `p` lands on
    turn 4 there, and the divider says which generation its seq is of."""
    from turnline.demo import build_demo_root
    from turnline.tui.widgets._timeline import Divider

    demo = build_demo_root(tmp_path / "demo", now_ms=1_790_000_000_000)
    child, parent = demo.roles["subagent-fork"], demo.roles["root"]
    app = TurnlineApp(demo.path, tz=UTC)
    async with app.run_test(size=(160, 50)) as pilot:
        timeline = await opened(pilot, app, child)
        divider = timeline._divider
        assert isinstance(divider, Divider) and divider.seqs_note == " of its session.jsonl"
        await pilot.press("p")
        await wait_for(
            pilot,
            lambda: app.view is not None and app.view.path == parent and app._wanted is None,
        )
        await pilot.pause()
        shown = app.query_one(TurnTimeline)
        assert shown.current_turn is not None and shown.current_turn.number == 4
        assert len(shown.turns) == 6
