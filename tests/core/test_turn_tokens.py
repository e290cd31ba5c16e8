"""Per-turn tokens of `SessionView` (the timeline's tokens column): dsh's usage fold,
credited to timeline rows, checked against an independent fold written here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from turnline.core.logfile import read_log
from turnline.core.model import SessionEvent, SessionHeader
from turnline.core.root import SessionRoot
from turnline.core.timeline import Timeline
from turnline.core.usage import fold_events
from turnline.core.view import SessionView

from ..conftest import fixture_logs
from .disk_logs import write_log


def billed(usage: Any) -> int:
    """input + output + cacheRead + cacheWrite (reasoning is part of output)."""
    if not isinstance(usage, dict):
        return 0
    return sum(
        v
        for k in ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
        if isinstance(v := usage.get(k), int) and not isinstance(v, bool)
    )


def sample_of(event: SessionEvent) -> tuple[Any, Any, dict[str, Any]] | None:
    data = event.data
    if not isinstance(data, dict):
        return None
    if event.type == "assistant/chunk":
        chunk = data.get("chunk")
        usage = chunk.get("usage") if isinstance(chunk, dict) else None
        if isinstance(chunk, dict) and chunk.get("type") == "usage" and isinstance(usage, dict):
            return data.get("turn"), data.get("step"), usage
    elif event.type == "assistant/message" and isinstance(data.get("usage"), dict):
        return data.get("turn"), data.get("step"), data["usage"]
    return None


def row_of(timeline: Timeline, seq: int) -> int | None:
    for index, turn in enumerate(timeline.turns):
        if turn.first_seq <= seq and (turn.end_seq is None or seq <= turn.end_seq):
            return index
    return None


def independent_rows(events: list[SessionEvent], timeline: Timeline) -> dict[int, int]:
    """Each row's tokens: a sample for the same (turn, step) as the one just before it
    takes that one's place (wherever it was), per dsh's usage projection."""
    rows: dict[int, int] = {}
    last: tuple[Any, Any, dict[str, Any], int | None] | None = None
    for event in events:
        sample = sample_of(event)
        if sample is None:
            continue
        turn, step, usage = sample
        row = row_of(timeline, event.seq)
        if last is not None and (last[0], last[1]) == (turn, step) and last[3] is not None:
            rows[last[3]] -= billed(last[2])
        if row is not None:
            rows[row] = rows.get(row, 0) + billed(usage)
        last = (turn, step, usage, row)
    return rows


def test_every_fixture_turn_has_the_independent_folds_tokens() -> None:
    metered = 0
    for path in fixture_logs():
        view = SessionView(SessionRoot(path).load(SessionRoot(path).scan()[0]))
        events = list(read_log(path).events)
        expected = independent_rows(events, view.timeline)
        got = {i: t for i, tv in enumerate(view.turns) if (t := tv.tokens) is not None}
        assert got == expected, path
        assert all(view.turn_tokens(i) == t for i, t in got.items())
        # the same as the core's own fold, whose keys are dsh's turn numbers
        fold = fold_events(events, view.seed_length)
        numbers = [tv.turn.number for tv in view.turns]
        if len(set(numbers)) == len(numbers):
            for index, tokens in got.items():
                assert fold.turn_tokens.get(numbers[index]) == tokens, path
        metered += sum(1 for t in got.values() if t > 0)
    assert metered > 50  # the fixtures do carry usage


def usage_turn(seq: int, number: int, samples: list[tuple[str, int]]) -> list[SessionEvent]:
    """A turn whose step 1 reports usage as chunk and/or message samples."""
    events = [SessionEvent("turn/start", seq, 1000 + seq, {"turn": number})]
    for kind, tokens in samples:
        s = seq + len(events)
        usage = {"inputTokens": tokens, "outputTokens": 1, "reasoningTokens": 5}
        if kind == "chunk":
            data = {"turn": number, "step": 1, "chunk": {"type": "usage", "usage": usage}}
            events.append(SessionEvent("assistant/chunk", s, 1000 + s, data))
        else:
            message = {"role": "assistant", "content": [], "source": "ds/chat"}
            data = {"turn": number, "step": 1, "message": message, "usage": usage}
            events.append(SessionEvent("assistant/message", s, 1000 + s, data))
    s = seq + len(events)
    events.append(SessionEvent("turn/end", s, 1000 + s, {"turn": number, "reason": {}}))
    return events


def test_tokens_follow_appends_and_inherited_turns_show_theirs(tmp_path: Path) -> None:
    """The message replaces the chunk sample; a chunk alone counts; a child's seed rows
    show their tokens; appended events update the open turn and add new rows."""
    parent = usage_turn(0, 1, [("chunk", 100), ("message", 300)])
    parent += usage_turn(len(parent), 2, [("chunk", 40)])
    header = SessionHeader(id="child", created_at=1, parent_session="p", seed_length=len(parent))
    path = write_log(tmp_path, header, parent)
    root = SessionRoot(path)
    view = SessionView(root.load(root.scan()[0]))
    assert [tv.tokens for tv in view.turns] == [301, 41]
    assert [tv.inherited for tv in view.turns] == [True, True]
    third = usage_turn(len(parent), 3, [("chunk", 7), ("message", 9)])
    view.extend([third[:2]])  # the turn is open, with its chunk sample
    assert [tv.tokens for tv in view.turns] == [301, 41, 8]
    view.extend([third[2:]])  # the message replaces it, and the turn closes
    assert [tv.tokens for tv in view.turns] == [301, 41, 10]
    assert not view.turns[2].inherited
    fold = view.usage
    assert fold is not None
    assert fold.own().total_tokens == 10 and fold.inherited().total_tokens == 342


def test_the_scan_of_a_big_log_gives_every_fixture_turn_its_tokens() -> None:
    """`scan_tokens` (a big log's tokens, from the lines that can matter only) credits
    every row as the full read does, on every raw fixture."""
    from turnline.core.logfile import Encoding
    from turnline.core.view import scan_tokens

    compared = 0
    for path in fixture_logs():
        view = SessionView(SessionRoot(path).load(SessionRoot(path).scan()[0]))
        if view.summary.encoding is not Encoding.RAW:
            continue
        scanned = scan_tokens(path, None, view.seed_length)
        assert scanned is not None, path
        assert [scanned.of(tv.turn) for tv in view.turns] == [tv.tokens for tv in view.turns], path
        full = view.usage
        assert full is not None
        if scanned.whole:
            assert scanned.fold.whole().to_json_dict() == full.whole().to_json_dict(), path
        compared += 1
    assert compared > 100


def test_a_big_logs_tokens_arrive_with_the_appends_since_its_load(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """A big indexed log's rows start blank; `scan_usage` (a worker's) then
    `install_usage` fill them, the turns appended meanwhile included."""
    import turnline.core.index as index_module

    events = usage_turn(0, 1, [("chunk", 100), ("message", 300)])
    events += usage_turn(len(events), 2, [("chunk", 40)])
    path = write_log(tmp_path, SessionHeader(id="big", created_at=1), events)
    monkeypatch.setattr(index_module, "INDEX_THRESHOLD", 1)  # read it as a big log is
    root = SessionRoot(path)
    view = SessionView(root.load(root.scan()[0]))
    assert view.loaded.index is not None and view.usage_pending
    assert [tv.tokens for tv in view.turns] == [None, None]
    scanned = view.scan_usage()
    assert scanned is not None
    third = usage_turn(len(events), 3, [("chunk", 7)])
    view.extend([third])  # appended while the scan ran: not in its bytes
    assert [tv.tokens for tv in view.turns] == [None, None, None]
    assert view.install_usage(scanned)
    assert not view.usage_pending and not view.install_usage(scanned)
    assert [tv.tokens for tv in view.turns] == [301, 41, 8]
    assert [tv.forkable for tv in view.turns] == [True, True, True]
    view.extend([usage_turn(len(events) + len(third), 4, [("message", 5)])])
    assert [tv.tokens for tv in view.turns] == [301, 41, 8, 6]
    fold = view.usage
    assert fold is not None and fold.whole().total_tokens == 356


@pytest.mark.parametrize("window", [4096, 1 << 23])
def test_the_scan_reads_windows_and_long_lines_bounded(
    tmp_path: Path, monkeypatch: Any, window: int
) -> None:
    """Lines cut by a window's end, a line longer than the window, and a usage-bearing
    message of 1.5 MiB (decoded bounded) are all counted as the full read counts."""
    import turnline.core.view as view_module
    from turnline.core.view import scan_tokens

    events = usage_turn(0, 1, [("chunk", 100), ("message", 300)])
    for number in range(2, 40):
        events += usage_turn(len(events), number, [("chunk", number), ("message", 2 * number)])
    big = usage_turn(len(events), 40, [("message", 77)])
    big[1].data["message"]["content"] = [{"type": "text", "text": "x" * (3 << 19)}]
    events += big + usage_turn(len(events) + len(big), 41, [("chunk", 5)])
    path = write_log(tmp_path, SessionHeader(id="w", created_at=1), events)
    monkeypatch.setattr(view_module, "_SCAN_WINDOW", window)
    view = SessionView(SessionRoot(path).load(SessionRoot(path).scan()[0]))
    expected = [tv.tokens for tv in view.turns]
    assert expected[-2:] == [78, 6]
    scanned = scan_tokens(path, None, 0)
    assert scanned is not None
    assert [scanned.of(tv.turn) for tv in view.turns] == expected
