"""Hostile content and hostile ids: shown literally and safely, written only under the root."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from turnline.core.layout import decode_session_id, encode_session_id, session_dir
from turnline.core.logfile import read_log
from turnline.core.root import SessionRoot
from turnline.core.store import ForkErrorCode, SessionForkError

from .corpus import (
    BIDI,
    CLEAR,
    CWD,
    EVIL_ID,
    HOSTILE,
    LONG,
    MARKUP,
    conversation,
    header,
    log_path,
    put,
    raw_log,
    unsafe_characters,
)


def turnline(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "turnline.cli", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "200", "LANG": "C.UTF-8"},
    )


@pytest.mark.parametrize("command", ["ls", "tree", "show"])
def test_cli_text_output_carries_no_control_or_bidi_characters(
    hostile_root: Path, command: str
) -> None:
    args = [command, str(hostile_root)]
    if command == "show":
        args.append(str(log_path(hostile_root, EVIL_ID)))
    out = turnline(*args)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert unsafe_characters(out.stdout) == []
    assert unsafe_characters(out.stderr) == []
    # Shown literally: markup is text, not style; the escape's payload is inert text.
    assert MARKUP in out.stdout
    if command == "show":
        assert "]52;c;SGVsbG8=" in out.stdout and "gnp.exe" in out.stdout


def test_cli_json_output_escapes_every_control_character(hostile_root: Path) -> None:
    out = turnline("ls", "--json", str(hostile_root))
    assert out.returncode == 0, out.stderr
    assert not any(ord(c) < 0x20 and c != "\n" for c in out.stdout)
    titles = {e["title"] for e in json.loads(out.stdout)}
    assert HOSTILE + LONG in titles  # the data is all there, escaped, never altered


# -- hostile ids --------------------------------------------------------------------------

HOSTILE_IDS = [
    "../x",
    "/etc/passwd",
    "a/b",
    ".",
    "..",
    "",
    "~002E",
    "ünïcødé-名前",
    "a\\b",
    "c:\\x",
    "x" * 200,
    f"id{CLEAR}{BIDI}",
]


def _tree(top: Path) -> set[Path]:
    out: set[Path] = set()
    for folder, dirs, files in os.walk(top):
        out.update(Path(folder) / name for name in (*dirs, *files))
    return out


def test_hostile_child_ids_land_in_one_safe_folder_each_and_reload(tmp_path: Path) -> None:
    rootdir = tmp_path / "root"
    parent = put(log_path(rootdir, "p"), raw_log(header("p"), conversation(1)))
    before = _tree(tmp_path)
    parent_bytes = parent.read_bytes()
    root = SessionRoot(rootdir)
    project = session_dir(rootdir, "p", CWD).parent
    for child_id in HOSTILE_IDS:
        done = root.fork("p", None, child_id)
        folder = done.child.path.parent
        # Exactly one folder, directly under the project folder, named by the encoding.
        assert folder.parent == project and folder.name == encode_session_id(child_id)
        assert decode_session_id(folder.name) == child_id
        assert folder.name not in (".", "..") and "/" not in folder.name
        assert read_log(done.child.path).header.id == child_id  # type: ignore[union-attr]
    created = _tree(tmp_path) - before
    assert all(p.is_relative_to(rootdir) for p in created)
    assert {p for p in created if p.is_file()} == {
        session_dir(rootdir, cid, CWD) / "session.jsonl" for cid in HOSTILE_IDS
    }
    assert parent.read_bytes() == parent_bytes
    # A fresh root finds every child again, under its own id, once.
    found = sorted(s.id for s in SessionRoot(rootdir).scan() if s.id != "p")
    assert found == sorted(HOSTILE_IDS)


@pytest.mark.parametrize("child_id", ["\ud800", "x\udc00y"])
def test_lone_surrogate_child_id_is_refused_with_a_typed_error(
    tmp_path: Path, child_id: str
) -> None:
    # A lone surrogate has a safe folder name, but no UTF-8 JSON header can hold it
    # (orjson neither writes nor reads one), so the fork is refused and writes nothing.
    assert "/" not in encode_session_id(child_id)
    assert decode_session_id(encode_session_id(child_id)) == child_id
    parent = put(log_path(tmp_path, "p"), raw_log(header("p"), conversation(1)))
    before = _tree(tmp_path)
    with pytest.raises(SessionForkError) as refused:
        SessionRoot(tmp_path).fork("p", None, child_id)
    assert refused.value.code is ForkErrorCode.WRITE_FAILED
    assert _tree(tmp_path) == before
    assert read_log(parent).problems == ()


def test_child_id_too_long_for_a_folder_name_is_refused_and_writes_nothing(
    tmp_path: Path,
) -> None:
    # Ids are encoded injectively, never cut, so a folder name over NAME_MAX (255
    # bytes) cannot exist: the fork must fail as a typed error and leave nothing.
    put(log_path(tmp_path, "p"), raw_log(header("p"), conversation(1)))
    before = _tree(tmp_path)
    with pytest.raises(SessionForkError) as refused:
        SessionRoot(tmp_path).fork("p", None, "é" * 60)
    assert refused.value.code is ForkErrorCode.WRITE_FAILED
    assert _tree(tmp_path) == before


def test_cli_fork_with_an_undecodable_id_argument_is_a_typed_error(tmp_path: Path) -> None:
    put(log_path(tmp_path, "p"), raw_log(header("p"), conversation(1)))
    before = _tree(tmp_path)
    # Bytes that are not UTF-8 reach Python as lone surrogates (surrogateescape).
    out = subprocess.run(
        [sys.executable, "-m", "turnline.cli", "fork", str(tmp_path), "p", "--id", b"\xed\xa0\x80"],
        capture_output=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
    )
    assert b"Traceback" not in out.stderr
    assert out.returncode == 1
    assert _tree(tmp_path) == before


def test_cli_fork_with_traversal_ids_writes_only_under_the_root(tmp_path: Path) -> None:
    rootdir = tmp_path / "root"
    put(log_path(rootdir, "p"), raw_log(header("p"), conversation(1)))
    before = _tree(tmp_path)
    for child_id in ("../../escape", "/tmp/evil", ".."):
        out = turnline("fork", str(rootdir), "p", "--id", child_id, "--json")
        assert out.returncode == 0, out.stderr
        child = Path(json.loads(out.stdout)["child"]["path"])
        assert child == session_dir(rootdir, child_id, CWD) / "session.jsonl"
    created = _tree(tmp_path) - before
    assert created and all(p.is_relative_to(rootdir) for p in created)


def test_raw_view_text_of_huge_events_is_bounded() -> None:
    """The raw view's JSON of a turn with a 20 MB string field stays a bounded size
    (each field cut to FIELD_LIMIT with a note), so the app never draws megabytes."""
    from turnline.core.content import FIELD_LIMIT, RAW_CHARS, bounded, raw_events_text
    from turnline.core.model import SessionEvent

    huge = "x" * (20 * 1024 * 1024)
    events = [
        SessionEvent("tool/result", i, 0, {"message": {"content": [{"text": huge}]}})
        for i in range(3)
    ]
    text = raw_events_text(events)
    assert len(text) < RAW_CHARS + 2 * FIELD_LIMIT
    assert "… 19.9 MB more" in text
    part = bounded(huge)
    assert len(part.text) == FIELD_LIMIT and part.more == len(huge) - FIELD_LIMIT
