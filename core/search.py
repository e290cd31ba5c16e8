"""Lineage-aware search over a root's catalog.

A hit is one turn of the session that produced the text; copies of that turn in
children's seeds are counted (`inherited_by`), and listed only when asked
(`include_inherited`, each naming its producer in `inherited_from`). The QUERY syntax
and the catalog reads are `core.query`'s.
"""

from __future__ import annotations

from . import _namedtuple
from .query import (
    DEFAULT_FIELDS,
    FIELDS,
    LOG_COLUMNS,
    Links,
    QueryError,
    Term,
    Turned,
    parse_fields,
    parse_query,
    search_order,
    term_rows,
)
from .textsafe import flat_line, one_line, utf8_text

TYPE_CHECKING = False  # `typing` would be most of this module's load (`_namedtuple`)
if TYPE_CHECKING:
    import re
    import sqlite3
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from pathlib import Path
    from typing import Any, Final, NamedTuple

    from .catalog import Catalog, Progress
else:
    NamedTuple = _namedtuple.NamedTuple

__all__ = [
    "DEFAULT_FIELDS",
    "MARK_CLOSE",
    "MARK_OPEN",
    "SNIPPET",
    "Hit",
    "QueryError",
    "SearchResult",
    "Term",
    "UnknownSessionError",
    "line_snippet",
    "open_catalog",
    "parse_fields",
    "parse_query",
    "search",
    "search_db",
    "snapshot_search",
    "snippet_of",
]

SNIPPET: Final = 96
#: How much of the catalog a search reads through a memory map.
MMAP_BYTES: Final = 1 << 30
MARK_OPEN: Final = "«"
MARK_CLOSE: Final = "»"


class Hit(NamedTuple):
    """One turn that matched (a named tuple: a common word makes thousands).

    Attributes:
        session: The session id of the hit's log.
        path: The log.
        title: The session's title (or None).
        turn: The turn number.
        seq: Seq of the first matching event.
        field: Field of that event (`user`, `assistant`, `reasoning`, `tool`).
        snippet: One sanitized line around the match.
        marks: (start, end) character spans of matches inside `snippet`.
        inherited_by: How many sessions' seeds carry this turn.
        inherited_from: The producer's session id, for an inherited copy.
        created: The session's createdAt (ordering: newest first).
    """

    session: str
    path: str
    title: str | None
    turn: int
    seq: int
    field: str
    snippet: str
    marks: tuple[tuple[int, int], ...]
    inherited_by: int
    inherited_from: str | None = None
    created: int = 0

    def marked(self, open_: str = MARK_OPEN, close: str = MARK_CLOSE) -> str:
        """The snippet with each match wrapped in `open_` / `close`."""
        out: list[str] = []
        pos = 0
        for start, end in self.marks:
            out += [self.snippet[pos:start], open_, self.snippet[start:end], close]
            pos = end
        out.append(self.snippet[pos:])
        return "".join(out)

    def to_json_dict(self) -> dict[str, Any]:
        """The `--json` shape of one hit."""
        out: dict[str, Any] = {
            "session": self.session,
            "path": self.path,
            "turn": self.turn,
            "seq": self.seq,
            "field": self.field,
            "snippet": self.snippet,
            "inheritedBy": self.inherited_by,
        }
        if self.inherited_from is not None:
            out["inheritedFrom"] = self.inherited_from
        return out


#: A matched turn's first document: (seq, field, text, and where the term is first in
#: its lower-case form when the text is ASCII and the term a literal; else -1).
_Doc = tuple[int, str, str, int]
#: A hit before its snippet is cut: its sort key (-created, path, -turn), its log, its
#: turn, its first document, how many inherit it, and the producer's log (-1: none).
_Found = tuple[int, str, int, int, int, _Doc, int, int]


class SearchResult:
    """Hits (newest first, cut to the limit) and the total before the cut.

    A common word makes thousands of hits, and cutting their snippets is most of a
    query's cost: `hits` cuts them when first asked for, and `write_json` writes the
    `--json` document straight from the matches, with no `Hit` made at all.

    Attributes:
        total: How many hits there are before the limit.
    """

    __slots__ = ("_found", "_hits", "_logs", "_terms", "total")

    def __init__(
        self,
        found: list[_Found],
        total: int,
        logs: dict[int, tuple[Any, ...]],
        terms: Sequence[Term],
    ) -> None:
        self._found, self.total, self._logs, self._terms = found, total, logs, terms
        self._hits: list[Hit] | None = None

    @property
    def hits(self) -> list[Hit]:
        """The hits, newest first."""
        if self._hits is None:
            self._hits = list(self._made())
        return self._hits

    def _made(self) -> Iterator[Hit]:
        logs = self._logs
        snippet = _Snippets(self._terms)
        for _c, path, _t, log, turn, doc, inherited_by, producer in self._found:
            _path, session_id, title, created = logs[log]
            shown, spans = snippet.cut(doc)
            yield Hit(
                session_id,
                path,
                title,
                turn,
                doc[0],
                doc[1],
                shown,
                spans,
                inherited_by,
                None if producer < 0 else logs[producer][1],
                created or 0,
            )

    def to_json_dict(self) -> dict[str, Any]:
        """The `--json` document."""
        return {"hits": [h.to_json_dict() for h in self.hits], "total": self.total}

    def to_json(self) -> bytes:
        """The `--json` document as the CLI prints it (`write_json`)."""
        parts: list[bytes] = []
        self.write_json(parts.append)
        return b"".join(parts)

    def write_json(self, write: Callable[[bytes], object]) -> None:
        """Write the `--json` document, in pieces, to `write`: exactly `json.dumps(
        self.to_json_dict(), ensure_ascii=False, indent=2)` and a newline, in UTF-8 (a
        lone surrogate, which UTF-8 cannot hold, as its JSON escape), each string
        escaped by the standard library's own (C) encoder. Written here, not by `json`
        or orjson: `json`'s indented layout is Python code (slow for thousands of
        hits), and loading orjson costs a warm query more than this does."""
        try:  # the C encoder `json.encoder` takes (loading `json` costs a warm query more)
            from _json import encode_basestring as q
        except ImportError:
            from json.encoder import encode_basestring as q

        logs = self._logs
        cut = _Snippets(self._terms).shown
        fields: dict[str, str] = {}
        pieces = ['{\n  "hits": [']
        add = pieces.append
        sep = "\n"
        # (turn, seq and inheritedBy are ints: as `json` writes them, `str` does)
        for _c, path, _t, log, turn, doc, by, producer in self._found:
            field = fields.get(doc[1])
            if field is None:
                field = fields[doc[1]] = q(doc[1])
            tail = "" if producer < 0 else f',\n      "inheritedFrom": {q(logs[producer][1])}'
            add(
                f'{sep}    {{\n      "session": {q(logs[log][1])},\n      "path": {q(path)},\n'
                f'      "turn": {turn},\n      "seq": {doc[0]},\n      "field": {field},\n'
                f'      "snippet": {q(cut(doc))},\n      "inheritedBy": {by}{tail}\n    }}'
            )
            sep = ",\n"
            if len(pieces) == 64:  # encoded a few at a time: fewer calls, little memory
                write("".join(pieces).encode("utf-8", "backslashreplace"))
                pieces.clear()
        close = "\n  ]" if self._found else "]"
        add(f'{close},\n  "total": {self.total}\n}}\n')
        write("".join(pieces).encode("utf-8", "backslashreplace"))


class _Snippets:
    """Cuts the snippets of one query's hits (`line_snippet`, with each document's
    first match found already where it could be: `_Doc`)."""

    __slots__ = ("literal", "patterns")

    def __init__(self, terms: Sequence[Term]) -> None:
        self.patterns = [t.pattern() for t in terms]
        self.literal = terms[0].literal() if len(terms) == 1 else None

    def cut(self, doc: _Doc) -> tuple[str, tuple[tuple[int, int], ...]]:
        """The snippet of a hit's first document, and the match spans in it."""
        literal = self.literal
        if literal is not None and doc[3] >= 0:
            return _literal_snippet(doc[2], literal, SNIPPET, first=doc[3])
        return line_snippet(doc[2], self.patterns, literal=literal)

    def shown(self, doc: _Doc) -> str:
        """`cut`'s snippet alone (the spans are not looked for)."""
        if self.literal is None or doc[3] < 0:
            return self.cut(doc)[0]
        line = doc[2]
        start, end = _literal_window(len(line), doc[3], SNIPPET)
        return ("…" if start > 0 else "") + line[start:end] + ("…" if end < len(line) else "")


def snippet_of(
    text: str, patterns: Sequence[re.Pattern[str]], width: int = SNIPPET
) -> tuple[str, tuple[tuple[int, int], ...]]:
    """One safe line of `text` around its first match, and the match spans in it."""
    return line_snippet(flat_line(text), patterns, width)


def line_snippet(
    line: str,
    patterns: Sequence[re.Pattern[str]],
    width: int = SNIPPET,
    literal: str | None = None,
) -> tuple[str, tuple[tuple[int, int], ...]]:
    """`snippet_of` of a text already in its catalog form (`textsafe.flat_line`).
    `literal`: the one pattern's `Term.literal`, found by plain search in an ASCII
    line (the same matches, several times faster)."""
    if literal is not None and len(patterns) == 1 and line.isascii():
        return _literal_snippet(line, literal, width)
    first = -1
    for p in patterns:
        m = p.search(line)
        if m and (first < 0 or m.start() < first):
            first = m.start()
    if first < 0:
        return one_line(line, width), ()
    start = max(0, first - width // 3)
    end = min(len(line), start + width)
    start = max(0, min(start, end - width))
    return _window(line, start, end, end < len(line), patterns)


def _literal_snippet(
    line: str, literal: str, width: int, folded: str | None = None, first: int = -1
) -> tuple[str, tuple[tuple[int, int], ...]]:
    """`line_snippet` of an ASCII line with one term found as plain text (`folded`:
    the line's lower-case form, and `first` where the term is first in it, if they
    were found already)."""
    if folded is None:
        folded = line.lower()
    if first < 0:
        first = folded.find(literal)
        if first < 0:
            return one_line(line, width), ()
    start, end = _literal_window(len(line), first, width)
    shown = _ellipsized(line, start, end)
    shift = (start > 0) - start
    size = len(literal)
    spans = [(first + shift, first + size + shift)] if first + size <= end else []
    at = folded.find(literal, first + size, end)
    while at >= 0:  # as `finditer` finds them in the window (none overlapping)
        spans.append((at + shift, at + size + shift))
        at = folded.find(literal, at + size, end)
    return shown, tuple(spans)


def _literal_window(n: int, first: int, width: int) -> tuple[int, int]:
    """Where `_literal_snippet` cuts a line of `n` characters whose match is at `first`."""
    start = first - width // 3
    if start < 0:
        start = 0
    end = start + width
    if end > n:
        end = n
        start = n - width if n > width else 0
    return start, end


def _ellipsized(line: str, start: int, end: int) -> str:
    """`line[start:end]`, with an ellipsis on each side where text was cut off."""
    return ("…" if start > 0 else "") + line[start:end] + ("…" if end < len(line) else "")


def _term_docs(
    rows: Iterable[tuple[Any, ...]], term: Term, logs: dict[int, tuple[Any, ...]]
) -> dict[tuple[int, int], _Doc]:
    """(log, turn) -> the first document of the `term_rows` rows that holds `term`, by
    the exact rule (the full-text index only narrows the rows); the row of each log
    found is added to `logs` (`LOG_COLUMNS`)."""
    found = term.pattern().search
    literal = term.literal()
    out: dict[tuple[int, int], _Doc] = {}
    get = out.get
    for row in rows:
        text = row[4]
        first = -1
        if literal is not None and text.isascii():
            first = text.lower().find(literal)
            if first < 0:
                continue
        elif found(text) is None:
            continue
        key = (row[0], row[1])
        got = get(key)
        if got is None:
            out[key] = (row[2], row[3], text, first)
            if row[0] not in logs:
                logs[row[0]] = row[5:]
        elif row[2] < got[0]:
            out[key] = (row[2], row[3], text, first)
    return out


def search(
    catalog: Catalog,
    query: str,
    *,
    fields: Sequence[str] = DEFAULT_FIELDS,
    include_inherited: bool = False,
    session: str | None = None,
    limit: int | None = None,
    refresh: bool = True,
    progress: Progress | None = None,
) -> SearchResult:
    """Search a root's catalog.

    Args:
        catalog: The root's catalog.
        query: The QUERY (see `core.query`).
        fields: Which fields to search.
        include_inherited: Also list each inheriting copy of a hit.
        session: Keep only hits in sessions whose id (or log path) starts with this.
        limit: Keep the newest `limit` hits (`total` counts them all).
        refresh: Bring the catalog up to date first.
        progress: Called with (done, total) while the catalog is brought up to date.

    Raises:
        QueryError: The query or an option is malformed.
        UnknownSessionError: `session` names no session of the catalog.
    """
    terms = parse_query(query)
    check_options(fields, limit)
    if refresh:
        catalog.refresh(progress)
    return search_db(
        catalog.db,
        terms,
        fields=fields,
        include_inherited=include_inherited,
        session=session,
        limit=limit,
    )


class UnknownSessionError(QueryError):
    """`session` (`--session`) names no session of the catalog: no id starts with it
    and no log has it as its path."""

    def __init__(self, session: str) -> None:
        super().__init__(f"no session {session!r}")
        self.session = session


def _has_session(db: sqlite3.Connection, session: str) -> bool:
    """True if a log of the catalog has an id starting with `session`, or that path."""
    if not utf8_text(session):
        return False  # not UTF-8 (a byte of a shell argument): no log has it
    row = db.execute(
        "SELECT 1 FROM logs WHERE substr(session, 1, ?) = ? OR path = ? LIMIT 1",
        (len(session), session, session),
    ).fetchone()
    return row is not None


def check_options(fields: Sequence[str], limit: int | None) -> None:
    """Raise `QueryError` for a field or a limit `search` cannot take."""
    if limit is not None and limit < 0:
        raise QueryError("--limit must be 0 or more")
    for f in fields:
        if f not in FIELDS:
            raise QueryError(f"unknown field {f}")


def snapshot_search(
    catalog: str,
    gen: bytes,
    query: str,
    *,
    fields: Sequence[str] = DEFAULT_FIELDS,
    include_inherited: bool = False,
    session: str | None = None,
    limit: int | None = None,
) -> SearchResult | None:
    """`search` without a refresh, on a connection of its own to the catalog file
    `catalog`, in one read transaction; None unless that snapshot's `fresh` row names
    generation `gen` (it is then the catalog that the fresh state of `gen` describes:
    `core.fresh`). A warm `turnline search` runs it in its forked child while it
    checks that state (`cli.fast`).

    Raises:
        QueryError: The query or an option is malformed.
        sqlite3.Error: The catalog cannot be read.
    """
    import sqlite3

    from .fresh import same_generation

    terms = parse_query(query)
    check_options(fields, limit)
    db = sqlite3.connect(catalog, timeout=5.0, isolation_level=None)
    try:
        db.execute("PRAGMA busy_timeout=5000")
        db.execute(f"PRAGMA mmap_size={MMAP_BYTES}")  # pages mapped, not read one by one
        db.execute("BEGIN")
        if not same_generation(db, gen):
            return None
        result = search_db(
            db,
            terms,
            fields=fields,
            include_inherited=include_inherited,
            session=session,
            limit=limit,
        )
        db.execute("COMMIT")
        return result
    finally:
        db.close()


def search_db(
    db: sqlite3.Connection,
    terms: Sequence[Term],
    *,
    fields: Sequence[str] = DEFAULT_FIELDS,
    include_inherited: bool = False,
    session: str | None = None,
    limit: int | None = None,
) -> SearchResult:
    """`search` on a catalog's connection as it is (no refresh; a read transaction
    makes every read one snapshot), for parsed `terms` and checked options.

    Raises:
        UnknownSessionError: `session` names no session of the catalog.
    """
    from .query import read_links, read_turned

    if session is not None and not _has_session(db, session):
        raise UnknownSessionError(session)

    logs: dict[int, tuple[Any, ...]] = {}
    matched: dict[tuple[int, int], _Doc] | None = None
    for term in search_order(terms):
        docs = _term_docs(term_rows(db, term, fields), term, logs)
        if matched is None:
            matched = docs
        else:
            matched = {  # the turn's first document that holds any of the terms
                k: v if v[0] < matched[k][0] else matched[k]
                for k, v in docs.items()
                if k in matched
            }
        if not matched:
            return SearchResult([], 0, logs, terms)
    assert matched is not None
    links = read_links(db)
    turned = read_turned(db) if links else {}
    if include_inherited and links:
        _add_descendants(db, logs, {log for log, _turn in matched}, links)
    # Each hit as (sort key..., log, turn, first doc, heirs, producer) first; the
    # snippets (most of a hit's cost) only for those kept.
    found: list[_Found] = []
    add = found.append
    for (log, turn), first in matched.items():
        entry = logs[log]
        heirs = _heirs(log, first[0], turn, links, turned) if log in links else []
        add((-(entry[3] or 0), entry[0], -turn, log, turn, first, len(heirs), -1))
        if include_inherited:
            for heir, at in heirs:
                e = logs[heir]
                inherited = len(_heirs(heir, at, turn, links, turned)) if heir in links else 0
                add((-(e[3] or 0), e[0], -turn, heir, turn, first, inherited, log))
    if session is not None:
        found = [h for h in found if logs[h[3]][1].startswith(session) or h[1] == session]
    found.sort()  # newest first, then by path, latest turn first (each (path, turn) once)
    total = len(found)
    if limit is not None:
        del found[limit:]
    return SearchResult(found, total, logs, terms)


def _window(
    line: str, start: int, end: int, more: bool, patterns: Sequence[re.Pattern[str]]
) -> tuple[str, tuple[tuple[int, int], ...]]:
    """`line[start:end]` with ellipses (`more`: text follows) and its match spans."""
    piece = line[start:end]
    lead = "…" if start > 0 else ""
    tail = "…" if more else ""
    shown = lead + piece + tail
    shift = len(lead)
    if len(patterns) == 1:  # one pattern's matches are in order and never overlap
        return shown, tuple(
            (m.start() + shift, m.end() + shift)
            for m in patterns[0].finditer(piece)
            if m.end() > m.start()
        )
    spans: list[tuple[int, int]] = []
    for p in patterns:
        for m in p.finditer(piece):
            if m.end() > m.start():
                spans.append((m.start() + shift, m.end() + shift))
    spans.sort()
    merged: list[tuple[int, int]] = []
    for s, e in spans:
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(e, merged[-1][1]))
        else:
            merged.append((s, e))
    return shown, tuple(merged)


def _add_descendants(
    db: sqlite3.Connection, logs: dict[int, tuple[Any, ...]], found: set[int], links: Links
) -> None:
    """Add to `logs` the rows of every descendant of the `found` logs that it lacks
    (an inherited copy is listed under its own log)."""
    stack = [log for log in found if log in links]
    ids: set[int] = set()
    seen = set(found)
    while stack:
        for child, _seed in links.get(stack.pop(), ()):
            if child not in seen:
                seen.add(child)
                stack.append(child)
                if child not in logs:
                    ids.add(child)
    sql = f"SELECT l.id, {LOG_COLUMNS} FROM logs l"
    if len(ids) > 2000:
        logs.update((r[0], r[1:]) for r in db.execute(sql) if r[0] in ids)
        return
    wanted = sorted(ids)
    for k in range(0, len(wanted), 500):
        chunk = wanted[k : k + 500]
        marks = ",".join("?" * len(chunk))
        logs.update((r[0], r[1:]) for r in db.execute(f"{sql} WHERE l.id IN ({marks})", chunk))


def _heirs(
    log: int, seq: int | None, turn: int, links: Links, turned: Turned
) -> list[tuple[int, int | None]]:
    """Every descendant log whose seed carries the event at `seq` of `log` (in turn
    `turn`), each with that event's seq in its own numbering: None below a link whose
    child counts another numbering than its parent (`Turned`), where the seeds below are
    compared with the turn instead (the last whole turn each inherits)."""
    out: list[tuple[int, int | None]] = []
    stack: list[tuple[int, int | None]] = [(log, seq)]
    seen = {log}
    while stack:
        at, here = stack.pop()
        for child, seed in links.get(at, ()):
            if child in seen:
                continue
            mode = turned.get(child)
            if here is not None:
                inherits = here < seed
                below = None if mode is not None and mode[1] else here
            else:
                inherits = mode is not None and turn <= mode[0]
                below = None
            if inherits:
                seen.add(child)
                stack.append((child, below))
                out.append((child, below))
    return out


def open_catalog(root: Path, *, no_cache: bool = False) -> Catalog:
    """The catalog of `root`: the shared one, or (`no_cache`) a throwaway in memory."""
    from .catalog import Catalog

    return Catalog(root, ":memory:" if no_cache else None)
