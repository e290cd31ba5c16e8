"""The command that continues a session in the agent.

The template comes from `$XDG_CONFIG_HOME/turnline/config.toml`::

    [resume]
    command = "dsh --profile tui --resume {id}"

(the default, dsh's own example). `{id}`, `{cwd}` and `{path}` are replaced, each
shell-quoted with `shlex.quote`, so an id like `x'; touch pwned` arrives as one literal
argument. Any other `{...}` is refused with a message naming the config file.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from .summary import SessionSummary
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


def render(command: str, *, session_id: str, cwd: str | None, path: Path) -> str:
    """The template with `{id}`, `{cwd}`, `{path}` replaced, each shell-quoted.

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
        return shlex.quote(values[name])

    return _FIELD.sub(fill, command)


def resume_command(summary: SessionSummary) -> str:
    """The shell command that continues `summary` in the agent.

    Raises:
        ConfigError: the config file is bad, or names an unknown field.
    """
    command = template()
    try:
        return render(command, session_id=summary.id, cwd=summary.cwd, path=summary.path)
    except ValueError as exc:
        raise ConfigError(config_path(), str(exc)) from exc
