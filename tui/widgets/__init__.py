"""The app's widgets (private modules, re-exported here)."""

from ._footer import KeyFooter
from ._session_tree import SessionTree, TreeEntry, session_label
from ._timeline import Divider, TurnTimeline
from ._turn_detail import TurnContent, TurnDetail, turn_content

__all__ = [
    "Divider",
    "KeyFooter",
    "SessionTree",
    "TreeEntry",
    "TurnContent",
    "TurnDetail",
    "TurnTimeline",
    "session_label",
    "turn_content",
]
