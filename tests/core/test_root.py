"""A root on disk: discovery, lookup, classification of bad logs, zstd reading."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest
import zstandard
from turnline.core import root as root_module
from turnline.core.logfile import read_log
from turnline.core.model import ProblemKind, SessionHeader
from turnline.core.root import RootError, SessionLookupError, SessionRoot
from turnline.core.summary import summarize
from turnline.core.writer import TEMP_PREFIX

from .disk_logs import as_events, event, turn_records, write_lines, write_log

HEADER = {
    "type": "session",
    "version": 0,
    "delegationDepth": 0,
    "id": "s1",
    "createdAt": 5,
    "cwd": "/w",
}


def _kinds(root: SessionRoot, ref: str) -> list[str]:
    return [str(p.kind) for p in root.load(root.resolve(ref)).problems]


def test_discovers_layout_flat_dumps_and_zstd_and_ignores_the_rest(tmp_path: Path) -> None:
    header = SessionHeader(id="laid-out", created_at=1, cwd="/home/dev")
    events = as_events(turn_records(0, 1))
    write_log(tmp_path, header, events)
    write_log(tmp_path, SessionHeader(id="packed", created_at=2), events, zstd=True)
    write_lines(tmp_path / "dumps" / "a.jsonl", {**HEADER, "id": "flat"}, *turn_records(0, 1))
    write_lines(tmp_path / "dumps" / "not-a-log.jsonl", {"hello": "world"})
    write_lines(tmp_path / "dumps" / f"{TEMP_PREFIX}1-x.jsonl", {**HEADER, "id": "temp"})
    write_lines(tmp_path / "node_modules" / "x.jsonl", {**HEADER, "id": "vendored"})
    (tmp_path / "notes.txt").write_text("{}")
    root = SessionRoot(tmp_path)
    ids = sorted(s.id for s in root.scan())
    assert ids == ["flat", "laid-out", "packed"]
    assert {str(s.encoding) for s in root.summaries()} == {"raw", "zstd"}
    assert root.encoding == "zstd"  # the root already holds zstd logs


def test_a_single_log_file_is_a_root(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "one.jsonl", HEADER, *turn_records(0, 1))
    write_lines(tmp_path / "other.jsonl", {**HEADER, "id": "s2"})
    root = SessionRoot(path)
    assert [s.id for s in root.scan()] == ["s1"]
    assert root.path == tmp_path


def test_root_errors_have_codes(tmp_path: Path) -> None:
    with pytest.raises(RootError) as missing:
        SessionRoot(tmp_path / "nope")
    assert missing.value.code == "ROOT_NOT_FOUND"
    (tmp_path / "x.txt").write_text("")
    with pytest.raises(RootError) as invalid:
        SessionRoot(tmp_path / "x.txt")
    assert invalid.value.code == "ROOT_INVALID"


def test_resolve_by_id_prefix_and_path(tmp_path: Path) -> None:
    a = write_lines(tmp_path / "a.jsonl", {**HEADER, "id": "abc-1"})
    write_lines(tmp_path / "b.jsonl", {**HEADER, "id": "abd-2"})
    write_lines(tmp_path / "c" / "c.jsonl", {**HEADER, "id": "abd-2"})
    root = SessionRoot(tmp_path)
    assert root.resolve("abc-1").path == a
    assert root.resolve("abc").path == a
    assert root.resolve(str(a)).path == a
    assert root.resolve("a.jsonl").path == a  # relative to the root
    with pytest.raises(SessionLookupError) as ambiguous:
        root.resolve("ab")
    assert ambiguous.value.code == "AMBIGUOUS_SESSION"
    with pytest.raises(SessionLookupError) as duplicate:
        root.resolve("abd")
    assert duplicate.value.code == "AMBIGUOUS_SESSION"
    assert "name one by its path" in duplicate.value.message
    with pytest.raises(SessionLookupError) as missing:
        root.resolve("zzz")
    assert missing.value.code == "SESSION_NOT_FOUND"


def test_torn_tail_is_ignored_and_reported(tmp_path: Path) -> None:
    write_lines(tmp_path / "t.jsonl", HEADER, *turn_records(0, 1), tail=b'{"type":"turn/sta')
    root = SessionRoot(tmp_path)
    loaded = root.load(root.resolve("s1"))
    assert len(loaded.events) == 4
    assert [p.kind for p in loaded.problems] == [ProblemKind.TORN_TAIL]
    assert loaded.problems[0].seq == 4


def test_corrupt_line_before_a_turn_end_stops_the_log_there(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    write_lines(path, HEADER, *turn_records(0, 1))
    with open(path, "ab") as fh:
        fh.write(b"{not json\n")
        fh.write(b'{"type":"turn/end","seq":5,"time":1,"data":{"reason":{"kind":"completed"}}}\n')
    root = SessionRoot(tmp_path)
    loaded = root.load(root.resolve("s1"))
    assert len(loaded.events) == 4
    corrupt = [p for p in loaded.problems if p.kind is ProblemKind.CORRUPT]
    assert len(corrupt) == 1 and corrupt[0].line == 6 and corrupt[0].seq == 4


def test_seq_gap_and_odd_turn_end_are_problems_not_errors(tmp_path: Path) -> None:
    write_lines(
        tmp_path / "g.jsonl",
        {k: v for k, v in HEADER.items() if k != "version"},
        event(1, "turn/start", turn=1),
        event(2, "turn/end", error="model exploded"),
    )
    root = SessionRoot(tmp_path)
    assert _kinds(root, "s1") == ["missing-version", "seq-gap", "odd-event"]


def test_foreign_version_and_bad_header(tmp_path: Path) -> None:
    write_lines(tmp_path / "v" / "session.jsonl", {**HEADER, "version": 7})
    write_lines(tmp_path / "h" / "session.jsonl", {"type": "turn/start", "seq": 0})
    (tmp_path / "e" / "session.jsonl").parent.mkdir()
    (tmp_path / "e" / "session.jsonl").write_bytes(b"")
    root = SessionRoot(tmp_path)
    by_dir = {s.path.parent.name: s for s in root.scan()}
    assert [p.kind for p in by_dir["v"].problems] == [ProblemKind.FOREIGN_VERSION]
    assert by_dir["h"].header is None and by_dir["h"].problems[0].kind is ProblemKind.BAD_HEADER
    assert by_dir["e"].problems[0].kind is ProblemKind.EMPTY


def test_unreadable_file_is_a_problem(tmp_path: Path) -> None:
    # A folder where a log should be cannot be read, even by root (unlike chmod 0).
    where = tmp_path / "u" / "session.jsonl"
    where.mkdir(parents=True)
    summary = summarize(where, "u")
    assert summary.header is None
    assert [p.kind for p in summary.problems] == [ProblemKind.UNREADABLE]
    contents = read_log(where)
    assert [p.kind for p in contents.problems] == [ProblemKind.UNREADABLE]
    assert contents.events == ()


def test_cross_session_problems(tmp_path: Path) -> None:
    write_lines(tmp_path / "p.jsonl", {**HEADER, "id": "p"}, *turn_records(0, 1))
    seeded = [*turn_records(0, 1)]
    seeded[1] = event(1, "user/message", role="user", content=[], source={"kind": "user"})
    write_lines(
        tmp_path / "c.jsonl", {**HEADER, "id": "c", "parentSession": "p", "seedLength": 4}, *seeded
    )
    write_lines(tmp_path / "o.jsonl", {**HEADER, "id": "o", "parentSession": "gone"})
    write_lines(tmp_path / "d1.jsonl", {**HEADER, "id": "dup"})
    write_lines(tmp_path / "d2.jsonl", {**HEADER, "id": "dup"})
    root = SessionRoot(tmp_path)
    assert _kinds(root, "c") == ["seed-mismatch"]
    assert _kinds(root, "o") == ["missing-parent"]
    assert _kinds(root, str(tmp_path / "d1.jsonl")) == ["duplicate-id"]
    assert _kinds(root, "p") == []


def test_zstd_multi_frame_and_torn_last_frame(tmp_path: Path) -> None:
    header = SessionHeader(id="z", created_at=1)
    events = as_events([r for n in range(3) for r in turn_records(4 * n, n + 1)])
    path = write_log(tmp_path, header, events, zstd=True, batch=2)
    root = SessionRoot(tmp_path)
    loaded = root.load(root.resolve("z"))
    assert [e.seq for e in loaded.events] == list(range(12))
    assert loaded.problems == ()
    frame = zstandard.ZstdCompressor(write_checksum=True).compress(b'{"type":"turn/start"}\n')
    with open(path, "ab") as fh:
        fh.write(frame[: len(frame) // 2])
    again = SessionRoot(tmp_path)
    loaded = again.load(again.resolve("z"))
    assert len(loaded.events) == 12
    assert [p.kind for p in loaded.problems] == [ProblemKind.TORN_TAIL]


def test_boundary_error_matches_fork(tmp_path: Path) -> None:
    write_lines(tmp_path / "a.jsonl", HEADER, *turn_records(0, 1), *turn_records(4, 2)[:2])
    root = SessionRoot(tmp_path)
    loaded = root.load(root.resolve("s1"))
    assert loaded.boundary_error(3) is None
    refused = loaded.boundary_error(None)
    assert refused is not None and refused.code == "INVALID_BOUNDARY"
    assert loaded.boundary_error(4) is not None
    assert loaded.events_between(4, None) == list(loaded.events[4:])
    assert [e.seq for e in loaded.events_between(1, 2)] == [1, 2]


def test_adopted_summaries_are_not_rescanned(tmp_path: Path) -> None:
    """A second root seeded from a first one's scan does not read the folder again."""
    header = SessionHeader(id="one", created_at=1, cwd="/w")
    write_log(tmp_path, header, as_events(turn_records(0, 1)))
    first = SessionRoot(tmp_path)
    summaries = first.scan()
    # A log that appears after the scan: a rescan would list it.
    write_log(tmp_path, SessionHeader(id="two", created_at=2, cwd="/w"), [])
    shadow = SessionRoot(tmp_path)
    shadow.adopt_summaries(summaries)
    assert [s.id for s in shadow.summaries()] == ["one"]
    assert [n.summary.id for n in shadow.lineage().roots] == ["one"]
    assert sorted(s.id for s in SessionRoot(tmp_path).summaries()) == ["one", "two"]


# -- the lineage cache, canonical paths, symlinks out of the root (issues 9, 14) ------


def _small_family(root: Path) -> None:
    for k in range(6):
        folder = root / "--home-dev-p--" / f"s{k}"
        folder.mkdir(parents=True)
        header: dict[str, object] = {"type": "session", "version": 0, "id": f"s{k}", "createdAt": k}
        if k:
            header |= {"parentSession": f"s{k - 1}", "seedLength": 0}
        lines = [
            header,
            {"type": "user/message", "seq": 0, "time": 1, "data": {"content": f"task {k}"}},
            {"type": "turn/start", "seq": 1, "time": 2, "data": {"turn": 1}},
            {"type": "turn/end", "seq": 2, "time": 3, "data": {"turn": 1}},
        ]
        (folder / "session.jsonl").write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))


def test_selections_and_counts_only_updates_rebuild_no_lineage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _small_family(tmp_path)
    root = SessionRoot(tmp_path)
    summaries = root.scan()
    root.lineage()
    calls: list[int] = []
    real = root_module.build_lineage

    def counting(items: Any) -> Any:
        calls.append(1)
        return real(items)

    monkeypatch.setattr(root_module, "build_lineage", counting)
    for k in range(20):  # 20 selections: each load updates its summary
        root.load(summaries[k % len(summaries)])
    for k in range(20):  # 20 appends that change counts only
        s = root.summaries()[k % len(summaries)]
        root.update(msgspec.structs.replace(s, events=s.events + 1, size=s.size + 10))
        lineage = root.lineage()
    assert calls == []
    # The cached lineage shows the new summaries.
    nodes = root_module._nodes_of(lineage)
    assert {p: n.summary for p, n in nodes.items()} == {s.path: s for s in root.summaries()}
    # A lineage field that changes (the parent) drops it: one rebuild.
    s = root.summaries()[3]
    root.update(msgspec.structs.replace(s, path=s.path, header=None))
    root.lineage()
    assert calls == [1]


def test_a_relative_root_is_resolved_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _small_family(tmp_path)
    monkeypatch.chdir(tmp_path / "--home-dev-p--")
    root = SessionRoot(Path(".."))
    assert root.path == tmp_path.resolve()
    assert all(s.path.is_absolute() and ".." not in s.path.parts for s in root.scan())


def test_a_directory_symlink_out_of_the_root_is_not_followed(tmp_path: Path) -> None:
    inner = tmp_path / "root"
    _small_family(inner)
    outside = tmp_path / "elsewhere"
    _small_family(outside)
    (inner / "to-outside").symlink_to(outside)
    (inner / "to-slash").symlink_to("/")
    (inner / "inside").symlink_to(inner / "--home-dev-p--" / "s0")
    root = SessionRoot(inner)
    summaries = root.scan()
    assert all(str(s.path).startswith(str(inner)) for s in summaries)
    ids = sorted(s.id for s in summaries)
    assert ids == ["s0", "s1", "s2", "s3", "s4", "s5"]  # the inside link followed, s0 once
    not_followed = {p.name: why for p, why in root.scan_problems}
    assert set(not_followed) == {"to-outside", "to-slash"}
    assert "outside the root: not followed" in not_followed["to-slash"]


def test_a_zstd_header_is_read_from_the_first_frame_only(tmp_path: Path) -> None:
    header = orjson.dumps({"type": "session", "version": 0, "id": "z1", "createdAt": 1}) + b"\n"
    cctx = zstandard.ZstdCompressor()
    log = tmp_path / "x.jsonl.zstd"
    # A good first frame, then bytes that are no zstd at all: only the first is read.
    log.write_bytes(cctx.compress(header) + b"garbage that is not a frame" * 100)
    assert root_module.has_session_header(log)
    other = tmp_path / "y.jsonl.zstd"
    other.write_bytes(cctx.compress(b'{"type":"user/message"}\n') + cctx.compress(header))
    assert not root_module.has_session_header(other)
