"""Making log-derived text safe to print on a terminal.

Log content is untrusted: a title or a tool argument can hold an ANSI escape that
recolours the terminal, clears the screen or sets the window title, or a bidi
override that makes `rm -rf /` read as something else. Everything the CLI (and the
TUI) prints from a log goes through `safe_text` or `one_line` first, so those bytes
are shown as absent rather than obeyed.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # a warm search loads this module before `typing` (`_namedtuple`)
if TYPE_CHECKING:
    from typing import Final

#: C0 controls (ESC included), DEL, C1 controls, and the bidi embeddings, overrides
#: and isolates (U+202A–U+202E, U+2066–U+2069).
UNSAFE_CODEPOINTS: Final = frozenset(
    [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
)

_DROP: Final = dict.fromkeys(UNSAFE_CODEPOINTS)
#: Lone surrogates (from ids decoded out of folder names, or undecodable file names)
#: cannot be encoded for a terminal at all: they become U+FFFD.
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_WHITESPACE_RUN: Final = re.compile(r"[\t\n\r\v\f\x1c-\x1f\x85\u2028\u2029 ]+")
ELLIPSIS: Final = "…"


def utf8_text(text: str) -> bool:
    """True if `text` can be written as UTF-8: it holds no lone surrogate (from JSON's
    `"\\ud83d"` alone, or a byte of a file name or argument that is not UTF-8)."""
    return text.isascii() or _SURROGATE.search(text) is None


def no_surrogates(text: str) -> str:
    """`text` with each lone surrogate (which UTF-8 cannot hold) made U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def safe_text(text: str, *, keep_newlines: bool = False) -> str:
    """`text` without control or bidi-override characters.

    Args:
        text: Untrusted text from a log.
        keep_newlines: Keep `\\n` (for multi-line views); tabs become four spaces
            then, so alignment never depends on the terminal's tab stops.

    Returns:
        The text with every character of `UNSAFE_CODEPOINTS` removed and lone
        surrogates replaced by U+FFFD. Printable text is unchanged.
    """
    if keep_newlines:
        text = text.replace("\r\n", "\n").replace("\t", "    ")
        lines = text.split("\n")
        return "\n".join(_SURROGATE.sub("\ufffd", line.translate(_DROP)) for line in lines)
    return _SURROGATE.sub("\ufffd", text.translate(_DROP))


def one_line(text: str, limit: int | None = None) -> str:
    """Untrusted text as one safe line: whitespace runs (newlines included) become one
    space, unsafe characters are removed, and the result is cut to `limit` characters
    (the last one an ellipsis) when it is longer.

    Args:
        text: Untrusted text from a log.
        limit: Maximum length of the result, or None for no limit.
    """
    line = safe_text(_WHITESPACE_RUN.sub(" ", text)).strip()
    if limit is not None and len(line) > limit:
        return line[: max(limit - 1, 0)] + ELLIPSIS if limit > 0 else ""
    return line


_SPACES: Final = re.compile("  +")


def flat_line(text: str) -> str:
    """`one_line(text)` with no two spaces in a row: the form the search catalog keeps
    of each text, what a query matches and what a snippet shows.

    `one_line` turns whitespace runs into a space before it removes unsafe characters,
    so a space, an escape and a space leave two spaces. Collapsing those too makes the
    form a fixed point (`flat_line(flat_line(t)) == flat_line(t)`, and `one_line` of
    it is itself), so a snippet cut from it needs no sanitizing at query time.
    """
    line = one_line(text)
    return _SPACES.sub(" ", line) if "  " in line else line


def middle_cut(path: str, limit: int) -> str:
    """A path cut in the middle to `limit` characters, keeping its last component
    (and as much of its start as fits): two projects under one long temporary folder
    read `/var/folders/2g/…/T/acp-snap-a` and `…/acp-snap-b`, not the same prefix.

    Args:
        path: A path (already made safe: see `one_line`).
        limit: The most characters the result may have.
    """
    if len(path) <= limit:
        return path
    if limit <= 1:
        return ELLIPSIS[:limit]
    cut = path.rstrip("/")
    slash = cut.rfind("/")
    last = cut[slash:] if slash > 0 else ""
    if not last or len(last) + 2 > limit:
        # The last component alone is too long: keep its end, which tells it apart.
        return ELLIPSIS + path[len(path) - (limit - 1) :]
    head = limit - 1 - len(last)
    return path[:head] + ELLIPSIS + last
