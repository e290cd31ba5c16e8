"""`turnline demo` as a user runs it: its root's path, its clean-up, its clock."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from turnline.cli.main import main
from turnline.core.logfile import read_log
from turnline.demo import LiveWriter, build_demo_root


@pytest.mark.parametrize("keep", [False, True])
def test_demo_removes_its_temporary_root_unless_kept(
    keep: bool, monkeypatch: Any, capsys: Any, tmp_path: Path
) -> None:
    import turnline.tui

    opened: list[Path] = []
    monkeypatch.setattr(turnline.tui, "run_app", lambda path, **kw: opened.append(path) or 0)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    assert main(["demo", *(["--keep"] if keep else [])]) == 0
    err = capsys.readouterr().err
    found = re.search(r"demo root at (\S+)", err)
    assert found is not None
    root = Path(found.group(1))
    assert opened == [root] and root.is_relative_to(tmp_path)
    assert root.exists() is keep
    assert ("kept at" in err) is keep and ("removed the demo root" in err) is not keep


def test_demo_with_dir_is_never_removed(monkeypatch: Any, tmp_path: Path) -> None:
    import turnline.tui

    monkeypatch.setattr(turnline.tui, "run_app", lambda path, **kw: 0)
    assert main(["demo", "--dir", str(tmp_path / "mine")]) == 0
    assert (tmp_path / "mine").is_dir()


def test_live_writer_times_follow_the_clock(tmp_path: Path) -> None:
    demo = build_demo_root(tmp_path / "demo")
    writer = LiveWriter(demo.live_path, interval=0.05)
    writer.start()
    deadline = time.monotonic() + 5
    while writer.appends < 12 and time.monotonic() < deadline:
        time.sleep(0.02)
    writer.stop()
    assert writer.error is None and writer.appends >= 12
    now = time.time() * 1000
    times = [e.time for e in read_log(demo.live_path).events]
    assert times == sorted(times)
    # Each batch ends at the wall clock: the log never runs ahead of it.
    assert max(times) <= now + 1
