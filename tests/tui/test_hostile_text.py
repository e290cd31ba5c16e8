"""Log text that looks like markup is shown literally, wherever the app draws it.

Every place a string from a log reaches Textual (tree labels, the timeline, the detail
pane's titles and bodies, the command palette's hits, notifications) is fed strings
that a markup parser chokes on or obeys, whole and cut at every length, and at every
offset that makes a title's cut land inside them. The app must keep running and show
the characters as they are (issue 14, item 1).
"""

from __future__ import annotations

from datetime import UTC
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.command import CommandPalette
from textual.widgets import Input, OptionList, Static
from textual.widgets._collapsible import CollapsibleTitle
from turnline.core.model import SessionEvent, SessionHeader
from turnline.tui import TurnlineApp
from turnline.tui.screens import ForkScreen

from .conftest import CWD, T0, turn, wait_for, write_session

SIZE = (120, 36)

#: Strings a markup parser fails on (an unclosed tag) or obeys (a close, an action, a link).
HOSTILE = (
    "[",
    "[a=1 b=",
    "[name=em",
    "[/]",
    "[@click=app.quit]",
    "[link=file:///etc/passwd]x[/link]",
    "cd web/frontend && grep -rn 'input[name=email]' src/",
)
#: Title paddings: none, and ones that put the tree's and the palette's cuts inside.
PADS = (0, *range(40, 62, 3))
#: Each of them cut at every length.
CUTS = tuple(sorted({text[:n] for text in HOSTILE for n in range(1, len(text) + 1)}))


def hostile_turn(number: int, seq: int) -> list[SessionEvent]:
    """A turn whose every drawn string is hostile: user and assistant text, a context
    message's source, tool names, a pending bash command, other calls' arguments and
    results (each hostile string also placed so a title's cut lands inside it)."""
    tools: list[tuple[str, dict[str, Any], str]] = []
    for text in CUTS:
        tools.append((text, {"x": text}, text))
    for text in HOSTILE:
        for pad in range(30, 62, 2):
            tools.append(("bash", {"command": "p" * pad + text}, text))
            tools.append(("p" * (pad - 25) + text, {"path": text}, "ok"))
    events = turn(seq, number, "\n".join(CUTS), "\n".join(CUTS), tools=tools, close=False)
    at = len(events) + seq

    def add(etype: str, data: Any) -> None:
        nonlocal at
        events.append(SessionEvent(etype, at, T0 + at, data))
        at += 1

    for text in HOSTILE:
        add(
            "user/message",
            {"role": "user", "content": [{"type": "text", "text": text}], "source": {"kind": text}},
        )
    # A pending bash call (no result yet): the crash of issue 14.
    add(
        "tool/call",
        {
            "turn": number,
            "step": 1,
            "callId": "pending",
            "name": "bash",
            "arguments": '{"command": "cd web/frontend && grep -rn \'input[name=email]\' src/"}',
        },
    )
    add("turn/end", {"turn": number, "reason": {"kind": "error", "error": {"message": "[a=1 b="}}})
    return events


def write_root(root: Path) -> Path:
    """One session full of hostile text, and one session per hostile title (cut at
    every offset the palette's and the tree's limits could land in)."""
    main = write_session(
        root,
        SessionHeader(id="hostile-main", created_at=T0, cwd="/srv/[a=1 b="),
        hostile_turn(1, 0),
    )
    count = 0
    for text in HOSTILE:
        for pad in PADS:
            title = "t" * pad + text
            write_session(
                root,
                SessionHeader(id=f"h{count:03d}[name=em", created_at=T0 + count, cwd=CWD + text),
                turn(0, 1, title, text),
            )
            count += 1
    return main


def plain_texts(app: TurnlineApp) -> list[str]:
    """The plain text of every Static and Collapsible title in the detail pane."""
    out = [title.label.plain for title in app.detail.query(CollapsibleTitle)]
    for widget in app.detail.query("Static"):
        visual = widget.visual
        out.append(getattr(visual, "plain", str(visual)))
    return out


async def test_hostile_text_everywhere_is_literal_and_the_app_keeps_running(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    main = write_root(root)
    app = TurnlineApp(root, tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.view is not None)
        app.open_session(main)

        def shown() -> bool:
            """the hostile session's detail pane"""
            return (
                app.view is not None
                and app.view.path == main
                and len(app.detail.query(CollapsibleTitle)) > len(CUTS)
            )

        await wait_for(pilot, shown)
        await pilot.pause()
        app.detail.focus()
        await pilot.press("enter")  # unfold all: every body is drawn
        await pilot.pause()
        app.save_screenshot(str(tmp_path / "detail.svg"))
        assert app.is_running
        texts = "\n".join(plain_texts(app))
        for text in HOSTILE:
            assert text in texts, text
        # The pending bash call's title shows the command as it is.
        assert any(
            "⚒ bash(cd web/frontend && grep -rn 'input[name=email]'" in t for t in plain_texts(app)
        )
        # The context titles name the plugin literally.
        assert any(t == "context ([name=em)" for t in plain_texts(app))

        # The tree and timeline: labels are Text, their plain text is the title.
        nodes = list(app.session_tree.root.children)
        labels = []
        while nodes:
            node = nodes.pop()
            labels.append(str(node.label))
            nodes.extend(node.children)
        assert any("[@click=app.quit]" in label for label in labels)

        # The command palette: a search over hostile titles finds them, shown literally.
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))

        def typing_goes_to_the_palette() -> bool:
            """the palette's input has focus (else the keys below hit app bindings: o, s, e)"""
            return isinstance(app.screen, CommandPalette) and isinstance(app.focused, Input)

        await wait_for(pilot, typing_goes_to_the_palette)
        await pilot.press(*"open session")

        def hits() -> bool:
            """session hits in the palette"""
            options = app.screen.query(OptionList)
            return bool(options) and options.first().option_count > 10

        await wait_for(pilot, hits)
        options = app.screen.query_one(OptionList)
        prompts = [
            str(getattr(options.get_option_at_index(i).prompt, "plain", ""))
            for i in range(options.option_count)
        ]
        assert any("[name=em" in p for p in prompts)
        assert any("[link=file:///etc/passwd]" in p for p in prompts)
        await pilot.press("escape")
        await pilot.pause()
        assert app.is_running

        # The fork dialog names a hostile parent literally.
        assert app.snapshot is not None
        link = HOSTILE.index("[link=file:///etc/passwd]x[/link]") * len(PADS)  # pad 0
        target = next(
            path
            for path, summary in app.snapshot.summaries.items()
            if summary.id.startswith(f"h{link:03d}")
        )
        app.open_session(target)
        await wait_for(pilot, lambda: app.view is not None and app.view.path == target)
        app.timeline.focus()
        app.timeline.move_cursor(row=0)
        await pilot.pause()
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ForkScreen))
        facts = app.screen.query_one("#fork-facts", Static).content
        assert isinstance(facts, Text) and "[link=file:///etc/passwd]" in facts.plain
        await pilot.press("escape")
        await pilot.pause()
        assert app.is_running
