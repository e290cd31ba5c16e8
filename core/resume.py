"""The command that continues a session in the agent.

The template comes from `$XDG_CONFIG_HOME/turnline/config.toml`::

    [resume]
    command = "dsh --profile tui --resume {id}"

(the default, dsh's own example). `{id}`, `{cwd}` and `{path}` are replaced, each
shell-quoted with `shlex.quote`, so an id like `x'; touch pwned` arrives as one literal
argument. Any other `{...}` is refused with a message naming the config file.

A command printed for a person (`turnline resume-cmd`) must not carry a log's control
characters to the terminal: a value holding one (an escape sequence, a bidi override)
is quoted as `$'…'` with that character written as an escape, which bash, zsh, ksh
and BusyBox read back as the same value (POSIX sh from its 2024 edition).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from .summary import SessionSummary
from .textsafe import UNSAFE_CODEPOINTS
from .xdg import ConfigError, config_dir, load_toml

DEFAULT_COMMAND = "dsh --profile tui --resume {id}"
_FIELD = re.compile(r"\{([^{}]*)\}")
FIELDS = ("id", "cwd", "path")


def config_path() -> Path:
    """Where the resume template is configured."""
    return config_dir() / "config.toml"


def template() -> str:
    """The configured template, else the default.

    Raises:
        ConfigError: the config is unreadable, or `[resume] command` is not a string.
    """
    path = config_path()
    try:
        data = load_toml(path)
    except FileNotFoundError:
        return DEFAULT_COMMAND
    table = data.get("resume", {})
    if not isinstance(table, dict):
        raise ConfigError(path, "[resume] must be a table")
    command = table.get("command", DEFAULT_COMMAND)
    if not isinstance(command, str) or not command.strip():
        raise ConfigError(path, "[resume] command must be a non-empty string")
    return command


def render(
    command: str, *, session_id: str, cwd: str | None, path: Path, printable: bool = False
) -> str:
    """The template with `{id}`, `{cwd}`, `{path}` replaced, each shell-quoted (with
    `printable`, a value holding a control character as `$'…'`: `printable_quote`).

    Raises:
        ValueError: the template names another field (the message lists the known ones).
    """
    values = {"id": session_id, "cwd": cwd or "", "path": str(path)}

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise ValueError(
                f"unknown field {{{name}}} in the resume command (known: "
                + ", ".join("{" + f + "}" for f in FIELDS)
                + ")"
            )
        value = values[name]
        return printable_quote(value) if printable else shlex.quote(value)

    return _FIELD.sub(fill, command)


def printable_quote(value: str) -> str:
    """`shlex.quote`, but a value holding a character of `textsafe.UNSAFE_CODEPOINTS`
    (or a lone surrogate) is written `$'…'`, each such character as an escape: the
    shell reads the same value, and the terminal shows only printable text."""
    if not any(ord(c) in UNSAFE_CODEPOINTS or 0xD800 <= ord(c) <= 0xDFFF for c in value):
        return shlex.quote(value)
    out = ["$'"]
    for char in value:
        code = ord(char)
        if char in "\\'":
            out.append("\\" + char)
        elif code in UNSAFE_CODEPOINTS or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}")
        else:
            out.append(char)
    out.append("'")
    return "".join(out)


def resume_command(summary: SessionSummary, *, printable: bool = False) -> str:
    """The shell command that continues `summary` in the agent (`printable`: to be
    shown, not run: see `render`).

    Raises:
        ConfigError: the config file is bad, or names an unknown field.
    """
    command = template()
    try:
        return render(
            command,
            session_id=summary.id,
            cwd=summary.cwd,
            path=summary.path,
            printable=printable,
        )
    except ValueError as exc:
        raise ConfigError(config_path(), str(exc)) from exc
