"""turnline core: dsh session logs, the session store and its fork API. No UI imports.

The seed RFC's API is importable from here::

    from turnline.core import SessionStore, SessionForkError, Session, SessionEvent, SessionHeader

The names are loaded on first use (PEP 562), so `import turnline.core` and every
`turnline.core.<module>` import load nothing else: a warm search starts its
freshness check before any of the store is imported.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # nor `typing` (see `core.fresh`)
if TYPE_CHECKING:
    from typing import Any

    from .model import END_SEED, TURN_END, TURN_START, SessionEvent, SessionHeader
    from .store import ForkErrorCode, Session, SessionForkError, SessionStore, check_boundary

#: Each exported name and the module that defines it.
_HOME = {
    "END_SEED": "model",
    "TURN_END": "model",
    "TURN_START": "model",
    "SessionEvent": "model",
    "SessionHeader": "model",
    "ForkErrorCode": "store",
    "Session": "store",
    "SessionForkError": "store",
    "SessionStore": "store",
    "check_boundary": "store",
}

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


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
