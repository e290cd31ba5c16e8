"""Log text as inert Rich `Text`: never markup, never terminal control.

Everything the TUI draws from a log (titles, ids, user and assistant text, tool
arguments, problem messages) goes through `literal` or `line`: the characters that
could drive the terminal (C0/C1 controls, ESC, DEL, bidi overrides and isolates)
are dropped first, and the result is a `Text` object, which Rich and Textual
render as-is instead of parsing `[bold]`-style markup.
"""

from __future__ import annotations

from rich.style import StyleType
from rich.text import Text
from turnline.core.textsafe import one_line, safe_text

__all__ = ["head", "line", "literal", "one_line", "safe_text"]


def head(text: str, limit: int | None) -> str:
    """The part of `text` a line of `limit` characters can show: cleaning a 10 MB
    message to draw 60 characters of it would cost seconds on the UI thread. (Runs of
    whitespace shrink to one space, so a little more than `limit` is kept.)"""
    if limit is None:
        return text
    return text[: limit * 8 + 64]


def line(text: str, style: StyleType = "", limit: int | None = None) -> Text:
    """One line of log text, literal and safe, as `Text` (only its head is read)."""
    return Text(one_line(head(text, limit), limit), style=style, no_wrap=True, end="")


def literal(text: str, style: StyleType = "") -> Text:
    """Multi-line log text, literal and safe, as `Text`."""
    return Text(safe_text(text, keep_newlines=True), style=style, end="")
