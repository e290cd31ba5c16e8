"""Forking persisted sessions: the child is a valid dsh log in the root's encoding, the
parent is never touched, refused forks change nothing."""

from __future__ import annotations

import hashlib
import tempfile
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st
from turnline.core.layout import encode_session_id, project_key
from turnline.core.logfile import read_log
from turnline.core.model import SessionEvent, SessionHeader
from turnline.core.root import SessionRoot
from turnline.core.store import ForkErrorCode, SessionForkError

from .disk_logs import as_events, turn_records, write_lines, write_log
from .gen_logs import logs


def _digest(root: Path) -> dict[str, str]:
    """Every file under root with the hash of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _parent(root: Path, *, zstd: bool = False, turns: int = 3, open_tail: bool = False) -> Path:
    header = SessionHeader(id="parent-1", created_at=1, cwd="/home/dev/app", delegation_depth=0)
    records = [r for n in range(turns) for r in turn_records(4 * n, n + 1)]
    if open_tail:
        records += turn_records(4 * turns, turns + 1)[:2]
    events = as_events(records)
    return write_log(root, header, events, zstd=zstd)


def _physical_lines(path: Path) -> list[bytes]:
    data = path.read_bytes()
    if path.name.endswith(".zstd"):
        frames = []
        rest = path.read_bytes()
        while rest:
            dobj = zstandard.ZstdDecompressor().decompressobj()
            frames.append(dobj.decompress(rest))
            rest = dobj.unused_data
        data = b"".join(frames)
    return data.splitlines()


@pytest.mark.parametrize("zstd", [False, True])
def test_a_fork_is_a_valid_dsh_log(tmp_path: Path, zstd: bool) -> None:
    parent = _parent(tmp_path, zstd=zstd)
    before = _digest(tmp_path)
    result = SessionRoot(tmp_path).fork("parent-1", 7)
    child = result.child
    assert (result.parent_id, result.boundary) == ("parent-1", 7)
    assert uuid.UUID(child.id).version == 4
    name = "session.jsonl.zstd" if zstd else "session.jsonl"
    expected = tmp_path / project_key("/home/dev/app") / encode_session_id(child.id) / name
    assert child.path == expected
    lines = _physical_lines(child.path)
    header = orjson.loads(lines[0])
    assert header["type"] == "session"
    assert header["version"] == 0
    assert header["id"] == child.id
    assert isinstance(header["createdAt"], int) and header["createdAt"] > 0
    assert header["cwd"] == "/home/dev/app"
    assert header["parentSession"] == "parent-1"
    assert header["seedLength"] == 8
    assert "origin" not in header
    assert header["delegationDepth"] == 0  # a user fork, as dsh's fork writes
    events = read_log(child.path)
    # The seed, then dsh's end-seed marker at seq = seedLength with data {}.
    assert [e.seq for e in events.events] == list(range(9))
    assert events.problems == ()
    assert [e.to_json_dict() for e in events.events[:8]] == [
        e.to_json_dict() for e in read_log(parent).events[:8]
    ]
    marker = events.events[8]
    assert (marker.type, marker.data, marker.extra) == ("session/end-seed", {}, {})
    after = _digest(tmp_path)
    assert {k: v for k, v in after.items() if k in before} == before  # parent byte-identical
    assert set(after) - set(before) == {str(child.path.relative_to(tmp_path))}


@pytest.mark.parametrize("zstd", [False, True])
def test_a_zstd_child_is_multi_frame_with_the_header_alone_first(
    tmp_path: Path, zstd: bool
) -> None:
    _parent(tmp_path, zstd=zstd)
    child = SessionRoot(tmp_path).fork("parent-1", None, "kid").child
    raw = child.path.read_bytes()
    if not zstd:
        assert raw.startswith(b'{"type":"session"')
        return
    dobj = zstandard.ZstdDecompressor().decompressobj()
    first = dobj.decompress(raw)
    assert orjson.loads(first)["id"] == "kid"
    assert first.count(b"\n") == 1
    assert dobj.unused_data  # the events follow in further frames


def test_second_fork_with_the_same_id_fails_and_changes_nothing(tmp_path: Path) -> None:
    _parent(tmp_path)
    root = SessionRoot(tmp_path)
    root.fork("parent-1", 3, "kid")
    before = _digest(tmp_path)
    for boundary in (3, 7, 2, None):
        with pytest.raises(SessionForkError) as info:
            SessionRoot(tmp_path).fork("parent-1", boundary, "kid")
        assert info.value.code is ForkErrorCode.SESSION_ALREADY_EXISTS
    assert _digest(tmp_path) == before


def test_same_id_race_loser_gets_already_exists(tmp_path: Path) -> None:
    _parent(tmp_path)
    stale = SessionRoot(tmp_path)
    stale.scan()  # this instance has not seen "kid" yet
    SessionRoot(tmp_path).fork("parent-1", 3, "kid")
    before = _digest(tmp_path)
    with pytest.raises(SessionForkError) as info:
        stale.fork("parent-1", 7, "kid")
    assert info.value.code is ForkErrorCode.SESSION_ALREADY_EXISTS
    assert _digest(tmp_path) == before


@pytest.mark.parametrize(
    ("boundary", "code"),
    [
        (None, ForkErrorCode.INVALID_BOUNDARY),  # open tail
        (13, ForkErrorCode.INVALID_BOUNDARY),  # not a turn/end
        (99, ForkErrorCode.INVALID_BOUNDARY),
        (-1, ForkErrorCode.INVALID_BOUNDARY),
        (2.5, ForkErrorCode.INVALID_BOUNDARY),
    ],
)
def test_refused_forks_write_nothing(tmp_path: Path, boundary: Any, code: ForkErrorCode) -> None:
    _parent(tmp_path, open_tail=True)
    before = _digest(tmp_path)
    with pytest.raises(SessionForkError) as info:
        SessionRoot(tmp_path).fork("parent-1", boundary)
    assert info.value.code is code
    assert "nearest earlier turn/end is seq 11" in info.value.message or boundary in (-1, 2.5)
    assert _digest(tmp_path) == before


def test_unknown_source_is_not_found(tmp_path: Path) -> None:
    _parent(tmp_path)
    with pytest.raises(SessionForkError) as info:
        SessionRoot(tmp_path).fork("nobody")
    assert info.value.code is ForkErrorCode.SESSION_NOT_FOUND


def test_fork_past_a_seq_gap_is_refused_before_it_is_allowed(tmp_path: Path) -> None:
    records = [*turn_records(0, 1), *turn_records(10, 2)]  # seqs 4..9 missing
    path = write_lines(
        tmp_path / "flat.jsonl",
        {"type": "session", "version": 0, "delegationDepth": 0, "id": "gap"},
        *records,
    )
    root = SessionRoot(tmp_path)
    assert root.fork("gap", 3, "ok").child.events == 5  # the seed and the marker
    with pytest.raises(SessionForkError) as info:
        root.fork("gap", 13, "no")
    assert info.value.code is ForkErrorCode.INVALID_BOUNDARY
    assert "not contiguous" in info.value.message
    assert "seq 3" in info.value.message
    assert path.exists()


def test_empty_parent_forks_into_an_empty_child(tmp_path: Path) -> None:
    write_lines(
        tmp_path / "e" / "session.jsonl",
        {"type": "session", "version": 0, "delegationDepth": 0, "id": "e"},
    )
    result = SessionRoot(tmp_path).fork("e", None, "kid")
    assert result.boundary is None
    contents = read_log(result.child.path)
    # dsh marks the end of even an empty seed.
    assert [(e.type, e.seq, e.data) for e in contents.events] == [("session/end-seed", 0, {})]
    assert contents.header is not None and contents.header.seed_length == 0
    assert result.child.path.parent.parent.name == "_no-cwd"


def test_write_failure_leaves_nothing(tmp_path: Path) -> None:
    _parent(tmp_path)
    before = _digest(tmp_path)

    def fail_at_link(step: str) -> None:
        if step == "link":
            raise OSError(28, "No space left on device")

    with pytest.raises(SessionForkError) as info:
        SessionRoot(tmp_path).fork("parent-1", 3, "kid", fault=fail_at_link)
    assert info.value.code is ForkErrorCode.WRITE_FAILED
    assert _digest(tmp_path) == before


@pytest.mark.parametrize("zstd", [False, True])
@given(log=logs(), data=st.data())
def test_a_persisted_child_reloads_identical(
    log: list[SessionEvent], data: Any, zstd: bool
) -> None:
    ends = [e.seq for e in log if e.type == "turn/end"]
    boundary = data.draw(st.sampled_from(ends)) if ends else None
    batch = data.draw(st.integers(1, 5))
    with tempfile.TemporaryDirectory() as folder:
        root_dir = Path(folder)
        header = SessionHeader(id="p", created_at=1, cwd="/w/ä")
        parent = write_log(root_dir, header, log, zstd=zstd, batch=batch)
        parent_bytes = parent.read_bytes()
        if boundary is None and log:
            with pytest.raises(SessionForkError):
                SessionRoot(root_dir).fork("p", None, "c")
            return
        result = SessionRoot(root_dir).fork("p", boundary, "c")
        assert parent.read_bytes() == parent_bytes
        reloaded = read_log(result.child.path)
        assert reloaded.encoding == ("zstd" if zstd else "raw")
        assert reloaded.problems == ()
        seed = 0 if boundary is None else boundary + 1
        *copied, marker = reloaded.events
        assert [e.to_json_dict() for e in copied] == [e.to_json_dict() for e in log[:seed]]
        assert (marker.type, marker.seq, marker.data) == ("session/end-seed", seed, {})
        assert reloaded.header is not None
        assert (reloaded.header.parent_session, reloaded.header.seed_length) == ("p", seed)
        assert result.child.events == seed + 1  # and the end-seed marker


def test_a_fork_never_writes_through_a_symlink_out_of_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    outside.mkdir()
    _parent(root)
    # A project folder for another cwd that is a symlink pointing out of the root.
    (root / project_key("/elsewhere")).symlink_to(outside, target_is_directory=True)
    header = SessionHeader(id="p2", created_at=2, cwd="/elsewhere", delegation_depth=0)
    write_log(tmp_path / "staging", header, as_events(turn_records(0, 1)))
    staged = next((tmp_path / "staging").rglob("session.jsonl"))
    # The parent sits inside the root (a symlink leading out of it is not listed);
    # its child's folder, for cwd /elsewhere, would be under the symlink.
    target = root / project_key("/home/dev/moved") / "p2"
    target.mkdir(parents=True)
    (target / "session.jsonl").write_bytes(staged.read_bytes())
    before = _digest(outside)
    with pytest.raises(SessionForkError) as err:
        SessionRoot(root).fork("p2", child_id="child-out")
    assert err.value.code is ForkErrorCode.WRITE_FAILED
    assert "outside the root" in err.value.message
    assert _digest(outside) == before


def test_a_fork_clears_temporaries_left_by_a_dead_fork(tmp_path: Path) -> None:
    from turnline.core.writer import TEMP_PREFIX

    _parent(tmp_path)
    folder = tmp_path / project_key("/home/dev/app") / encode_session_id("child-t")
    folder.mkdir(parents=True)
    # pid 2**22 + 1 is above Linux's pid_max default, so no live process holds it.
    leftover = folder / f"{TEMP_PREFIX}{2**22 + 1}-deadbeef"
    leftover.write_bytes(b'{"type":"session"')
    SessionRoot(tmp_path).fork("parent-1", child_id="child-t")
    assert not leftover.exists()
    assert (folder / "session.jsonl").is_file()


def test_a_lineage_built_across_an_update_is_not_kept_as_current(tmp_path: Path) -> None:
    _parent(tmp_path)
    root = SessionRoot(tmp_path)
    first = root.lineage()
    assert root.lineage() is first  # cached while nothing changes
    root.fork("parent-1", child_id="kid")
    assert root.lineage() is not first
    assert any(node.children for node in root.lineage().roots)
