"""Legal JSON that other readers stumble on, read through the real CLI (issue 14
items 5, 8 and 9; issue 10's wording for a corrupt zstd log): `ls` (the byte
scan), `show` (the full read) and the big-log index all agree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import zstandard
from turnline.core.index import index_log

from .test_cli import HEADER, rec, run, run_json, turn


def _write(path: Path, lines: list[bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def _dumps(obj: Any, spaced: bool = False) -> bytes:
    if spaced:
        return json.dumps(obj).encode()  # "type": "turn/end", as json.dumps spaces it
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def _log(tmp_path: Path, lines: list[bytes]) -> Path:
    return _write(tmp_path / "root" / "--w-app--" / "aaaa-parent" / "session.jsonl", lines)


def _agree(capsys: pytest.CaptureFixture[str], log: Path) -> tuple[dict[str, Any], Any]:
    """`ls --json` and `show --json` of the log, checked to agree with each other and
    with the index; returns (the ls entry, show's output)."""
    root = str(log.parents[2])
    code, listed = run_json(capsys, "ls", root)
    assert code == 0
    code, shown = run_json(capsys, "show", root, "aaaa")
    assert code == 0
    (entry,) = listed
    for key in ("events", "lastSeq", "turns", "openTurn", "title", "lastActivity"):
        assert entry[key] == shown["session"][key], key
    assert [p["kind"] for p in entry["problems"]] == [
        p["kind"] for p in shown["session"]["problems"]
    ]
    summary = index_log(log).summary
    assert (summary.events, summary.turns, summary.open_turn) == (
        entry["events"],
        entry["turns"],
        entry["openTurn"],
    )
    return entry, shown


def test_a_lone_surrogate_escape_is_legal_json_not_corruption(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    records = [*turn(0, 1, "first"), *turn(5, 2, "second")]
    records[3]["data"]["arguments"] = "half an emoji: \ud83d"  # JSON.stringify writes \ud83d
    lines = [_dumps(HEADER), *(json.dumps(r).encode() for r in records)]
    assert b"\\ud83d" in lines[4]
    entry, shown = _agree(capsys, _log(tmp_path, lines))
    assert entry["problems"] == []
    assert (entry["events"], entry["turns"]) == (10, 2)
    assert len(shown["turns"]) == 2


def test_a_number_beyond_a_double_is_read_as_json_parse_reads_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lines = [_dumps(HEADER), *(_dumps(r) for r in turn(0, 1, "first"))]
    lines[3] = lines[3][:-1] + b',"big":1e400}'  # JSON.parse gives Infinity
    lines += [_dumps(r) for r in turn(5, 2, "second")]
    entry, _ = _agree(capsys, _log(tmp_path, lines))
    assert entry["problems"] == []
    assert entry["turns"] == 2


def test_spaced_json_with_a_bad_middle_line_is_corruption_not_a_torn_tail(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    first = [_dumps(r, spaced=True) for r in turn(0, 1, "first")]
    later = [_dumps(r, spaced=True) for r in [*turn(6, 2, "second"), *turn(11, 3, "third")]]
    lines = [_dumps(HEADER, spaced=True), *first, b'{"type": "step/start", "se', *later]
    entry, _ = _agree(capsys, _log(tmp_path, lines))
    (problem,) = entry["problems"]
    assert problem["kind"] == "corrupt"
    assert "unreadable past seq 4" in problem["message"]


def test_duplicate_keys_the_last_one_wins_everywhere(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    records = [*turn(0, 1, "first"), *turn(5, 2, "second")]
    lines = [_dumps(HEADER), *(_dumps(r) for r in records)]
    # The turn/start of turn 2 says "turn/start" first and "turn/end" last: it is a turn/end.
    lines[7] = b'{"type":"turn/start","type":"turn/end","seq":6,"time":1006,"data":{}}'
    entry, shown = _agree(capsys, _log(tmp_path, lines))
    # turn 1, then a turn/end with no turn open (a turn of its own), then the last turn/end
    assert entry["turns"] == len(shown["turns"]) == 3


def test_duplicate_title_keys_name_the_later_type(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lines = [_dumps(HEADER), *(_dumps(r) for r in turn(0, 1, "first question"))]
    lines.append(b'{"type":"session/title","type":"step/end","seq":5,"data":{"title":"no"}}')
    entry, _ = _agree(capsys, _log(tmp_path, lines))
    assert entry["title"] == "first question"


def test_a_corrupt_zstd_log_does_not_say_seq_minus_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cctx = zstandard.ZstdCompressor()
    head = cctx.compress(_dumps(HEADER) + b"\n")
    log = tmp_path / "root" / "--w-app--" / "aaaa-parent" / "session.jsonl.zstd"
    log.parent.mkdir(parents=True)
    log.write_bytes(head + b"\x28\xb5\x2f\xfd" + b"\x00garbage" * 8)
    _, out, err = run(capsys, "show", str(log.parents[2]), "aaaa")
    assert "seq -1" not in out + err
    _, shown = run_json(capsys, "show", str(log.parents[2]), "aaaa")
    (problem,) = shown["session"]["problems"]
    assert problem["kind"] == "corrupt"
    assert problem["message"].endswith("the log is unreadable from its first event on")


def test_a_turn_end_without_a_reason_is_an_odd_event_in_ls_too(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lines = [_dumps(HEADER), *(_dumps(r) for r in turn(0, 1, "first"))]
    lines.append(_dumps(rec(5, "turn/end", turn=2)))  # no reason
    entry, _ = _agree(capsys, _log(tmp_path, lines))
    assert [p["kind"] for p in entry["problems"]] == ["odd-event"]
