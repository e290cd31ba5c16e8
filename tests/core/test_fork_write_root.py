"""Where `SessionRoot.fork` writes a child when the root is one log file (issue 23, bug 2).

A log in dsh's layout (`<sessions root>/--<project>--/<encoded id>/session*.jsonl`)
forks under its sessions root, where dsh finds the child; any other lone log keeps
forking under its own folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from turnline.core.model import SessionHeader
from turnline.core.root import SessionRoot, discover

from .disk_logs import as_events, turn_records, write_lines, write_log


def _parent(root: Path, *, zstd: bool = False) -> Path:
    header = SessionHeader(id="p-1", created_at=5, cwd="/w/app", delegation_depth=0)
    return write_log(root, header, as_events(turn_records(0, 1)), zstd=zstd)


@pytest.mark.parametrize("zstd", [False, True])
def test_a_layout_log_forks_under_its_sessions_root(tmp_path: Path, zstd: bool) -> None:
    sessions = tmp_path / "sessions"
    log = _parent(sessions, zstd=zstd)
    assert log.parent.parent.parent == sessions
    root = SessionRoot(log)
    assert root.write_root == sessions.resolve()
    assert root.path == log.parent.resolve()  # what it shows is still the one log
    result = root.fork(str(log), None, "kid")
    name = "session.jsonl.zstd" if zstd else "session.jsonl"
    assert result.child.path == sessions.resolve() / "--w-app--" / "kid" / name
    assert result.child.path.is_file()
    # dsh (and a scan of the sessions root) finds the child beside its parent.
    assert {sid for _, sid in discover(sessions)} == {"p-1", "kid"}
    assert not (log.parent / "--w-app--").exists()


def test_a_log_outside_the_layout_forks_beside_itself(tmp_path: Path) -> None:
    flat = write_lines(
        tmp_path / "dump" / "flat.jsonl",
        {"type": "session", "version": 0, "id": "f-1", "createdAt": 5, "cwd": "/w/app"},
        *turn_records(0, 1),
    )
    root = SessionRoot(flat)
    assert root.write_root == root.path == flat.parent.resolve()
    result = root.fork(str(flat), None, "kid")
    assert result.child.path == flat.parent.resolve() / "--w-app--" / "kid" / "session.jsonl"


def test_a_folder_root_is_its_own_write_root(tmp_path: Path) -> None:
    _parent(tmp_path / "sessions")
    root = SessionRoot(tmp_path / "sessions")
    assert root.write_root == root.path


@pytest.mark.parametrize("zstd", [False, True])
def test_a_lone_surrogate_in_the_header_and_the_seed_is_written_as_dsh_writes_it(
    tmp_path: Path, zstd: bool
) -> None:
    """A header's cwd and a seed event's text holding a lone surrogate (read from
    `"\\ud83d"`): the child's header (and a zstd child's re-encoded seed) write it as
    that escape, as `JSON.stringify` does (orjson cannot write it at all), and the
    child reads back the same values."""
    header = SessionHeader(id="p-1", created_at=5, cwd="/w/app\ud83d", delegation_depth=0)
    records = turn_records(0, 1)
    records[1]["data"] = {**records[1]["data"], "note": "half \ud83d emoji"}  # type: ignore[dict-item]
    log = write_log(tmp_path / "sessions", header, as_events(records), zstd=zstd)
    root = SessionRoot(tmp_path / "sessions")
    result = root.fork(str(log), 3, "kid")
    child = root.load(root.resolve("kid"))
    assert child.summary.header is not None and child.summary.header.cwd == "/w/app\ud83d"
    parent = root.load(root.resolve("p-1"))
    assert [e.data for e in child.events[:4]] == [e.data for e in parent.events[:4]]
    assert not child.summary.problems
    if not zstd:
        assert b'"cwd":"/w/app\\ud83d"' in result.child.path.read_bytes().split(b"\n")[0]
