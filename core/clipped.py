"""A string field too long to hold: its first characters, its full length, and where it is.

`longline` decodes a record line of a megabyte or more without building its long string
fields: each becomes a `Clipped`, a `str` holding the field's first `PREFIX_CHARS`
characters, which also knows the whole field's length and where its bytes lie in the
log (to stream it in full, e.g. into a pager). Being a `str`, it reads as the prefix to
any code that does not know about it; the code that shows a field's size or joins
fields (`content`, `records.message_text`) asks `text_length` and `join_texts`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from .longline import FieldSource

#: A clipped field keeps this many characters (what a screen draws of any field).
PREFIX_CHARS: Final = 64 * 1024


class Clipped(str):
    """The first characters of a long string field (the `str` value itself).

    Attributes:
        chars: The whole field's length in characters (code points; a lone surrogate
            escape counts as the one U+FFFD it is shown as).
        raw_bytes: The field's length as written in the log (JSON-escaped UTF-8).
        source: Where the field's bytes are, to stream it whole (`longline.full_text`);
            None for a field joined from parts (then `parts` are streamed in order).
        parts: For a joined field: its parts (str or `Clipped`), separators included.
    """

    chars: int
    raw_bytes: int
    source: FieldSource | None
    parts: tuple[str, ...]

    def __new__(
        cls,
        prefix: str,
        chars: int,
        raw_bytes: int = 0,
        source: FieldSource | None = None,
        parts: tuple[str, ...] = (),
    ) -> Clipped:
        self = super().__new__(cls, prefix)
        self.chars = chars
        self.raw_bytes = raw_bytes
        self.source = source
        self.parts = parts
        return self

    @property
    def more(self) -> int:
        """Characters of the field past the prefix."""
        return max(0, self.chars - len(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Clipped, (str(self), self.chars, self.raw_bytes, self.source, self.parts))


def text_length(text: str) -> int:
    """The length of a field in characters: the whole field's for a `Clipped` one."""
    return text.chars if isinstance(text, Clipped) else len(text)


def join_texts(parts: Iterable[str], sep: str = "\n") -> str:
    """`sep.join(parts)`, keeping what a `Clipped` part knows: when a part is clipped,
    the result is a `Clipped` of the joined text up to that part's prefix, with the
    whole join's length, and the parts to stream it in full."""
    items: Sequence[str] = parts if isinstance(parts, (list, tuple)) else list(parts)
    if not any(isinstance(p, Clipped) for p in items):
        return sep.join(items)
    shown: list[str] = []
    every: list[str] = []
    clipped = False
    total = 0
    for k, part in enumerate(items):
        if k:
            every.append(sep)
            total += len(sep)
            if not clipped:
                shown.append(sep)
        every.append(part)
        total += text_length(part)
        if not clipped:
            shown.append(part)
            clipped = isinstance(part, Clipped)
    prefix = "".join(shown)[:PREFIX_CHARS]
    return Clipped(prefix, total, 0, None, tuple(every))
