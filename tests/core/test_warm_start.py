"""A warm `turnline ROOT` (issue 12): the pool worker that lists the root from the
catalog's summary cache also links the lineage; the root's lineage is then the one
`build_lineage` makes of the summaries, problems included."""

from __future__ import annotations

from pathlib import Path

import pytest
from turnline.core.catalog import Catalog
from turnline.core.lineage import build_lineage
from turnline.core.root import (
    SessionRoot,
    _cached_states,
    _cached_states_packed,
    _plain_path,
    _unpack_cached,
)


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def _warm_root(path: Path) -> SessionRoot:
    """The root as `BackgroundScan.result` takes the cached task's answer."""
    packed = _cached_states_packed(str(path))
    assert packed is not None
    listing, links = _unpack_cached(packed)
    assert links is not None  # linked in the worker
    root = SessionRoot(path)
    root._install(*listing, links=links)
    return root


def _same_as_built(root: SessionRoot) -> None:
    lineage = root.lineage()
    built = build_lineage(root.summaries())
    assert lineage is not built  # the worker's links were taken...
    assert lineage == built  # ...and give the same forest
    assert lineage.problems == built.problems
    assert lineage.parent_of == built.parent_of


def test_fixture_lineage_from_the_worker_links(fixtures_root: Path) -> None:
    """151 real logs: repeated ids, missing parents, a self-parent."""
    Catalog(fixtures_root).refresh()
    root = _warm_root(fixtures_root)
    assert len(root.summaries()) == 151
    _same_as_built(root)
    assert any(root.lineage().problems.values())  # problems crossed over too


def test_generated_root_lineage_from_the_worker_links(tmp_path: Path) -> None:
    from benchmarks.generate import write_wide_root

    wide = write_wide_root(tmp_path / "wide", sessions=300)
    assert wide.forks and wide.subagents
    Catalog(wide.path).refresh()
    root = _warm_root(wide.path)
    _same_as_built(root)
    assert root.lineage().parent_of  # forks and subagents hang under their parents
    cached = _cached_states(str(wide.path))
    assert cached is not None
    assert [(str(s.path), s.to_state()) for s in root.summaries()] == [
        (p, state) for p, _sid, state in cached[0]
    ]


def test_an_updated_summary_drops_the_linked_lineage(tmp_path: Path) -> None:
    from benchmarks.generate import write_wide_root

    wide = write_wide_root(tmp_path / "wide", sessions=60)
    Catalog(wide.path).refresh()
    root = _warm_root(wide.path)
    first = root.lineage()
    summary = root.summaries()[0]
    root.remove(summary.path)
    assert root.lineage() is not first
    assert summary.path not in root.lineage().parent_of.values()
    _same_as_built(root)


@pytest.mark.parametrize(
    ("path", "plain"),
    [
        ("/r/p/s/session.jsonl", True),
        ("/r//p/session.jsonl", False),
        ("/r/./p/session.jsonl", False),
        ("/r/p/", False),
        ("/r/p/.", False),
        ("r/p/session.jsonl", False),
    ],
)
def test_only_paths_path_keeps_as_written_are_linked_there(path: str, plain: bool) -> None:
    assert _plain_path(path) is plain
    if plain:
        assert str(Path(path)) == path
