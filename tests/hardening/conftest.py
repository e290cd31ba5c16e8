"""Fixtures of the hardening suite: the 50 MB line (built once) and the whole bad corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from .corpus import BadCase, build_corpus, build_hostile_root, write_big_line_log


@pytest.fixture(scope="session")
def big_line_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A valid log whose one tool result is a 50 MB line; generated once per session."""
    return write_big_line_log(tmp_path_factory.mktemp("big") / "session.jsonl")


@pytest.fixture(scope="session")
def corpus_root(
    tmp_path_factory: pytest.TempPathFactory, big_line_log: Path
) -> tuple[Path, dict[str, tuple[list[Path], BadCase]]]:
    """One root holding healthy sessions and every bad case (read-only for tests)."""
    root = tmp_path_factory.mktemp("corpus")
    return root, build_corpus(root, big_line_log)


@pytest.fixture(scope="session")
def hostile_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root of sessions with hostile ids, titles, messages and tool output."""
    return build_hostile_root(tmp_path_factory.mktemp("hostile"))
