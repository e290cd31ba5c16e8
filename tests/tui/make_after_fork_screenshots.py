"""Refresh screenshots/compare.svg: `python -m tests.tui.make_after_fork_screenshots`."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from datetime import UTC
from pathlib import Path

from turnline.tui import TurnlineApp

from ..core.rich_logs import forked_pair
from .test_after_fork import SIZE, compare_before

OUT = Path(__file__).resolve().parents[2] / "screenshots"


async def main() -> None:
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = forked_pair(Path(tmp) / "root")
        app = TurnlineApp(Path(tmp) / "root", tz=UTC)
        async with app.run_test(size=SIZE) as pilot:
            await compare_before(root)(pilot)
            await pilot.wait_for_scheduled_animations()
            await pilot.pause(0.3)
            print(app.save_screenshot("compare.svg", path=str(OUT)), file=sys.stderr)


if __name__ == "__main__":
    asyncio.run(main())
