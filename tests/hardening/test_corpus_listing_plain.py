"""`ls --json` builds its entries from plain scan values and links them with
`lineage.link_sessions`; the app builds summary objects and `build_lineage`. Both
must say exactly the same about every log of the bad-input corpus and the fixtures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from turnline.cli.main import main
from turnline.core.root import SessionRoot


def _objects_view(root: Path) -> list[dict[str, Any]]:
    session_root = SessionRoot(root)
    summaries = session_root.scan()
    lineage = session_root.lineage()
    return [s.to_json_dict(tuple(lineage.problems.get(s.path, ()))) for s in summaries]


@pytest.mark.parametrize("which", ["corpus", "fixtures"])
def test_ls_json_from_plain_values_is_the_object_view(
    which: str,
    corpus_root: tuple[Path, object],
    fixtures_root: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = corpus_root[0] if which == "corpus" else fixtures_root
    assert main(["ls", "--json", str(root)]) == 0
    listed = orjson.loads(capsys.readouterr().out)
    expected = _objects_view(root)
    assert listed == expected
    kinds = {p["kind"] for entry in listed for p in entry["problems"]}
    if which == "corpus":
        # The cross-session rules really ran on the plain values.
        assert {"duplicate-id", "lineage-cycle"} <= kinds
