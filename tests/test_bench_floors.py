"""The benchmark's floors read every line of the big log, and refuse a broken one.

`make bench` prints the cold `show --json` beside floors that say what any reader
which checks every record must at least pay on the machine it runs on. A floor that
skipped part of the file, or did not check the JSON it reads, would print a figure
too low to mean that: these tests run the floor scripts on a log of several blocks.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.__main__ import MSGSPEC, MSGSPEC_BLOCKS, MSGSPEC_PARALLEL
from benchmarks.generate import write_big_log

FLOORS = {"per line": MSGSPEC, "per line, every core": MSGSPEC_PARALLEL, "blocks": MSGSPEC_BLOCKS}


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log past two 8 MiB blocks, so the block floor cuts it more than once."""
    path = tmp_path_factory.mktemp("floors") / "session.jsonl"
    write_big_log(path, events=150_000)
    assert path.stat().st_size > 2 * (8 << 20)
    return path


def _run(script: str, tmp_path: Path, log: Path) -> subprocess.CompletedProcess[str]:
    code = tmp_path / "floor.py"
    code.write_text(script)
    return subprocess.run(
        [sys.executable, str(code), str(log)], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("name", FLOORS)
def test_a_floor_reads_every_line(name: str, log: Path, tmp_path: Path) -> None:
    done = _run(FLOORS[name], tmp_path, log)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == log.read_bytes().count(b"\n")


def test_the_block_floor_checks_the_json_of_a_line_deep_in_the_log(
    log: Path, tmp_path: Path
) -> None:
    data = bytearray(log.read_bytes())
    # A line in the second half (the forked child's share), its closing brace gone.
    at = data.index(b"}\n", len(data) * 3 // 4)
    del data[at]
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(bytes(data))
    done = _run(MSGSPEC_BLOCKS, tmp_path, broken)
    assert done.returncode != 0
