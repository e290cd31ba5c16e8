"""The compare screen's outcome line in the units people read (issue 23): plurals,
compact tokens, human durations."""

from __future__ import annotations

import re
from pathlib import Path

from turnline.core.compare import compare
from turnline.core.root import SessionRoot
from turnline.core.units import duration, plural
from turnline.tui.screens._compare import outcome

from .conftest import make_family


def test_units_read_as_people_write_them() -> None:
    assert plural(1, "turn") == "1 turn"
    assert plural(1234, "turn") == "1,234 turns"
    assert duration(3_200) == "3.2 s"
    assert duration(725_000) == "12m 5s"
    assert duration(621_606_300) == "7d 4h"


def test_the_compare_outcome_has_plurals_compact_tokens_and_durations(tmp_path: Path) -> None:
    family = make_family(tmp_path / "root")
    root = SessionRoot(family.root)
    summaries = {s.path: s for s in root.scan()}
    comparison = compare(root, summaries[family.parent], summaries[family.child])
    for side in (comparison.left, comparison.right):
        text = outcome("left", side).plain
        turns = len(side.turns)
        assert f": {turns} turn{'' if turns == 1 else 's'}, last " in text, text
        # tokens compact (950, 12.3k), never a raw count of 4 digits or more
        assert re.search(r", (\d{1,3}|\d+\.\dk|\d+\.\dM) tokens, ", text), text
        assert re.search(r"\d+ errors?, (\d+\.\d s|\d+m \d+s|\d+h \d+m|\d+d \d+h), ", text)
        assert re.search(r"\d+ files?$", text), text
