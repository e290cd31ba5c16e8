"""The one-line event view's formatter: one safe line per event, bounded."""

from __future__ import annotations

from datetime import UTC

from turnline.core.content import EXCERPT_CHARS, event_line, event_lines_text
from turnline.core.model import SessionEvent

T0 = 1_780_315_500_000  # 2026-06-01 12:05:00 UTC


def test_an_event_is_one_line_with_seq_time_type_and_a_compact_excerpt() -> None:
    event = SessionEvent("tool/call", 7, T0 + 250, {"name": "bash", "arguments": {"a": "x\ny"}})
    shown = event_line(event, tz=UTC)
    assert "\n" not in shown
    assert shown.split()[:3] == ["7", "12:05:00.250", "tool/call"]
    assert shown.endswith('{"name":"bash","arguments":{"a":"x\\ny"}}')
    assert event_line(SessionEvent("turn/start", 1, 0, {}), tz=UTC).split() == [
        "1",
        "—",
        "turn/start",
    ]


def test_hostile_and_huge_data_stay_one_bounded_line() -> None:
    huge = "\x1b[2J" + "z" * 10_000_000
    shown = event_line(SessionEvent("user/message\n\x1b[31m", 3, T0, {"text": huge}), tz=UTC)
    assert "\x1b" not in shown and "\n" not in shown
    assert len(shown) < 40 + 40 + EXCERPT_CHARS


def test_the_lines_are_bounded_by_events_and_characters() -> None:
    events = [SessionEvent("assistant/chunk", i, T0, {"delta": "w" * 500}) for i in range(1000)]
    text = event_lines_text(events, tz=UTC, max_events=10)
    lines = text.split("\n")
    assert len(lines) == 11 and lines[-1] == "… 990 more events not shown"
    text = event_lines_text(events, tz=UTC, max_chars=2_000)
    assert text.endswith("more events not shown") and len(text) < 2_000 + 2 * 400
