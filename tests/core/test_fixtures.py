"""Every real dsh log under shared/fixtures/dsh loads through the CLI with the right event
count, turn boundaries and lineage, and its oddities reported as problems.

The expectations come from `_decode`, a deliberately plain decoder written here from
the format doc, not from the core: if the core and this disagree, one of them is wrong.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from turnline.cli import main
from turnline.core.root import SessionRoot
from turnline.core.summary import summarize

from ..conftest import fixture_logs

CROSS_SESSION = {"duplicate-id", "missing-parent", "seed-mismatch", "lineage-cycle"}


@dataclass
class Decoded:
    """What a plain reading of one log says."""

    header: dict[str, Any]
    seqs: list[int] = field(default_factory=list)
    turn_starts: list[int] = field(default_factory=list)
    turn_ends: list[int] = field(default_factory=list)
    odd_turn_ends: list[int] = field(default_factory=list)

    def expected_kinds(self) -> set[str]:
        kinds = set()
        if "version" not in self.header:
            kinds.add("missing-version")
        if "delegationDepth" not in self.header:
            kinds.add("legacy-header")  # dsh's current reader refuses such a header
        if self.seqs != list(range(len(self.seqs))):
            kinds.add("seq-gap")
        if self.odd_turn_ends:
            kinds.add("odd-event")
        return kinds


def _decode(path: Path) -> Decoded:
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"", f"{path}: fixture has a torn tail"
    decoded = Decoded(json.loads(lines[0]))
    for line in lines[1:-1]:
        record = json.loads(line)
        rtype = record["type"]
        if rtype in ("text-chunks", "reasoning-chunks", "tool-call-chunks"):
            members = record["data"]["args" if rtype == "tool-call-chunks" else "texts"]
            decoded.seqs.extend(record["seq0"] + k for k in range(len(members)))
            continue
        decoded.seqs.append(record["seq"])
        if rtype == "turn/start":
            decoded.turn_starts.append(record["seq"])
        elif rtype == "turn/end":
            decoded.turn_ends.append(record["seq"])
            reason = (record.get("data") or {}).get("reason")
            if not (isinstance(reason, dict) and isinstance(reason.get("kind"), str)):
                decoded.odd_turn_ends.append(record["seq"])
    return decoded


def _run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main([*argv, "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return json.loads(out)


@pytest.fixture(scope="module")
def decoded() -> dict[Path, Decoded]:
    return {path: _decode(path) for path in fixture_logs()}


def test_ls_lists_every_fixture_with_exact_counts(
    fixtures_root: Path, decoded: dict[Path, Decoded], capsys: pytest.CaptureFixture[str]
) -> None:
    entries = _run_json(capsys, "ls", str(fixtures_root))
    assert len(decoded) == 151
    assert sorted(Path(e["path"]) for e in entries) == sorted(decoded)
    claims = Counter(d.header["id"] for d in decoded.values())
    for entry in entries:
        expect = decoded[Path(entry["path"])]
        where = entry["path"]
        assert entry["id"] == expect.header["id"], where
        assert entry["events"] == len(expect.seqs), where
        assert entry["lastSeq"] == (expect.seqs[-1] if expect.seqs else None), where
        assert entry["parentSession"] == expect.header.get("parentSession"), where
        assert entry["seedLength"] == expect.header.get("seedLength"), where
        assert entry["openTurn"] == (
            bool(expect.turn_starts) and expect.turn_starts[-1] > max(expect.turn_ends, default=-1)
        ), where
        kinds = {p["kind"] for p in entry["problems"]}
        wanted = expect.expected_kinds()
        if claims[expect.header["id"]] > 1:
            wanted.add("duplicate-id")
        assert kinds == wanted, where
        assert "missing-parent" not in kinds, where  # every parentSession resolves


@pytest.mark.parametrize("index", range(151))
def test_show_reports_turns_and_problems(
    fixtures_root: Path,
    decoded: dict[Path, Decoded],
    capsys: pytest.CaptureFixture[str],
    index: int,
) -> None:
    path = sorted(decoded)[index]
    expect = decoded[path]
    # The scenario group (acp/, web/, ...) as ROOT: every parent lives in its group, and
    # scanning one group per call instead of all 151 logs keeps this fast.
    group = fixtures_root / path.relative_to(fixtures_root).parts[0]
    shown = _run_json(capsys, "show", str(group), str(path))
    session = shown["session"]
    assert session["path"] == str(path)
    assert session["events"] == len(expect.seqs)
    turns = shown["turns"]
    assert [t["endSeq"] for t in turns if t["endSeq"] is not None] == expect.turn_ends
    assert [t["turnStartSeq"] for t in turns if t["turnStartSeq"] is not None] == expect.turn_starts
    # Forkable: a turn/end within the contiguous prefix (seqs[i] == i up to it).
    contiguous = next((i for i, seq in enumerate(expect.seqs) if seq != i), len(expect.seqs))
    assert [t["forkable"] for t in turns] == [
        t["endSeq"] is not None and t["endSeq"] < contiguous for t in turns
    ]
    assert shown["seedLength"] == (expect.header.get("seedLength") or 0)
    kinds = {p["kind"] for p in session["problems"]}
    assert kinds - {"duplicate-id"} == expect.expected_kinds()
    assert not kinds & {"missing-parent", "seed-mismatch", "lineage-cycle"}
    seqs = {p["seq"] for p in session["problems"] if p["kind"] == "odd-event"}
    assert seqs == set(expect.odd_turn_ends)


def test_named_oddities_are_reported(fixtures_root: Path) -> None:
    root = SessionRoot(fixtures_root)
    by_rel = {str(s.path.relative_to(fixtures_root)): s for s in root.scan()}

    def kinds(rel: str) -> list[str]:
        return [str(p.kind) for p in root.load(by_rel[rel]).problems]

    assert kinds("web/cordis-tool-round/session.jsonl").count("seq-gap") == 8
    for suite in ("suite_authored-error", "suite_blocked-log"):
        problems = root.load(by_rel[f"acp-snapshot-suite/{suite}/session.jsonl"]).problems
        gap = [p for p in problems if p.kind == "seq-gap"]
        assert len(gap) == 1 and gap[0].seq == 1 and "not 0" in gap[0].message
    odd = [
        p
        for p in root.load(by_rel["acp-snapshot-suite/suite_authored-error/session.jsonl"]).problems
        if p.kind == "odd-event"
    ]
    assert len(odd) == 1 and "model exploded" in odd[0].message
    assert "missing-version" in kinds("acp-snapshot-suite/suite_pin-turn/session.jsonl")


@pytest.mark.parametrize(
    "child", ["acp/subagent-fork-in-process/session.1.jsonl", "acp/subagent-mixed/session.2.jsonl"]
)
def test_seeded_children_resolve_to_their_parent_and_match_its_prefix(
    fixtures_root: Path, child: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = SessionRoot(fixtures_root)
    root.scan()
    child_path = fixtures_root / child
    assert root.lineage().parent_of[child_path] == child_path.parent / "session.jsonl"
    loaded = root.load(root.resolve(str(child_path)))
    assert loaded.parent_path == child_path.parent / "session.jsonl"
    seed = loaded.summary.seed_length
    assert seed is not None and seed > 0
    parent = _decode(child_path.parent / "session.jsonl")
    assert parent.header["id"] == loaded.summary.parent_session
    assert not [p for p in loaded.problems if p.kind == "seed-mismatch"]
    shown = _run_json(capsys, "show", str(fixtures_root), str(child_path))
    assert shown["seedLength"] == seed


def test_every_parent_session_resolves(fixtures_root: Path) -> None:
    root = SessionRoot(fixtures_root)
    summaries = root.scan()
    lineage = root.lineage()
    children = [s for s in summaries if s.parent_session is not None]
    assert len(children) >= 20
    for child in children:
        parent = lineage.parent_of[child.path]
        assert summarize(parent).id == child.parent_session


def test_fast_listing_agrees_with_a_full_read(fixtures_root: Path) -> None:
    root = SessionRoot(fixtures_root)
    for summary in root.scan():
        assert summary.header is not None, summary.path
        full = root.load(summary).summary
        fast = summarize(summary.path)
        assert (fast.events, fast.last_seq, fast.turns, fast.open_turn, fast.title) == (
            full.events,
            full.last_seq,
            full.turns,
            full.open_turn,
            full.title,
        ), summary.path


def test_the_shipped_fixtures_are_the_shared_ones() -> None:
    """A plain clone tests against the copy it ships; it must be the shared fixtures,
    byte for byte, with dsh's notice, so no test passes on a stale copy."""
    from ..conftest import SHARED, SHIPPED

    shipped = sorted(p.relative_to(SHIPPED) for p in SHIPPED.rglob("*") if p.is_file())
    assert len([p for p in shipped if p.suffix == ".jsonl"]) == 151
    assert Path("NOTICE.md") in shipped
    if not SHARED.is_dir():
        return  # a clone on its own: the copy is all there is
    shared = sorted(p.relative_to(SHARED) for p in SHARED.rglob("*") if p.is_file())
    assert shipped == shared
    for rel in shipped:
        assert (SHIPPED / rel).read_bytes() == (SHARED / rel).read_bytes(), rel


def test_a_clone_alone_finds_the_shipped_fixtures(tmp_path: Path) -> None:
    """Without the shared folder beside the checkout, conftest picks the shipped copy."""
    import os
    import subprocess
    import sys

    code = (
        "import os, sys; sys.path.insert(0, os.getcwd()); "
        "import tests.conftest as c; print(c.FIXTURES == c.SHIPPED.resolve(), "
        "len(c.fixture_logs()))"
    )
    env = {k: v for k, v in os.environ.items() if k != "TURNLINE_FIXTURES"}
    repo = Path(__file__).resolve().parents[2]
    clone = tmp_path / "clone"
    (clone / "tests").mkdir(parents=True)
    (clone / "tests" / "conftest.py").write_bytes((repo / "tests" / "conftest.py").read_bytes())
    (clone / "tests" / "__init__.py").write_bytes(b"")
    (clone / "tests" / "data").symlink_to(repo / "tests" / "data")
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=clone, env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["True", "151"]
