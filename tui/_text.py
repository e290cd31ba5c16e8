"""Log text as inert Rich `Text`: never markup, never terminal control.

Everything the TUI draws from a log (titles, ids, user and assistant text, tool
arguments, problem messages) goes through `literal` or `line`: the characters that
could drive the terminal (C0/C1 controls, ESC, DEL, bidi overrides and isolates)
are dropped first, and the result is a `Text` object, which Rich and Textual
render as-is instead of parsing `[bold]`-style markup.
"""

from __future__ import annotations

import re
from typing import Final

from rich.style import StyleType
from rich.text import Text

# Same set as the core's sanitizer (`turnline.core.textsafe`), kept here until that
# module is part of the core's committed API.
_UNSAFE: Final = frozenset(
    [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
)
_DROP: Final = dict.fromkeys(_UNSAFE)
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_WHITESPACE_RUN: Final = re.compile(r"[\t\n\r\v\f\x1c-\x1f\x85\u2028\u2029 ]+")
ELLIPSIS: Final = "…"


def safe_text(text: str, *, keep_newlines: bool = False) -> str:
    """`text` without control or bidi-override characters (lone surrogates become U+FFFD).

    Args:
        text: Untrusted text from a log.
        keep_newlines: Keep line breaks (tabs become four spaces) for multi-line views.
    """
    if keep_newlines:
        text = text.replace("\r\n", "\n").replace("\t", "    ")
        return "\n".join(
            _SURROGATE.sub("\ufffd", part.translate(_DROP)) for part in text.split("\n")
        )
    return _SURROGATE.sub("\ufffd", text.translate(_DROP))


def one_line(text: str, limit: int | None = None) -> str:
    """Untrusted text as one safe line, cut to `limit` characters with an ellipsis."""
    flat = safe_text(_WHITESPACE_RUN.sub(" ", text)).strip()
    if limit is not None and len(flat) > limit:
        return flat[: max(limit - 1, 0)] + ELLIPSIS if limit > 0 else ""
    return flat


def line(text: str, style: StyleType = "", limit: int | None = None) -> Text:
    """One line of log text, literal and safe, as `Text`."""
    return Text(one_line(text, limit), style=style, no_wrap=True, end="")


def literal(text: str, style: StyleType = "") -> Text:
    """Multi-line log text, literal and safe, as `Text`."""
    return Text(safe_text(text, keep_newlines=True), style=style, end="")
