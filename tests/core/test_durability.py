"""Durability order of the writer (issue 14 item 13), observed by spying on the syscalls.

A new child is fsynced as a temporary file *before* it is published under its final
name (`os.link`), and its folder is fsynced *after* the link, so the new name is
durable too; an append is fsynced before it returns. Each test fails if one of the
three fsyncs in `writer.py` is removed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from turnline.core import writer
from turnline.core.logfile import Encoding, read_log
from turnline.core.model import SessionEvent, SessionHeader
from turnline.core.root import SessionRoot

from .disk_logs import as_events, turn_records, write_log


class Spy:
    """Records fsyncs (file or folder, and its path) and links, in order."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, str]] = []
        real_fsync, real_link = os.fsync, os.link

        def fsync(fd: Any) -> None:
            mode = os.fstat(fd).st_mode
            path = os.readlink(f"/proc/self/fd/{fd}")
            self.calls.append(("dirsync" if stat.S_ISDIR(mode) else "fsync", path))
            real_fsync(fd)

        def link(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
            real_link(src, dst, *args, **kwargs)
            self.calls.append(("link", os.fspath(dst)))

        monkeypatch.setattr(writer.os, "fsync", fsync)
        monkeypatch.setattr(writer.os, "link", link)


def _parent(root: Path, zstd: bool) -> Path:
    header = SessionHeader(id="parent-1", created_at=1, cwd="/w/app", version=0, delegation_depth=0)
    events = as_events([r for n in range(3) for r in turn_records(4 * n, n + 1)])
    return write_log(root, header, events, zstd=zstd)


pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")


@pytest.mark.parametrize("zstd", [False, True], ids=["raw-byte-copy", "zstd"])
def test_a_fork_syncs_the_file_before_publishing_and_the_folder_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, zstd: bool
) -> None:
    _parent(tmp_path, zstd)
    root = SessionRoot(tmp_path)
    spy = Spy(monkeypatch)
    root.fork("parent-1", 7, "child-1")
    links = [c for c in spy.calls if c[0] == "link"]
    assert len(links) == 1
    final = links[0][1]
    folder = os.path.dirname(final)
    at = spy.calls.index(links[0])
    before, after = spy.calls[:at], spy.calls[at + 1 :]
    # the temporary (in the child's folder, not yet under the final name) is fsynced first
    synced_files = [p for kind, p in before if kind == "fsync"]
    assert synced_files, f"the child's bytes were not fsynced before the link: {spy.calls}"
    assert all(os.path.dirname(p) == folder for p in synced_files)
    assert all(os.path.basename(p).startswith(writer.TEMP_PREFIX) for p in synced_files)
    # and the folder holding the new name is fsynced after it
    assert ("dirsync", folder) in after, f"the folder was not fsynced after the link: {spy.calls}"
    assert read_log(Path(final)).events[-1].type == "session/end-seed"


def test_write_new_file_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spy = Spy(monkeypatch)
    final = tmp_path / "sub" / "session.jsonl"
    writer.write_new_file(final, [b"hello\n"])
    kinds = [kind for kind, _ in spy.calls]
    assert kinds.index("fsync") < kinds.index("link") < kinds.index("dirsync")
    assert ("dirsync", str(final.parent)) in spy.calls
    assert final.read_bytes() == b"hello\n"


@pytest.mark.parametrize("encoding", [Encoding.RAW, Encoding.ZSTD])
def test_an_append_is_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, encoding: Encoding
) -> None:
    path = _parent(tmp_path, encoding is Encoding.ZSTD)
    spy = Spy(monkeypatch)
    writer.append_events(path, [SessionEvent("turn/start", 12, 5000, {})], encoding)
    assert ("fsync", str(path)) in spy.calls
    assert read_log(path).events[-1].seq == 12
