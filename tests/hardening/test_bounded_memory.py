"""Bounded memory per file (issue 14 items 2 and 6).

Crash-zeroed and junk logs cost a bounded window of memory and no hang: the real CLI's
`ls` on sparse files (they take no disk). A real log with a 10 MB assistant message and
a 200 MB tool result is indexed, shown (core blocks, raw view, `turnline show`) and
written for the pager within a window of a few MB: tracemalloc in-process, peak RSS of
the real CLI against a small log's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from turnline.cli import main
from turnline.core import index as index_module
from turnline.core import longline as longline_module
from turnline.core.clipped import PREFIX_CHARS, Clipped
from turnline.core.content import (
    FIELD_LIMIT,
    AssistantText,
    StepUsage,
    ToolCall,
    UserText,
    bounded,
    raw_events_text,
    size_words,
)
from turnline.core.export import write_turn_markdown
from turnline.core.records import MAX_HEADER_LINE
from turnline.core.root import SessionRoot
from turnline.core.textsafe import safe_text
from turnline.core.view import SessionView

from .huge_logs import ASSISTANT_UNIT, MB, RESULT_UNIT, HugeLog, write_huge_log, zstd_copy

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


# -- huge fields (issue 14 item 6): a 10 MB message and a 200 MB tool result ----------


@pytest.fixture(scope="module")
def huge_raw(tmp_path_factory: pytest.TempPathFactory) -> HugeLog:
    """The huge log, written once for this module (in chunks: never held whole)."""
    return write_huge_log(tmp_path_factory.mktemp("huge") / "root")


@pytest.fixture(scope="module", params=["raw", "zstd"])
def huge(
    request: pytest.FixtureRequest, huge_raw: HugeLog, tmp_path_factory: pytest.TempPathFactory
) -> HugeLog:
    """The huge log raw, then as a zstd log of a few KB that inflates to 240 MB."""
    if request.param == "raw":
        return huge_raw
    return zstd_copy(huge_raw, tmp_path_factory.mktemp("huge-zstd") / "root")


def _view(log: HugeLog) -> SessionView:
    root = SessionRoot(log.path.parents[2])
    return SessionView(root.load(root.resolve(str(log.path))))


def test_a_turn_with_a_200_mb_result_loads_and_shows_within_a_bounded_window(
    huge: HugeLog,
) -> None:
    longline_module._cache.clear()
    tracemalloc.start()
    try:
        view = _view(huge)
        _, loading = tracemalloc.get_traced_memory()
        longline_module._cache.clear()  # decode again: what highlighting the turn costs
        tracemalloc.reset_peak()
        blocks = view.blocks(0)
        _, showing = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert loading < 64 * MB, f"indexing held {loading / MB:.0f} MB"
    assert showing < 64 * MB, f"reading the turn held {showing / MB:.0f} MB"
    user, assistant, usage, call = blocks
    assert isinstance(user, UserText) and user.text == "dump the logs"
    assert isinstance(usage, StepUsage)
    assert (usage.usage.input_tokens, usage.usage.output_tokens) == (11, 22)
    assert usage.model == "deepseek/deepseek-chat"
    assert isinstance(assistant, AssistantText) and (assistant.seq, assistant.step) == (3, 1)
    part = bounded(assistant.text)
    assert part.text == (ASSISTANT_UNIT * (FIELD_LIMIT // len(ASSISTANT_UNIT) + 1))[:FIELD_LIMIT]
    assert part.more == huge.assistant_chars - FIELD_LIMIT
    assert isinstance(call, ToolCall) and call.name == "bash" and call.call_id == "call-1"
    assert call.shell_command == "cat /var/log/big"
    assert call.result is not None and not call.result.is_error and call.result.seq == 5
    result = bounded(call.result.text)
    assert result.text == (RESULT_UNIT * (FIELD_LIMIT // len(RESULT_UNIT) + 1))[:FIELD_LIMIT]
    assert result.more == huge.result_chars - FIELD_LIMIT
    raw = raw_events_text(view.turn_events(0))
    assert f"… {size_words(huge.result_chars - FIELD_LIMIT)} more" in raw
    turn = view.turns[0]
    assert turn.forkable and turn.turn.tools == ("bash",) and turn.turn.end_seq == 6
    assert turn.turn.assistant == (ASSISTANT_UNIT * 100)[:2000]


def test_a_field_longer_than_a_block_is_indexed_in_a_block_and_a_few_windows(
    tmp_path: Path,
) -> None:
    """A 9 MB message (longer than a block) and a 9 MB result are indexed holding one
    block and a few windows, never a whole window's text decoded at once: orjson
    reserves about fifteen times what it decodes (a 1 MiB window took 30 MB), and the
    app's threads each kept such a peak as resident memory."""
    log = write_huge_log(tmp_path / "root", assistant_mb=9, result_mb=9)
    assert len(ASSISTANT_UNIT.encode()) * log.assistant_repeats > index_module.BLOCK_SIZE
    data = log.path.read_bytes()
    result_at = data.index(b'{"type":"tool/result"')
    del data
    window = longline_module.WINDOW
    longline_module._cache.clear()
    tracemalloc.start()
    try:
        indexed = index_module.index_log(log.path)
        _, indexing = tracemalloc.get_traced_memory()
        longline_module._cache.clear()
        tracemalloc.reset_peak()
        place = longline_module.LinePlace(log.path, False, result_at)
        record = next(longline_module.lines(place))
        _, decoding = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert indexing < index_module.BLOCK_SIZE + 8 * window, f"indexing held {indexing / MB:.1f} MB"
    assert decoding < 8 * window, f"decoding the result held {decoding / MB:.1f} MB"
    assert not indexed.problems
    (first, second) = indexed.timeline.turns
    assert first.assistant == (ASSISTANT_UNIT * 100)[:2000]
    assert (first.tools, first.end_seq, second.user) == (("bash",), 6, "thanks")
    assert isinstance(record, longline_module.LongRecord) and record.error is None
    (part,) = record.value["data"]["message"]["content"][0]["content"]
    text = part["text"]
    assert isinstance(text, Clipped) and text.chars == log.result_chars
    assert str(text) == (RESULT_UNIT * (PREFIX_CHARS // len(RESULT_UNIT) + 1))[:PREFIX_CHARS]


_PEAK_RSS = """
import resource, sys
from turnline.cli.main import main
status = main(sys.argv[1:])
print(f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", file=sys.stderr, flush=True)
"""


def _cli_peak(*args: str) -> tuple[int, str]:
    """Exit status 0, stdout, and the peak RSS (bytes) of the real CLI in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-c", _PEAK_RSS, *args], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    return int(out.stderr.strip().splitlines()[-1]) * 1024, out.stdout


def test_show_of_a_200_mb_field_costs_a_small_process_and_prints_the_excerpts(
    huge: HugeLog, tmp_path: Path
) -> None:
    small = write_huge_log(tmp_path / "small", assistant_mb=0, result_mb=0, sid="small-1")
    baseline, _ = _cli_peak("show", str(small.path), "--json")
    peak, out = _cli_peak("show", str(huge.path), "--json")
    assert peak - baseline < 64 * MB, f"{(peak - baseline) / MB:.0f} MB above a small log's"
    shown = json.loads(out)
    first, second = shown["turns"]
    assert first["assistant"] == (ASSISTANT_UNIT * 100)[:2000]
    assert (first["tools"], first["forkable"], first["endSeq"]) == (["bash"], True, 6)
    assert (second["user"], shown["session"]["problems"]) == ("thanks", [])
    peak, out = _cli_peak("show", str(huge.path))
    assert peak - baseline < 64 * MB
    assert "bash" in out and "dump the logs" in out


def test_the_pager_gets_every_field_whole_streamed_through_a_bounded_window(
    huge: HugeLog, tmp_path: Path
) -> None:
    view = _view(huge)
    target = tmp_path / "turn.md"
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        with open(target, "w", encoding="utf-8") as out:
            write_turn_markdown(view.loaded, view.turns[0].turn, out, view.turn_events(0))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * MB, f"writing the turn held {peak / MB:.0f} MB"
    # Every repeat of both fields is in the file, as the pager shows text (tabs as spaces).
    lines = {
        safe_text(unit, keep_newlines=True).rstrip("\n").encode(): repeats
        for unit, repeats in (
            (ASSISTANT_UNIT, huge.assistant_repeats),
            (RESULT_UNIT, huge.result_repeats),
        )
    }
    assert _count_lines(target, set(lines)) == lines
    text = target.read_bytes()[:4096].decode()
    assert "**Assistant**" in text and "dump the logs" in text


def _count_lines(path: Path, wanted: set[bytes]) -> dict[bytes, int]:
    """How many lines of the file are each of `wanted`, read 8 MiB at a time."""
    counts = dict.fromkeys(wanted, 0)
    carry = b""
    with open(path, "rb") as fh:
        while chunk := fh.read(8 << 20):
            whole, _, carry = (carry + chunk).rpartition(b"\n")
            for line in whole.split(b"\n"):
                if line in counts:
                    counts[line] += 1
    return counts
