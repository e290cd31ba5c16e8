"""The real app over the bad corpus and over hostile content: shows problems, never crashes,
and never lets log text act as markup or terminal control."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Static
from turnline.core.logfile import read_log
from turnline.core.textsafe import one_line
from turnline.tui import TurnlineApp

from .corpus import (
    EVIL_ID,
    MARKUP,
    BadCase,
    build_odd_shapes,
    dac_override_dropped,
    log_path,
    unsafe_characters,
)

SIZE = (120, 40)
Corpus = tuple[Path, dict[str, tuple[list[Path], BadCase]]]


async def wait_for(pilot: Pilot[Any], predicate: Callable[[], bool], what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30.0  # generous: see tests/tui/conftest.py wait_for
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.02)


def detail_text(app: TurnlineApp) -> str:
    return "\n".join(str(w.render()) for w in app.detail.query(Static))


async def open_log(pilot: Pilot[Any], app: TurnlineApp, path: Path) -> None:
    app.open_session(path)
    await wait_for(
        pilot,
        lambda: app.view is not None and app.view.path == path and app._wanted is None,
        f"{path} to load",
    )


async def test_app_shows_each_bad_logs_problems_in_the_detail_pane(corpus_root: Corpus) -> None:
    rootdir, cases = corpus_root
    # Worker threads started in this block copy this thread's credentials, so even as
    # root the app cannot read the mode-000 log.
    with dac_override_dropped():
        app = TurnlineApp(rootdir, tz=UTC)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.snapshot is not None, "the scan")
            for name, (paths, case) in cases.items():
                for path in paths:
                    await open_log(pilot, app, path)
                    assert app.view is not None
                    assert {p.kind for p in app.view.loaded.problems} == case.kinds, name
                    if not case.kinds:
                        continue
                    # Every problem of this log, kind and message, is in the pane.
                    wanted = [
                        piece
                        for p in app.view.loaded.problems
                        for piece in (str(p.kind), one_line(p.message, 400))
                    ]

                    def shown(wanted: list[str] = wanted) -> bool:
                        text = detail_text(app)
                        return "in this log" in text and all(w in text for w in wanted)

                    await wait_for(pilot, shown, f"the problems of {name} in #detail")
            assert app.is_running
            assert unsafe_characters(app.export_screenshot()) == []


async def test_app_renders_hostile_content_literally(hostile_root: Path) -> None:
    app = TurnlineApp(hostile_root, tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None, "the scan")
        await open_log(pilot, app, log_path(hostile_root, EVIL_ID))
        await wait_for(pilot, lambda: "gnp.exe" in detail_text(app), "the hostile turn")
        text = detail_text(app)
        # Markup is shown as the characters it is made of, not applied as a style.
        assert MARKUP in text
        assert unsafe_characters(text) == []
        screen = app.export_screenshot()
        assert unsafe_characters(screen) == []
        assert "[bold" in screen and "red]x[/]" in screen
        await pilot.press("v")  # the raw JSON view shows the same text, escaped
        await pilot.pause()
        assert unsafe_characters(detail_text(app)) == []
        assert unsafe_characters(app.export_screenshot()) == []


async def test_app_shows_odd_event_shapes_without_crashing(tmp_path: Path) -> None:
    logs = build_odd_shapes(tmp_path)
    app = TurnlineApp(tmp_path, tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None, "the scan")
        for name, path in logs.items():
            await open_log(pilot, app, path)
            assert app.view is not None and len(app.view.loaded.events) == len(
                read_log(path).events
            ), name
            # The one turn's detail (conversation, tools, reason) is drawn.
            marker = f"hello {name}"

            def drawn(marker: str = marker) -> bool:
                return marker in detail_text(app)

            await wait_for(pilot, drawn, f"the turn of {name}")
            await pilot.press("v")  # the raw JSON view of the same events
            await wait_for(pilot, lambda: bool(app.detail.query(".raw")), f"raw view of {name}")
            await pilot.press("v")
        assert app.is_running
