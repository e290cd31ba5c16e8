"""Issue 23: logs that share an id are told apart in `turnline usage` and `turnline
search` (text) by the tree's short id (`core.ids.short_ids`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from turnline.cli.main import main
from turnline.core.ids import log_labels, short_ids

from .test_cli import HEADER, turn, write

TWIN = "{{sessionId}}"


def twins(tmp_path: Path) -> Path:
    """Two copied logs claiming one id (in `acp/cancel` and `acp/handshake`), and one
    log with an id of its own."""
    root = tmp_path / "root"
    twin = {**HEADER, "id": TWIN}
    write(root / "acp" / "cancel" / "session.jsonl", twin, turn(0, 1, "zebracorn cancel"))
    write(root / "acp" / "handshake" / "session.jsonl", twin, turn(0, 1, "zebracorn shake"))
    write(root / "solo" / "session.jsonl", HEADER, turn(0, 1, "zebracorn alone"))
    return root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out, _ = capsys.readouterr()
    return code, out


def test_log_labels_keep_unique_ids_and_tell_twins_apart(tmp_path: Path) -> None:
    root = twins(tmp_path)
    cancel = root / "acp" / "cancel" / "session.jsonl"
    shake = root / "acp" / "handshake" / "session.jsonl"
    solo = root / "solo" / "session.jsonl"
    pairs = [(TWIN, cancel), (TWIN, shake), ("aaaa-parent", solo)]
    labels = log_labels(pairs)
    shorts = short_ids(pairs)
    assert labels == {cancel: "{{sessio@cancel", shake: "{{sessio@handshake", solo: "aaaa-parent"}
    assert labels[cancel] == shorts[cancel] and labels[shake] == shorts[shake]


def test_usage_text_tells_logs_sharing_an_id_apart(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    code, out = run(capsys, "usage", str(twins(tmp_path)))
    assert code == 0
    labels = [ln.split()[-1] for ln in out.splitlines()[1:]]
    assert sorted(labels) == ["aaaa-parent", "total", "{{sessio@cancel", "{{sessio@handshake"]


def test_search_text_tells_logs_sharing_an_id_apart(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    code, out = run(capsys, "search", str(twins(tmp_path)), "zebracorn")
    assert code == 0
    heads = [ln for ln in out.splitlines() if not ln.startswith("    ")]
    assert len(heads) == 3
    shown = sorted(ln.split("  ")[1] for ln in heads)
    assert shown == ["aaaa-par", "{{sessio@cancel", "{{sessio@handshake"]
