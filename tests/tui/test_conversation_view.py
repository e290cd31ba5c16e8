"""The whole-conversation screen (issue 23): `w` shows every turn of the open session
in one scroll, read by a worker; log text stays literal; Escape and q go back, and the
main screen's session keys do nothing under it."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import Static
from turnline.core.model import SessionEvent, SessionHeader
from turnline.tui import TurnlineApp
from turnline.tui.screens import ConversationScreen, ForkScreen

from .conftest import CWD, T0, Family, opened, turn, wait_for, write_session

SIZE = (120, 36)


async def conversation(pilot: Pilot[Any], app: TurnlineApp) -> ConversationScreen:
    """Press `w` and wait until every turn is on the screen."""
    await pilot.press("w")
    await wait_for(pilot, lambda: isinstance(app.screen, ConversationScreen))
    screen = app.screen
    assert isinstance(screen, ConversationScreen)
    await wait_for(pilot, lambda: screen.done)
    await pilot.pause()
    return screen


def turn_texts(screen: ConversationScreen) -> list[Text]:
    """Each turn's drawn text, in screen order."""
    out = []
    for static in screen.query(".turn").results(Static):
        content = static.content
        assert isinstance(content, Text)
        out.append(content)
    return out


async def test_it_lists_every_turn_with_its_text(family: Family) -> None:
    async with TurnlineApp(family.root, tz=UTC).run_test(size=SIZE) as pilot:
        app = await opened(pilot, family.parent)
        screen = await conversation(pilot, app)
        texts = [text.plain for text in turn_texts(screen)]
        assert [text.splitlines()[0].split(" · ")[0] for text in texts] == [
            f"── turn {n}" for n in (1, 2, 3, 4)
        ]
        assert texts[0].splitlines()[0] == "── turn 1 · completed · 1 step"
        assert texts[2].startswith("── turn 3 · max-tokens")
        # User text of one turn, assistant text of another.
        assert "Refactor the tokenizer into its own module" in texts[0]
        assert "Added 12 tests." in texts[1]
        assert "Refactor" not in texts[1]
        # A tool call: its name, an argument excerpt and the result excerpt.
        assert "⚒ bash(" in texts[1] and "pytest -q" in texts[1]
        assert "→ 12 passed" in texts[1]
        status = screen.query_one("#conversation-status", Static).content
        assert str(status) == "4 turns"
        # On screen, one under the other, below the title and status.
        regions = [static.region for static in screen.query(".turn").results(Static)]
        assert regions[0].height > 1 and regions[0].width > 40, regions
        assert regions[0].y >= 2 and regions[1].y > regions[0].y, regions


async def test_a_fork_childs_seed_turns_say_inherited(family: Family) -> None:
    async with TurnlineApp(family.root, tz=UTC).run_test(size=SIZE) as pilot:
        app = await opened(pilot, family.child)
        screen = await conversation(pilot, app)
        headings = [text.plain.splitlines()[0] for text in turn_texts(screen)]
        assert len(headings) == 3
        assert [h.endswith(" · inherited") for h in headings] == [True, True, False]
        assert "Instead, document the tokenizer" in turn_texts(screen)[2].plain


async def test_log_text_stays_literal(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    events = turn(0, 1, "[bold]x[/bold] and [red]y[/]", "[link=http://e]z[/link] done")
    path = write_session(root, SessionHeader(id="markup-1", created_at=T0, cwd=CWD), events)
    async with TurnlineApp(root, tz=UTC).run_test(size=SIZE) as pilot:
        app = await opened(pilot, path)
        screen = await conversation(pilot, app)
        (text,) = turn_texts(screen)
        assert "[bold]x[/bold] and [red]y[/]" in text.plain
        assert "[link=http://e]z[/link] done" in text.plain
        # No style from the log's "markup" on its text (the role labels have their own).
        for field in ("[bold]x[/bold] and [red]y[/]", "[link=http://e]z[/link] done"):
            start = text.plain.index(field)
            end = start + len(field)
            assert not [s for s in text.spans if s.start < end and s.end > start], field


async def test_a_long_session_arrives_in_batches_in_order(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    events: list[SessionEvent] = []
    for number in range(1, 301):
        events += turn(len(events), number, f"question {number}", f"answer {number}", minute=0)
    path = write_session(root, SessionHeader(id="long-1", created_at=T0, cwd=CWD), events)
    async with TurnlineApp(root, tz=UTC).run_test(size=SIZE) as pilot:
        app = await opened(pilot, path)
        screen = await conversation(pilot, app)
        texts = [text.plain for text in turn_texts(screen)]
        assert len(texts) == 300
        assert all(f"question {n}\n" in texts[n - 1] for n in range(1, 301))
        assert texts[-1].endswith("answer 300")


async def test_escape_goes_back_and_session_keys_do_nothing(family: Family) -> None:
    async with TurnlineApp(family.root, tz=UTC).run_test(size=SIZE) as pilot:
        app = await opened(pilot, family.parent)
        app.timeline.focus()
        app.timeline.move_cursor(row=0)  # a ▶ row: f would fork there
        await pilot.pause()
        assert app.fork_refusal() is None
        main = app.screen
        screen = await conversation(pilot, app)
        footer = {
            key
            for key, active in screen.active_bindings.items()
            if active.binding.show and active.enabled
        }
        assert "escape" in footer and not {"f", "p", "v", "w"} & footer
        await pilot.press("f", "p", "m", "d", "e")
        await pilot.pause()
        assert app.screen is screen  # no fork dialog, no other screen
        assert not isinstance(app.screen, ForkScreen)
        assert app.view is not None and app.view.path == family.parent
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is main)
        # q goes back too, and does not quit.
        await conversation(pilot, app)
        await pilot.press("q")
        await wait_for(pilot, lambda: app.screen is main)
        assert app.is_running
