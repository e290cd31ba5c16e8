"""Finding a query in text that is on screen: the spans to highlight, and where a
search hit lands in a timeline.

The search screen's QUERY (words, `"a phrase"`, `prefix*`, see `core.search`) and the
detail pane's own find (a literal string) both become a `Finder`, whose `spans` are
the matches in one text, case-insensitive, as (start, end) character offsets. It works
on whatever text it is given: the detail pane gives it the bounded prefix it shows.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

import msgspec

from .search import QueryError, parse_query
from .view import TurnView


class Finder(msgspec.Struct, frozen=True):
    """A compiled query.

    Attributes:
        query: The query as typed.
        patterns: One case-insensitive pattern per term.
    """

    query: str
    patterns: tuple[re.Pattern[str], ...]

    @classmethod
    def literal(cls, text: str) -> Finder | None:
        """A find for `text` as typed (a substring, any case); None for blank text."""
        if not text.strip():
            return None
        needle = unicodedata.normalize("NFC", text)
        return cls(text, (re.compile(re.escape(needle), re.IGNORECASE),))

    @classmethod
    def of_search(cls, query: str) -> Finder | None:
        """A find for a search QUERY: each term's matches (a query the search could
        not parse is taken literally); None for a blank query."""
        try:
            terms = parse_query(query)
        except QueryError:
            return cls.literal(query)
        return cls(query, tuple(term.pattern() for term in terms))

    def spans(self, text: str) -> list[tuple[int, int]]:
        """The matches in `text`, in order, none overlapping (an overlap joins them)."""
        found: list[tuple[int, int]] = []
        for pattern in self.patterns:
            found.extend(m.span() for m in pattern.finditer(text) if m.end() > m.start())
        found.sort()
        out: list[tuple[int, int]] = []
        for start, end in found:
            if out and start < out[-1][1]:
                out[-1] = (out[-1][0], max(out[-1][1], end))
            else:
                out.append((start, end))
        return out


def turn_holding(turns: Sequence[TurnView], seq: int) -> TurnView | None:
    """The turn whose events include `seq` (its lead-in counts), None if none does."""
    for view in turns:
        turn = view.turn
        if turn.first_seq <= seq and (turn.end_seq is None or seq <= turn.end_seq):
            return view
    return None
