"""Every one of the 151 real V0 logs and its V5 and V6 twins (migrated by dsh's adjacent
steps, `turnline.demo.dshmigrate`) read the same: turns and their verdicts, titles, usage, the
own/inherited split, lineage, and search hits. A folder holding both generations of one
session is one session."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from turnline.core import formats
from turnline.core.content import ContextText, StepUsage, ToolCall, turn_blocks
from turnline.core.logfile import read_log
from turnline.core.model import ProblemKind
from turnline.core.root import SessionRoot
from turnline.core.search import open_catalog, search
from turnline.core.summary import SessionSummary
from turnline.core.usage import fold_log, root_usage
from turnline.core.view import SessionView
from turnline.demo.dshmigrate import twin_root

from ..conftest import FIXTURES, fixture_logs

#: V0 reasons that dsh's v0-to-v1 step renames (`disposed` became an aborted kind).
NORMALIZED = {"disposed": "aborted"}
#: Problems a twin cannot have: a migrated log is dense, whole and has its header keys.
REWRITTEN = {
    ProblemKind.SEQ_GAP,
    ProblemKind.TORN_TAIL,
    ProblemKind.CORRUPT,
    ProblemKind.MISSING_VERSION,
    ProblemKind.LEGACY_HEADER,
    ProblemKind.ODD_EVENT,
    ProblemKind.BAD_PACKED_ROW,
    ProblemKind.SEED_MISMATCH,
}
QUERIES = ("haiku", "fork", "file", "error", "the", "分叉", "read", "test", "subagent")


Twins = tuple[Path, dict[Path, Path]]


@pytest.fixture(scope="module", params=[5, 6], ids=["v5", "v6"])
def twins(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Twins:
    """The fixtures' twin root of one version, and each original's twin."""
    root = tmp_path_factory.mktemp(f"twins{request.param}") / "dsh"
    pairs = twin_root(FIXTURES, root, version=request.param)
    assert len(pairs) == len(fixture_logs()) == 151
    return root, dict(pairs)


def version_of(twins: Twins) -> int:
    """The twins' format version (from the name of one of them)."""
    name = next(iter(twins[1].values())).name  # session[.K].vN.jsonl
    return int(name.removesuffix(".jsonl").rsplit(".v", 1)[1])


def clean(problems: Any) -> bool:
    return not any(p.kind in REWRITTEN for p in problems)


def by_path(root: Path) -> dict[Path, SessionSummary]:
    return {s.path: s for s in SessionRoot(root).scan()}


def turn_rows(root: Path, summary: SessionSummary) -> tuple[list[Any], Any]:
    loaded = SessionRoot(root).load(summary)
    view = SessionView(loaded)
    rows = [
        (
            t.turn.number,
            NORMALIZED.get(t.turn.reason, t.turn.reason),
            t.inherited,
            t.forkable,
            t.turn.steps,
            tuple(t.turn.tools),
            t.turn.user,
            t.turn.assistant,
        )
        for t in view.turns
    ]
    return rows, loaded


def test_every_twin_reads_as_its_original(twins: Twins) -> None:
    root, pairs = twins
    version = version_of(twins)
    originals = by_path(FIXTURES)
    twinned = by_path(root)
    assert len(twinned) == len(originals) == 151
    compared = 0
    for original, twin in pairs.items():
        a, b = originals[original], twinned[twin]
        assert b.header is not None and b.header.version == version, twin
        assert not any(p.kind is ProblemKind.FOREIGN_VERSION for p in b.problems), twin
        # a twin keeps no problem its original lacks (the odd turn/end of
        # suite_authored-error stays odd: dsh's migration would refuse it)
        kinds_a = {p.kind for p in a.problems}
        assert {p.kind for p in b.problems} <= kinds_a | {ProblemKind.DUPLICATE_ID}, twin
        assert (a.id, a.title, a.turns, a.open_turn, a.parent_session) == (
            b.id,
            b.title,
            b.turns,
            b.open_turn,
            b.parent_session,
        ), original
        rows_a, loaded_a = turn_rows(FIXTURES, a)
        rows_b, _ = turn_rows(root, b)
        if clean(loaded_a.problems):
            # verdicts too: a v0 row past a seq gap is refused, its dense twin is not
            assert rows_a == rows_b, original
            compared += 1
        else:
            assert [r[:3] + r[4:] for r in rows_a] == [r[:3] + r[4:] for r in rows_b], original
        # the same inherited turns, so the same seed in turns whatever its seq
        assert (a.seed_length is None) == (b.seed_length is None), original
    assert compared == 117  # the fixtures whose v0 read has no problem the twin drops


def test_every_twin_folds_the_same_usage(twins: Twins) -> None:
    root, pairs = twins
    originals = by_path(FIXTURES)
    twinned = by_path(root)

    def tokens(totals: Any) -> dict[str, Any]:
        out = totals.to_json_dict()
        return {
            k: out[k]
            for k in (
                "inputTokens",
                "outputTokens",
                "cacheReadTokens",
                "cacheWriteTokens",
                "reasoningTokens",
                "turns",
                "toolCalls",
            )
        }

    placed = 0
    for original, twin in pairs.items():
        a, b = originals[original], twinned[twin]
        fa, fb = fold_log(original, a.seed_length), fold_log(twin, b.seed_length)
        assert tokens(fa.own()) == tokens(fb.own()), original
        assert tokens(fa.inherited()) == tokens(fb.inherited()), original
        # on the same model, day and minute too (what `--by day`, the usage screen's
        # chart and a price window read): a replaced sample counts at its replacer's time
        if clean(a.problems):
            assert fa.own().tokens == fb.own().tokens, original
            assert fa.inherited().tokens == fb.inherited().tokens, original
            placed += bool(fa.own().tokens)
    assert placed > 60
    # and the whole root by lineage: every session's own, inherited and subtree
    ua = {(s.id, Path(s.path).parent): s for s in root_usage(SessionRoot(FIXTURES)).sessions}
    ub = {
        (s.id, FIXTURES / Path(s.path).parent.relative_to(root)): s
        for s in root_usage(SessionRoot(root)).sessions
    }
    assert ua.keys() == ub.keys()
    for key, sa in ua.items():
        sb = ub[key]
        assert tokens(sa.subtree) == tokens(sb.subtree), key
        assert sa.parent_outside == sb.parent_outside, key


def test_every_twin_has_the_same_lineage(twins: Twins) -> None:
    root, pairs = twins
    la = SessionRoot(FIXTURES)
    la.scan()
    lb = SessionRoot(root)
    lb.scan()
    back = {twin: original for original, twin in pairs.items()}
    parents_a = la.lineage().parent_of
    parents_b = {back[c]: back[p] for c, p in lb.lineage().parent_of.items()}
    assert parents_b == parents_a
    assert parents_a, "the fixtures hold forked children"


def test_every_seeded_twin_keeps_its_parents_seed(twins: Twins) -> None:
    """dsh migrates a child and its parent apart, and each migration mints ids from its own
    log's session id (`legacy-message:<id>:<seq>`, the hash of an inserted system message):
    the child's seed is still its parent's, as it is for the originals."""
    root, pairs = twins
    ra, rb = SessionRoot(FIXTURES), SessionRoot(root)
    originals = {s.path: s for s in ra.scan()}
    twinned = {s.path: s for s in rb.scan()}
    seeded = minted = 0
    for original, twin in pairs.items():
        b = twinned[twin]
        if b.parent_session is None or b.seed_length is None:
            continue
        seeded += 1
        loaded_a, loaded_b = ra.load(originals[original]), rb.load(b)
        mismatch_a = {p.kind for p in loaded_a.problems} & {ProblemKind.SEED_MISMATCH}
        mismatch_b = {p.kind for p in loaded_b.problems} & {ProblemKind.SEED_MISMATCH}
        assert mismatch_b == mismatch_a == set(), twin
        parent = rb.load(twinned[loaded_b.parent_path]) if loaded_b.parent_path else None
        assert parent is not None, twin
        seed = b.seed_length
        mine = [e.to_json_dict() for e in loaded_b.events[:seed]]
        theirs = [e.to_json_dict() for e in parent.events[:seed]]
        minted += sum(x != y for x, y in zip(mine, theirs, strict=True))
    assert seeded == 2
    assert minted  # the rule is needed: the twins' seeds differ in minted ids


def test_every_twin_gives_the_same_search_hits(
    twins: Twins, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root, pairs = twins
    back = {str(twin): str(original) for original, twin in pairs.items()}
    ca, cb = open_catalog(FIXTURES), open_catalog(root)
    try:
        for query in QUERIES:
            for fields in (("user", "assistant"), ("reasoning", "tool")):
                ha = search(ca, query, fields=fields, include_inherited=True)
                hb = search(cb, query, fields=fields, include_inherited=True)
                got_a = sorted(
                    (h.path, h.session, h.turn, h.field, h.inherited_by) for h in ha.hits
                )
                got_b = sorted(
                    (back[h.path], h.session, h.turn, h.field, h.inherited_by) for h in hb.hits
                )
                assert got_b == got_a, (query, fields)
                assert ha.total == hb.total
    finally:
        ca.close()
        cb.close()


def test_a_folder_holding_both_generations_is_the_newer_one(
    twins: Twins, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dsh resumed one session of the fixtures: its successor sits beside the V0 log."""
    _root, pairs = twins
    version = version_of(twins)
    newest_name = f"session.v{version}.jsonl"
    scenario = "acp/subagent-fork-in-process"
    folder = tmp_path / "root" / scenario
    shutil.copytree(FIXTURES / scenario, folder)
    for original, twin in pairs.items():
        if original.parent == FIXTURES / scenario and original.name == "session.jsonl":
            shutil.copyfile(twin, folder / twin.name)
    names = sorted(p.name for p in folder.iterdir())
    assert "session.jsonl" in names and newest_name in names
    summaries = SessionRoot(tmp_path / "root").scan()
    logs = sorted(s.path.name for s in summaries)
    assert "session.jsonl" not in logs and newest_name in logs
    assert not any(p.kind is ProblemKind.DUPLICATE_ID for s in summaries for p in s.problems)
    newest = folder / newest_name
    assert formats.generations(newest) == [(version, newest), (0, folder / "session.jsonl")]
    # the V0 children keep their V0 seed, checked against the V0 generation kept beside
    root = SessionRoot(tmp_path / "root")
    for summary in root.scan():
        if summary.parent_session is not None and summary.seed_length is not None:
            loaded = root.load(summary)
            assert not any(p.kind is ProblemKind.SEED_MISMATCH for p in loaded.problems)
    # the catalog indexes the session once, from its newest generation
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    catalog = open_catalog(tmp_path / "root")
    try:
        hits = search(catalog, "codeword", include_inherited=True).hits
    finally:
        catalog.close()
    assert hits
    assert {Path(h.path).name for h in hits} <= {newest_name, "session.1.jsonl"}


def test_every_twin_folds_in_one_decode_as_the_full_read_does(twins: Twins) -> None:
    """A V2+ log's usage is folded from one msgspec decode of all its rows
    (`usage._rows_of`): the same totals, split and per-turn tokens as the fold of the
    full read, on every twin."""
    from turnline.core.logfile import LogReader
    from turnline.core.usage import _rows_of, fold_bytes, fold_events

    root, pairs = twins
    summaries = by_path(root)
    decoded = compared = 0
    for twin in pairs.values():
        data = twin.read_bytes()
        seed = summaries[twin].seed_length
        fast = fold_bytes(data, seed)
        full = fold_events(LogReader(twin).read().events, seed)
        decoded += _rows_of(data, data.find(b"\n") + 1) is not None
        if fast is None:
            continue  # (left to the full read: an open turn, a restart)
        assert fast.own().to_json_dict() == full.own().to_json_dict(), twin
        assert fast.inherited().to_json_dict() == full.inherited().to_json_dict(), twin
        assert fast.turn_tokens == full.turn_tokens, twin
        compared += 1
    assert decoded == len(pairs)  # every twin's rows took the one-decode path
    assert compared >= 140  # and nearly every twin's fold came from it (149 of 151)


def _tool_rounds(path: Path) -> list[tuple[str, str | None, bool | None]]:
    """Each tool call of a log, in order: its name, and its result's text and error
    flag (None while it has no result)."""
    blocks = turn_blocks(read_log(path).events)
    return [
        (b.name, *((b.result.text, b.result.is_error) if b.result else (None, None)))
        for b in blocks
        if isinstance(b, ToolCall)
    ]


def test_every_twin_gives_its_tool_calls_the_same_results(twins: Twins) -> None:
    """Tool results are read in every shape dsh wrote them: a V4+ tool-role message, a
    V1–V3 `tool-result` part, and a legacy V0 row's own `{callId, content, isError}`
    (which dsh's v0 → v1 step wraps): the export, the detail pane and search show the
    same results for a log and its twin."""
    _root, pairs = twins
    with_results = 0
    for original, twin in pairs.items():
        rounds = _tool_rounds(original)
        assert rounds == _tool_rounds(twin), original
        with_results += any(text is not None for _name, text, _error in rounds)
    assert with_results >= 60


def test_every_twin_names_its_injected_context_the_same(twins: Twins) -> None:
    """Who injected a context message is named in V4's words whatever the version: a
    V0–V3 `{kind: "plugin", plugin: NAME}` as the producer kind dsh's V3 → V4 step
    makes of it (`runtime-context`, `hooks-codex`, …), so a log and its twin label
    the same messages the same way."""
    _root, pairs = twins
    labelled = 0
    for original, twin in pairs.items():
        labels = [
            (b.source, b.text)
            for b in turn_blocks(read_log(original).events)
            if isinstance(b, ContextText)
        ]
        assert labels == [
            (b.source, b.text)
            for b in turn_blocks(read_log(twin).events)
            if isinstance(b, ContextText)
        ], original
        labelled += bool(labels)
        assert not any(source == "plugin" for source, _text in labels), original
    assert labelled >= 100


def _block_order(path: Path) -> list[tuple[str, Any]]:
    """A log's blocks in the order the detail pane draws them: each one's kind, and a
    step's usage with its tokens."""
    out: list[tuple[str, Any]] = []
    for block in turn_blocks(read_log(path).events):
        kind = type(block).__name__
        out.append((kind, block.usage if isinstance(block, StepUsage) else None))
    return out


def test_every_twin_draws_its_blocks_in_the_same_order(twins: Twins) -> None:
    """A step's usage comes after its message in V0 too (V0 wrote the usage chunk before
    the message; V2+ keeps it inside): the detail pane reads the same, line by line."""
    _root, pairs = twins
    originals = by_path(FIXTURES)
    same = with_usage = 0
    for original, twin in pairs.items():
        if not clean(originals[original].problems):
            continue
        order = _block_order(original)
        assert order == _block_order(twin), original
        same += 1
        with_usage += any(kind == "StepUsage" for kind, _ in order)
    assert same > 100 and with_usage > 60
