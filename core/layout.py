"""The dsh directory layout: project folders, encoded session ids, log names."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

NO_CWD_DIR: Final = "_no-cwd"
PROJECT_KEY_LIMIT: Final = 251
EMPTY_ID_DIR: Final = "~"
_SAFE: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
_ESCAPE = re.compile(r"~([0-9A-F]{4})")


def _code_units(text: str) -> list[int]:
    """UTF-16 code units of text (lone surrogates kept as themselves)."""
    data = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


def _unit(code: int) -> str:
    ch = chr(code)
    return ch if ch in _SAFE else f"~{code:04X}"


def encode_session_id(session_id: str) -> str:
    """The folder name of a session id: injective, never a path traversal.

    ASCII letters, digits, `.`, `_` and `-` stay; every other UTF-16 code unit
    becomes `~XXXX`. `.` and `..` alone are escaped too; the empty id is `~`.
    """
    if session_id in (".", ".."):
        return "~002E" * len(session_id)
    if not session_id:
        # The format doc leaves "" open; a lone "~" is never produced otherwise.
        return EMPTY_ID_DIR
    return "".join(_unit(code) for code in _code_units(session_id))


def decode_session_id(folder: str) -> str:
    """Invert `encode_session_id` (for naming logs whose header is unreadable)."""
    if folder == EMPTY_ID_DIR:
        return ""
    units: list[int] = []
    i = 0
    while i < len(folder):
        m = _ESCAPE.match(folder, i)
        if m:
            units.append(int(m.group(1), 16))
            i = m.end()
        else:
            units.append(ord(folder[i]))
            i += 1
    data = b"".join(u.to_bytes(2, "little") for u in units)
    return data.decode("utf-16-le", "surrogatepass")


def project_key(cwd: str | None) -> str:
    """The project folder for a cwd: `--<key>--`, or `_no-cwd` without a cwd."""
    if cwd is None:
        return NO_CWD_DIR
    out: list[str] = []
    in_sep = False
    for code in _code_units(cwd):
        ch = chr(code)
        if ch in "/\\:":
            if not in_sep:
                out.append("-")
            in_sep = True
            continue
        in_sep = False
        out.append(_unit(code))
    key = "".join(out).lstrip("-") or "root"
    return f"--{key[:PROJECT_KEY_LIMIT]}--"


def session_dir(root: Path, session_id: str, cwd: str | None) -> Path:
    """Where a session's folder lives under a root."""
    return root / project_key(cwd) / encode_session_id(session_id)


def is_project_dir(name: str) -> bool:
    """True for a dsh project folder name."""
    return name == NO_CWD_DIR or (len(name) >= 4 and name.startswith("--") and name.endswith("--"))


def layout_id(name: str, folder: str, parent: str) -> str | None:
    """The session id dsh's layout gives log file `name` in folder `folder` inside
    `parent` (`--<project>--/<encoded id>/session*.jsonl`), or None outside it."""
    if not name.startswith("session") or not is_project_dir(parent):
        return None
    if folder.isascii() and "~" not in folder:
        return folder  # nothing escaped: the folder name is the id (decoding is slow)
    return decode_session_id(folder)
