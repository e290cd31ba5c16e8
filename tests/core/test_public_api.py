"""The seed RFC's API is exported from `turnline.core`, and that import stays cheap."""

from __future__ import annotations

import subprocess
import sys

import turnline.core as core
from turnline.core import (
    ForkErrorCode,
    Session,
    SessionEvent,
    SessionForkError,
    SessionHeader,
    SessionStore,
)
from turnline.core import store as store_module


def test_rfc_names_are_the_store_s_own() -> None:
    assert SessionStore is store_module.SessionStore
    assert SessionForkError is store_module.SessionForkError
    assert Session is store_module.Session
    assert {c.value for c in ForkErrorCode} >= {
        "SESSION_NOT_FOUND",
        "SESSION_NOT_LIVE",
        "SESSION_ALREADY_EXISTS",
        "INVALID_BOUNDARY",
    }
    assert set(core.__all__) >= {
        "SessionStore",
        "SessionForkError",
        "Session",
        "SessionEvent",
        "SessionHeader",
    }


def test_fork_through_the_package_names() -> None:
    store = SessionStore()
    parent = store.create("p", meta={"cwd": "/tmp"})
    parent.append("turn/start")
    parent.append("turn/end", {"reason": "completed"})
    child = store.fork("p", 1, "c")
    assert isinstance(child.events[0], SessionEvent)
    assert isinstance(child.header, SessionHeader)
    assert [(e.seq, e.type) for e in child.events] == [
        (0, "turn/start"),
        (1, "turn/end"),
        (2, "session/end-seed"),
    ]
    try:
        store.fork("p", 0, "d")
    except SessionForkError as exc:
        assert exc.code is ForkErrorCode.INVALID_BOUNDARY
    else:
        raise AssertionError("a boundary inside a turn was accepted")


def test_import_is_cheap() -> None:
    code = (
        "import sys, turnline.core\n"
        "heavy = {'zstandard', 'msgspec', 'textual', 'rich'}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy"
        " or m.startswith('turnline.core.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"  # the names load on first use
    code = "import sys, turnline.core as c\nc.SessionStore\nprint(sorted(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(eval(out.stdout))
    assert {"turnline.core.model", "turnline.core.store"} <= loaded
    assert not loaded & {"zstandard", "msgspec", "textual", "rich"}
