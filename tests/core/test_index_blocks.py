"""The index reads a log in blocks, in this process, and never forks: the two-core
split (and its hand-written fork and pipe) is gone (issue 9). Blocks of every size
still give exactly what a full read gives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import zstandard
from turnline.core import index
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


def _frame_shapes() -> list[bytes]:
    """zstd frames of every shape the reader meets: with and without a content size
    and a checksum, empty, one RLE block, several blocks, one that does not compress."""
    text = b"".join(b'{"type":"x","seq":%d,"data":"%s"}\n' % (k, b"ab" * k) for k in range(400))
    noise = bytes((k * 7919 + (k >> 3) * 31) & 0xFF for k in range(70_000)) + b"\n"
    out = []
    for kwargs in ({"write_checksum": True}, {"write_content_size": False}, {"level": 19}):
        cctx = zstandard.ZstdCompressor(**kwargs)  # type: ignore[arg-type]
        out += [cctx.compress(x) for x in (b"", b"a\n", b"x" * 300_000 + b"\n", text, noise)]
    return out


def _both_ways(path: Path, cap: int | None) -> tuple[object, object]:
    """`_FrameReader.frame` at 0, decoded whole (when it can) and a window at a time."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        whole = index._FrameReader(fd, size)
        windows = index._FrameReader(fd, size)
        windows._whole_frame = lambda pos, cap: None  # type: ignore[method-assign]
        return whole.frame(0, cap), windows.frame(0, cap)
    finally:
        os.close(fd)


def test_a_frame_decoded_whole_is_the_frame_decoded_in_windows(tmp_path: Path) -> None:
    """The one-call decode of a frame (`_FrameReader._whole_frame`) gives exactly what
    the windowed decode gives, or leaves the frame to it: cut anywhere, every byte of a
    small frame changed, a big frame past the cap."""
    log = tmp_path / "f.zstd"
    taken = 0
    for frame in _frame_shapes():
        data = frame + zstandard.ZstdCompressor().compress(b"next\n")
        cuts = sorted({len(data), len(frame), len(frame) - 1, len(frame) // 2, 7, 5, 4, 1})
        for cut in cuts:
            log.write_bytes(data[:cut])
            for cap in (None, 10, 1 << 20):
                fast, slow = _both_ways(log, cap)
                assert fast == slow, (len(frame), cut, cap)
        log.write_bytes(data)
        fd = os.open(log, os.O_RDONLY)
        try:
            reader = index._FrameReader(fd, len(data))
            taken += reader._whole_frame(0, 1 << 20) is not None
        finally:
            os.close(fd)
    assert taken >= 8  # most shapes do take the one-call way
    small = zstandard.ZstdCompressor(write_checksum=True).compress(b'{"a":1}\n' * 50)
    for k in range(len(small)):
        for value in (0, 0xFF, small[k] ^ 1, small[k] ^ 0x80):
            log.write_bytes(small[:k] + bytes([value]) + small[k + 1 :])
            fast, slow = _both_ways(log, None)
            assert fast == slow, (k, value)
