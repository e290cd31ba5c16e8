"""The app's modal screens (private modules, re-exported here)."""

from ._fork import ForkPlan, ForkRequest, ForkScreen
from ._help import HelpScreen
from ._search import SearchScreen

__all__ = ["ForkPlan", "ForkRequest", "ForkScreen", "HelpScreen", "SearchScreen"]
