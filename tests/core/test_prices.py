"""The price table: per model, UTC windows, a missing model, malformed files."""

from __future__ import annotations

from pathlib import Path

import pytest
from turnline.core.model import SessionEvent
from turnline.core.prices import load_prices
from turnline.core.usage import fold_events
from turnline.core.xdg import ConfigError

TABLE = """\
[deepseek.deepseek-chat]
input = 0.27
output = 1.10
cacheRead = 0.07
cacheWrite = 0.0

[[deepseek.deepseek-chat.windows]]
from = "16:30"
to = "00:30"
input = 0.135
output = 0.55
"""

DAY = 86_400_000


def msg(seq: int, time: int, model: str, inp: int, out: int, cache: int = 0) -> SessionEvent:
    provider, name = model.split("/")
    return SessionEvent(
        "assistant/message",
        seq,
        time,
        {
            "turn": seq,
            "step": 0,
            "message": {"source": {"provider": provider, "model": name}},
            "usage": {"inputTokens": inp, "outputTokens": out, "cacheReadTokens": cache},
        },
    )


def table(tmp_path: Path, text: str = TABLE) -> Path:
    path = tmp_path / "prices.toml"
    path.write_text(text)
    return path


def test_base_price_and_window(tmp_path: Path) -> None:
    prices = load_prices(table(tmp_path))
    noon = 20 * DAY + 12 * 3_600_000
    night = 20 * DAY + 23 * 3_600_000  # inside the wrapping 16:30-00:30 window
    early = 20 * DAY + 15 * 60_000  # 00:15, still inside
    late = 20 * DAY + 30 * 60_000  # 00:30, the window's exclusive end
    events = [
        msg(0, noon, "deepseek/deepseek-chat", 1_000_000, 1_000_000, 1_000_000),
        msg(1, night, "deepseek/deepseek-chat", 1_000_000, 0),
        msg(2, early, "deepseek/deepseek-chat", 0, 1_000_000),
        msg(3, late, "deepseek/deepseek-chat", 1_000_000, 0),
    ]
    own = fold_events(events, 0).own()
    cost = own.cost(prices)
    assert cost == pytest.approx(0.27 + 1.10 + 0.07 + 0.135 + 0.55 + 0.27)
    doc = own.to_json_dict(prices)
    assert doc["byModel"]["deepseek/deepseek-chat"]["cost"] == pytest.approx(cost)


def test_missing_model_makes_cost_null(tmp_path: Path) -> None:
    prices = load_prices(table(tmp_path))
    events = [
        msg(0, 0, "deepseek/deepseek-chat", 10, 10),
        msg(1, 0, "other/model", 10, 10),
    ]
    own = fold_events(events, 0).own()
    doc = own.to_json_dict(prices)
    assert doc["cost"] is None
    assert doc["byModel"]["deepseek/deepseek-chat"]["cost"] is not None
    assert doc["byModel"]["other/model"]["cost"] is None
    assert own.unpriced(prices) == {"other/model"}
    assert own.to_json_dict(None)["cost"] is None  # no table: no cost


def test_no_default_file_is_no_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert load_prices() is None
    (tmp_path / "turnline").mkdir()
    (tmp_path / "turnline" / "prices.toml").write_text(TABLE)
    prices = load_prices()
    assert prices is not None and "deepseek/deepseek-chat" in prices.models


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("[a.b]\ninput = 1\noutput = 1\ncacheRead = 1\n", 1, "missing 'cacheWrite'"),
        ('[a.b]\ninput = 1\noutput = "x"\ncacheRead = 1\ncacheWrite = 1\n', 3, "a/b.output"),
        ("[a.b]\ninput = 1\noutput = 1\ncacheRead = 1\ncacheWrite = 1\nbogus = 2\n", 6, "bogus"),
        (
            "[a.b]\ninput = 1\noutput = 1\ncacheRead = 1\ncacheWrite = 1\n"
            '[[a.b.windows]]\nfrom = "25:00"\nto = "01:00"\n',
            7,
            "HH:MM",
        ),
        ("[a.b]\ninput = 1\noutput = = 1\n", 3, "not valid TOML"),
        ("a = 3\n", 1, "table of models"),
    ],
)
def test_malformed_file_names_the_line(tmp_path: Path, text: str, line: int, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_prices(table(tmp_path, text))
    message = info.value.message
    assert words in message
    assert f"line {line}" in message


def test_missing_given_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_prices(tmp_path / "nope.toml")
