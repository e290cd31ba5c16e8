"""Log-derived text is made safe before it reaches a terminal."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from turnline.core.textsafe import UNSAFE_CODEPOINTS, flat_line, one_line, safe_text


@pytest.mark.parametrize(
    ("raw", "safe"),
    [
        ("\x1b[31mred\x1b[0m", "[31mred[0m"),
        ("\x1b]0;pwned\x07title", "]0;pwnedtitle"),
        ("a\x9b2Jb", "a2Jb"),  # C1 CSI
        ("del\x7f", "del"),
        ("nul\x00", "nul"),
        ("\u202eevil\u202c", "evil"),
        ("\u2066iso\u2069", "iso"),
        ("lone \ud800 surrogate", "lone \ufffd surrogate"),
        ("plain ünïcødé 日本 😀", "plain ünïcødé 日本 😀"),
    ],
)
def test_safe_text(raw: str, safe: str) -> None:
    assert safe_text(raw) == safe


def test_keep_newlines() -> None:
    assert safe_text("a\r\nb\tc\x1b", keep_newlines=True) == "a\nb    c"
    assert safe_text("a\nb") == "ab"


def test_one_line() -> None:
    assert one_line("  fix\n\tthe\r\nbug  ") == "fix the bug"
    assert one_line("abcdef", 4) == "abc…"
    assert one_line("abcd", 4) == "abcd"
    assert one_line("abc", 0) == ""
    assert one_line("\x1b[2J") == "[2J"


@given(st.text(alphabet=st.characters(exclude_categories=())))
def test_nothing_unsafe_survives(text: str) -> None:
    for out in (safe_text(text), one_line(text), safe_text(text, keep_newlines=True)):
        assert not any(ord(ch) in UNSAFE_CODEPOINTS for ch in out if ch != "\n")
        assert not any(0xD800 <= ord(ch) <= 0xDFFF for ch in out)
        out.encode("utf-8")  # always printable on a UTF-8 terminal
    assert "\n" not in one_line(text)


def test_middle_cut_keeps_the_last_component() -> None:
    from turnline.core.textsafe import middle_cut

    a = "/var/folders/2g/b32ct0qn1d7abcdefgh/T/acp-snap-cwd-MABC"
    b = "/var/folders/2g/b32ct0qn1d7abcdefgh/T/acp-snap-cwd-XYZW"
    cut_a, cut_b = middle_cut(a, 30), middle_cut(b, 30)
    assert len(cut_a) == 30 and cut_a.endswith("/acp-snap-cwd-MABC") and "…" in cut_a
    assert cut_a != cut_b
    assert cut_a.startswith("/var/folder")
    assert middle_cut("/home/dev/parser", 30) == "/home/dev/parser"
    assert middle_cut("/a/verylongcomponentnameindeed", 10) == "…ameindeed"
    assert middle_cut("/x/yy", 1) == "…"


def test_flat_line() -> None:
    assert flat_line("a \x1b b\n\n c") == "a b c"  # one_line leaves "a  b c"
    assert one_line("a \x1b b") == "a  b"


@given(st.text(alphabet=st.characters(exclude_categories=())))
def test_flat_line_is_a_fixed_point(text: str) -> None:
    line = flat_line(text)
    assert flat_line(line) == line == one_line(line)
    assert "  " not in line
    assert line.replace(" ", "") == one_line(text).replace(" ", "")
