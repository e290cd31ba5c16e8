"""Shared fixtures: the real dsh logs under ../shared/fixtures/dsh."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(
    os.environ.get("TURNLINE_FIXTURES", REPO.parent / "shared" / "fixtures" / "dsh")
).resolve()  # roots are resolved when opened: compare like with like

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
        raise RuntimeError(f"no dsh fixtures under {FIXTURES}: the shared/ folder is missing")
    return logs


@pytest.fixture(scope="session")
def fixtures_root() -> Path:
    """The folder of real dsh logs."""
    assert fixture_logs()
    return FIXTURES
