"""The index reads a log in blocks, in this process, and never forks: the two-core
split (and its hand-written fork and pipe) is gone (issue 9). Blocks of every size
still give exactly what a full read gives."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard
from turnline.core import index
from turnline.core.index import index_log
from turnline.core.model import ProblemKind

from ..conftest import FIXTURES, fixture_logs
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
@pytest.mark.parametrize("per_frame", [3, 7])
def test_bad_zstd_logs_index_exactly(
    no_fork: None, tmp_path: Path, case: str, per_frame: int
) -> None:
    """(With seven lines a frame, the frame that stops the read holds whole lines before
    the bad one: they are not the log's events.)"""
    log = zstd_of(tmp_path, BAD_CASES[case][0], per_frame)
    ix, full = index_log(log, block_size=64), full_read(log)
    assert_same(ix, full)
    for seq in (0, *(e.seq for e in full.events if e.type == "turn/start")):
        assert ix.events_between(seq, None) == [e for e in full.events if e.seq >= seq]


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


def _size_field_set(frame: bytes, value: Callable[[int], int]) -> bytes:
    """`frame` with the content size field of its header (one byte, or two holding the
    size less 256, as zstd writes them for a small frame) set to `value(field)`."""
    size = (1 if frame[4] & 0x20 else 0, 2, 4, 8)[frame[4] >> 6]
    assert size  # (a frame that states its size)
    end = zstandard.frame_header_size(frame)
    field = int.from_bytes(frame[end - size : end], "little")
    return frame[: end - size] + value(field).to_bytes(size, "little") + frame[end:]


@pytest.mark.parametrize("by", [-1, 1])
def test_a_frame_whose_header_misstates_its_size_reads_as_the_full_read(
    tmp_path: Path, by: int
) -> None:
    """A frame whose header states a size one byte short or long is corrupt, at the
    same line and in the same words as the full reader says, for every third frame of
    a real log (fed a window at a time, the decoder can say "Destination buffer is too
    small" where, fed the rest of the file at once, it says "Data corruption
    detected"); a header that says the frame is empty is no empty frame."""
    raw = (FIXTURES / "web" / "goal-multi-turn-actions" / "session.jsonl").read_bytes()
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    frames = [cctx.compress(line) for line in raw.splitlines(keepends=True)]
    log = tmp_path / "session.jsonl.zstd"
    for k in range(1, len(frames), 3):
        bad = _size_field_set(frames[k], lambda field: field + by)
        log.write_bytes(b"".join([*frames[:k], bad, *frames[k + 1 :]]))
        full = full_read(log)
        assert_same(index_log(log), full)
        assert full.summary.problems[-1].kind is ProblemKind.CORRUPT
        assert full.summary.problems[-1].line == k + 1
    k = next(k for k in range(1, len(frames)) if frames[k][4] >> 5 == 1)  # a 1-byte size
    empty = _size_field_set(frames[k], lambda field: 0)
    log.write_bytes(b"".join([*frames[:k], empty, *frames[k + 1 :]]))
    full = full_read(log)
    assert_same(index_log(log), full)
    assert full.summary.problems[-1].kind is ProblemKind.CORRUPT
