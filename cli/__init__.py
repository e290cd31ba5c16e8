"""The turnline command line: `ls`, `show`, `fork`, `tree`, and `open`/`demo` for the app."""

from __future__ import annotations

from .main import main

__all__ = ["main"]
