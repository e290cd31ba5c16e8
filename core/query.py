"""A search QUERY, and the catalog reads a search makes: the light half of
`core.search`.

QUERY syntax: words (all must match within one turn, each as a case-insensitive
substring, so text without spaces such as Chinese is found), `"a phrase"` (the
words in that order), `prefix*` (a word starting so).

This module loads only the standard library's `re` and `unicodedata` (and `typing`
for its classes).
"""

from __future__ import annotations

import marshal
import re
import unicodedata
from array import array

TYPE_CHECKING = False  # `typing` would be most of this module's load (`_namedtuple`)
if TYPE_CHECKING:
    from typing import Any, Final, NamedTuple
else:
    from ._namedtuple import NamedTuple

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterable, Iterator, Sequence

#: The fields a document can be of (the catalog's `docs.field`).
FIELDS: Final = ("user", "assistant", "reasoning", "tool")
DEFAULT_FIELDS: Final = ("user", "assistant")

#: A document row as `term_rows` returns it: (log, turn, seq, field, text), then its
#: log's (path, session, title, created).
LOG_COLUMNS: Final = "l.path, l.session, l.title, l.created"


class QueryError(ValueError):
    """The query (or a search option) cannot be used; the message says why."""


class Term(NamedTuple):
    """One query term: `text` as typed (folded), a phrase, or a prefix."""

    text: str
    prefix: bool = False
    phrase: bool = False

    def pattern(self) -> re.Pattern[str]:
        """The regex that finds this term in a text (case-insensitive)."""
        parts = [re.escape(w) for w in self.text.split()]
        body = r"\s+".join(parts)
        if self.prefix:
            body = r"(?<!\w)" + body
        return re.compile(body, re.IGNORECASE)

    def literal(self) -> str | None:
        """What `pattern` matches in an ASCII line of the catalog (`flat_line`: its
        only whitespace is single spaces) as plain lower-case text: this term's text,
        unless it is a prefix (a word boundary) or not ASCII. None then."""
        if self.prefix or not self.text.isascii():
            return None
        return " ".join(self.text.split()).lower()


def parse_query(query: str) -> list[Term]:
    """Terms of a QUERY; raises `QueryError` for an empty or malformed one."""
    terms: list[Term] = []
    if not query.isascii():
        try:
            query.encode("utf-8")
        except UnicodeEncodeError as exc:  # a byte of a shell argument that is not UTF-8
            raise QueryError(
                f"the query is not UTF-8 text (byte 0x{ord(exc.object[exc.start]) & 0xFF:02x}"
                f" at character {exc.start + 1}): the logs' text is"
            ) from None
    rest = unicodedata.normalize("NFC", query)
    if rest.count('"') % 2:
        raise QueryError('unbalanced quote in the query: close the phrase with "')
    for m in re.finditer(r'"([^"]*)"|(\S+)', rest):
        if m.group(1) is not None:
            words = m.group(1).split()
            if not words:
                raise QueryError('empty phrase "" in the query')
            terms.append(Term(" ".join(words), phrase=True))
            continue
        word = m.group(2)
        prefix = word.endswith("*")
        word = word.rstrip("*")
        if not word:
            raise QueryError("a lone * is not a query: put a prefix before it, like fork*")
        if "*" in word:
            raise QueryError(f"{word}*: * is only allowed at the end of a word")
        terms.append(Term(word, prefix=prefix))
    if not terms:
        raise QueryError("empty query: give at least one word")
    return terms


def parse_fields(value: str | None) -> tuple[str, ...]:
    """The `--in` list; raises `QueryError` for an unknown field."""
    if value is None:
        return DEFAULT_FIELDS
    fields = tuple(f.strip() for f in value.split(",") if f.strip())
    bad = [f for f in fields if f not in FIELDS]
    if bad or not fields:
        raise QueryError(
            f"--in: unknown field {', '.join(bad) or '(none)'}; use {','.join(FIELDS)}"
        )
    return fields


def search_order(terms: Sequence[Term]) -> list[Term]:
    """The order a search reads its terms in: the longest (fewest rows) first."""
    return sorted(terms, key=lambda t: -len(t.text))


def fts_trigrams(text: str) -> str:
    """The full-text query that finds every document holding `text` (three characters
    or more): each of its trigrams, all required. The index keeps no positions
    (`detail=none`: it is half the work to build and a third of the size), so it cannot
    ask for them in order; the search's own rule (`core.search`) decides, as it does
    for every row anyway."""
    grams = dict.fromkeys(text[k : k + 3] for k in range(len(text) - 2))
    return " AND ".join('"' + g.replace('"', '""') + '"' for g in grams)


def _casefold_contains(text: object, needle: object) -> bool:
    return isinstance(text, str) and isinstance(needle, str) and needle in text.casefold()


def term_rows(
    db: sqlite3.Connection, term: Term, fields: Sequence[str]
) -> Iterator[tuple[Any, ...]]:
    """The catalog's documents of `fields` that may hold `term` (`LOG_COLUMNS` rows), as
    a cursor (a common word's rows are many: they are taken one at a time): the
    full-text index narrows them, the search's own rule decides (`core.search`)."""
    marks = ",".join("?" * len(fields))
    needle = term.text
    if len(needle) >= 3:
        return db.execute(
            f"SELECT d.log, d.turn, d.seq, d.field, d.text, {LOG_COLUMNS} FROM fts "
            "JOIN docs d ON d.rowid = fts.rowid JOIN logs l ON l.id = d.log "
            f"WHERE fts MATCH ? AND d.field IN ({marks})",
            (fts_trigrams(needle), *fields),
        )
    # Trigrams cannot match under three characters: a folded substring scan.
    db.create_function("tl_contains", 2, _casefold_contains, deterministic=True)
    return db.execute(
        f"SELECT d.log, d.turn, d.seq, d.field, d.text, {LOG_COLUMNS} FROM docs d "
        f"JOIN logs l ON l.id = d.log WHERE d.field IN ({marks}) AND tl_contains(d.text, ?)",
        (*fields, needle.casefold()),
    )


#: Parent log id -> its children as (child log id, seed length; -1 for none).
Links = dict[int, list[tuple[int, int]]]


#: Child log id -> (the number of the last whole turn of its parent it inherits, whether
#: its seqs are another numbering than its parent's): for the links in and below a
#: family's renumbered link (a child seeded from another generation than its parent's
#: as catalogued), where a hit's seq no longer compares with the seeds below.
Turned = dict[int, tuple[int, bool]]


def pack_links(links: Iterable[tuple[int, int, int | None]], turned: Turned | None = None) -> bytes:
    """(child, parent, seed) triples as the catalog's one `links` row: three arrays of
    64-bit integers, so reading them is a copy, not a row per fork; and the `Turned`
    map when a family needs it."""
    child, parent, seed = array("q"), array("q"), array("q")
    for c, p, s in links:
        child.append(c)
        parent.append(p)
        seed.append(-1 if s is None else s)
    parts: tuple[Any, ...] = (child.tobytes(), parent.tobytes(), seed.tobytes())
    if turned:
        parts += ({c: (n, bool(x)) for c, (n, x) in turned.items()},)
    return marshal.dumps(parts)


def unpack_links(data: bytes) -> list[tuple[int, int, int]]:
    """The (child, parent, seed) triples of `pack_links` (seed -1 for none); raises
    ValueError, EOFError or TypeError for bytes it did not make."""
    parts = marshal.loads(data)
    if not isinstance(parts, tuple) or len(parts) not in (3, 4):
        raise ValueError("not a links row")
    child, parent, seed = array("q"), array("q"), array("q")
    child.frombytes(parts[0])
    parent.frombytes(parts[1])
    seed.frombytes(parts[2])
    if not len(child) == len(parent) == len(seed):
        raise ValueError("a links row of mismatched parts")
    return list(zip(child, parent, seed, strict=True))


def read_links(db: sqlite3.Connection) -> Links:
    """Each parent log's children, as the catalog last linked them (empty if it never
    did, or its row is not one this version wrote: the next refresh links again)."""
    return links_of(_links_row(db))


def read_turned(db: sqlite3.Connection) -> Turned:
    """The `Turned` map of the catalog's links (empty: every link compares by seq)."""
    return turned_of(_links_row(db))


def turned_of(data: bytes | None) -> Turned:
    """`read_turned` of the `links` row's bytes (None: no row)."""
    if data is None:
        return {}
    try:
        parts = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return {}
    if not isinstance(parts, tuple) or len(parts) != 4 or not isinstance(parts[3], dict):
        return {}
    out: Turned = {}
    for child, value in parts[3].items():
        if (
            type(child) is int
            and isinstance(value, tuple)
            and len(value) == 2
            and type(value[0]) is int
            and type(value[1]) is bool
        ):
            out[child] = value
    return out


def _links_row(db: sqlite3.Connection) -> bytes | None:
    row = db.execute("SELECT data FROM links WHERE k=0").fetchone()
    return None if row is None else row[0]


def links_of(data: bytes | None) -> Links:
    """`read_links` of the `links` row's bytes (None: no row)."""
    out: Links = {}
    if data is None:
        return out
    try:
        triples = unpack_links(data)
    except (ValueError, EOFError, TypeError):
        return out
    for child, parent, seed in triples:
        got = out.get(parent)
        if got is None:
            out[parent] = [(child, seed)]
        else:
            got.append((child, seed))
    return out
