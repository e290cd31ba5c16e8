"""Short ids that tell sessions apart (`core.ids`)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from turnline.core.ids import distinguishing_parts, short_ids, unique_prefixes
from turnline.core.root import SessionRoot


def test_uuids_keep_eight_characters() -> None:
    ids = ["aaaa1111-parent", "bbbb2222-child", "cccc3333-sub"]
    assert unique_prefixes(ids) == {i: i[:8] for i in ids}


def test_a_shared_prefix_grows_until_it_differs() -> None:
    ids = ["{{sessionId}}", "{{sessionOther}}", "sdk-snapshot-1", "sdk-snapshot-2", "x"]
    got = unique_prefixes(ids)
    assert got["{{sessionId}}"] == "{{sessionI"
    assert got["{{sessionOther}}"] == "{{sessionO"
    assert got["sdk-snapshot-1"] == "sdk-snapshot-1"
    assert got["x"] == "x"


def test_an_id_that_prefixes_another_is_kept_whole() -> None:
    got = unique_prefixes(["abcdefgh", "abcdefghij"])
    assert got == {"abcdefgh": "abcdefgh", "abcdefghij": "abcdefghi"}


@given(st.lists(st.text(alphabet="ab-{}", min_size=1, max_size=14), min_size=1, max_size=30))
def test_prefixes_are_unique_and_minimal(ids: list[str]) -> None:
    got = unique_prefixes(ids, minimum=3)
    distinct = set(ids)
    assert set(got) == distinct
    for sid, prefix in got.items():
        assert sid.startswith(prefix)
        assert len(prefix) >= min(3, len(sid))
        others = [o for o in distinct if o != sid]
        if prefix != sid:  # a whole id may prefix another one: nothing more to add
            assert not any(o.startswith(prefix) for o in others)
            # one character fewer (if above the minimum) would clash with some other id
            if len(prefix) > 3:
                assert any(o.startswith(prefix[:-1]) for o in others)


def test_distinguishing_parts_drop_the_shared_tail() -> None:
    a = Path("/r/acp/handshake/session.jsonl")
    b = Path("/r/acp/cancel/session.jsonl")
    c = Path("/r/headless/handshake/session.jsonl")
    assert distinguishing_parts([a, b, c]) == {
        a: "acp/handshake",
        b: "cancel",
        c: "headless/handshake",
    }
    x = Path("/r/one--project--/sid/session.jsonl")
    y = Path("/r/two--project--/sid/session.jsonl")
    assert distinguishing_parts([x, y]) == {x: "one--project--", y: "two--project--"}
    same1, same2 = Path("/r/d/session.1.jsonl"), Path("/r/d/session.2.jsonl")
    assert distinguishing_parts([same1, same2]) == {
        same1: "session.1.jsonl",
        same2: "session.2.jsonl",
    }


def test_every_fixture_log_gets_its_own_short_id(fixtures_root: Path) -> None:
    """34 fixture logs claim `{{sessionId}}`: each still shows a short id of its own."""
    summaries = SessionRoot(fixtures_root).scan()
    shown = short_ids((s.id, s.path) for s in summaries)
    assert len(summaries) == 151
    assert len(set(shown.values())) == len(summaries)
    templated = [s for s in summaries if s.id == "{{sessionId}}"]
    assert len(templated) >= 34
    for summary in templated:
        label = shown[summary.path]
        assert label.startswith("{{sessio@")
        assert label.split("@", 1)[1] in str(summary.path.parent)
    # a UUID nobody else claims keeps its 8 characters
    lone = [s for s in summaries if sum(t.id == s.id for t in summaries) == 1]
    assert any(len(shown[s.path]) == 8 for s in lone)


def _prefixes_by_every_character(ids: list[str], minimum: int) -> dict[str, str]:
    """`unique_prefixes` as first written: every neighbour compared character by
    character (the fast path only skips neighbours that cannot matter)."""
    ordered = sorted(set(ids))

    def common(a: str, b: str) -> int:
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        return n

    out: dict[str, str] = {}
    for i, sid in enumerate(ordered):
        need = max(
            [common(sid, ordered[j]) for j in (i - 1, i + 1) if 0 <= j < len(ordered)],
            default=0,
        )
        out[sid] = sid[: max(minimum, need + 1)]
    return out


@given(
    st.lists(st.text(alphabet="ab-", min_size=0, max_size=12), min_size=1, max_size=40),
    st.integers(min_value=0, max_value=6),
)
def test_prefixes_match_the_character_by_character_rule(ids: list[str], minimum: int) -> None:
    assert unique_prefixes(ids, minimum) == _prefixes_by_every_character(ids, minimum)
