"""What `turnline ROOT` loads before its first screen (issue 12: a warm start's tree on
screen within 0.8 s, measured by `benchmarks/search.py`; here only which modules)."""

from __future__ import annotations

import subprocess
import sys

#: Modules the first screen does not need: each loads with the key or the content
#: that uses it (search and its catalog, compare, export, the highlighter, the price
#: table, the watcher, which starts once the first tree is drawn).
DEFERRED = (
    "turnline.core.catalog",
    "turnline.core.search",
    "turnline.core.find",
    "turnline.core.compare",
    "turnline.core.export",
    "turnline.core.prices",
    "turnline.core.watcher",
    "watchfiles",
    "sqlite3",
    "rich.syntax",
    "turnline.tui.screens._search",
    "turnline.tui.screens._compare",
    "turnline.tui.screens._export",
    "turnline.tui.screens._help",
    "turnline.tui.screens._usage",
)


def test_the_app_module_leaves_what_the_first_screen_does_not_need() -> None:
    code = f"import sys, turnline.tui; print(' '.join(m for m in {DEFERRED!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == []


def test_each_screen_still_loads_by_its_package_name() -> None:
    from turnline.tui import screens
    from turnline.tui.screens import CompareScreen, ExportRequest, HelpScreen, SearchScreen
    from turnline.tui.screens._search import SearchScreen as Defined

    assert SearchScreen is Defined
    assert {CompareScreen.__name__, ExportRequest.__name__, HelpScreen.__name__} == {
        "CompareScreen",
        "ExportRequest",
        "HelpScreen",
    }
    assert set(screens.__all__) <= set(dir(screens)) | set(screens._HOMES)
    try:
        screens.NoSuchScreen  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchScreen" in str(exc)
    else:
        raise AssertionError("an unknown name must raise AttributeError")
