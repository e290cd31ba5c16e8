"""Refresh the SVG screenshots in screenshots/: `python -m tests.tui.make_screenshots`.

Builds the same roots as the snapshot tests in a temporary folder (named `root`, so
no machine path shows) and saves one SVG per screen with `App.save_screenshot`.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Awaitable, Callable
from datetime import UTC
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from turnline.tui import TurnlineApp

from .conftest import make_family
from .test_generations_app import v5_root
from .test_snapshots import SIZE, settled, write_problem_log

OUT = Path(__file__).resolve().parents[2] / "screenshots"


async def shoot(
    root: Path, name: str, before: Callable[[Pilot[Any]], Awaitable[None]], *keys: str
) -> Path:
    """Open `root`, run `before`, press `keys`, save screenshots/<name>.svg."""
    app = TurnlineApp(root, tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        await before(pilot)
        if keys:
            await pilot.press(*keys)
            await pilot.pause(0.3)
        app.title = "turnline"
        # As the snapshot plugin does: let every pending refresh and animation land
        # (a screenshot taken at once showed the detail pane before its blocks drew).
        await pilot.wait_for_scheduled_animations()
        await pilot.pause(0.3)
        return Path(app.save_screenshot(f"{name}.svg", path=str(OUT)))


async def main() -> None:
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        family = make_family(Path(tmp) / "a" / "root")
        problem_root = Path(tmp) / "b" / "root"
        make_family(problem_root)
        problem = write_problem_log(problem_root)
        v5_log, _older = v5_root(Path(tmp) / "c" / "root")
        shots = [
            await shoot(family.root, "tree-and-timeline", settled(family.parent, row=0)),
            await shoot(family.root, "fork-modal", settled(family.parent, row=1), "f"),
            await shoot(family.root, "seed-divider", settled(family.child, row=3)),
            await shoot(problem_root, "problem-log", settled(problem, row=0)),
            # dsh's own V5 sample log, with the V3 generation kept beside it
            await shoot(v5_log.parents[2], "v5-session", settled(v5_log, row=0)),
        ]
    for shot in shots:
        print(shot, file=sys.stderr)


if __name__ == "__main__":
    asyncio.run(main())
