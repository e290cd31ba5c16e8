"""XDG paths and TOML loading."""

from __future__ import annotations

from pathlib import Path

import pytest
from turnline.core.xdg import ConfigError, cache_dir, config_dir, load_toml


def test_xdg_paths_follow_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "c"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "k"))
    assert config_dir() == tmp_path / "c" / "turnline"
    assert cache_dir() == tmp_path / "k" / "turnline"
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert config_dir() == tmp_path / ".config" / "turnline"


def test_bad_toml_names_the_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "prices.toml"
    bad.write_text('["ds/m"]\ninput = 1\noutput = \n')
    with pytest.raises(ConfigError) as info:
        load_toml(bad)
    assert str(bad) in info.value.message and "line 3" in info.value.message
    good = tmp_path / "ok.toml"
    good.write_text('[resume]\ncommand = "x {id}"\n')
    assert load_toml(good) == {"resume": {"command": "x {id}"}}


@pytest.mark.parametrize("nested", ["a = " + "[" * 5000 + "]" * 5000, "a = " + "{ b = " * 3000])
def test_toml_nested_too_deeply_is_a_config_error(tmp_path: Path, nested: str) -> None:
    """`tomllib` recurses into nested arrays and inline tables: past the interpreter's
    depth it raises RecursionError, which is said as a config error, not a traceback."""
    bad = tmp_path / "prices.toml"
    bad.write_text(nested + "\n")
    with pytest.raises(ConfigError) as info:
        load_toml(bad)
    assert str(bad) in str(info.value) and "nested too deeply" in str(info.value)
