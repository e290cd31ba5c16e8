"""The CLI over the whole bad-input corpus: listing and tree exit 0, never a traceback.

The real `turnline` program runs as a subprocess, once per command over one root that
holds every case (not once per case), with read-override capabilities dropped so the
mode-000 log is really unreadable even when the suite runs as root.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from turnline.cli import main
from turnline.core.model import ProblemKind

from .corpus import (
    HEALTHY_IDS,
    UNREADABLE_ID,
    BadCase,
    build_healthy,
    build_odd_shapes,
    drop_dac_override_in_child,
)

LOAD_ONLY = frozenset({ProblemKind.SEED_MISMATCH})
CROSS_SESSION = frozenset(
    {ProblemKind.SEED_MISMATCH, ProblemKind.DUPLICATE_ID, ProblemKind.LINEAGE_CYCLE}
)
Corpus = tuple[Path, dict[str, tuple[list[Path], BadCase]]]


def turnline(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the installed CLI the way a user does (`python -m turnline.cli`)."""
    return subprocess.run(
        [sys.executable, "-m", "turnline.cli", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        preexec_fn=drop_dac_override_in_child,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "120", "LANG": "C.UTF-8"},
    )


@pytest.fixture(scope="module")
def ls_json(corpus_root: Corpus) -> subprocess.CompletedProcess[str]:
    return turnline("ls", "--json", str(corpus_root[0]))


def test_ls_json_exits_zero_and_names_every_problem(
    corpus_root: Corpus, ls_json: subprocess.CompletedProcess[str]
) -> None:
    _, cases = corpus_root
    assert ls_json.returncode == 0, ls_json.stderr
    assert "Traceback" not in ls_json.stderr
    entries: dict[str, dict[str, Any]] = {e["path"]: e for e in json.loads(ls_json.stdout)}
    for name, (paths, case) in cases.items():
        for path in paths:
            kinds = {p["kind"] for p in entries[str(path)]["problems"]}
            assert kinds == {str(k) for k in case.kinds - LOAD_ONLY}, (name, entries[str(path)])
    healthy = [e for e in entries.values() if e["id"] in HEALTHY_IDS]
    assert len(healthy) == len(HEALTHY_IDS)
    assert all(e["problems"] == [] for e in healthy)
    unreadable = next(e for e in entries.values() if e["id"] == UNREADABLE_ID)
    assert "Permission denied" in unreadable["problems"][0]["message"]


@pytest.mark.parametrize("args", [("tree",), ("ls",)])
def test_text_commands_exit_zero_without_traceback(corpus_root: Corpus, args: tuple[str]) -> None:
    rootdir, _ = corpus_root
    out = turnline(*args, str(rootdir))
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr and "Traceback" not in out.stdout
    for sid in ("healthy-raw", "healthy-child", "cycle-a", "cycle-b"):
        assert sid in out.stdout
    assert not any(ord(c) < 32 and c != "\n" for c in out.stdout)


def test_show_json_on_every_bad_log_reports_its_kinds(
    corpus_root: Corpus, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, cases = corpus_root
    # Cases that need their neighbours are rebuilt in a small root of their own, so a
    # `show` does not rescan the 50 MB line each time; the rest are shown as one-file
    # roots. (The big line itself is shown by the scan/load tests.)
    small = tmp_path / "cross"
    build_healthy(small)
    for name, (paths, case) in cases.items():
        if name in (UNREADABLE_ID, "big-line"):
            continue  # unreadable: in-process we read as root; the subprocesses cover it
        cross = bool(case.kinds & CROSS_SESSION)
        for path in case.build(small) if cross else paths:
            argv = [str(small), str(path)] if cross else [str(path)]
            assert main(["show", "--json", *argv]) == 0, name
            shown = json.loads(capsys.readouterr().out)
            kinds = {p["kind"] for p in shown["session"]["problems"]}
            assert kinds == {str(k) for k in case.kinds}, (name, shown["session"]["problems"])
            # The text view names the same kinds, in plain safe text.
            assert main(["show", *argv]) == 0, name
            text = capsys.readouterr()
            assert all(str(k) in text.out for k in case.kinds), (name, text.out)
            assert "Traceback" not in text.err


def test_bad_roots_fail_with_a_typed_error_not_a_traceback(tmp_path: Path) -> None:
    missing = turnline("ls", "--json", str(tmp_path / "nope"))
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    assert json.loads(missing.stdout)["error"]["code"] == "ROOT_NOT_FOUND"
    plain = tmp_path / "notes.txt"
    plain.write_text("x")
    as_file = turnline("tree", str(plain))
    assert as_file.returncode == 1 and "Traceback" not in as_file.stderr
    assert as_file.stderr.count("\n") == 1 and as_file.stdout == ""


def test_cli_shows_odd_event_shapes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logs = build_odd_shapes(tmp_path)
    for argv in (["ls", str(tmp_path)], ["tree", str(tmp_path)], ["ls", "--json", str(tmp_path)]):
        assert main(argv) == 0
        assert "Traceback" not in capsys.readouterr().err
    for name, path in logs.items():
        for extra in ([], ["--json"]):
            assert main(["show", *extra, str(tmp_path), str(path)]) == 0, name
            out = capsys.readouterr()
            assert "Traceback" not in out.err and out.out, name
