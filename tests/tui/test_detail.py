"""The detail pane: the fork verdict from the core, bounded fields, readable tool calls,
usage lines, plurals, and Enter that (un)folds without jumping."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path
from typing import Any

from rich.syntax import Syntax
from rich.text import Text
from textual.widgets import Collapsible, Static
from turnline.core.content import FIELD_LIMIT
from turnline.core.model import SessionEvent, SessionHeader
from turnline.tui import TurnlineApp
from turnline.tui.widgets import TurnDetail

from .conftest import CWD, T0, copy_fixture_scenarios, turn, wait_for, write_session

SIZE = (120, 36)
MB = 1024 * 1024


async def open_turn(pilot: Any, app: TurnlineApp, path: Path, row: int) -> TurnDetail:
    """Open `path`, put the timeline cursor on `row`, and wait for its detail."""
    await wait_for(pilot, lambda: app.snapshot is not None)
    app.open_session(path)

    def loaded() -> bool:
        """the session's timeline"""
        return app.view is not None and app.view.path == path and app._wanted is None

    await wait_for(pilot, loaded)
    app.timeline.focus()
    app.timeline.move_cursor(row=row)
    detail = app.detail

    def shown() -> bool:
        """the turn's detail"""
        verdict = detail._verdict
        return verdict is not None and verdict.index == row

    await wait_for(pilot, shown)
    await pilot.pause()
    return detail


def contents(detail: TurnDetail) -> list[Any]:
    """What each Static of the pane was given (Text, Syntax, Content)."""
    return [widget.content for widget in detail.query(Static)]


def plain(detail: TurnDetail) -> str:
    out = []
    for content in contents(detail):
        if isinstance(content, Syntax):
            out.append(content.code)
        else:
            out.append(str(getattr(content, "plain", content)))
    return "\n".join(out)


def footer_actions(app: TurnlineApp) -> dict[str, str]:
    """The actions the footer offers now, by description."""
    return {
        binding.description: binding.action
        for (_, binding, enabled, _) in app.active_bindings.values()
        if enabled and binding.show
    }


async def test_a_row_past_a_seq_gap_is_not_called_a_fork_point(
    fixtures_root: Path, tmp_path: Path
) -> None:
    root = copy_fixture_scenarios(
        fixtures_root, tmp_path / "root", ["acp-snapshot-suite/suite_authored-error"]
    )
    path = root / "acp-snapshot-suite/suite_authored-error/session.jsonl"
    app = TurnlineApp(root, tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        detail = await open_turn(pilot, app, path, 0)
        heading = plain(detail)
        assert detail._verdict is not None and not detail._verdict.forkable
        assert "fork point: f forks here" not in heading
        assert "✖ not a fork point:" in heading
        # The same words `f` refuses with: the fork rule's own message.
        assert detail._verdict.refusal is not None
        assert detail._verdict.refusal[:40] in heading


def huge_root(root: Path) -> tuple[Path, Path]:
    """A session whose turn 1 holds a 10 MB assistant message and a 10 MB tool result,
    and whose turn 2 holds a 10 MB user message (in the timeline's user column too) and
    a folded 40 MB tool result."""
    big = "a" * (10 * MB)
    events = turn(0, 1, "make it big", big, tools=[("read", {"path": "x"}, "r" * (10 * MB))])
    events += turn(
        len(events), 2, "u" * (10 * MB), "done", tools=[("read", {"path": "y"}, "z" * (40 * MB))]
    )
    path = write_session(root, SessionHeader(id="huge", created_at=T0, cwd=CWD), events)
    small = write_session(
        root, SessionHeader(id="small", created_at=T0 + 1, cwd=CWD), turn(0, 1, "hi", "hello")
    )
    return path, small


def held_chars(detail: TurnDetail) -> int:
    return sum(len(text) for text in plain(detail).split("\n"))


async def test_huge_fields_are_drawn_as_a_bounded_prefix_and_keys_still_answer(
    tmp_path: Path,
) -> None:
    path, _ = huge_root(tmp_path / "root")
    app = TurnlineApp(tmp_path / "root", tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        detail = await open_turn(pilot, app, path, 0)
        # Two 10 MB fields: the pane holds a bounded prefix of each, and says the rest.
        assert held_chars(detail) < 3 * FIELD_LIMIT + 10_000
        text = plain(detail)
        assert "… 9.9 MB more (v: raw events, o: open in pager)" in text
        detail.focus()
        await pilot.press("enter")  # unfold the 10 MB result
        await pilot.pause()
        assert not any(fold.collapsed for fold in detail.query(Collapsible))
        assert held_chars(detail) < 3 * FIELD_LIMIT + 10_000
        # The raw view is bounded too.
        await pilot.press("v")
        await wait_for(pilot, lambda: bool(detail.query(".raw")))
        assert held_chars(detail) < 4 * FIELD_LIMIT + 10_000
        assert "MB more" in plain(detail)
        await pilot.press("v")
        # Turn 2: a folded 40 MB result, highlighted.
        app.timeline.focus()
        await pilot.press("down")
        await wait_for(pilot, lambda: detail._verdict is not None and detail._verdict.index == 1)
        await pilot.pause()
        assert held_chars(detail) < 2 * FIELD_LIMIT + 10_000
        assert "… 39.9 MB more" in plain(detail)
        # A key is answered: the help opens and closes.
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: app.screen is not app.screen_stack[0])
        await pilot.press("escape")
        assert app.is_running


def readable_events() -> list[SessionEvent]:
    events = turn(
        0,
        1,
        "fix it",
        "fixed",
        tools=[
            ("bash", {"command": "cd web && \\\n  grep -rn 'a[b]' src/\necho done"}, "ok"),
            (
                "edit",
                {"file_path": "settings.txt", "old_string": "blue\n", "new_string": "green\n"},
                "ok",
            ),
        ],
    )
    end = events.pop()
    events.append(
        SessionEvent(
            "assistant/message",
            end.seq,
            end.time,
            {
                "turn": 1,
                "step": 1,
                "message": {
                    "role": "assistant",
                    "content": [],
                    "source": {"provider": "deepseek", "model": "deepseek-chat"},
                },
                "usage": {"inputTokens": 1200, "outputTokens": 34, "cacheReadTokens": 1000},
            },
        )
    )
    events.append(SessionEvent(end.type, end.seq + 1, end.time, end.data))
    return events


async def test_tool_calls_read_as_code_and_diffs_with_usage_and_plurals(tmp_path: Path) -> None:
    path = write_session(
        tmp_path / "root", SessionHeader(id="readable", created_at=T0, cwd=CWD), readable_events()
    )
    app = TurnlineApp(tmp_path / "root", tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        detail = await open_turn(pilot, app, path, 0)
        syntaxes = [c for c in contents(detail) if isinstance(c, Syntax)]
        commands = [
            s.code for s in syntaxes if s.lexer is not None and "bash" in str(s.lexer.name).lower()
        ]
        # Real newlines, the command as typed (not escaped JSON), brackets literal.
        assert commands == ["cd web && \\\n  grep -rn 'a[b]' src/\necho done"]
        diffs = [
            s.code for s in syntaxes if s.lexer is not None and "diff" in str(s.lexer.name).lower()
        ]
        assert len(diffs) == 1
        assert "-blue" in diffs[0] and "+green" in diffs[0] and "settings.txt" in diffs[0]
        titles = [str(c.title) for c in detail.query(Collapsible)]
        assert "⚒ edit(settings.txt) ✓" in titles
        text = plain(detail)
        assert "1 step ·" in text and "1 steps" not in text
        usage = [c for c in contents(detail) if isinstance(c, Text) and c.plain.startswith("Σ")]
        assert [u.plain for u in usage] == [
            "Σ step 1 · deepseek/deepseek-chat · 1,200 in · 34 out · cache 1,000 read · 0 write"
        ]


async def test_unfold_all_keeps_the_header_on_top_and_the_footer_says_what_enter_does(
    tmp_path: Path,
) -> None:
    long_user = "\n".join(f"line {i}" for i in range(60))
    events = turn(
        0,
        1,
        long_user,
        "ok",
        tools=[("read", {"path": "x"}, "\n".join("r" * 20 for _ in range(80)))],
    )
    path = write_session(
        tmp_path / "root", SessionHeader(id="folds", created_at=T0, cwd=CWD), events
    )
    app = TurnlineApp(tmp_path / "root", tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        detail = await open_turn(pilot, app, path, 0)
        detail.focus()
        await pilot.pause()
        assert footer_actions(app).get("Unfold all") == "unfold_all"
        assert "Fold all" not in footer_actions(app)
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert not any(fold.collapsed for fold in detail.query(Collapsible))
        assert detail.scroll_y == 0  # the turn header stays on top
        assert "Unfold all" not in footer_actions(app)
        assert footer_actions(app).get("Fold all") == "fold_all"
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert all(fold.collapsed for fold in detail.query(Collapsible))
        assert detail.scroll_y == 0
        # Raw view: Enter does nothing there, so the footer does not offer it.
        await pilot.press("v")
        await pilot.pause()
        assert "Unfold all" not in footer_actions(app) and "Fold all" not in footer_actions(app)
