"""The resume command: template from config.toml, every field shell-quoted."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from turnline.core.resume import DEFAULT_COMMAND, render, template
from turnline.core.xdg import ConfigError

HOSTILE_IDS = ["x'; touch pwned", "$(touch pwned)", "a b\nc", "`touch pwned`", "-rf"]


def test_default_template(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert template() == DEFAULT_COMMAND == "dsh --profile tui --resume {id}"


def test_configured_template_and_bad_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "turnline").mkdir()
    config = tmp_path / "turnline" / "config.toml"
    config.write_text('[resume]\ncommand = "agent {id} --in {cwd}"\n')
    assert template() == "agent {id} --in {cwd}"
    config.write_text("[resume]\ncommand = 3\n")
    with pytest.raises(ConfigError, match="must be a non-empty string"):
        template()


@pytest.mark.parametrize("hostile", HOSTILE_IDS)
def test_hostile_values_arrive_as_one_literal_argument(tmp_path: Path, hostile: str) -> None:
    command = render(
        "printf '%s\\n' {id} {cwd} {path}",
        session_id=hostile,
        cwd=f"/tmp/{hostile}",
        path=Path(f"/logs/{hostile}/session.jsonl"),
    )
    out = subprocess.run(
        ["sh", "-c", command], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert out.stdout == f"{hostile}\n/tmp/{hostile}\n/logs/{hostile}/session.jsonl\n"
    assert not (tmp_path / "pwned").exists()


def test_unknown_field_is_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown field \{name\}"):
        render("x {name}", session_id="a", cwd=None, path=Path("p"))


#: Values a log can hold that must not reach a terminal as they are.
CONTROL_IDS = [
    "x\x1b]0;PWNED\x07\x1b[2J",  # a title write, a screen clear
    "a\rb\x00c",  # a carriage return hiding the start, a NUL
    "c1\x9b31m\x85",  # C1 controls
    "rtl\u202egnp.exe",  # a right-to-left override
    "quote' and \\ back\x1b",  # what the `$'…'` quoting itself must escape
]


@pytest.mark.parametrize("hostile", [*HOSTILE_IDS, *CONTROL_IDS])
def test_a_printed_command_is_printable_and_reads_back_the_same(
    tmp_path: Path, hostile: str
) -> None:
    """`resume-cmd` prints the command for a person: no control character of the log
    reaches the terminal, and the shell still reads each value back exactly."""
    command = render(
        "printf '%s\\n' {id} {cwd}",
        session_id=hostile,
        cwd=f"/tmp/{hostile}",
        path=Path("p"),
        printable=True,
    )
    assert command.isprintable()
    assert not any(0x202A <= ord(c) <= 0x202E or 0x2066 <= ord(c) <= 0x2069 for c in command)
    out = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, check=True)
    value = hostile.split("\x00", 1)[0]  # (a shell string ends at a NUL)
    assert out.stdout.decode() == f"{value}\n/tmp/{value}\n"
    assert not (tmp_path / "pwned").exists()
