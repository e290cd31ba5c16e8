"""`python -m turnline.cli`."""

from __future__ import annotations

from .main import console

console()
