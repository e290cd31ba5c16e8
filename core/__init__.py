"""turnline core: dsh session logs, the session store and its fork API. No UI imports.

The seed RFC's API is importable from here::

    from turnline.core import SessionStore, SessionForkError, Session, SessionEvent, SessionHeader

Only the store and the data model are imported (stdlib and orjson): no zstd, no
msgspec, no file readers, so `import turnline.core` stays cheap for every caller.
"""

from .model import END_SEED, TURN_END, TURN_START, SessionEvent, SessionHeader
from .store import ForkErrorCode, Session, SessionForkError, SessionStore, check_boundary

__all__ = [
    "END_SEED",
    "TURN_END",
    "TURN_START",
    "ForkErrorCode",
    "Session",
    "SessionEvent",
    "SessionForkError",
    "SessionHeader",
    "SessionStore",
    "check_boundary",
]
