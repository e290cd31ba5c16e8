"""Shared fixtures: the 151 real dsh logs.

They are read from `$TURNLINE_FIXTURES` when set, else from `../shared/fixtures/dsh`
beside the checkout when it is there (the project's shared folder), else from the copy
this repository ships in `tests/data/dsh-fixtures` (so a plain clone passes; a test
checks that the copy is the shared folder's, byte for byte, whenever both exist).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parent.parent
#: The fixtures this repository ships (dsh's MIT notice inside).
SHIPPED = REPO / "tests" / "data" / "dsh-fixtures"
#: The project's shared copy, when the checkout sits beside it.
SHARED = REPO.parent / "shared" / "fixtures" / "dsh"


def _fixtures_folder() -> Path:
    chosen = os.environ.get("TURNLINE_FIXTURES")
    if chosen:
        return Path(chosen)
    return SHARED if SHARED.is_dir() else SHIPPED


#: Roots are resolved when opened: compare like with like.
FIXTURES = _fixtures_folder().resolve()

settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ci")


def fixture_logs() -> list[Path]:
    """Every real dsh log; fails loudly if the fixtures are not where they should be."""
    logs = sorted(FIXTURES.rglob("*.jsonl"))
    if not logs:
        raise RuntimeError(
            f"no dsh fixtures under {FIXTURES}: set TURNLINE_FIXTURES to a folder of dsh "
            f"logs, or restore {SHIPPED.relative_to(REPO)} (git checkout -- tests/data)"
        )
    return logs


@pytest.fixture(scope="session", autouse=True)
def _own_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every test, and every command a test runs, keeps its caches (the kept indexes of
    big logs, `core.indexcache`; catalogs) in one folder of this run, never in the
    user's `~/.cache`. A test that needs a cache of its own sets `$XDG_CACHE_HOME` too."""
    folder = tmp_path_factory.mktemp("xdg-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(folder))
        yield folder


@pytest.fixture(scope="session")
def fixtures_root() -> Path:
    """The folder of real dsh logs."""
    assert fixture_logs()
    return FIXTURES


@pytest.fixture
def pool() -> Iterator[ProcessPoolExecutor]:
    """A fresh pool, started as `cmd_open` starts it (this test process has one thread),
    and stopped after the test: no test sees another's (maybe broken) pool."""
    from turnline.core import parallel

    parallel.stop_pool()
    assert threading.active_count() == 1
    started = parallel.start_pool(2)
    assert started is not None
    yield started
    parallel.stop_pool()
