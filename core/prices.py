"""The user's price table: what a million tokens of each bucket cost, per model.

There are no built-in prices (they change, and dsh records none). The table is TOML at
`$XDG_CONFIG_HOME/turnline/prices.toml`, or a file given with `--prices`:

    [deepseek.deepseek-chat]          # provider.model (quote a model with dots)
    input = 0.27                      # per million uncached input tokens
    output = 1.10
    cacheRead = 0.07
    cacheWrite = 0.27

    [[deepseek.deepseek-chat.windows]]  # optional: other prices in a UTC time window
    from = "16:30"                    # HH:MM UTC, inclusive
    to = "00:30"                      # exclusive; may wrap past midnight
    input = 0.135
    output = 0.55                     # buckets not given keep the base price

An event's `time` picks the window. A malformed table is a `ConfigError` naming the line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

import msgspec

from .xdg import ConfigError, config_dir, load_toml

BUCKETS: Final = ("input", "output", "cacheRead", "cacheWrite")
_TIME = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
_PER: Final = 1_000_000


def default_path() -> Path:
    """`$XDG_CONFIG_HOME/turnline/prices.toml`."""
    return config_dir() / "prices.toml"


class Price(msgspec.Struct, frozen=True):
    """Prices per million tokens of each bucket."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    def cost(self, row: list[int]) -> float:
        """The cost of [input, output, cacheRead, cacheWrite, ...] tokens."""
        return (
            row[0] * self.input
            + row[1] * self.output
            + row[2] * self.cache_read
            + row[3] * self.cache_write
        ) / _PER


class Window(msgspec.Struct, frozen=True):
    """A UTC time-of-day window [start, end) in minutes, with its prices."""

    start: int
    end: int
    price: Price

    def holds(self, minute: int) -> bool:
        """Whether a UTC minute of the day falls in the window."""
        if self.start <= self.end:
            return self.start <= minute < self.end
        return minute >= self.start or minute < self.end


class ModelPrice(msgspec.Struct, frozen=True):
    """A model's base price and its windows (the first window that holds wins)."""

    base: Price
    windows: tuple[Window, ...] = ()

    def at(self, minute: int) -> Price:
        """The price at a UTC minute of the day."""
        for window in self.windows:
            if window.holds(minute):
                return window.price
        return self.base


class PriceTable(msgspec.Struct, frozen=True):
    """`provider/model` -> its prices."""

    models: dict[str, ModelPrice]
    path: Path | None = None

    def price(self, model: str, minute: int = 0) -> Price | None:
        """The price of a model at a UTC minute of the day; None if it is not priced."""
        entry = self.models.get(model)
        return entry.at(minute) if entry is not None else None


def load_prices(path: Path | None = None) -> PriceTable | None:
    """The price table at `path`, or at the default place.

    Returns None when no path is given and the default file does not exist.

    Raises:
        ConfigError: the file is missing (a path given), unreadable or malformed; the
            message names the line.
    """
    given = path is not None
    where = path if path is not None else default_path()
    try:
        data = load_toml(where)
    except FileNotFoundError as exc:
        if given:
            raise ConfigError(where, "does not exist") from exc
        return None
    text = where.read_text("utf-8")
    return parse_prices(data, text, where)


def parse_prices(data: dict[str, Any], text: str, path: Path) -> PriceTable:
    """A price table from parsed TOML (`text` is the source, to name lines)."""
    lines = text.splitlines()

    def fail(what: str, needle: str) -> ConfigError:
        return ConfigError(path, f"line {_line_of(lines, needle)}: {what}")

    models: dict[str, ModelPrice] = {}
    for provider, table in data.items():
        if not isinstance(table, dict):
            raise fail(f"{provider!r} must be a table of models ([{provider}.MODEL])", provider)
        for model, entry in table.items():
            name = f"{provider}/{model}"
            if not isinstance(entry, dict):
                raise fail(f"{name}: expected a table of prices, got {entry!r}", model)
            unknown = set(entry) - {*BUCKETS, "windows"}
            if unknown:
                key = sorted(unknown)[0]
                raise fail(
                    f"{name}: unknown key {key!r} (expected {', '.join(BUCKETS)}, windows)",
                    key,
                )
            values: dict[str, float] = {}
            for bucket in BUCKETS:
                if bucket not in entry:
                    raise fail(f"{name}: missing {bucket!r} (price per million tokens)", model)
                values[bucket] = _number(entry[bucket], f"{name}.{bucket}", fail, bucket)
            base = Price(*(values[b] for b in BUCKETS))
            windows: list[Window] = []
            raw_windows = entry.get("windows", [])
            if not isinstance(raw_windows, list):
                raise fail(f"{name}.windows must be an array of tables", "windows")
            for window in raw_windows:
                if not isinstance(window, dict):
                    raise fail(f"{name}.windows: expected a table, got {window!r}", "windows")
                unknown = set(window) - {*BUCKETS, "from", "to"}
                if unknown:
                    key = sorted(unknown)[0]
                    raise fail(f"{name}.windows: unknown key {key!r}", key)
                bounds = []
                for end in ("from", "to"):
                    value = window.get(end)
                    match = _TIME.match(value) if isinstance(value, str) else None
                    if match is None:
                        raise fail(
                            f'{name}.windows: {end!r} must be a UTC time "HH:MM", got {value!r}',
                            end,
                        )
                    bounds.append(int(match[1]) * 60 + int(match[2]))
                wvalues = dict(values)
                for bucket in BUCKETS:
                    if bucket in window:
                        wvalues[bucket] = _number(
                            window[bucket], f"{name}.windows.{bucket}", fail, bucket
                        )
                windows.append(Window(bounds[0], bounds[1], Price(*(wvalues[b] for b in BUCKETS))))
            models[name] = ModelPrice(base, tuple(windows))
    return PriceTable(models, path)


def _number(value: Any, what: str, fail: Any, needle: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise fail(f"{what} must be a number >= 0, got {value!r}", needle)
    return float(value)


def _line_of(lines: list[str], needle: str) -> int:
    """The first line that names `needle` as a key or in a table header (1-based)."""
    pattern = re.compile(r"(^|[\s.\[\"'])" + re.escape(needle) + r"([\s.\]\"'=]|$)")
    for i, line in enumerate(lines, 1):
        code = line.split("#", 1)[0]
        if pattern.search(code):
            return i
    return 1
