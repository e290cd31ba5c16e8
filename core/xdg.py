"""Where turnline keeps its files, by the XDG base-directory conventions users know.

- config: `$XDG_CONFIG_HOME/turnline/` (default `~/.config/turnline/`): `config.toml`
  (e.g. the resume command), `prices.toml` (the user's price table);
- cache: `$XDG_CACHE_HOME/turnline/` (default `~/.cache/turnline/`): the catalogs, and
  `index/`, the kept indexes of big logs (`core.indexcache`).

A relative `$XDG_*_HOME` is ignored, as the specification says.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # a warm search loads this module before `typing` (`core.fresh`)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Final

APP: Final = "turnline"


class ConfigError(Exception):
    """A config file that cannot be used; the message names the file and the line."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = f"{path}: {message}"


def _base(variable: str, default: str) -> Path:
    from pathlib import Path

    return Path(_base_str(variable, default))


def _base_str(variable: str, default: str) -> str:
    value = os.environ.get(variable, "")
    if value and os.path.isabs(value):
        return value
    return os.path.join(os.path.expanduser("~"), default)


def config_dir() -> Path:
    """`$XDG_CONFIG_HOME/turnline` (default `~/.config/turnline`); not created here."""
    return _base("XDG_CONFIG_HOME", ".config") / APP


def cache_dir() -> Path:
    """`$XDG_CACHE_HOME/turnline` (default `~/.cache/turnline`); not created here."""
    return _base("XDG_CACHE_HOME", ".cache") / APP


def cache_dir_str() -> str:
    """`cache_dir()` as a string, without loading `pathlib` (a warm search's start)."""
    return os.path.join(_base_str("XDG_CACHE_HOME", ".cache"), APP)


def load_toml(path: Path) -> dict[str, Any]:
    """A TOML file's tables.

    Raises:
        ConfigError: the file cannot be read or is not valid TOML (the message names
            the line and column, as `tomllib` reports them).
        FileNotFoundError: it does not exist (callers decide whether that is fine).
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ConfigError(path, f"cannot be read: {exc.strerror or exc}") from exc
    import tomllib

    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(path, f"is not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(path, f"is not valid TOML: {exc}") from exc
    except RecursionError as exc:  # (`tomllib` parses nested arrays and tables recursively)
        raise ConfigError(path, "is nested too deeply to read (arrays or tables)") from exc
