"""The real watcher over the whole bad corpus: it reports problems and changes, never raises.

Bursts, replaced files and a removed root are covered in tests/core/test_watcher.py;
this only checks that a root full of bad logs (an unreadable one included, read with
read-override capabilities dropped) does not break watching.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from turnline.core.model import ProblemKind
from turnline.core.root import SessionRoot
from turnline.core.watcher import (
    EventsAppended,
    ProblemFound,
    RootChange,
    RootWatcher,
    SessionAdded,
    SessionRemoved,
)

from .corpus import (
    build_corpus,
    dac_override_dropped,
    lines,
    log_path,
    put,
    turn_events,
)

T = TypeVar("T")
DEADLINE_S = 20.0


class Watching:
    """A `RootWatcher` in its own thread (without read override), recording every change."""

    def __init__(self, rootdir: Path, poll: bool) -> None:
        self.changes: list[RootChange] = []
        self.error: BaseException | None = None
        self.stop = threading.Event()
        self.primed = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, args=(rootdir, poll), daemon=True)
        self._thread.start()
        assert self.primed.wait(DEADLINE_S)

    def _run(self, rootdir: Path, poll: bool) -> None:
        with dac_override_dropped():
            try:
                root = SessionRoot(rootdir)
                root.scan()
                watcher = RootWatcher(root, poll=poll, poll_interval_ms=20)
                self.primed.set()
                for batch in watcher.watch(self.stop):
                    with self._lock:
                        self.changes.extend(batch)
            except BaseException as exc:
                self.error = exc
                self.primed.set()

    def wait_for(self, probe: Callable[[list[RootChange]], T | None], what: str) -> T:
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            if self.error is not None:
                raise AssertionError(f"the watcher raised {self.error!r}") from self.error
            with self._lock:
                found = probe(list(self.changes))
            if found:
                return found
            time.sleep(0.01)
        raise AssertionError(f"no {what} within {DEADLINE_S}s")

    def close(self) -> None:
        self.stop.set()
        self._thread.join(DEADLINE_S)
        assert not self._thread.is_alive()
        assert self.error is None, self.error


@pytest.mark.parametrize("poll", [False, True], ids=["native", "poll"])
def test_watcher_over_the_bad_corpus_reports_and_keeps_going(
    tmp_path: Path, big_line_log: Path, poll: bool
) -> None:
    cases = build_corpus(tmp_path, big_line_log)
    watching = Watching(tmp_path, poll)
    try:
        # 1. A healthy log grows by one turn.
        healthy = log_path(tmp_path, "healthy-raw")
        with healthy.open("ab") as fh:
            fh.write(lines(turn_events(3, 25)))
        grown = watching.wait_for(
            lambda cs: [
                c for c in cs if isinstance(c, EventsAppended) and c.summary.path == healthy
            ],
            "the healthy append",
        )
        assert sum(len(c.events) for c in grown) == 12
        # 2. A log that was torn gets a corrupt line followed by a completed turn.
        (torn,), _ = cases["torn-last-line"]
        with torn.open("ab") as fh:
            fh.write(b"\n" + b"{not json}\n" + lines(turn_events(2, 13)))

        def corrupt(cs: list[RootChange]) -> bool:
            return any(
                (isinstance(c, ProblemFound) and c.path == torn and c.problem.kind == "corrupt")
                or (
                    isinstance(c, EventsAppended)
                    and c.summary.path == torn
                    and any(p.kind == ProblemKind.CORRUPT for p in c.problems)
                )
                for c in cs
            )

        watching.wait_for(corrupt, "the corruption report")
        # 3. A bad session vanishes; 4. a NUL-filled one appears.
        (empty,), _ = cases["empty"]
        shutil.rmtree(empty.parent)
        watching.wait_for(
            lambda cs: [c for c in cs if isinstance(c, SessionRemoved) and c.path == empty],
            "the removal",
        )
        nul = put(log_path(tmp_path, "late-nul"), b"\0" * 4096)
        os.utime(nul)
        added = watching.wait_for(
            lambda cs: [c for c in cs if isinstance(c, SessionAdded) and c.summary.path == nul],
            "the NUL log",
        )
        assert {p.kind for p in added[0].summary.problems} == {ProblemKind.BAD_HEADER}
    finally:
        watching.close()
