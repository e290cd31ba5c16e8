"""`turnline diff`, `export` and `resume-cmd` end to end (exit codes, JSON, messages)."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import orjson
import pytest
from turnline.cli.main import main

from ..core.rich_logs import forked_pair


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_diff_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    forked_pair(tmp_path)
    code, out, _ = _run(capsys, "diff", str(tmp_path), "left", "right", "--json")
    assert code == 0
    payload = orjson.loads(out)
    assert list(payload) == ["ancestor", "divergedAt", "splitTurn", "left", "right", "rows"]
    assert payload["splitTurn"] is None  # a turnline fork splits at a turn/end
    assert payload["ancestor"]["id"] == "parent-1"
    assert payload["divergedAt"] == 8
    assert payload["left"]["files"] == ["src/left.py"]
    assert payload["right"]["toolCalls"] == {"edit": 2}
    assert payload["right"]["tokens"] == 55  # (20 + 2) + (30 + 3)
    assert [r["left"] is None for r in payload["rows"]] == [False, True]


def test_diff_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    forked_pair(tmp_path)
    code, out, _ = _run(capsys, "diff", str(tmp_path), "left", "right")
    assert code == 0
    assert out.startswith(
        "ancestor parent-1, diverged at seq 8 (shared: 1 turn)"
    )  # issue 23: was "1 turns"
    assert "\x1b" not in out


def test_diff_missing_parent_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = forked_pair(tmp_path)
    root.resolve("parent-1").path.unlink()
    code, out, err = _run(capsys, "diff", str(tmp_path), "left", "right")
    assert code == 1 and out == ""
    assert "share no ancestor" in err and "Traceback" not in err
    code, out, _ = _run(capsys, "diff", str(tmp_path), "left", "right", "--json")
    assert code == 1
    assert orjson.loads(out)["error"]["code"] == "NO_ANCESTOR"


def test_export_to_stdout_and_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logs = tmp_path / "logs"
    forked_pair(logs)
    code, out, _ = _run(capsys, "export", str(logs), "left", "--format", "md", "--own-only")
    assert code == 0 and "forked from parent-1 at turn 1 (seq 7)" in out
    target = tmp_path / "left.html"
    code, _, err = _run(capsys, "export", str(logs), "left", "--format", "html", "-o", str(target))
    assert code == 0 and f"wrote {target}" in err
    assert target.read_text().startswith("<!DOCTYPE html>")
    code, _, err = _run(capsys, "export", str(logs), "left", "--format", "html", "-o", str(target))
    assert code == 1 and "exists" in err
    code, _, _ = _run(
        capsys, "export", str(logs), "left", "--format", "md", "-o", str(target), "--force"
    )
    assert code == 0 and target.read_text().startswith("# ")
    assert sorted(os.listdir(tmp_path)) == ["left.html", "logs"]


def test_resume_cmd_quotes_hostile_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = tmp_path / "logs"
    root = forked_pair(logs)
    hostile = "x'; touch pwned"
    root.fork("parent-1", 7, hostile)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    code, out, _ = _run(capsys, "resume-cmd", str(logs), hostile)
    assert code == 0
    assert shlex.split(out) == ["dsh", "--profile", "tui", "--resume", hostile]
    (tmp_path / "config" / "turnline").mkdir(parents=True)
    (tmp_path / "config" / "turnline" / "config.toml").write_text(
        "[resume]\ncommand = \"printf '%s|' {id} {cwd}\"\n"
    )
    code, out, _ = _run(capsys, "resume-cmd", str(logs), hostile)
    ran = subprocess.run(["sh", "-c", out], cwd=tmp_path, capture_output=True, text=True)
    assert ran.stdout == f"{hostile}|/home/dev/app|"
    assert not (tmp_path / "pwned").exists()
    (tmp_path / "config" / "turnline" / "config.toml").write_text("[resume\n")
    code, _, err = _run(capsys, "resume-cmd", str(logs), hostile)
    assert code == 1 and "config.toml" in err and "Traceback" not in err


def test_a_v0_child_of_a_migrated_parent_shows_and_diffs_by_turns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo's V0 subagent child (seed in its parent's V0 seqs) against its parent
    shown from the V5 generation dsh migrated it to."""
    from turnline.demo import build_demo_root

    demo = build_demo_root(tmp_path / "demo", now_ms=1_790_000_000_000)
    child, parent = demo.roles["subagent-fork"], demo.roles["root"]
    code, out, _ = _run(capsys, "show", str(demo.path), child.parent.name)
    assert code == 0
    assert "(seed 807 of its session.jsonl, subagent)" in out
    assert "at seq 806 of its session.jsonl ──" in out
    code, out, _ = _run(capsys, "tree", str(demo.path))
    assert code == 0
    assert "[seed 807 of its session.jsonl · subagent]" in out
    assert "[seed 46] " in out  # a V5 child of the V5 generation: its seqs are that log's
    code, out, _ = _run(
        capsys, "diff", str(demo.path), child.parent.name, parent.parent.name, "--json"
    )
    assert code == 0, out
    result = orjson.loads(out)
    rows = [
        (r["left"] and r["left"]["turn"], r["right"] and r["right"]["turn"]) for r in result["rows"]
    ]
    assert rows == [(5, 5), (None, 6)]  # the 4 shared turns left out
    assert result["divergedAt"] == 74  # after turn 4 of the V5 generation (seqs 60-73)
    assert (result["left"]["turns"], result["right"]["turns"]) == (1, 2)
    code, out, _ = _run(capsys, "export", str(demo.path), child.parent.name, "--format", "md")
    assert code == 0
    assert "at turn 4 (seq 806 of its session.jsonl)" in out
