"""Lineage-aware search on hand-made lineages with planted words."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from turnline.core.catalog import Catalog
from turnline.core.search import (
    QueryError,
    open_catalog,
    parse_fields,
    parse_query,
    search,
    snippet_of,
)

from .search_logs import make_lineage


@pytest.fixture
def catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Catalog:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    make_lineage(tmp_path / "root")
    return Catalog(tmp_path / "root")


def hits(catalog: Catalog, query: str, **kw: object) -> list[tuple[str, int, int, str | None]]:
    found = search(catalog, query, **kw).hits  # type: ignore[arg-type]
    return [(h.session, h.turn, h.inherited_by, h.inherited_from) for h in found]


def family_hits(folder: Path, query: str) -> list[tuple[str, int, int, str | None]]:
    """Every hit of `query` under `folder`, inherited copies included, sorted: what two
    layouts of one family (all V0, or migrated apart) must agree on."""
    catalog = open_catalog(folder)
    try:
        return sorted(hits(catalog, query, include_inherited=True))
    finally:
        catalog.close()


def test_parent_turn_inherited_by_fork_and_fork_of_fork_is_one_hit(catalog: Catalog) -> None:
    assert hits(catalog, "zebracorn") == [("P", 1, 2, None)]


def test_include_inherited_adds_each_copy_naming_the_producer(catalog: Catalog) -> None:
    assert sorted(hits(catalog, "zebracorn", include_inherited=True)) == [
        ("C", 1, 1, "P"),
        ("G", 1, 0, "P"),
        ("P", 1, 2, None),
    ]


def test_childs_own_turn(catalog: Catalog) -> None:
    assert hits(catalog, "childword") == [("C", 3, 1, None)]
    # P's turn 3 came after the fork point: C does not inherit it
    assert hits(catalog, "pondering", fields=("reasoning",)) == [("P", 3, 0, None)]


def test_tool_result_only_with_in_tool(catalog: Catalog) -> None:
    assert hits(catalog, "toolonlyword") == []
    assert hits(catalog, "toolonlyword", fields=("tool",)) == [("P", 2, 2, None)]
    # the tool-call arguments are indexed too
    assert [h[0] for h in hits(catalog, "cmd", fields=("tool",))] == ["P"]


def test_reasoning_only_with_in_reasoning(catalog: Catalog) -> None:
    assert hits(catalog, "pondering") == []


def test_chinese_two_characters_and_longer(catalog: Catalog) -> None:
    assert hits(catalog, "分叉") == [("P", 1, 2, None)]
    assert hits(catalog, "分叉的说明") == [("P", 1, 2, None)]
    assert hits(catalog, "叉子") == []


def test_case_insensitive(catalog: Catalog) -> None:
    assert hits(catalog, "ZEBRACORN") == [("P", 1, 2, None)]
    assert hits(catalog, "Zebra*") == [("P", 1, 2, None)]


def test_all_words_within_one_turn(catalog: Catalog) -> None:
    # "tell" (user) and 分叉 (assistant) are in the same turn: a hit
    assert hits(catalog, "tell 分叉") == [("P", 1, 2, None)]
    # zebracorn (turn 1) and childword (C's turn 3) never share a turn
    assert hits(catalog, "zebracorn childword") == []


def test_phrase_and_prefix(catalog: Catalog) -> None:
    assert hits(catalog, '"about the zebracorn"') == [("P", 1, 2, None)]
    assert hits(catalog, '"the about"') == []
    assert hits(catalog, "zebrac*") == [("P", 1, 2, None)]
    assert hits(catalog, "ebracorn*") == []  # a prefix starts a word
    assert hits(catalog, "ebracorn") == [("P", 1, 2, None)]  # a word is a substring


def test_terms_found_in_one_document(catalog: Catalog) -> None:
    """A literal term and a prefix term found in the same document: one hit (the two
    terms' documents are compared by seq alone)."""
    assert hits(catalog, "zebracorn zebra*") == hits(catalog, "zebracorn")
    assert hits(catalog, "zebra* zebracorn") == hits(catalog, "zebracorn")


def test_the_links_row(catalog: Catalog) -> None:
    """The catalog keeps each fork's parent and seed in one row, read back whole; a row
    this version did not write reads as no links (the next refresh links again)."""
    from turnline.core.query import pack_links, read_links, unpack_links

    triples = [(2, 1, 10), (3, 2, None), (4, 1, 0)]
    assert unpack_links(pack_links(triples)) == [(2, 1, 10), (3, 2, -1), (4, 1, 0)]
    catalog.refresh()
    links = read_links(catalog.db)
    entries = catalog.entries()
    by_path = {e.path: e.id for e in entries.values()}
    expected: dict[int, list[tuple[int, int]]] = {}
    for e in entries.values():
        if e.parent is not None:
            expected.setdefault(by_path[e.parent], []).append((e.id, e.seed or -1))
    assert expected and {k: sorted(v) for k, v in links.items()} == expected
    catalog.db.execute("UPDATE links SET data=?", (b"junk",))
    assert read_links(catalog.db) == {}
    catalog.db.execute("DELETE FROM links")
    assert read_links(catalog.db) == {}


def test_session_and_limit(catalog: Catalog) -> None:
    assert hits(catalog, "zebracorn", session="C", include_inherited=True) == [("C", 1, 1, "P")]
    result = search(catalog, "e", limit=1)
    assert len(result.hits) == 1
    assert result.total > 1


def test_newest_first(catalog: Catalog) -> None:
    created = [h.created for h in search(catalog, "e", include_inherited=True).hits]
    assert created == sorted(created, reverse=True)


@pytest.mark.parametrize("bad", ["", "   ", '"open', '""', "*", "a*b"])
def test_bad_queries(bad: str) -> None:
    with pytest.raises(QueryError):
        parse_query(bad)


def test_fields() -> None:
    assert parse_fields(None) == ("user", "assistant")
    assert parse_fields("tool,reasoning") == ("tool", "reasoning")
    with pytest.raises(QueryError, match="unknown field"):
        parse_fields("user,bogus")


def test_snippet_is_one_safe_line_with_marks() -> None:
    text = "line one\n\x1b[31mred\x1b[0m zebra\u202e here " + "x" * 300
    shown, marks = snippet_of(text, [parse_query("zebra")[0].pattern()])
    assert "\n" not in shown and "\x1b" not in shown and "\u202e" not in shown
    assert len(marks) == 1
    assert shown[marks[0][0] : marks[0][1]] == "zebra"
    assert shown.endswith("…")


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="ab \n\x1b\u202e\u3000cé", min_size=0, max_size=40),
    st.integers(0, 5000),
    st.sampled_from(["ab", "ba", "cé", "a", "abc"]),
    st.booleans(),
)
def test_a_snippet_is_a_safe_window_of_the_catalog_line(
    piece: str, pad: int, word: str, prefix: bool
) -> None:
    """The catalog keeps each text as `flat_line`; a snippet is a window of that line
    (ellipses where it was cut), and its marks are exactly the matches inside it."""
    from turnline.core.search import SNIPPET, line_snippet
    from turnline.core.textsafe import UNSAFE_CODEPOINTS, flat_line

    text = "x " * (pad // 2) + piece + " y" * 600 + piece
    terms = parse_query(word + ("*" if prefix else ""))
    patterns = [t.pattern() for t in terms]
    line = flat_line(text)
    shown, marks = got = snippet_of(text, patterns)
    assert got == line_snippet(line, patterns)
    assert len(shown) <= SNIPPET + 2
    assert shown.strip("…") in line
    assert not any(ord(c) in UNSAFE_CODEPOINTS for c in shown)
    found = patterns[0].search(line)
    assert bool(marks) == bool(found)
    for a, b in marks:
        assert patterns[0].fullmatch(shown[a:b]) or patterns[0].search(shown[a:b])


@settings(max_examples=400, deadline=None)
@given(
    st.text(alphabet="aAbB c.-", min_size=0, max_size=300),
    st.sampled_from(["ab", "a b", "Ab", "b.", "c-a", "aaa"]),
    st.integers(20, 120),
)
def test_the_plain_search_of_an_ascii_line_is_the_patterns(
    line: str, word: str, width: int
) -> None:
    """On an ASCII catalog line a term is found by plain lower-case search: the same
    snippet and marks as its regex gives."""
    from turnline.core.search import line_snippet
    from turnline.core.textsafe import flat_line

    line = flat_line(line)
    query = f'"{word}"' if " " in word else word
    (term,) = parse_query(query)
    literal = term.literal()
    assert literal is not None
    patterns = [term.pattern()]
    assert line_snippet(line, patterns, width, literal) == line_snippet(line, patterns, width)
    assert (literal in line.lower()) == bool(patterns[0].search(line))
    folded = line.lower()
    if literal in folded:  # as a search makes it: the folded line and the first match given
        from turnline.core.search import _literal_snippet

        given_first = _literal_snippet(line, literal, width, folded, folded.find(literal))
        assert given_first == line_snippet(line, patterns, width)


def test_a_phrase_across_a_line_break_is_found(tmp_path: Path) -> None:
    """A phrase matches the text as it is shown: words split by a newline and spaces
    too (the index holds each text as one line; it used to miss these)."""
    from turnline.core.model import SessionHeader

    from .search_logs import turn, write

    records = turn(0, 1, "please fork\n   the session now", "ok")
    write(tmp_path / "p" / "session.jsonl", SessionHeader("P", 1, cwd="/u"), records)
    catalog = Catalog(tmp_path, ":memory:")
    result = search(catalog, '"fork the session"')
    assert [h.snippet for h in result.hits] == ["please fork the session now"]
    assert [result.hits[0].marked()] == ["please «fork the session» now"]
    catalog.close()


def test_every_trigram_out_of_order_is_no_hit(tmp_path: Path) -> None:
    """The index keeps no positions: a text that holds each trigram of the word, but
    not the word, comes back from it and the search's own rule turns it down (in ASCII
    text by plain search, in other text by the term's pattern)."""
    from turnline.core.model import SessionHeader
    from turnline.core.query import fts_trigrams

    from .search_logs import turn, write

    records = turn(0, 1, "asse sert", "écla lair")
    write(tmp_path / "p" / "session.jsonl", SessionHeader("P", 1, cwd="/u"), records)
    catalog = Catalog(tmp_path, ":memory:")
    catalog.refresh()
    for word in ("assert", "éclair"):
        narrowed = catalog.query(
            "SELECT count(*) FROM fts WHERE fts MATCH ?", (fts_trigrams(word),)
        )
        assert list(narrowed) == [(1,)]  # the index cannot tell
        assert search(catalog, word).hits == []
    assert [h.turn for h in search(catalog, "sse ser").hits] == [1]
    catalog.close()


_ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=40)  # surrogates too


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(_ANY_TEXT, _ANY_TEXT, _ANY_TEXT, st.integers(0, 3), st.booleans()),
        max_size=5,
    ),
    st.sampled_from(["a", "zebra*", "a b"]),
    st.integers(0, 3),
)
def test_the_json_document_is_jsons_own(
    entries: list[tuple[str, str, str, int, bool]], query: str, more: int
) -> None:
    """`SearchResult.to_json` (the bytes both CLI doors print) is exactly `json.dumps(
    ..., ensure_ascii=False, indent=2)` of `to_json_dict`, lone surrogates as their JSON
    escapes, and the snippets it cuts without spans are those of the hits."""
    import json

    from turnline.core.search import SearchResult

    terms = parse_query(query)
    literal = terms[0].literal() if len(terms) == 1 else None
    logs: dict[int, tuple[object, ...]] = {}
    found = []
    for k, (session, path, text, field, inherited) in enumerate(entries):
        logs[k] = (path, session, None, k)
        first = text.lower().find(literal) if literal and text.isascii() else -1
        doc = (k, ("user", "assistant", "reasoning", "tool")[field], text, first)
        found.append((-k, path, -1, k, 1, doc, k % 3, 0 if inherited and k else -1))
    result = SearchResult(found, len(found) + more, logs, terms)  # type: ignore[arg-type]
    want = json.dumps(result.to_json_dict(), ensure_ascii=False, indent=2) + "\n"
    assert result.to_json() == want.encode("utf-8", "backslashreplace")
    json.loads(result.to_json())  # valid JSON, whatever the strings held


def test_a_child_seeded_from_an_older_generation_inherits_the_same_turns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo's V0 subagent child counts its seed (807) in its parent's V0 seqs; the
    catalog holds the parent's V5 generation (97 events). It inherits the same turns
    (1-4, not 5-6) as in the demo built all in V0: each hit, inherited copy included,
    is the same (session, turn, inheritedBy, inheritedFrom)."""
    from turnline.demo import build_demo_root, generator

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    now = 1_790_000_000_000
    mixed = build_demo_root(tmp_path / "mixed", now_ms=now)
    monkeypatch.setattr(generator, "CURRENT_DSH", {})
    plain = build_demo_root(tmp_path / "plain", now_ms=now)
    assert all(p.name == "session.jsonl" for p in plain.roles.values())

    child = mixed.roles["subagent-fork"].parent.name
    compared = 0
    for query in ("checkout", "payment", "Summarise", "subagent", "lock"):
        got = set(family_hits(mixed.path, query))
        want = set(family_hits(plain.path, query))
        assert got == want, query
        compared += len(want)
        assert not any(h[0] == child and h[1] > 4 and h[3] for h in got)  # nothing past 4
    assert compared > 20


@pytest.mark.parametrize(
    ("versions", "g_after_first"),
    [((0, 2, 2), False), ((0, 5, 2), False), ((0, 3, 5), False), ((5, 0, 0), True)],
)
def test_a_family_renumbered_in_the_middle_credits_the_same_heirs(
    tmp_path: Path,
    fixtures_root: Path,
    monkeypatch: pytest.MonkeyPatch,
    versions: tuple[int, int, int],
    g_after_first: bool,
) -> None:
    """P -> C (forked at P's end) -> G: each migrated by itself to its version (the V0
    file kept beside P and C, not G). Each hit's inheritedBy and each inherited copy
    are the all-V0 family's, though a hit's seq means nothing below a renumbered link."""
    import shutil

    from turnline.core.root import SessionRoot
    from turnline.demo.dshmigrate import migrate, read_v0, write_log

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    ref = tmp_path / "ref"
    (ref / "p").mkdir(parents=True)
    shutil.copyfile(
        fixtures_root / "acp" / "multi-turn" / "session.jsonl", ref / "p" / "session.jsonl"
    )
    root = SessionRoot(ref)
    parent = root.scan()[0].id
    ends = sorted(root.load(root.resolve(parent), check_seed=False).turn_ends)
    root.fork(parent, ends[-1], "C")
    root.scan()
    root.fork("C", ends[0] if g_after_first else ends[-1], "G")
    root.scan()
    mixed = tmp_path / "mixed"
    shutil.copytree(ref, mixed)
    other = SessionRoot(mixed)
    other.scan()
    for sid, version, keep in zip((parent, "C", "G"), versions, (True, True, False), strict=True):
        if version:
            log = other.resolve(sid).path
            write_log(migrate(read_v0(log), to=version), log.with_name(f"session.v{version}.jsonl"))
            if not keep:
                log.unlink()

    want = family_hits(ref, "the")
    assert any(h[3] is not None and h[0] == "G" for h in want)  # G inherits some turn
    assert family_hits(mixed, "the") == want
