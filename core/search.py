"""Lineage-aware search over a root's catalog.

A hit is one turn of the session that produced the text; copies of that turn in
children's seeds are counted (`inherited_by`), and listed only when asked
(`include_inherited`, each naming its producer in `inherited_from`). The QUERY syntax
and the catalog reads are `core.query`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, NamedTuple

from .query import (
    DEFAULT_FIELDS,
    FIELDS,
    LOG_COLUMNS,
    Links,
    QueryError,
    Term,
    parse_fields,
    parse_query,
    search_order,
    term_rows,
)
from .textsafe import flat_line, one_line

if TYPE_CHECKING:
    import re
    import sqlite3
    from collections.abc import Iterable, Mapping, Sequence
    from pathlib import Path

    from .catalog import Catalog, Progress

__all__ = [
    "DEFAULT_FIELDS",
    "MARK_CLOSE",
    "MARK_OPEN",
    "SNIPPET",
    "Hit",
    "QueryError",
    "SearchResult",
    "Term",
    "line_snippet",
    "open_catalog",
    "parse_fields",
    "parse_query",
    "search",
    "search_db",
    "snippet_of",
]

SNIPPET: Final = 96
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


class SearchResult(NamedTuple):
    """Hits (newest first, cut to the limit) and the total before the cut."""

    hits: list[Hit]
    total: int

    def to_json_dict(self) -> dict[str, Any]:
        """The `--json` document."""
        return {"hits": [h.to_json_dict() for h in self.hits], "total": self.total}


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
    n = len(line)
    start = first - width // 3
    if start < 0:
        start = 0
    end = start + width
    if end > n:
        end = n
        start = n - width if n > width else 0
    lead = "…" if start > 0 else ""
    shown = lead + line[start:end] + ("…" if end < n else "")
    shift = len(lead) - start
    size = len(literal)
    spans = [(first + shift, first + size + shift)] if first + size <= end else []
    at = folded.find(literal, first + size, end)
    while at >= 0:  # as `finditer` finds them in the window (none overlapping)
        spans.append((at + shift, at + size + shift))
        at = folded.find(literal, at + size, end)
    return shown, tuple(spans)


#: A matched turn's first document: (seq, field, text, then, when the text is ASCII
#: and the term a literal, its lower-case form and where the term is first in it;
#: else None and -1).
_Doc = tuple[int, str, str, "str | None", int]


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
        folded = None
        first = -1
        if literal is not None and text.isascii():
            folded = text.lower()
            first = folded.find(literal)
            if first < 0:
                continue
        elif found(text) is None:
            continue
        key = (row[0], row[1])
        got = get(key)
        if got is None:
            out[key] = (row[2], row[3], text, folded, first)
            if row[0] not in logs:
                logs[row[0]] = row[5:]
        elif row[2] < got[0]:
            out[key] = (row[2], row[3], text, folded, first)
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


def check_options(fields: Sequence[str], limit: int | None) -> None:
    """Raise `QueryError` for a field or a limit `search` cannot take."""
    if limit is not None and limit < 0:
        raise QueryError("--limit must be 0 or more")
    for f in fields:
        if f not in FIELDS:
            raise QueryError(f"unknown field {f}")


def search_db(
    db: sqlite3.Connection | None,
    terms: Sequence[Term],
    *,
    fields: Sequence[str] = DEFAULT_FIELDS,
    include_inherited: bool = False,
    session: str | None = None,
    limit: int | None = None,
    read: tuple[Links, Mapping[Term, Sequence[tuple[Any, ...]]]] | None = None,
) -> SearchResult:
    """`search` on a catalog's connection as it is (no refresh; a read transaction
    makes every read one snapshot), for parsed `terms` and checked options.

    `read`: the links and each term's `term_rows`, read already in one snapshot
    (`query.snapshot_reads`: a warm `turnline search` reads them in its forked child
    while it loads this module); `db` may be None then, unless `include_inherited`."""
    from .query import read_links

    def rows_of(term: Term) -> Sequence[tuple[Any, ...]]:
        if read is not None:
            return read[1][term]
        assert db is not None
        return term_rows(db, term, fields)

    logs: dict[int, tuple[Any, ...]] = {}
    matched: dict[tuple[int, int], _Doc] | None = None
    for term in search_order(terms):
        docs = _term_docs(rows_of(term), term, logs)
        if matched is None:
            matched = docs
        else:
            matched = {  # the turn's first document that holds any of the terms
                k: v if v[0] < matched[k][0] else matched[k]
                for k, v in docs.items()
                if k in matched
            }
        if not matched:
            return SearchResult([], 0)
    assert matched is not None
    if read is not None:
        links = read[0]
    else:
        assert db is not None
        links = read_links(db)
    if include_inherited and links:
        assert db is not None
        _add_descendants(db, logs, {log for log, _turn in matched}, links)
    # Each hit as (sort key..., log, turn, first doc, heirs, producer) first; the
    # snippets (most of a hit's cost) only for those kept.
    found: list[tuple[int, str, int, int, int, _Doc, int, int]] = []
    add = found.append
    for (log, turn), first in matched.items():
        entry = logs[log]
        heirs = _heirs(log, first[0], links) if log in links else ()
        add((-(entry[4] or 0), entry[0], -turn, log, turn, first, len(heirs), -1))
        if include_inherited:
            for heir in heirs:
                e = logs[heir]
                inherited = len(_heirs(heir, first[0], links)) if heir in links else 0
                add((-(e[4] or 0), e[0], -turn, heir, turn, first, inherited, log))
    if session is not None:
        found = [h for h in found if logs[h[3]][1].startswith(session) or h[1] == session]
    found.sort()  # newest first, then by path, latest turn first (each (path, turn) once)
    total = len(found)
    if limit is not None:
        del found[limit:]
    patterns = [t.pattern() for t in terms]
    literal = terms[0].literal() if len(terms) == 1 else None
    hits: list[Hit] = []
    keep = hits.append
    for _c, path, _t, log, turn, (seq, field, text, folded, at), inherited_by, producer in found:
        _path, session_id, title, _seed, created = logs[log]
        if literal is not None and folded is not None:
            shown, spans = _literal_snippet(text, literal, SNIPPET, folded, at)
        else:
            shown, spans = line_snippet(text, patterns, literal=literal)
        keep(
            Hit(
                session_id,
                path,
                title,
                turn,
                seq,
                field,
                shown,
                spans,
                inherited_by,
                None if producer < 0 else logs[producer][1],
                created or 0,
            )
        )
    return SearchResult(hits, total)


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


def _heirs(log: int, seq: int, links: Links) -> list[int]:
    """Every descendant log whose seed carries the event at `seq` of `log`."""
    out: list[int] = []
    stack = [log]
    seen = {log}
    while stack:
        for child, seed in links.get(stack.pop(), ()):
            if seq < seed and child not in seen:
                seen.add(child)
                stack.append(child)
                out.append(child)
    return out


def open_catalog(root: Path, *, no_cache: bool = False) -> Catalog:
    """The catalog of `root`: the shared one, or (`no_cache`) a throwaway in memory."""
    from .catalog import Catalog

    return Catalog(root, ":memory:" if no_cache else None)
