"""Crash-zeroed and junk logs cost a bounded window of memory and no hang (issue 14
item 2): the real CLI's `ls` on sparse files (they take no disk)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from turnline.cli import main
from turnline.core import index as index_module
from turnline.core.records import MAX_HEADER_LINE

HEADER = (
    b'{"type":"session","version":0,"delegationDepth":0,"id":"crashed","createdAt":1,"cwd":"/w"}\n'
)
GIB = 1 << 30


def _log(tmp_path: Path) -> Path:
    folder = tmp_path / "root" / "--home-dev-x--" / "crashed"
    folder.mkdir(parents=True)
    return folder / "session.jsonl"


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Sizes of every `os.pread` the index makes."""
    sizes: list[int] = []
    real = os.pread

    def spy(fd: int, n: int, pos: int) -> bytes:
        sizes.append(n)
        return real(fd, n, pos)

    monkeypatch.setattr(index_module.os, "pread", spy)
    return sizes


def _ls(capsys: pytest.CaptureFixture[str], log: Path) -> dict[str, Any]:
    assert main(["ls", str(log.parents[2]), "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    (entry,) = json.loads(out)
    return entry  # type: ignore[no-any-return]


@pytest.mark.parametrize("size", [64 << 20, 2 * GIB])
def test_a_file_of_nuls_is_a_bad_header_read_no_further_than_a_header(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, reads: list[int], size: int
) -> None:
    log = _log(tmp_path)
    with open(log, "wb") as fh:
        fh.truncate(size)  # what `truncate -s 64M` leaves: all NULs, no newline
    entry = _ls(capsys, log)
    (problem,) = entry["problems"]
    assert problem["kind"] == "bad-header"
    assert "longer than 1 MiB" in problem["message"]
    assert entry["events"] == 0
    assert sum(reads) <= MAX_HEADER_LINE + 1


def test_a_header_then_nuls_is_a_torn_tail_read_in_bounded_windows(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, reads: list[int]
) -> None:
    log = _log(tmp_path)
    with open(log, "wb") as fh:
        fh.write(HEADER)
        fh.truncate(len(HEADER) + 2 * GIB)
    entry = _ls(capsys, log)
    (problem,) = entry["problems"]
    assert problem["kind"] == "torn-tail"
    assert f"({2 * GIB} bytes)" in problem["message"]
    assert max(reads) <= index_module.BLOCK_SIZE


def test_nuls_then_records_are_corruption_without_reading_the_nuls_whole(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, reads: list[int]
) -> None:
    log = _log(tmp_path)
    turn = (
        b'{"type":"turn/start","seq":0,"time":1,"data":{}}\n'
        b'{"type":"turn/end","seq":1,"time":2,"data":{"reason":{"kind":"completed"}}}\n'
    )
    with open(log, "wb") as fh:
        fh.write(HEADER + turn)
        fh.truncate(len(HEADER) + len(turn) + 64 << 20)  # a crash zeroed a region...
        fh.seek(0, os.SEEK_END)
        fh.write(b"\n" + turn.replace(b'"seq":0', b'"seq":2').replace(b'"seq":1', b'"seq":3'))
    entry = _ls(capsys, log)
    (problem,) = entry["problems"]
    assert problem["kind"] == "corrupt"
    assert problem["message"].startswith("line 4 is not valid JSON")
    assert "unreadable past seq 1" in problem["message"]
    assert entry["events"] == 2
    assert max(reads) <= index_module.BLOCK_SIZE


def test_a_first_line_longer_than_a_header_is_a_bad_header_in_a_small_log(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = _log(tmp_path)
    log.write_bytes(b'{"type":"session","id":"x","pad":"' + b"a" * MAX_HEADER_LINE + b'"}\n')
    entry = _ls(capsys, log)
    assert [p["kind"] for p in entry["problems"]] == ["bad-header"]
