"""A long line decoded bounded (`core.longline`) says exactly what a full decode says,
with each long string cut to a prefix that knows the whole field's length: checked
against the standard library's `json` on generated strings, with windows and clip
thresholds small enough that every escape, surrogate pair and UTF-8 sequence lands on a
window edge somewhere."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from turnline.core import longline
from turnline.core.clipped import PREFIX_CHARS, Clipped, join_texts, text_length
from turnline.core.content import bounded
from turnline.core.longline import LinePlace, LongRecord, decode_long, full_text

_PIECES = st.sampled_from(
    ["a", "b c", "\n", '"', "\\", "é", "分叉", "🙂", "\u2028", "\x01", "\t", "\ud83d", "\ude00"]
)
_LONE = re.compile("[\ud800-\udfff]")


def _shown(text: str) -> str:
    """What a reader sees of decoded text: lone surrogates as U+FFFD."""
    return _LONE.sub("\ufffd", text)


def _encode(text: str, ascii_only: bool) -> str:
    """`text` as JSON, as a JavaScript writer puts it: a lone surrogate stays escaped."""
    out = json.dumps(text, ensure_ascii=ascii_only)
    return _LONE.sub(lambda m: f"\\u{ord(m.group()):04x}", out)


def _windows(data: bytes, size: int) -> Iterator[bytes]:
    for k in range(0, len(data), size):
        yield data[k : k + size]


@pytest.fixture
def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(longline, "WINDOW", 97)
    monkeypatch.setattr(longline, "CLIP_BYTES", 40)


@settings(max_examples=150, deadline=None)
@given(
    big=st.lists(_PIECES, min_size=0, max_size=400).map("".join),
    small=st.lists(_PIECES, max_size=6).map("".join),
    repeat=st.sampled_from([1, 400]),
    ascii_only=st.booleans(),
    window=st.integers(7, 300),
)
def test_a_long_line_decodes_as_json_does_with_long_strings_clipped(
    big: str, small: str, repeat: int, ascii_only: bool, window: int
) -> None:
    big = big * repeat
    fields = (_encode(small, ascii_only), _encode(big, ascii_only), _encode("z", False))
    line = (
        b'{"type":"tool/result","seq":7,"time":1.5,"data":{"small":%s,"big":[%s,1e2,null,true],'
        b'"after":%s}}'
    ) % tuple(f.encode() for f in fields)
    want = json.loads(line)
    old = longline.CLIP_BYTES
    longline.CLIP_BYTES = 40
    try:
        chunks = _windows(line + b"\nnext", window)
        value, length, rest = decode_long(next(chunks), chunks, None)
    finally:
        longline.CLIP_BYTES = old
    assert length == len(line)
    assert rest == b"next"[: len(rest)]
    got = value["data"]["big"][0]
    expected = want["data"]["big"][0]
    if isinstance(got, Clipped):
        assert got.chars == len(expected) > PREFIX_CHARS
        assert str(got) == _shown(expected)[:PREFIX_CHARS]
        assert bounded(got).more == len(expected) - PREFIX_CHARS
    else:
        assert got == expected
    assert value["data"]["small"] == want["data"]["small"]
    assert value["data"]["big"][1:] == [100.0, None, True]
    assert (value["type"], value["seq"], value["time"]) == ("tool/result", 7, 1.5)


def _log(tmp_path: Path, text: str, ascii_only: bool = False) -> tuple[Path, bytes]:
    line = (
        b'{"type":"assistant/message","seq":3,"data":{"t":%s}}' % _encode(text, ascii_only).encode()
    )
    path = tmp_path / "session.jsonl"
    path.write_bytes(b'{"type":"session"}\n' + line + b'\n{"type":"turn/end","seq":4}\n')
    return path, line


@pytest.mark.usefixtures("small_windows")
@pytest.mark.parametrize("ascii_only", [False, True])
def test_lines_yields_short_lines_whole_and_a_long_one_bounded_and_streams_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ascii_only: bool
) -> None:
    monkeypatch.setattr(longline, "LONG_LINE", 300)
    text = 'x "q" \\ 🙂 \ud83d 分叉\n' * 8000  # 160 K characters
    path, _ = _log(tmp_path, text, ascii_only)
    header, record, end = list(longline.lines(LinePlace(path, False, 0)))
    assert header == b'{"type":"session"}' and end == b'{"type":"turn/end","seq":4}'
    assert isinstance(record, LongRecord) and record.error is None
    clipped = record.value["data"]["t"]
    assert isinstance(clipped, Clipped)
    assert clipped.chars == len(text) and text_length(clipped) == len(text)
    assert str(clipped) == _shown(text)[:PREFIX_CHARS]
    assert "".join(full_text(clipped)) == _shown(text)
    assert clipped.source is not None and clipped.source.line.pos == len(header) + 1


@pytest.mark.usefixtures("small_windows")
@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b'"bad \\x escape' + b"a" * 500 + b'"', "does not decode"),
        (b'"a control \x01 char' + b"a" * 500 + b'"', "does not decode"),
        (b'"not utf-8 \xff' + b"a" * 500 + b'"', "does not decode"),
        (b'"' + b"a" * 500 + b'" trailing junk', "not valid JSON"),
    ],
)
def test_a_long_line_that_is_not_json_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: bytes, why: str
) -> None:
    monkeypatch.setattr(longline, "LONG_LINE", 300)
    path = tmp_path / "session.jsonl"
    path.write_bytes(b'{"type":"x","seq":0,"data":{"t":' + body + b"}}\n")
    (record,) = list(longline.lines(LinePlace(path, False, 0)))
    assert isinstance(record, LongRecord) and record.value is None
    assert record.error is not None and why in record.error


def test_an_unterminated_long_line_is_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(longline, "LONG_LINE", 300)
    path = tmp_path / "session.jsonl"
    path.write_bytes(b'{"a":1}\n{"type":"x","data":"' + b"a" * 5000)
    found = list(longline.lines(LinePlace(path, False, 0)))
    assert found[0] == b'{"a":1}'
    assert len(found) == 2 and isinstance(found[1], LongRecord) and found[1].error


def test_join_texts_keeps_the_whole_length_and_the_parts() -> None:
    clipped = Clipped("abc", 1000)
    joined = join_texts(["head", clipped, "tail"])
    assert isinstance(joined, Clipped)
    assert str(joined) == "head\nabc" and joined.chars == 4 + 1 + 1000 + 1 + 4
    assert joined.parts == ("head", "\n", clipped, "\n", "tail")
    assert join_texts(["a", "b"]) == "a\nb" and not isinstance(join_texts(["a"]), Clipped)
