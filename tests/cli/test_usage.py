"""`turnline usage`: JSON shape, text table, SESSION limits, price-table errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from turnline.cli.main import main
from turnline.core.root import SessionRoot
from turnline.core.usage import root_usage

from tests.core.test_usage import build_root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


U_KEYS = {
    "inputTokens",
    "outputTokens",
    "cacheReadTokens",
    "cacheWriteTokens",
    "reasoningTokens",
    "calls",
    "turns",
    "toolCalls",
    "errors",
    "activeMs",
    "cost",
    "byModel",
    "unmeteredCalls",
}


def test_json_shape_and_totals(tmp_path: Path, capsys: Any) -> None:
    build_root(tmp_path, 1, False)
    code, out, err = run(capsys, "usage", str(tmp_path), "--json")
    assert code == 0, err
    doc = orjson.loads(out)
    assert set(doc) == {"sessions", "totals", "inheritedFromOutside", "unpricedModels"}
    assert len(doc["sessions"]) == 5
    for s in doc["sessions"]:
        assert set(s) == {
            "id",
            "path",
            "parentSession",
            "seedLength",
            "own",
            "inherited",
            "subtree",
        }
        assert set(s["own"]) == U_KEYS
    assert set(doc["totals"]) == U_KEYS
    assert doc["totals"]["calls"] == sum(s["own"]["calls"] for s in doc["sessions"])
    assert doc["totals"]["cost"] is None
    assert doc["unpricedModels"]  # no table: every model is unpriced


def test_prices_and_session_limit(tmp_path: Path, capsys: Any) -> None:
    root = tmp_path / "root"
    build_root(root, 2, False)
    prices = tmp_path / "p.toml"
    prices.write_text(
        "".join(
            f'[{p}."{m}"]\ninput = 1\noutput = 2\ncacheRead = 0.5\ncacheWrite = 1\n'
            for p, m in [("deepseek", "deepseek-chat"), ("deepseek", "deepseek-reasoner")]
        )
    )
    code, out, err = run(capsys, "usage", str(root), "c", "--prices", str(prices), "--json")
    assert code == 0, err
    doc = orjson.loads(out)
    assert {s["id"] for s in doc["sessions"]} == {"c", "g"}
    assert doc["unpricedModels"] in ([], ["openai/gpt-x"], ["unknown"], ["openai/gpt-x", "unknown"])
    c = next(s for s in doc["sessions"] if s["id"] == "c")
    assert doc["inheritedFromOutside"]["calls"] == c["inherited"]["calls"]
    for name, row in c["own"]["byModel"].items():
        if name.startswith("deepseek/"):
            expected = (
                row["inputTokens"]
                + 2 * row["outputTokens"]
                + 0.5 * row["cacheReadTokens"]
                + row["cacheWriteTokens"]
            ) / 1e6
            assert row["cost"] == pytest.approx(expected)
        else:
            assert row["cost"] is None


def test_text_table_sorted_with_totals(tmp_path: Path, capsys: Any) -> None:
    build_root(tmp_path, 4, False)
    code, out, _ = run(capsys, "usage", str(tmp_path))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[-1] == "session"
    rows = [ln for ln in lines[1:] if not ln.startswith(("warning", "inherited"))]
    assert rows[-1].endswith("total")
    usage = {s.id: s.own.total_tokens for s in root_usage(SessionRoot(tmp_path)).sessions}
    order = [ln.split()[-1] for ln in rows[:-1]]
    assert order == sorted(usage, key=lambda k: usage[k], reverse=True)
    for by in ("model", "project", "day"):
        code, out, _ = run(capsys, "usage", str(tmp_path), "--by", by)
        assert code == 0 and out.splitlines()[0].split()[-1] == by


def test_malformed_prices_is_a_clear_error(tmp_path: Path, capsys: Any) -> None:
    build_root(tmp_path / "r", 0, False)
    bad = tmp_path / "bad.toml"
    bad.write_text("[a.b]\ninput = 1\noutput = 'x'\ncacheRead = 1\ncacheWrite = 1\n")
    code, out, err = run(capsys, "usage", str(tmp_path / "r"), "--prices", str(bad))
    assert code == 1
    assert "line 3" in err and "a/b.output" in err and "Traceback" not in err
    code, out, _ = run(capsys, "usage", str(tmp_path / "r"), "--prices", str(bad), "--json")
    assert code == 1 and orjson.loads(out)["error"]["code"] == "BAD_PRICES"
