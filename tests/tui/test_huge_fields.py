"""The app on a real log with a 10 MB assistant message and a 200 MB tool result (issue 14
item 6): the first screen shows, the detail pane draws each field's first 64 KB with
"… N MB more (… o: open in pager)", and keys are answered while turns are read."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

from turnline.core.content import FIELD_LIMIT, size_words
from turnline.tui import TurnlineApp

from tests.hardening.huge_logs import write_huge_log

from .conftest import wait_for
from .test_detail import open_turn, plain

SIZE = (120, 36)


async def test_a_200_mb_result_shows_its_first_screen_and_the_app_answers_keys(
    tmp_path: Path,
) -> None:
    log = write_huge_log(tmp_path / "root")
    app = TurnlineApp(tmp_path / "root", tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        detail = await open_turn(pilot, app, log.path, 0)
        shown = plain(detail)
        assistant_more = size_words(log.assistant_chars - FIELD_LIMIT)
        result_more = size_words(log.result_chars - FIELD_LIMIT)
        assert f"… {assistant_more} more (v: raw events, o: open in pager)" in shown
        assert f"… {result_more} more (v: raw events, o: open in pager)" in shown
        assert "cat /var/log/big" in shown and "The answer" in shown
        assert len(shown) < 4 * FIELD_LIMIT
        # A key is answered at once: the cursor moves and the next turn is drawn.
        await pilot.press("down")
        assert app.timeline.current_turn_index == 1
        await wait_for(pilot, lambda: "thanks" in plain(detail))
        await pilot.press("up")
        await wait_for(pilot, lambda: result_more in plain(detail))
        await pilot.press("v")
        await wait_for(pilot, lambda: detail.raw)
        assert f"… {result_more} more" in plain(detail)
