"""The turnline command line: `ls`, `show`, `fork`, `tree`, and `open`/`demo` for the app."""

from __future__ import annotations

import sys
from types import ModuleType

TYPE_CHECKING = False  # the console script's front door (`cli.fast`) runs before `typing`
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """`turnline.cli.main.main`, imported on the first call: the console script's
    front door (`cli.fast`) answers a warm search without loading the whole CLI."""
    from .main import main as run

    return run(argv)


class _Package(ModuleType):
    """This package, whose `main` stays the function (as when this file imported it
    from `.main` at once): loading the submodule `turnline.cli.main` later would
    otherwise set the attribute to the module."""

    def __setattr__(self, name: str, value: object) -> None:
        if name == "main" and isinstance(value, ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = ["main"]
