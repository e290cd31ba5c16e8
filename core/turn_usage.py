"""One turn's usage, exactly as dsh folds it (`core.usage.UsageFold`).

A turn's samples are folded with the rule every other total uses (a later sample for
the same step replaces the earlier one; a chunk sample with no message after it still
counts). A chunk sample names no model: the fold takes the latest `request/header`
before it, which may sit in an earlier turn, so that header is folded first (it holds
no sample, so it adds nothing but the model).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from .model import SessionEvent
from .usage import UsageFold, UsageTotals
from .view import SessionView

REQUEST_HEADER: Final = "request/header"
#: How many earlier turns are read to find the model a turn starts with.
LOOK_BACK: Final = 3


def turn_usage(events: Sequence[SessionEvent], lead_in: Iterable[SessionEvent] = ()) -> UsageTotals:
    """The usage of one turn's `events`; `lead_in` is the `request/header` in force
    when the turn starts (other events in it are ignored)."""
    fold = UsageFold(0)
    fold.feed(e for e in lead_in if e.type == REQUEST_HEADER)
    fold.feed(events)
    return fold.whole()


def header_before(view: SessionView, index: int) -> list[SessionEvent]:
    """The latest `request/header` before turn `index` (within `LOOK_BACK` turns)."""
    for back in range(index - 1, max(index - 1 - LOOK_BACK, -1), -1):
        for event in reversed(view.turn_events(back)):
            if event.type == REQUEST_HEADER:
                return [event]
    return []


def view_turn_usage(
    view: SessionView, index: int, events: Sequence[SessionEvent] | None = None
) -> UsageTotals:
    """The usage of turn `index` of an open session (`events`: its events, if read)."""
    if events is None:
        events = view.turn_events(index)
    first = next(
        (e.type for e in events if e.type == REQUEST_HEADER or e.type.startswith("assistant/")),
        None,
    )
    # A sample before the turn's own header (or in a turn with none) takes the model
    # configured earlier.
    lead = header_before(view, index) if first not in (None, REQUEST_HEADER) else []
    return turn_usage(events, lead)
