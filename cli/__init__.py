"""The turnline command line: `ls`, `show`, `fork`, `tree`, and `open`/`demo` for the app."""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """`turnline.cli.main.main` (imported on first call: the console script's front
    door, `cli.fast`, answers a warm search without loading the whole CLI)."""
    from .main import main as run

    return run(argv)


__all__ = ["main"]
