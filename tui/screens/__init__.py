"""The app's modal screens (private modules, re-exported here)."""

from ._compare import CompareScreen
from ._export import ExportRequest, ExportScreen
from ._fork import ForkPlan, ForkRequest, ForkScreen
from ._help import HelpScreen
from ._search import SearchScreen

__all__ = [
    "CompareScreen",
    "ExportRequest",
    "ExportScreen",
    "ForkPlan",
    "ForkRequest",
    "ForkScreen",
    "HelpScreen",
    "SearchScreen",
]
