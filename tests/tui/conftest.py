"""Helpers for the TUI tests: real logs written with the core into tmp_path."""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from turnline.core.layout import session_dir
from turnline.core.logfile import Encoding
from turnline.core.model import SessionEvent, SessionHeader
from turnline.core.writer import encode_new_log, log_name, write_new_file
from turnline.tui import TurnlineApp


@pytest.fixture(autouse=True)
def no_fork_once_threads_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every app test runs with `os.fork` refusing to copy a process that runs threads
    (issue 9): the app scans, reloads and indexes serially or in the pool started
    before its first thread, and never forks."""
    real_fork = os.fork

    def fork() -> int:
        if threading.active_count() > 1:
            raise AssertionError(
                f"os.fork called while {threading.active_count()} threads run: "
                + ", ".join(t.name for t in threading.enumerate())
            )
        return real_fork()

    monkeypatch.setattr(os, "fork", fork)


#: Every log time is offset from this (2026-06-01 12:00:00 UTC): screens never show "now".
T0 = 1_780_315_200_000
CWD = "/home/dev/parser"
OTHER_CWD = "/home/dev/site"
HOSTILE = "[bold red]x[/] \x1b[2J\x1b]52;c;SGVsbG8=\x07 \u202eevil"


def turn(
    seq: int,
    number: int,
    user: str,
    assistant: str,
    *,
    tools: Sequence[tuple[str, dict[str, Any], str]] = (),
    reason: dict[str, Any] | None = None,
    close: bool = True,
    minute: int | None = None,
) -> list[SessionEvent]:
    """The events of one turn starting at `seq` (user message first, turn/end last)."""
    base = T0 + (minute if minute is not None else number * 5) * 60_000
    events: list[SessionEvent] = []

    def add(etype: str, data: Any) -> None:
        events.append(SessionEvent(etype, seq + len(events), base + len(events) * 1000, data))

    add(
        "user/message",
        {"role": "user", "content": [{"type": "text", "text": user}], "source": {"kind": "user"}},
    )
    add("turn/start", {"turn": number})
    add("step/start", {"turn": number, "step": 1})
    for i, (name, args, result) in enumerate(tools):
        call_id = f"call-{number}-{i}"
        add(
            "tool/call",
            {"turn": number, "step": 1, "callId": call_id, "name": name, "arguments": args},
        )
        add(
            "tool/result",
            {
                "turn": number,
                "step": 1,
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool-result",
                            "toolCallId": call_id,
                            "content": [{"type": "text", "text": result}],
                            "isError": False,
                        }
                    ],
                },
            },
        )
    add(
        "assistant/message",
        {
            "turn": number,
            "step": 1,
            "message": {"role": "assistant", "content": [{"type": "text", "text": assistant}]},
        },
    )
    if close:
        add("turn/end", {"turn": number, "reason": reason or {"kind": "completed"}})
    return events


def user_prices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: str) -> Path:
    """Write `table` as the user's `prices.toml` under a config home of its own, and
    point `$XDG_CONFIG_HOME` at it; the file's path."""
    config = tmp_path / "config"
    (config / "turnline").mkdir(parents=True)
    path = config / "turnline" / "prices.toml"
    path.write_text(table)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    return path


def write_session(root: Path, header: SessionHeader, events: Sequence[SessionEvent]) -> Path:
    """Write a whole log in the dsh layout with the core's writer."""
    final = session_dir(root, header.id, header.cwd) / log_name(Encoding.RAW)
    write_new_file(final, [encode_new_log(header, events, Encoding.RAW)])
    return final


@dataclass
class Family:
    """A root with a parent, a user fork, a subagent child, a live session and others."""

    root: Path
    parent: Path
    child: Path
    subagent: Path
    live: Path
    other: Path


def parent_events() -> list[SessionEvent]:
    events = turn(
        0,
        1,
        "Refactor the tokenizer into its own module",
        "Done: tokenizer.py.",
        tools=[
            ("read", {"path": "parser.py"}, "def parse(): ..."),
            ("write", {"path": "tokenizer.py", "content": "def tokens(): ..."}, "ok"),
        ],
    )
    events += turn(
        len(events),
        2,
        "Now add tests for the tokenizer",
        "Added 12 tests.",
        tools=[("bash", {"cmd": "pytest -q"}, "12 passed")],
    )
    events += turn(
        len(events), 3, "Speed it up", "Hit the token limit.", reason={"kind": "max-tokens"}
    )
    events += turn(
        len(events),
        4,
        "Try again, smaller",
        "Something broke.",
        reason={"kind": "error", "error": {"message": "provider returned 500"}},
    )
    return events


def make_family(root: Path) -> Family:
    """Write the family root under `root`."""
    root.mkdir(parents=True, exist_ok=True)
    parent_ev = parent_events()
    parent = write_session(
        root, SessionHeader(id="aaaa1111-parent", created_at=T0, cwd=CWD), parent_ev
    )
    boundary = next(e.seq for e in parent_ev if e.type == "turn/end" and e.data["turn"] == 2)
    seed = parent_ev[: boundary + 1]
    child_ev = seed + turn(
        boundary + 1, 3, "Instead, document the tokenizer", "Wrote docs.", minute=40
    )
    child = write_session(
        root,
        SessionHeader(
            id="bbbb2222-child",
            created_at=T0 + 1,
            cwd=CWD,
            parent_session="aaaa1111-parent",
            seed_length=boundary + 1,
        ),
        child_ev,
    )
    sub_ev = turn(0, 1, "List the tokenizer's public names", "tokens, Token.", minute=7)
    subagent = write_session(
        root,
        SessionHeader(
            id="cccc3333-sub",
            created_at=T0 + 2,
            cwd=CWD,
            parent_session="aaaa1111-parent",
            origin="subagent",
            delegation_depth=1,
        ),
        sub_ev,
    )
    live_ev = turn(0, 1, "Write the changelog", "Changelog written.", minute=50)
    live_ev += turn(len(live_ev), 2, "And bump the version", "", close=False, minute=55)
    live = write_session(
        root, SessionHeader(id="dddd4444-live", created_at=T0 + 3, cwd=OTHER_CWD), live_ev
    )
    other_ev = turn(0, 1, "Fix the footer links", "Fixed.", minute=60)
    other = write_session(
        root, SessionHeader(id="eeee5555-other", created_at=T0 + 4, cwd=OTHER_CWD), other_ev
    )
    return Family(root, parent, child, subagent, live, other)


@pytest.fixture
def family(tmp_path: Path) -> Family:
    """A fresh family root in tmp_path/root."""
    return make_family(tmp_path / "root")


def copy_fixture_scenarios(fixtures: Path, dest: Path, names: Sequence[str]) -> Path:
    """Copy some real dsh scenario folders (e.g. `jsonrpc/text-turn`) into dest."""
    for name in names:
        shutil.copytree(fixtures / name, dest / name)
    return dest


async def wait_for(
    pilot: Pilot[Any], predicate: Callable[[], bool], *, timeout: float = 30.0
) -> None:
    """Let the app run until `predicate()` holds; fail with a clear message otherwise.

    The deadline is generous on purpose: on a loaded 2-core CI machine a state that
    takes 0.2 s alone has once taken over 10 s. A wait that succeeds returns at once.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {predicate.__doc__ or predicate}")
        await pilot.pause(0.05)


@pytest.fixture(autouse=True)
def today_is_the_logs_day(monkeypatch: pytest.MonkeyPatch) -> None:
    """The timeline's "today" is the day of `T0` (the logs' times show without a date,
    as they did before dates were shown) in every app test, so no screen depends on
    the day the tests run. A test about dates sets `TurnTimeline.clock` itself."""
    from turnline.tui.widgets import _timeline

    monkeypatch.setattr(_timeline, "wall_clock", lambda: T0 / 1000 + 3600)


async def opened(pilot: Pilot[Any], path: Path) -> TurnlineApp:
    """Open `path` in the app under test and wait until its timeline is shown and the
    tree's cursor is on it."""
    app = pilot.app
    assert isinstance(app, TurnlineApp)
    await wait_for(pilot, lambda: app.snapshot is not None)
    app.open_session(path)
    await wait_for(
        pilot, lambda: app.view is not None and app.view.path == path and not app._wanted
    )
    await wait_for(pilot, lambda: app.session_tree.highlighted_path == path)
    await pilot.pause()
    return app
