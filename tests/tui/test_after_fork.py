"""Pilot tests for the after-fork keys: c (continue in the agent), y (copy id), o (pager),
m + d (compare screen), e (export)."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from turnline.core.model import SessionHeader
from turnline.tui import TurnlineApp
from turnline.tui.screens import CompareScreen, ExportScreen

from ..core.disk_logs import as_events, write_log
from ..core.rich_logs import forked_pair, rich_turn
from .conftest import opened, wait_for

SIZE = (120, 36)


def _suspends(app: TurnlineApp, terminal: io.StringIO | None = None) -> list[str]:
    """Record suspends (the headless test driver cannot really suspend); what is
    printed while suspended goes to `terminal`, if given (Textual's suspend gives
    `print` the real stdout back)."""
    entered: list[str] = []

    @contextlib.contextmanager
    def suspend() -> Iterator[None]:
        entered.append("in")
        with contextlib.redirect_stdout(terminal) if terminal else contextlib.nullcontext():
            yield
        entered.append("out")

    app.suspend = suspend  # type: ignore[method-assign]
    return entered


def _config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    config = tmp_path / "xdg"
    (config / "turnline").mkdir(parents=True)
    (config / "turnline" / "config.toml").write_text(f"[resume]\ncommand = '''{command}'''\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))


async def test_c_runs_the_resume_command_in_the_sessions_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "project dir; x'"
    work.mkdir()
    out = tmp_path / "ran.txt"
    _config(tmp_path, monkeypatch, f"pwd > {out} && printf '%s' {{id}} >> {out}")
    header = SessionHeader(id="s'; touch pwned", created_at=1, cwd=str(work), delegation_depth=0)
    log = write_log(tmp_path / "root", header, as_events(rich_turn(0, 1, "hi")))
    async with TurnlineApp(tmp_path / "root", tz=UTC).run_test(size=SIZE) as pilot:
        app = await opened(pilot, log)
        entered = _suspends(app)
        await pilot.press("c")
        await pilot.pause()
        assert entered == ["in", "out"]
    assert out.read_text() == f"{work}\ns'; touch pwned"
    assert not any(p.name == "pwned" for p in tmp_path.rglob("pwned"))


async def test_c_warns_and_runs_here_when_the_cwd_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "ran.txt"
    _config(tmp_path, monkeypatch, f"pwd > {out}")
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    root = forked_pair(tmp_path / "root")  # cwd /home/dev/app does not exist
    async with TurnlineApp(tmp_path / "root", tz=UTC).run_test(size=SIZE) as pilot:
        app = await opened(pilot, root.resolve("left").path)
        _suspends(app)
        await pilot.press("c")
        await pilot.pause()
        messages = [n.message for n in app._notifications]
        assert any("/home/dev/app is gone" in m for m in messages)
    assert out.read_text() == f"{here}\n"


async def test_y_copies_the_id_and_o_opens_the_turn_in_the_pager(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = tmp_path / "paged.md"
    pager = tmp_path / "pager.sh"
    pager.write_text(f'#!/bin/sh\ncp "$1" {seen}\n')
    pager.chmod(0o755)
    monkeypatch.setenv("PAGER", str(pager))
    root = forked_pair(tmp_path / "root")
    async with TurnlineApp(tmp_path / "root", tz=UTC).run_test(size=SIZE) as pilot:
        app = await opened(pilot, root.resolve("right").path)
        copied: list[str] = []
        app.copy_to_clipboard = copied.append  # type: ignore[method-assign]
        await pilot.press("y")
        assert copied == ["right"]
        _suspends(app)
        app.timeline.focus()
        app.timeline.move_cursor(row=app.timeline.row_count - 1)
        await pilot.pause()
        turn = app.timeline.current_turn
        assert turn is not None
        await pilot.press("o")
        await wait_for(pilot, seen.exists)  # the turn is written off the UI thread
        await pilot.pause()
    text = seen.read_text()
    assert f"turn {turn.number}" in text and f"answer {turn.number}" in text
    assert not list(Path(os.environ.get("TMPDIR", "/tmp")).glob("turnline-turn-*.md"))


async def test_m_then_d_opens_the_compare_screen(tmp_path: Path) -> None:
    root = forked_pair(tmp_path / "root")
    async with TurnlineApp(tmp_path / "root", tz=UTC).run_test(size=SIZE) as pilot:
        app = await opened(pilot, root.resolve("left").path)
        await pilot.press("m")
        app = await opened(pilot, root.resolve("right").path)
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        assert screen.comparison.diverged_at == 8
        assert len(screen.comparison.rows) == 2
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, CompareScreen))


async def test_e_exports_and_says_where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = forked_pair(tmp_path / "root")
    monkeypatch.chdir(tmp_path)
    async with TurnlineApp(tmp_path / "root", tz=UTC).run_test(size=SIZE) as pilot:
        app = await opened(pilot, root.resolve("left").path)
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportScreen))
        await pilot.click("#html")
        await pilot.pause()
        await pilot.click("#go")
        await wait_for(pilot, lambda: not isinstance(app.screen, ExportScreen))
        messages = [n.message for n in app._notifications]
        assert any(m == f"wrote {tmp_path / 'left.html'}" for m in messages), messages
    assert (tmp_path / "left.html").read_text().startswith("<!DOCTYPE html>")


def compare_before(root: Any) -> Any:
    """A `run_before` that marks `left`, compares it with `right`, and moves to row 2."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await opened(pilot, root.resolve("left").path)
        await pilot.press("m")
        app = await opened(pilot, root.resolve("right").path)
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))
        await pilot.press("down")
        await pilot.pause()

    return run_before


def test_compare_screen_snapshot(snap_compare: Any, tmp_path: Path) -> None:
    root = forked_pair(tmp_path / "root")
    assert snap_compare(
        TurnlineApp(tmp_path / "root", tz=UTC),
        terminal_size=SIZE,
        run_before=compare_before(root),
    )


@pytest.mark.parametrize(
    ("command", "code"), [("false", 1), ("no-such-agent-xyz --resume {id}", 127)]
)
async def test_c_says_a_failed_resume_command_and_waits_for_enter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, code: int
) -> None:
    """Issue 23, bug 3: a resume command that fails (or is missing) is an error with its
    exit code and the command, and its output stays on the terminal until Enter."""
    _config(tmp_path, monkeypatch, command)
    root = forked_pair(tmp_path / "root")
    monkeypatch.chdir(tmp_path)  # the pair's cwd is gone: the command runs here
    typed = io.StringIO("\n")
    async with TurnlineApp(tmp_path / "root", tz=UTC).run_test(size=SIZE) as pilot:
        app = await opened(pilot, root.resolve("left").path)
        terminal = io.StringIO()
        entered = _suspends(app, terminal)
        monkeypatch.setattr("sys.stdin", typed)
        await pilot.press("c")
        await pilot.pause()
        assert entered == ["in", "out"]
        assert typed.tell() == 1  # the Enter was read, inside the suspend
        rendered = command.replace("{id}", "left")
        errors = [n for n in app._notifications if n.severity == "error"]
        assert [n.message for n in errors] == [f"resume command exited {code}: {rendered}"]
    out = terminal.getvalue()
    assert "press Enter to return to turnline" in out
    assert f"exited {code}" in out


async def test_c_does_not_wait_after_a_resume_command_that_succeeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _config(tmp_path, monkeypatch, "true")
    root = forked_pair(tmp_path / "root")
    monkeypatch.chdir(tmp_path)
    typed = io.StringIO("\n")
    async with TurnlineApp(tmp_path / "root", tz=UTC).run_test(size=SIZE) as pilot:
        app = await opened(pilot, root.resolve("left").path)
        terminal = io.StringIO()
        entered = _suspends(app, terminal)
        monkeypatch.setattr("sys.stdin", typed)
        await pilot.press("c")
        await pilot.pause()
        assert entered == ["in", "out"]
        assert typed.tell() == 0
        assert not [n for n in app._notifications if n.severity == "error"]
    assert "press Enter" not in terminal.getvalue()


def test_the_pager_and_editor_variables_are_read_as_shells_and_terminals_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from turnline.tui.after_fork import command_line

    for name in ("PAGER", "VISUAL", "EDITOR"):
        monkeypatch.delenv(name, raising=False)
    assert command_line(("PAGER",), "less") == ["less"]
    monkeypatch.setenv("PAGER", "   ")  # blank: as unset
    assert command_line(("PAGER",), "less") == ["less"]
    monkeypatch.setenv("PAGER", "less -R '+G'")
    assert command_line(("PAGER",), "less") == ["less", "-R", "+G"]
    monkeypatch.setenv("PAGER", 'rec.sh "x')
    said = command_line(("PAGER",), "less")
    assert isinstance(said, str) and said.startswith("$PAGER is not a command line (")
    # VISUAL first, then EDITOR
    monkeypatch.setenv("EDITOR", "nano")
    assert command_line(("VISUAL", "EDITOR"), "vi") == ["nano"]
    monkeypatch.setenv("VISUAL", "code --wait")
    assert command_line(("VISUAL", "EDITOR"), "vi") == ["code", "--wait"]
