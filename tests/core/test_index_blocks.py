"""The index reads a log in blocks, in this process, and never forks: the two-core
split (and its hand-written fork and pipe) is gone (issue 9). Blocks of every size
still give exactly what a full read gives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from turnline.core.index import index_log

from ..conftest import fixture_logs
from .disk_logs import zstd_of
from .test_index import BAD_CASES, assert_same, full_read


@pytest.fixture
def no_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse() -> int:
        raise AssertionError("the index forked")

    monkeypatch.setattr(os, "fork", refuse)


@pytest.mark.parametrize("block", [64, 4096, 1 << 20])
def test_real_fixture_logs_in_blocks_index_exactly(no_fork: None, block: int) -> None:
    for path in fixture_logs()[:: 1 if block == 4096 else 7]:
        assert_same(index_log(path, block_size=block), full_read(path))


@pytest.mark.parametrize("case", list(BAD_CASES))
@pytest.mark.parametrize("block", [1, 64, 300])
def test_bad_logs_in_blocks_index_exactly(
    no_fork: None, tmp_path: Path, case: str, block: int
) -> None:
    log = tmp_path / "session.jsonl"
    log.write_bytes(BAD_CASES[case][0])
    assert_same(index_log(log, block_size=block), full_read(log))


@pytest.mark.parametrize("case", [c for c, (raw, _) in BAD_CASES.items() if b"\n" in raw])
def test_bad_zstd_logs_index_exactly(no_fork: None, tmp_path: Path, case: str) -> None:
    log = zstd_of(tmp_path, BAD_CASES[case][0])
    assert_same(index_log(log, block_size=64), full_read(log))


def test_the_index_module_has_no_fork() -> None:
    source = (Path(__file__).parents[2] / "core" / "index.py").read_text()
    assert "os.fork" not in source and "fork_child" not in source
