"""The turnline command line."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `turnline` console script."""
    return 0
