"""The app's widgets (private modules, re-exported here)."""

from ._session_tree import SessionTree, TreeEntry, session_label
from ._timeline import Divider, TurnTimeline
from ._turn_detail import TurnDetail, conversation

__all__ = [
    "Divider",
    "SessionTree",
    "TreeEntry",
    "TurnDetail",
    "TurnTimeline",
    "conversation",
    "session_label",
]
