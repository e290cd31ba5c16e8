"""Big logs' indexes kept between runs (`core.indexcache`): an index taken from the
cache, or resumed from it over appended bytes, is the one a fresh `index_log` gives,
field by field, and the full reader's; anything the cache cannot vouch for is read
again."""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import zstandard
from turnline.core import indexcache
from turnline.core.index import IndexedSession, index_log
from turnline.core.indexcache import cached_index, index_dir
from turnline.core.root import SessionRoot
from turnline.demo.dshmigrate import twin_root

from ..conftest import FIXTURES, fixture_logs
from .disk_logs import event, turn_records
from .test_index import BAD_CASES, assert_same, full_read

#: An hour: a log this old is past the racy window (`indexcache.RACY_NS`).
OLD = 3600


def _age(path: Path, seconds: int = OLD) -> None:
    """Set the log's mtime back, as a log last written a while ago."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - seconds * 10**9))


def _fields(indexed: IndexedSession) -> dict[str, Any]:
    out = {}
    for f in dataclasses.fields(indexed):
        value = getattr(indexed, f.name)
        out[f.name] = value.state() if f.name == "_builder" and value is not None else value
    return out


def assert_identical(got: IndexedSession, fresh: IndexedSession) -> None:
    """Every field of the index, private ones included (the anchors, the builder)."""
    assert _fields(got) == _fields(fresh)


class Reads:
    """Counts the indexes `cached_index` reads from the start."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = indexcache.indexed_with_state

        def counted(*args: Any, **kw: Any) -> Any:
            self.count += 1
            return real(*args, **kw)

        monkeypatch.setattr(indexcache, "indexed_with_state", counted)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache folder of this test's own."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    return folder


@pytest.fixture(scope="module")
def v5_twins(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    dest = tmp_path_factory.mktemp("twins") / "v5"
    twin_root(FIXTURES, dest, version=5)
    return sorted(dest.rglob("session*.jsonl*"))


def _real_logs(v5_twins: list[Path]) -> list[Path]:
    logs = [*fixture_logs(), *v5_twins]
    assert len(logs) >= 2 * 151
    return logs


def _copy(src: Path, folder: Path, k: int) -> Path:
    """The log under a folder of its own, its name kept (the name says the version)."""
    dest = folder / f"s{k:03d}" / src.name
    dest.parent.mkdir(parents=True)
    shutil.copyfile(src, dest)
    return dest


def test_an_unchanged_log_is_taken_from_the_cache_exactly(
    tmp_path: Path, cache: Path, v5_twins: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every real log and its V5 twin (raw and zstd, every wart): indexed once, the
    second index comes from the cache without reading the log, and equals a fresh
    index field by field."""
    reads = Reads(monkeypatch)
    logs = _real_logs(v5_twins)
    kept = 0
    for k, src in enumerate(logs):
        log = _copy(src, tmp_path / "logs", k)
        _age(log)
        first = cached_index(log)
        before = reads.count
        again = cached_index(log)
        fresh = index_log(log)
        assert_identical(first, fresh)
        assert_identical(again, fresh)
        if reads.count == before:
            kept += 1
        else:  # only a log with no usable header is not kept
            assert fresh.header is None, src
    assert kept >= len(logs) - 10
    assert len(list(index_dir().glob("*.idx"))) == min(kept, indexcache.MAX_ENTRIES)


def _cuts(data: bytes) -> list[int]:
    """Where a log is cut before the rest is appended: inside the header, just past it,
    at a line break near the middle, inside the line after it (a torn last line), and
    one byte before the end."""
    nl = data.index(b"\n") + 1
    mid = data.find(b"\n", len(data) // 2) + 1 or nl
    return sorted({nl // 2, nl, mid, min(mid + 7, len(data) - 1), len(data) - 1})


def test_a_grown_log_resumes_where_its_index_stopped(
    tmp_path: Path, cache: Path, v5_twins: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every raw real log and twin, cut at several places, indexed, then written whole
    by appending the rest: the cached index resumes over the appended bytes only and
    gives the fresh index, and the full reader's session."""
    reads = Reads(monkeypatch)
    resumed = 0
    k = 0
    for src in _real_logs(v5_twins):
        if src.suffix != ".jsonl":
            continue
        data = src.read_bytes()
        for cut in _cuts(data):
            k += 1
            log = tmp_path / "logs" / f"s{k:04d}" / src.name
            log.parent.mkdir(parents=True)
            log.write_bytes(data[:cut])
            block = 4096 if k % 2 else indexcache.BLOCK_SIZE
            part = cached_index(log, block_size=block)
            with open(log, "ab") as fh:
                fh.write(data[cut:])
            before = reads.count
            got = cached_index(log, block_size=block)
            fresh = index_log(log, block_size=block)
            assert_identical(got, fresh)
            if reads.count == before:
                resumed += 1
            elif fresh.header is not None and data.index(b"\n") < cut < len(data):
                # only a log stopped at a bad line (a problem says where) is read again
                # from the start (one that did not grow was just written: the racy rule)
                assert part.problems, src
    assert resumed > k // 2
    # The resumed index of a whole log is the full reader's too.
    sample = next(p for p in fixture_logs() if p.suffix == ".jsonl" and p.stat().st_size > 20_000)
    log = tmp_path / "last" / sample.name
    log.parent.mkdir()
    data = sample.read_bytes()
    log.write_bytes(data[: len(data) // 3])
    cached_index(log)
    with open(log, "ab") as fh:
        fh.write(data[len(data) // 3 :])
    assert_same(cached_index(log), full_read(log))


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_logs_grown_or_kept_give_the_fresh_index(
    tmp_path: Path, cache: Path, case: str
) -> None:
    """The index tests' bad logs: kept and taken back, and cut in two and grown, they
    report exactly the problems a fresh index reports."""
    content, _ = BAD_CASES[case]
    log = tmp_path / "a" / "session.jsonl"
    log.parent.mkdir()
    log.write_bytes(content)
    _age(log)
    cached_index(log)
    assert_identical(cached_index(log), index_log(log))
    half = tmp_path / "b" / "session.jsonl"
    half.parent.mkdir()
    half.write_bytes(content[: len(content) // 2])
    cached_index(half)
    with open(half, "ab") as fh:
        fh.write(content[len(content) // 2 :])
    assert_identical(cached_index(half), index_log(half))


def _some_log(tmp_path: Path) -> tuple[Path, bytes]:
    src = max((p for p in fixture_logs() if p.suffix == ".jsonl"), key=lambda p: p.stat().st_size)
    log = tmp_path / "log" / src.name
    log.parent.mkdir()
    data = src.read_bytes()
    log.write_bytes(data)
    return log, data


def test_a_log_changed_in_place_is_read_again(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rewritten with the same size (its last line changed, its mtime kept old), cut
    shorter, or replaced by another file: none is taken from the cache."""
    reads = Reads(monkeypatch)
    log, data = _some_log(tmp_path)
    _age(log)
    cached_index(log)
    # the same size, the last turn/end's reason changed, the mtime set back as it was
    st = log.stat()
    changed = data.replace(b'"completed"', b'"aborted__"')
    assert changed != data and len(changed) == len(data)
    log.write_bytes(changed)
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns))
    before = reads.count
    assert_identical(cached_index(log), index_log(log))
    assert reads.count == before + 1
    # cut shorter
    _age(log)
    cached_index(log)
    log.write_bytes(data[: len(data) // 2])
    assert_identical(cached_index(log), index_log(log))
    assert reads.count == before + 3
    # written again longer, in place (the same inode): its last turn's end differs
    log.write_bytes(data)
    _age(log)
    cached_index(log)
    head, mark, rest = data.rpartition(b'"completed"')
    assert mark and len(rest) < indexcache.TAIL_CHECK
    log.write_bytes(head + b'"aborted__"' + rest + b'{"type":"tu')
    got = cached_index(log)
    assert_identical(got, index_log(log))
    assert got.timeline.turns[-1].reason != "completed"
    assert reads.count == before + 4  # (the whole log was resumed from its first half)
    # another file renamed over it (a new inode), longer than the first
    _age(log)
    cached_index(log)
    other = log.with_name("other")
    other.write_bytes(data)
    os.replace(other, log)
    assert_identical(cached_index(log), index_log(log))
    assert reads.count == before + 6


def test_a_log_written_just_before_it_was_read_is_not_trusted_unchanged(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log modified within `RACY_NS` of the read that kept it could be written again
    in the same clock tick at the same size: it is read again, and kept afresh once
    it is older."""
    reads = Reads(monkeypatch)
    log, _ = _some_log(tmp_path)
    cached_index(log)
    cached_index(log)
    assert reads.count == 2
    _age(log)
    cached_index(log)  # read again (the mtime changed), kept with an old mtime
    cached_index(log)
    assert reads.count == 3


def _frames(raw: bytes, per_frame: int) -> list[bytes]:
    """`raw` as dsh's zstd frames: the header line alone, then `per_frame` lines each."""
    nl = raw.index(b"\n") + 1
    lines = raw[nl:].splitlines(keepends=True)
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    return [cctx.compress(raw[:nl])] + [
        cctx.compress(b"".join(lines[i : i + per_frame])) for i in range(0, len(lines), per_frame)
    ]


def test_a_grown_zstd_log_resumes_at_its_next_frame(
    tmp_path: Path, cache: Path, v5_twins: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every real raw log and twin written as dsh's zstd (frames of three lines), cut
    after its header frame, after a frame near the middle, inside the next frame (a torn
    frame) and before the last byte, indexed, then grown by the rest: the cached index
    resumes at the next whole frame and equals the fresh index; and the full reader's."""
    reads = Reads(monkeypatch)
    resumed = k = 0
    for src in _real_logs(v5_twins):
        if src.suffix != ".jsonl":
            continue
        frames = _frames(src.read_bytes(), 3)
        data = b"".join(frames)
        mid = len(b"".join(frames[: max(1, len(frames) // 2)]))
        head = len(frames[0])
        for cut in sorted({head, mid, min(mid + 9, len(data) - 1), len(data) - 1}):
            k += 1
            log = tmp_path / "z" / f"s{k:04d}" / (src.name + ".zstd")
            log.parent.mkdir(parents=True)
            log.write_bytes(data[:cut])
            part = cached_index(log, block_size=256)
            with open(log, "ab") as fh:
                fh.write(data[cut:])
            before = reads.count
            got = cached_index(log, block_size=256)
            assert_identical(got, index_log(log, block_size=256))
            if reads.count == before:
                resumed += 1
            elif cut < len(data):
                assert part.problems, src  # only a stopped index is read again
    assert resumed > k // 2
    sample = next(p for p in fixture_logs() if p.suffix == ".jsonl" and p.stat().st_size > 20_000)
    frames = _frames(sample.read_bytes(), 5)
    log = tmp_path / "last" / "session.jsonl.zstd"
    log.parent.mkdir()
    log.write_bytes(b"".join(frames[: len(frames) // 3]))
    cached_index(log)
    with open(log, "ab") as fh:
        fh.write(b"".join(frames[len(frames) // 3 :]))
    assert_same(cached_index(log), full_read(log))


def test_a_broken_foreign_or_unwritable_cache_is_passed_over(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry that does not decode, one written by other code, and a cache folder that
    cannot be written: the log is indexed as if there were no cache, and nothing
    raises."""
    reads = Reads(monkeypatch)
    log, _ = _some_log(tmp_path)
    _age(log)
    cached_index(log)
    (entry,) = index_dir().glob("*.idx")
    entry.write_bytes(b"\x93garbage")
    assert_identical(cached_index(log), index_log(log))
    assert reads.count == 2
    monkeypatch.setattr(indexcache, "_code_fingerprint", lambda: "other code")
    assert_identical(cached_index(log), index_log(log))
    assert reads.count == 3
    shutil.rmtree(cache)
    cache.write_text("a file where the cache folder should be")
    assert_identical(cached_index(log), index_log(log))
    assert reads.count == 4


def test_only_the_most_recently_used_entries_are_kept(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`MAX_ENTRIES` entries are kept: a log taken from the cache marks its entry used,
    and writing one entry too many drops the one used least recently. (The entries'
    times are set apart by hand: written within one tick of the file system's clock,
    their mtimes would tie.)"""
    monkeypatch.setattr(indexcache, "MAX_ENTRIES", 3)
    log, _ = _some_log(tmp_path)
    copies = []
    for k in range(4):
        copy = tmp_path / f"c{k}" / log.name
        copy.parent.mkdir()
        shutil.copyfile(log, copy)
        _age(copy)
        copies.append(copy)
    long_ago = time.time_ns() - 1000 * 10**9
    for k, copy in enumerate(copies[:3]):
        cached_index(copy)
        os.utime(indexcache._entry_file(copy), ns=(long_ago + k, long_ago + k))
    reads = Reads(monkeypatch)
    cached_index(copies[0])  # the oldest entry, used now
    assert reads.count == 0
    cached_index(copies[3])  # a fourth entry: the least recently used (copies[1]) goes
    assert reads.count == 1
    assert not indexcache._entry_file(copies[1]).exists()
    for copy in (copies[0], copies[2], copies[3]):
        cached_index(copy)
    assert reads.count == 1
    cached_index(copies[1])
    assert reads.count == 2


def test_the_root_loads_a_big_log_from_the_cache_the_second_time(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`SessionRoot.load` of a log big enough to index: a second root (as a second run
    of `turnline show`) takes the index from the cache; after turns are appended, the
    next root reads only them; each session equals a fresh index's and the full
    reader's."""
    from turnline.core.index import INDEX_THRESHOLD

    from benchmarks.generate import turn_writer, write_big_log

    reads = Reads(monkeypatch)
    folder = tmp_path / "--w--" / "big"
    folder.mkdir(parents=True)
    big = write_big_log(folder / "session.jsonl", events=80_000)
    assert big.size >= INDEX_THRESHOLD
    _age(big.path)

    def load() -> Any:
        root = SessionRoot(tmp_path)
        return root.load(root.resolve(str(big.path)))

    first = load()
    assert first.index is not None and reads.count == 1
    again = load()
    assert reads.count == 1
    assert_identical(again.index, first.index)
    writer = turn_writer(big, 0, seed=5)
    for _ in range(3):
        writer.append(writer.next_turn()[0])
    grown = load()
    assert reads.count == 1
    assert len(grown.timeline.turns) == len(first.timeline.turns) + 3
    assert_identical(grown.index, index_log(big.path))
    full = full_read(big.path)
    assert grown.timeline == full.timeline and grown.summary == full.summary


def _lines(records: list[dict[str, object]]) -> bytes:
    from .test_index import _line

    return b"".join(_line(r) for r in records)


def _grown(tmp_path: Path, name: str, first: bytes, more: bytes) -> tuple[Path, IndexedSession]:
    """The log `first` indexed (and kept), then `more` appended: the log and the index
    `cached_index` then gives."""
    log = tmp_path / name / "session.jsonl"
    log.parent.mkdir()
    log.write_bytes(first)
    cached_index(log)
    with open(log, "ab") as fh:
        fh.write(more)
    return log, cached_index(log)


def test_a_log_stopped_at_a_bad_line_is_read_again_when_it_grows(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index stopped at a bad line (its problem names that line, and whether a
    turn/end follows decides torn or corrupt): a log that grew after it is read again
    from the start, and reports the line and problem a fresh index does."""
    from .test_index import HEADER, _turns

    reads = Reads(monkeypatch)
    base = _lines([HEADER, *_turns(2)])
    bad = b'{"type":"step/start","seq":8,"ti\n'
    cases = {
        "corrupt, grown": (base + bad + _lines(turn_records(9, 3)), _lines(turn_records(13, 4))),
        "torn, then a turn/end": (base + bad, _lines(turn_records(9, 3))),
        "garbage, then plain lines": (
            base + b"not json at all}\n" + _lines([event(9, "step/start", turn=3, step=1)]),
            _lines([event(10, "request/context", turn=3)]),
        ),
    }
    for k, (first, more) in enumerate(cases.values()):
        log, got = _grown(tmp_path, f"c{k}", first, more)
        fresh = index_log(log)
        assert fresh.problems, k
        assert_identical(got, fresh)
        assert reads.count == 2 * (k + 1)


def test_text_msgpack_cannot_hold_and_a_path_that_is_not_utf8_are_no_error(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A title holding a lone surrogate (JSON's `\\ud83d` escape alone, which dsh's
    JSON.stringify can write) is not kept, and the log is indexed as without a cache;
    a log in a folder whose name is not UTF-8 is kept and taken back."""
    from .test_index import HEADER, _turns

    reads = Reads(monkeypatch)
    title = b'{"type":"session/title","seq":4,"time":5,"data":{"title":"half \\ud83d emoji"}}\n'
    body = _lines([HEADER, *_turns(1)]) + title + _lines(turn_records(5, 2))
    log = tmp_path / "s" / "session.jsonl"
    log.parent.mkdir()
    log.write_bytes(body)
    _age(log)
    got = cached_index(log)
    assert got.timeline.title == "half \ud83d emoji"
    assert_identical(got, index_log(log))
    assert_identical(cached_index(log), index_log(log))
    assert reads.count == 2 and not list(index_dir().glob("*.idx"))
    folder = Path(os.fsdecode(bytes(tmp_path) + b"/bad-\xff-name"))
    folder.mkdir()
    odd = folder / "session.jsonl"
    odd.write_bytes(_lines([HEADER, *_turns(2)]))
    _age(odd)
    cached_index(odd)
    assert_identical(cached_index(odd), index_log(odd))
    assert reads.count == 3


def test_an_inode_given_to_a_new_file_is_not_taken_for_the_old_log(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log rewritten by renaming a new file over it can get its old inode number
    back: its inode's generation tells it apart, so a longer rewrite is not resumed.
    Here on the real file system (new files renamed over the log, each compared with a
    fresh index), then with the generation of a reused inode stood in for."""
    from .test_index import HEADER, _turns

    log = tmp_path / "s" / "session.jsonl"
    log.parent.mkdir()
    first = _lines([HEADER, *_turns(3)])
    log.write_bytes(first)
    cached_index(log)
    inodes = {log.stat().st_ino}
    for k in range(12):
        changed = first.replace(b'"completed"', b'"aborted__"', 1) if k % 2 else first
        new = log.with_name("new")
        new.write_bytes(changed + _lines(turn_records(12, 4 + k)))
        os.replace(new, log)
        inodes.add(log.stat().st_ino)
        got = cached_index(log)
        assert_identical(got, index_log(log))
        assert (got.timeline.turns[0].reason == "aborted__") == bool(k % 2)
    # Stood in: the same inode, longer, its first turn's end rewritten, and a new
    # generation for it (as a reused inode has).
    reads = Reads(monkeypatch)
    longer = _lines([HEADER, *_turns(80)])  # its first turn far before the last 4 KiB
    assert len(longer) > 2 * indexcache.TAIL_CHECK
    log.write_bytes(longer)
    cached_index(log)
    monkeypatch.setattr(indexcache, "_generation", lambda fd: 12345)
    more = _lines(turn_records(320, 81))
    log.write_bytes(longer.replace(b'"completed"', b'"aborted__"', 1) + more)
    got = cached_index(log)
    assert_identical(got, index_log(log))
    assert got.timeline.turns[0].reason == "aborted__"
    assert reads.count == 2


def test_an_inodes_generation_is_its_own(tmp_path: Path) -> None:
    """The generation of a file is the same at every read; a new file renamed over it
    has another (where the file system keeps one: ext4 here; tmpfs and overlayfs
    keep none, and every answer is None there); a missing file has none."""
    from turnline.core import inodes

    log = tmp_path / "a"
    log.write_bytes(b"x")
    first = inodes.generation_of(log)
    assert inodes.generation_of(log) == first
    replaced = []
    for _ in range(4):
        new = tmp_path / "b"
        new.write_bytes(b"y")
        os.replace(new, log)
        replaced.append(inodes.generation_of(log))
    if first is None:
        assert replaced == [None] * 4
    else:
        assert first not in replaced and None not in replaced
    assert inodes.generation_of(tmp_path / "missing") is None
