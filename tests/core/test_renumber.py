"""A cut between turns of one generation is the cut after the same turn in another:
every real log against its V5 twin, both ways; a cut inside a turn has none."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from turnline.core.renumber import generation_timeline, same_cut
from turnline.core.timeline import Timeline
from turnline.demo.dshmigrate import twin_root

from ..conftest import FIXTURES


@pytest.fixture(scope="module")
def twin_pairs(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, Path]]:
    return twin_root(FIXTURES, tmp_path_factory.mktemp("twins") / "dsh", version=5)


def _closed(timeline: Timeline) -> list[int]:
    return [t.end_seq for t in timeline.turns if t.end_seq is not None]


def test_every_turn_end_of_every_real_log_is_the_same_turn_end_in_its_twin(
    twin_pairs: list[tuple[Path, Path]],
) -> None:
    checked = renumbered = 0
    for original, twin in twin_pairs:
        old, new = generation_timeline(original), generation_timeline(twin)
        assert [t.number for t in old.turns] == [t.number for t in new.turns], original
        for k, (a, b) in enumerate(zip(old.turns, new.turns, strict=True)):
            if a.end_seq is None or b.end_seq is None:
                continue
            assert same_cut(old, new, a.end_seq + 1) == b.end_seq + 1, (original, k)
            assert same_cut(new, old, b.end_seq + 1) == a.end_seq + 1, (original, k)
            checked += 1
            renumbered += a.end_seq != b.end_seq
        for t in old.turns:
            if t.end_seq is not None and t.end_seq > t.first_seq + 1:
                assert same_cut(old, new, t.first_seq + 1) is None  # inside a turn
        assert same_cut(old, new, 0) == 0
    assert checked == 145  # every closed turn of the 151 logs
    assert renumbered == 144  # the seqs do differ: the rule is needed


def test_a_cut_between_turns_lands_after_the_same_turn(
    twin_pairs: list[tuple[Path, Path]],
) -> None:
    for original, twin in twin_pairs:
        old, new = generation_timeline(original), generation_timeline(twin)
        turns = list(zip(old.turns, new.turns, strict=True))
        for (a, b), (a2, _b2) in itertools.pairwise(turns):
            if a.end_seq is None or b.end_seq is None or a2.first_seq <= a.end_seq + 1:
                continue
            # log-only events between the turns: any cut among them is after turn a
            if a.number == b.number:
                assert same_cut(old, new, a2.first_seq) == b.end_seq + 1
                return
    pytest.fail("no real log has events between two turns")


def test_a_turn_the_target_lacks_or_numbers_otherwise_has_no_cut() -> None:
    from turnline.core.timeline import Turn

    def timeline(*turns: tuple[int, int, int | None]) -> Timeline:
        return Timeline(
            turns=tuple(
                Turn(n, f, f, e, "completed" if e is not None else "open") for n, f, e in turns
            ),
            title=None,
        )

    old = timeline((1, 0, 4), (2, 5, 9))
    assert same_cut(old, timeline((1, 0, 2)), 10) is None  # no turn 2 there
    assert same_cut(old, timeline((1, 0, 2), (3, 3, 6)), 10) is None  # another number
    assert same_cut(old, timeline((1, 0, 2), (2, 3, None)), 10) is None  # still open
    assert same_cut(old, timeline((1, 0, 2), (2, 3, 6)), 10) == 7
    assert same_cut(old, timeline(), 3) is None  # inside turn 1


def test_a_big_generation_is_read_from_its_index(
    twin_pairs: list[tuple[Path, Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from turnline.core import index, indexcache

    original = next(o for o, _t in twin_pairs if len(generation_timeline(o).turns) > 1)
    whole = generation_timeline(original)
    indexed: list[Path] = []
    real = indexcache.cached_index

    def spy(path: Path, **kwargs: object) -> index.IndexedSession:
        indexed.append(path)
        return real(path)

    monkeypatch.setattr(index, "INDEX_THRESHOLD", 1)
    monkeypatch.setattr(indexcache, "cached_index", spy)
    assert generation_timeline(original) == whole
    assert indexed == [original]
