"""The fork rule's contiguity edge (issue 14 item 12).

A seq that is duplicated, repeated or steps back just before a `turn/end` makes the
prefix up to that `turn/end` an invalid seed (`seed[i].seq == i` fails), although the
`turn/end` itself has the seq asked for. The store, the on-disk root and the CLI must
all refuse it. Each case here has `boundary == contiguous`, so a `check_boundary` that
tested `boundary > contiguous` instead of `>=` would accept it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from turnline.cli.main import main
from turnline.core.model import SessionEvent, SessionHeader
from turnline.core.root import SessionRoot
from turnline.core.store import ForkErrorCode, SessionForkError, SessionStore

from .disk_logs import write_log

#: (name, seqs, types): the last event is a `turn/end` whose seq equals the number
#: of leading contiguous events, i.e. the boundary sits exactly on the edge.
BROKEN = [
    ("duplicated", [0, 1, 1, 2], ["turn/start", "user/message", "user/message", "turn/end"]),
    ("repeated", [0, 1, 1, 1, 2], ["turn/start"] + ["user/message"] * 3 + ["turn/end"]),
    ("backwards", [0, 1, 3, 2], ["turn/start", "user/message", "assistant/message", "turn/end"]),
]
#: A contiguous control case whose last turn/end is forkable.
GOOD = ("contiguous", [0, 1, 2], ["turn/start", "user/message", "turn/end"])


def _events(seqs: list[int], types: list[str]) -> list[SessionEvent]:
    data: dict[str, object] = {}
    return [
        SessionEvent(t, s, 1000 + i, {"reason": "completed"} if t == "turn/end" else data)
        for i, (s, t) in enumerate(zip(seqs, types, strict=True))
    ]


def _header() -> SessionHeader:
    return SessionHeader(id="edge-1", created_at=1, cwd="/w/app", version=0, delegation_depth=0)


def _digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize(("name", "seqs", "types"), BROKEN, ids=[b[0] for b in BROKEN])
def test_store_refuses_a_turn_end_right_after_a_seq_break(
    name: str, seqs: list[int], types: list[str]
) -> None:
    store = SessionStore()
    store.adopt(_header(), _events(seqs, types))
    with pytest.raises(SessionForkError) as info:
        store.fork("edge-1", seqs[-1], "child")
    assert info.value.code is ForkErrorCode.INVALID_BOUNDARY
    assert "not contiguous" in info.value.message
    assert store.get("child") is None


def test_store_forks_the_contiguous_control() -> None:
    store = SessionStore()
    store.adopt(_header(), _events(GOOD[1], GOOD[2]))
    child = store.fork("edge-1", 2, "child")
    assert [e.seq for e in child.events] == [0, 1, 2, 3]


@pytest.mark.parametrize("zstd", [False, True])
@pytest.mark.parametrize(("name", "seqs", "types"), BROKEN, ids=[b[0] for b in BROKEN])
def test_disk_refuses_a_turn_end_right_after_a_seq_break(
    tmp_path: Path, name: str, seqs: list[int], types: list[str], zstd: bool
) -> None:
    write_log(tmp_path, _header(), _events(seqs, types), zstd=zstd)
    before = _digest(tmp_path)
    with pytest.raises(SessionForkError) as info:
        SessionRoot(tmp_path).fork("edge-1", seqs[-1], "child-1")
    assert info.value.code is ForkErrorCode.INVALID_BOUNDARY
    assert "not contiguous" in info.value.message
    assert _digest(tmp_path) == before


@pytest.mark.parametrize(("name", "seqs", "types"), BROKEN, ids=[b[0] for b in BROKEN])
def test_cli_refuses_a_turn_end_right_after_a_seq_break(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    seqs: list[int],
    types: list[str],
) -> None:
    write_log(tmp_path, _header(), _events(seqs, types))
    before = _digest(tmp_path)
    argv = ["fork", str(tmp_path), "edge-1", "--at", str(seqs[-1]), "--id", "child-1", "--json"]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 1
    assert "Traceback" not in err
    error = json.loads(out)["error"]
    assert error["code"] == "INVALID_BOUNDARY"
    assert "not contiguous" in error["message"]
    assert _digest(tmp_path) == before


def test_cli_forks_the_contiguous_control(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_log(tmp_path, _header(), _events(GOOD[1], GOOD[2]))
    code = main(["fork", str(tmp_path), "edge-1", "--at", "2", "--id", "child-1", "--json"])
    capsys.readouterr()
    assert code == 0
