"""The dsh layout: encoded session ids stay one folder under the root and are injective;
project keys follow the format doc."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from turnline.core.layout import (
    NO_CWD_DIR,
    decode_session_id,
    encode_session_id,
    is_project_dir,
    project_key,
    session_dir,
)

HOSTILE_IDS = [
    "../x",
    "/etc/passwd",
    "a/b",
    ".",
    "..",
    "...",
    "",
    "~",
    "~002E",
    "a\\b",
    "C:\\x",
    "naïve-ü",
    "日本語",
    "emoji-😀",
    "\ud800",
    "x\udfffy",
    "\x00nul",
    "line\nbreak",
    " ",
]
_SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-~")


@pytest.mark.parametrize("sid", HOSTILE_IDS)
def test_an_encoded_id_is_one_safe_folder_under_the_root(tmp_path: Path, sid: str) -> None:
    name = encode_session_id(sid)
    assert name not in ("", ".", "..")
    assert set(name) <= _SAFE
    assert "/" not in name and "\\" not in name
    folder = session_dir(tmp_path, sid, "/w")
    assert folder.parent.parent == tmp_path
    assert folder.resolve().parent.parent == tmp_path.resolve()
    folder.mkdir(parents=True)  # a real folder of that name can exist
    assert decode_session_id(name) == sid


def test_encoding_examples_from_the_format_doc() -> None:
    assert encode_session_id("96cf59c9-b347_x.y") == "96cf59c9-b347_x.y"
    assert encode_session_id("~") == "~007E"
    assert encode_session_id(".") == "~002E"
    assert encode_session_id("..") == "~002E~002E"
    assert encode_session_id("a/b") == "a~002Fb"
    assert encode_session_id("é") == "~00E9"
    assert encode_session_id("😀") == "~D83D~DE00"  # UTF-16 code units


def test_encoded_ids_are_injective_over_the_hostile_set() -> None:
    names = [encode_session_id(s) for s in HOSTILE_IDS]
    assert len(set(names)) == len(HOSTILE_IDS)


@given(
    st.text(alphabet=st.characters(exclude_categories=())),
    st.text(alphabet=st.characters(exclude_categories=())),
)
def test_encoding_is_injective_and_invertible(a: str, b: str) -> None:
    ea, eb = encode_session_id(a), encode_session_id(b)
    assert decode_session_id(ea) == a
    assert (ea == eb) == (a == b)
    assert set(ea) <= _SAFE and ea not in (".", "..", "")


@pytest.mark.parametrize(
    ("cwd", "key"),
    [
        ("/home/dev/app", "--home-dev-app--"),
        ("/", "--root--"),
        ("", "--root--"),
        ("///", "--root--"),
        ("C:\\Users\\dev", "--C-Users-dev--"),
        ("C:/x//y\\\\:z", "--C-x-y-z--"),
        ("/a b", "--a~0020b--"),
        ("/trailing/", "--trailing---"),
        ("{{cwd}}", "--~007B~007Bcwd~007D~007D--"),
        ("/é", "--~00E9--"),
        ("relative/dir", "--relative-dir--"),
    ],
)
def test_project_keys(cwd: str, key: str) -> None:
    assert project_key(cwd) == key
    assert is_project_dir(key)


def test_no_cwd_folder() -> None:
    assert project_key(None) == NO_CWD_DIR
    assert is_project_dir(NO_CWD_DIR)
    assert session_dir(Path("/r"), "s", None) == Path("/r/_no-cwd/s")


def test_project_key_keeps_the_first_251_characters() -> None:
    cwd = "/" + "a" * 300
    assert project_key(cwd) == "--" + "a" * 251 + "--"
    escaped = "/" + "é" * 100  # 600 characters once escaped
    key = project_key(escaped)
    assert len(key) == 251 + 4
    assert key[2:-2] == ("~00E9" * 100)[:251]


def test_two_cwds_may_share_a_project_folder() -> None:
    assert project_key("/a/b") == project_key("/a//b") == project_key("a:b")
