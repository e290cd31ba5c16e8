"""The record rules of `core/records.py`, and the summary fields built on them."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from turnline.core.index import index_log
from turnline.core.logfile import read_log
from turnline.core.records import fallback_title, is_user_input, user_title
from turnline.core.summary import from_contents, summarize, valid_utf8

HEADER = {
    "type": "session",
    "version": 0,
    "delegationDepth": 0,
    "id": "s-1",
    "createdAt": 1,
    "cwd": "/w",
}


def _log(tmp_path: Path, records: list[dict[str, object]]) -> Path:
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in [HEADER, *records]))
    return path


@pytest.mark.parametrize(
    "text,title",
    [
        ("fix the bug", "fix the bug"),
        ("  fix the bug \n", "fix the bug"),
        ("fix the bug\nplease", "fix the bug…"),
        ("\n\nfix the bug\n\nplease\n", "fix the bug…"),
        ("fix the bug\r\nplease", "fix the bug…"),
        ("   \n ", None),
    ],
)
def test_a_fallback_title_is_the_first_line_and_says_when_it_was_cut(
    text: str, title: str | None
) -> None:
    assert fallback_title(text) == title


def test_only_user_input_gives_a_title() -> None:
    typed = {"content": [{"type": "text", "text": "hello\nworld"}]}
    injected = {**typed, "source": {"kind": "memory"}}
    assert is_user_input(typed) and not is_user_input(injected) and not is_user_input(None)
    assert user_title(typed) == "hello…"
    assert user_title(injected) is None


def _records(last: dict[str, object]) -> list[dict[str, object]]:
    return [
        {"type": "turn/start", "seq": 0, "time": 100, "data": {}},
        {
            "type": "user/message",
            "seq": 1,
            "time": 110,
            "data": {"content": [{"type": "text", "text": "fix it\nnow"}]},
        },
        last,
    ]


PACKED = {
    "type": "text-chunks",
    "seq0": 2,
    "time0": 200,
    "data": {"turn": 1, "step": 1, "index": 0, "dt": [5, 7], "texts": ["a", "b", "c"]},
}


@pytest.mark.parametrize(
    "last,activity",
    [
        ({"type": "turn/end", "seq": 2, "time": 150, "data": {"reason": {"kind": "done"}}}, 150),
        ({"type": "step/end", "seq": 2, "data": {}}, 0),  # no time: 0, as the reader reads it
        (PACKED, 212),  # a packed row: its last member's time
    ],
)
def test_last_activity_is_the_last_events_time_on_every_path(
    tmp_path: Path, last: dict[str, object], activity: int
) -> None:
    path = _log(tmp_path, _records(last))
    scanned = summarize(path)  # the listing's byte scan
    full = from_contents(read_log(path), "s-1")  # the full reader
    indexed = index_log(path).summary  # the big-log index
    assert scanned.last_activity == full.last_activity == indexed.last_activity == activity
    assert scanned.title == full.title == indexed.title == "fix it…"
    assert scanned.to_json_dict()["lastActivity"] == activity


def test_a_log_without_events_has_no_last_activity(tmp_path: Path) -> None:
    path = _log(tmp_path, [])
    assert summarize(path).last_activity is None
    assert index_log(path).summary.last_activity is None


@pytest.mark.parametrize("at", [(1 << 18) - 2, (1 << 18) - 1, 1 << 18, (1 << 20) + 1])
def test_utf8_is_checked_across_slice_edges(at: int) -> None:
    """`valid_utf8` decodes a big buffer a slice at a time: a character cut by a slice's
    edge is still whole (valid), and a bad byte anywhere is still found, as decoding
    the buffer whole finds it."""
    text = "修复 fix ".encode()
    good = b"a" * at + text * 50_000
    assert valid_utf8(good)
    for bad in (good + text[:2], good[: at + 1] + b"\xff" + good[at + 2 :], good + b"\xed\xa0\x80"):
        with pytest.raises(UnicodeDecodeError):
            bad.decode("utf-8")
        assert not valid_utf8(bad)
