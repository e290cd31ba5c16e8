"""The app's modal screens (private modules, re-exported here).

Each screen's module loads when its name is first asked for (PEP 562 `__getattr__`),
not with this package: the app starts with the fork screen's module alone, and the
others (search and its catalog, compare, conversation, export, help) load with the key that opens
them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._compare import CompareScreen
    from ._conversation import ConversationScreen
    from ._export import ExportRequest, ExportScreen
    from ._fork import ForkPlan, ForkRequest, ForkScreen
    from ._help import HelpScreen
    from ._search import SearchScreen

#: Where each name lives.
_HOMES = {
    "CompareScreen": "_compare",
    "ConversationScreen": "_conversation",
    "ExportRequest": "_export",
    "ExportScreen": "_export",
    "ForkPlan": "_fork",
    "ForkRequest": "_fork",
    "ForkScreen": "_fork",
    "HelpScreen": "_help",
    "SearchScreen": "_search",
}

__all__ = [
    "CompareScreen",
    "ConversationScreen",
    "ExportRequest",
    "ExportScreen",
    "ForkPlan",
    "ForkRequest",
    "ForkScreen",
    "HelpScreen",
    "SearchScreen",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # asked once
    return value
