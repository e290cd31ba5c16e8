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
from pathlib import Path
from typing import Any, Final

from .catalog import FIELDS, Catalog, Progress
from .textsafe import one_line

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
    line = one_line(text)
    first = None
    for p in patterns:
        m = p.search(line)
        if m and (first is None or m.start() < first.start()):
            first = m
    if first is None:
        return one_line(line, width), ()
    start = max(0, first.start() - width // 3)
    end = min(len(line), start + width)
    start = max(0, min(start, end - width))
    return _window(line, start, end, end < len(line), patterns)


def _fts_literal(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _casefold_contains(text: object, needle: object) -> bool:
    return isinstance(text, str) and isinstance(needle, str) and needle in text.casefold()


def _term_docs(
    catalog: Catalog, term: Term, fields: Sequence[str]
) -> dict[tuple[int, int], list[tuple[int, str, str]]]:
    """(log, turn) -> [(seq, field, text)] of the docs holding `term`."""
    marks = ",".join("?" * len(fields))
    needle = term.text
    if len(needle) >= 3:
        rows = catalog.db.execute(
            "SELECT d.log, d.turn, d.seq, d.field, d.text FROM fts JOIN docs d "
            f"ON d.rowid = fts.rowid WHERE fts MATCH ? AND d.field IN ({marks})",
            (_fts_literal(needle), *fields),
        ).fetchall()
    else:  # trigrams cannot match under three characters: a folded substring scan
        catalog.db.create_function("tl_contains", 2, _casefold_contains, deterministic=True)
        rows = catalog.db.execute(
            "SELECT log, turn, seq, field, text FROM docs "
            f"WHERE field IN ({marks}) AND tl_contains(text, ?)",
            (*fields, needle.casefold()),
        ).fetchall()
    found = term.pattern().search
    out: dict[tuple[int, int], list[tuple[int, str, str]]] = {}
    for log, turn, seq, field, text in rows:
        if found(text):
            key = (log, turn)
            got = out.get(key)
            if got is None:
                out[key] = [(seq, field, text)]
            else:
                got.append((seq, field, text))
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
    matched: dict[tuple[int, int], list[tuple[int, str, str]]] | None = None
    for term in sorted(terms, key=lambda t: -len(t.text)):
        docs = _term_docs(catalog, term, fields)
        if matched is None:
            matched = docs
        else:
            matched = {k: matched[k] + v for k, v in docs.items() if k in matched}
        if not matched:
            return SearchResult([], 0)
    assert matched is not None
    children = catalog.children()
    logs = _log_rows(catalog, {log for log, _turn in matched}, children)
    patterns = [t.pattern() for t in terms]
    words = all(not t.phrase for t in terms)
    longest = max(len(t.text) for t in terms)
    hits: list[Hit] = []
    for (log, turn), found in matched.items():
        entry = logs.get(log)
        if entry is None:
            continue
        seq, field, text = min(found)
        shown, spans = _snippet(text, patterns, words, longest)
        heirs = list(_heirs(log, seq, logs, children)) if log in children else []
        hits.append(
            Hit(
                entry[1],
                entry[0],
                entry[2],
                turn,
                seq,
                field,
                shown,
                spans,
                len(heirs),
                None,
                entry[4] or 0,
            )
        )
        if include_inherited:
            for heir in heirs:
                e = logs[heir]
                hits.append(
                    Hit(
                        e[1],
                        e[0],
                        e[2],
                        turn,
                        seq,
                        field,
                        shown,
                        spans,
                        len(list(_heirs(heir, seq, logs, children))),
                        entry[1],
                        e[4] or 0,
                    )
                )
    if session is not None:
        hits = [h for h in hits if h.session.startswith(session) or h.path == session]
    hits.sort(key=lambda h: (-h.created, h.path, -h.turn))
    total = len(hits)
    if limit is not None:
        hits = hits[:limit]
    return SearchResult(hits, total)


#: `_snippet` first makes a line of this many leading characters of a long text.
_HEAD: Final = 2048


def _snippet(
    text: str, patterns: Sequence[re.Pattern[str]], words: bool, longest: int
) -> tuple[str, tuple[tuple[int, int], ...]]:
    """`snippet_of`, sanitizing only the head of a long text when that is enough.

    `one_line` of a prefix is a prefix of `one_line` of the whole (characters are
    dropped or runs collapsed one by one; only the trailing strip differs). When the
    first match lies so far inside that head that the window and every match that
    could start before it end inside it too (terms without whitespace match exactly
    their own length), the result is `snippet_of`'s; else the whole text is used.
    """
    if len(text) > _HEAD and words:
        head = one_line(text[:_HEAD])
        first = -1
        for p in patterns:
            m = p.search(head)
            if m and (first < 0 or m.start() < first):
                first = m.start()
        if first >= 0 and first + SNIPPET + longest <= len(head):
            start = max(0, first - SNIPPET // 3)
            return _window(head, start, start + SNIPPET, True, patterns)
    return snippet_of(text, patterns)


def _window(
    line: str, start: int, end: int, more: bool, patterns: Sequence[re.Pattern[str]]
) -> tuple[str, tuple[tuple[int, int], ...]]:
    """`line[start:end]` with ellipses (`more`: text follows) and its match spans."""
    piece = line[start:end]
    lead = "…" if start > 0 else ""
    tail = "…" if more else ""
    shown = lead + piece + tail
    spans: list[tuple[int, int]] = []
    for p in patterns:
        for m in p.finditer(piece):
            if m.end() > m.start():
                spans.append((m.start() + len(lead), m.end() + len(lead)))
    spans.sort()
    merged: list[tuple[int, int]] = []
    for s, e in spans:
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(e, merged[-1][1]))
        else:
            merged.append((s, e))
    return shown, tuple(merged)


def _log_rows(
    catalog: Catalog, wanted: set[int], children: dict[int, list[int]]
) -> dict[int, tuple[Any, ...]]:
    """(path, session, title, seed, created) by log id, for the `wanted` logs and all
    their descendants (whose seeds decide the heirs): building a row per log of a big
    root costs more than a query with few hits."""
    stack = [log for log in wanted if log in children]
    ids = set(wanted)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in ids:
                ids.add(child)
                stack.append(child)
    sql = "SELECT id, path, session, title, seed, created FROM logs"
    if len(ids) > 2000:
        return {r[0]: r[1:] for r in catalog.db.execute(sql) if r[0] in ids}
    out: dict[int, tuple[Any, ...]] = {}
    wanted_ids = sorted(ids)
    for k in range(0, len(wanted_ids), 500):
        chunk = wanted_ids[k : k + 500]
        marks = ",".join("?" * len(chunk))
        for r in catalog.db.execute(f"{sql} WHERE id IN ({marks})", chunk):
            out[r[0]] = r[1:]
    return out


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
