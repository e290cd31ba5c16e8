"""Lineage-aware search over a root's catalog.

A hit is one turn of the session that produced the text; copies of that turn in
children's seeds are counted (`inherited_by`), and listed only when asked
(`include_inherited`, each naming its producer in `inherited_from`).

QUERY syntax: words (all must match within one turn, each as a case-insensitive
substring, so text without spaces such as Chinese is found), `"a phrase"` (the
words in that order), `prefix*` (a word starting so).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any, Final

from .catalog import FIELDS, Catalog, Progress
from .textsafe import flat_line, one_line

DEFAULT_FIELDS: Final = ("user", "assistant")
SNIPPET: Final = 96
MARK_OPEN: Final = "«"
MARK_CLOSE: Final = "»"


class QueryError(ValueError):
    """The query (or a search option) cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class Term:
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


@dataclass(frozen=True, slots=True)
class Hit:
    """One turn that matched.

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


@dataclass(frozen=True, slots=True)
class SearchResult:
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
    line: str, literal: str, width: int
) -> tuple[str, tuple[tuple[int, int], ...]]:
    """`line_snippet` of an ASCII line with one term found as plain text."""
    folded = line.lower()
    first = folded.find(literal)
    if first < 0:
        return one_line(line, width), ()
    start = max(0, first - width // 3)
    end = min(len(line), start + width)
    start = max(0, min(start, end - width))
    lead = "…" if start > 0 else ""
    shown = lead + line[start:end] + ("…" if end < len(line) else "")
    shift = len(lead) - start
    spans: list[tuple[int, int]] = []
    size = len(literal)
    at = folded.find(literal, start)
    while at >= 0 and at + size <= end:  # as `finditer` finds them in the window
        spans.append((at + shift, at + size + shift))
        at = folded.find(literal, at + size)
    return shown, tuple(spans)


def _fts_literal(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _casefold_contains(text: object, needle: object) -> bool:
    return isinstance(text, str) and isinstance(needle, str) and needle in text.casefold()


#: A log's row as a hit needs it: (path, session, title, seed, created).
_LOG_COLUMNS: Final = "l.path, l.session, l.title, l.seed, l.created"


def _term_docs(
    catalog: Catalog, term: Term, fields: Sequence[str], logs: dict[int, tuple[Any, ...]]
) -> dict[tuple[int, int], tuple[int, str, str]]:
    """(log, turn) -> the first (seq, field, text) of its docs holding `term`; the
    row of each log found is added to `logs` (`_LOG_COLUMNS`)."""
    marks = ",".join("?" * len(fields))
    needle = term.text
    if len(needle) >= 3:
        rows = catalog.db.execute(
            f"SELECT d.log, d.turn, d.seq, d.field, d.text, {_LOG_COLUMNS} FROM fts "
            "JOIN docs d ON d.rowid = fts.rowid JOIN logs l ON l.id = d.log "
            f"WHERE fts MATCH ? AND d.field IN ({marks})",
            (_fts_literal(needle), *fields),
        ).fetchall()
    else:  # trigrams cannot match under three characters: a folded substring scan
        catalog.db.create_function("tl_contains", 2, _casefold_contains, deterministic=True)
        rows = catalog.db.execute(
            f"SELECT d.log, d.turn, d.seq, d.field, d.text, {_LOG_COLUMNS} FROM docs d "
            f"JOIN logs l ON l.id = d.log WHERE d.field IN ({marks}) AND tl_contains(d.text, ?)",
            (*fields, needle.casefold()),
        ).fetchall()
    found = term.pattern().search  # the exact rule; the index only narrows the rows
    literal = term.literal()
    out: dict[tuple[int, int], tuple[int, str, str]] = {}
    get = out.get
    for row in rows:
        text = row[4]
        if (literal in text.lower()) if literal is not None and text.isascii() else found(text):
            key = (row[0], row[1])
            got = get(key)
            if got is None:
                out[key] = (row[2], row[3], row[4])
                if row[0] not in logs:
                    logs[row[0]] = row[5:]
            elif row[2] < got[0]:
                out[key] = (row[2], row[3], row[4])
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
        query: The QUERY (see the module doc).
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
    if limit is not None and limit < 0:
        raise QueryError("--limit must be 0 or more")
    for f in fields:
        if f not in FIELDS:
            raise QueryError(f"unknown field {f}")
    if refresh:
        catalog.refresh(progress)
    logs: dict[int, tuple[Any, ...]] = {}
    matched: dict[tuple[int, int], tuple[int, str, str]] | None = None
    for term in sorted(terms, key=lambda t: -len(t.text)):
        docs = _term_docs(catalog, term, fields, logs)
        if matched is None:
            matched = docs
        else:
            matched = {k: min(matched[k], v) for k, v in docs.items() if k in matched}
        if not matched:
            return SearchResult([], 0)
    assert matched is not None
    children = catalog.children()
    if children:
        _add_descendants(catalog, logs, {log for log, _turn in matched}, children)
    # Each hit as (sort key, log, turn, first doc, producer) first; the snippets (most
    # of a hit's cost) only for those kept.
    found_hits: list[tuple[tuple[int, str, int], int, int, tuple[int, str, str], int, int]] = []
    for (log, turn), first in matched.items():
        entry = logs[log]
        if log not in children:
            heirs: list[int] = []
        else:
            heirs = list(_heirs(log, first[0], logs, children))
        found_hits.append(((-(entry[4] or 0), entry[0], -turn), log, turn, first, len(heirs), -1))
        if include_inherited:
            for heir in heirs:
                e = logs[heir]
                inherited = len(list(_heirs(heir, first[0], logs, children)))
                found_hits.append(((-(e[4] or 0), e[0], -turn), heir, turn, first, inherited, log))
    if session is not None:
        found_hits = [
            h for h in found_hits if logs[h[1]][1].startswith(session) or logs[h[1]][0] == session
        ]
    found_hits.sort(key=itemgetter(0))  # newest first, then by path, latest turn first
    total = len(found_hits)
    if limit is not None:
        found_hits = found_hits[:limit]
    patterns = [t.pattern() for t in terms]
    literal = terms[0].literal() if len(terms) == 1 else None
    hits: list[Hit] = []
    for _key, log, turn, (seq, field, text), inherited_by, producer in found_hits:
        path, session_id, title, _seed, created = logs[log]
        shown, spans = line_snippet(text, patterns, literal=literal)
        hits.append(
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
    catalog: Catalog,
    logs: dict[int, tuple[Any, ...]],
    found: set[int],
    children: dict[int, list[int]],
) -> None:
    """Add to `logs` the rows of every descendant of the `found` logs (their seeds
    decide the heirs) that it lacks."""
    stack = [log for log in found if log in children]
    ids: set[int] = set()
    seen = set(found)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in seen:
                seen.add(child)
                stack.append(child)
                if child not in logs:
                    ids.add(child)
    sql = f"SELECT l.id, {_LOG_COLUMNS} FROM logs l"
    if len(ids) > 2000:
        logs.update((r[0], r[1:]) for r in catalog.db.execute(sql) if r[0] in ids)
        return
    wanted = sorted(ids)
    for k in range(0, len(wanted), 500):
        chunk = wanted[k : k + 500]
        marks = ",".join("?" * len(chunk))
        logs.update(
            (r[0], r[1:]) for r in catalog.db.execute(f"{sql} WHERE l.id IN ({marks})", chunk)
        )


def _heirs(
    log: int, seq: int, logs: dict[int, tuple[Any, ...]], children: dict[int, list[int]]
) -> Iterable[int]:
    """Every descendant log whose seed carries the event at `seq` of `log`
    (`logs`: id -> (path, session, title, seed, created))."""
    stack = [log]
    seen = {log}
    while stack:
        for child in children.get(stack.pop(), ()):
            seed = logs[child][3] if child in logs else None
            if child not in seen and seed is not None and seq < seed:
                seen.add(child)
                stack.append(child)
                yield child


def open_catalog(root: Path, *, no_cache: bool = False) -> Catalog:
    """The catalog of `root`: the shared one, or (`no_cache`) a throwaway in memory."""
    return Catalog(root, ":memory:" if no_cache else None)
