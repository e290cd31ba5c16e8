"""`core.view.SessionView`: the one reading path; fork verdicts come from the fork rule."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
from turnline.core.content import ToolCall, UserText
from turnline.core.model import SessionEvent, SessionHeader
from turnline.core.root import SessionRoot
from turnline.core.store import SessionForkError
from turnline.core.view import SessionView

from ..conftest import FIXTURES, fixture_logs
from .disk_logs import write_log


def ev(seq: int, type: str, data: object | None = None) -> SessionEvent:
    return SessionEvent(type, seq, 1000 + seq, data if data is not None else {})


def turn(start: int, number: int) -> list[SessionEvent]:
    return [
        ev(start, "turn/start", {"turn": number}),
        ev(start + 1, "user/message", {"content": [{"type": "text", "text": f"ask {number}"}]}),
        ev(start + 2, "tool/call", {"callId": f"c{number}", "name": "bash", "arguments": "{}"}),
        ev(start + 3, "turn/end", {"turn": number, "reason": {"kind": "completed"}}),
    ]


def view_of(root: SessionRoot) -> SessionView:
    (summary,) = root.scan()
    return SessionView(root.load(summary))


def test_every_verdict_is_the_fork_rules_own(tmp_path: Path) -> None:
    """Each turn's verdict equals what `fork` at its turn/end does, on all 151 fixtures."""
    checked = refused = 0
    for path in fixture_logs():
        root = SessionRoot(path)
        view = view_of(root)
        for tv in view.turns:
            if tv.boundary is None:
                assert not tv.forkable and "still open" in (tv.refusal or "")
                continue
            error = view.boundary_error(tv.boundary)
            assert (error is None) == tv.forkable
            if error is not None:
                assert tv.refusal == error.message
                refused += 1
            checked += 1
    assert checked > 100 and refused >= 1


def test_a_row_past_a_seq_gap_is_refused_with_the_rules_reason(tmp_path: Path) -> None:
    """The ✖ row of issue 10: the verdict is a refusal, and `fork` refuses it too."""
    src = FIXTURES / "acp-snapshot-suite" / "suite_authored-error" / "session.jsonl"
    copy = tmp_path / "suite_authored-error" / "session.jsonl"
    copy.parent.mkdir()
    shutil.copy(src, copy)
    root = SessionRoot(tmp_path)
    view = view_of(root)
    (first,) = view.turns
    assert first.boundary == 1 and not first.forkable and first.past_gap
    assert first.refusal is not None and "not contiguous" in first.refusal
    try:
        root.fork(view.summary, first.boundary)
    except SessionForkError as exc:
        assert exc.message == first.refusal
    else:
        raise AssertionError("fork accepted a boundary the view refused")


def test_the_view_grows_and_keeps_verdicts_current(tmp_path: Path) -> None:
    write_log(
        tmp_path, SessionHeader("s1", cwd="/p"), [*turn(0, 1), ev(4, "turn/start", {"turn": 2})]
    )
    root = SessionRoot(tmp_path)
    view = view_of(root)
    assert [tv.forkable for tv in view.turns] == [True, False]
    assert view.turns[1].refusal == "turn 2 is still open: it has no turn/end yet"
    rest = turn(4, 2)[1:]
    assert view.extend([rest[:1]]) and not view.extend([rest[:1]])  # a repeat is skipped
    assert view.extend([rest[1:]])
    assert [tv.forkable for tv in view.turns] == [True, True]
    assert view.boundary_error(7) is None and view.next_seq == 8
    blocks = view.blocks(1)
    assert isinstance(blocks[0], UserText) and blocks[0].text == "ask 2"
    assert isinstance(blocks[1], ToolCall) and blocks[1].name == "bash"
    # An appended event past a gap: the new turn is shown but refused.
    assert view.extend([turn(9, 3)])
    assert view.turns[2].turn.end_seq == 12 and view.turns[2].past_gap


def test_an_append_re_decides_only_the_new_turns(tmp_path: Path, monkeypatch) -> None:
    """The first append's timeline holds copies of the loaded turns: their verdicts are
    kept, not re-decided (on a big log each decision reads an event: the first live
    row after a load took 108 ms on 2,186 turns)."""
    import turnline.core.view as view_module

    events: list[SessionEvent] = []
    for number in range(1, 41):
        events += turn(len(events), number)
    write_log(tmp_path, SessionHeader("s1", cwd="/p"), events)
    import turnline.core.index as index_module

    monkeypatch.setattr(index_module, "INDEX_THRESHOLD", 1)  # read it as a big log is
    view = view_of(SessionRoot(tmp_path))
    assert view.loaded.index is not None
    decided: list[int] = []
    real = view_module.check_boundary

    def counting(*args: object, **kwargs: object) -> None:
        decided.append(1)
        real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(view_module, "check_boundary", counting)
    for k in range(3):
        decided.clear()
        assert view.extend([turn(len(events) + 4 * k, 41 + k)])
        assert len(decided) == 1, k  # the appended turn only
    assert [tv.forkable for tv in view.turns] == [True] * 43


def test_load_reads_the_log_once(tmp_path: Path, monkeypatch) -> None:
    log = write_log(tmp_path, SessionHeader("s1", cwd="/p"), turn(0, 1) + turn(4, 2))
    root = SessionRoot(tmp_path)
    (summary,) = root.scan()
    opened: list[str] = []
    real_open = open

    def counting_open(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(file) == str(log):
            opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", counting_open)
    loaded = root.load(summary)
    assert len(opened) == 1  # one read serves the events and the fork offsets
    assert loaded.end_offsets[3] < loaded.end_offsets[7]
    assert loaded.timeline_builder() is not loaded.timeline_builder()  # handed over once


def test_a_fresh_fork_has_no_own_turn_and_its_first_own_turn_starts_after_the_marker(
    tmp_path: Path,
) -> None:
    write_log(tmp_path, SessionHeader("p", cwd="/p"), [*turn(0, 1), *turn(4, 2)])
    root = SessionRoot(tmp_path)
    done = root.fork("p", 3, "kid")
    assert (done.child.events, done.child.last_seq, done.child.turns) == (5, 4, 1)
    kid = SessionView(root.load(root.resolve("kid")))
    assert [tv.inherited for tv in kid.turns] == [True]
    assert kid.timeline.end_seed_seq == 4 and kid.seed_length == 4
    # The marker is the last event: it is not a turn/end, so a default fork is refused
    # (the RFC's rule), and it names the seed's turn/end to use instead.
    refused = kid.boundary_error(None)
    assert refused is not None and "seq 4 is session/end-seed" in refused.message
    assert "nearest earlier turn/end is seq 3" in refused.message
    kid.extend([[SessionEvent(e.type, e.seq + 1, e.time, e.data) for e in turn(4, 2)]])
    own = kid.turns[1]
    assert own.turn.first_seq == 5 and not own.inherited and own.forkable


def test_bounded_reads_of_a_zstd_log_equal_the_full_reads(tmp_path: Path, monkeypatch) -> None:
    """A big zstd log's turns read for display (small frames decompressed once and kept,
    `index._small_zstd_lines`) are exactly the events the unbounded read gives, in any
    order of turns, and after an append."""
    import turnline.core.index as index_module

    monkeypatch.setattr(index_module, "INDEX_THRESHOLD", 1)
    monkeypatch.setattr(index_module, "ZSTD_INDEX_THRESHOLD", 1)
    events: list[SessionEvent] = []
    for number in range(1, 31):
        events += turn(len(events), number)
    path = write_log(tmp_path, SessionHeader("z1", cwd="/p"), events, zstd=True, batch=5)
    loaded = SessionRoot(tmp_path).load(SessionRoot(tmp_path).scan()[0])
    index = loaded.index
    assert index is not None
    quick: list[bool] = []
    real = index_module._small_zstd_lines

    def spy(*args: Any) -> Any:
        got = real(*args)
        quick.append(got is not None)
        return got

    monkeypatch.setattr(index_module, "_small_zstd_lines", spy)
    turns = list(index.timeline.turns)
    for t in [*turns, *reversed(turns), *turns[::3]]:
        bounded = index.events_between(t.first_seq, t.end_seq, bounded=True)
        assert bounded == index.events_between(t.first_seq, t.end_seq)
        assert [e.seq for e in bounded] == list(range(t.first_seq, (t.end_seq or 0) + 1))
    assert path.name.endswith(".zstd") and quick and all(quick)


def test_a_contiguous_logs_verdicts_read_no_event(tmp_path: Path, monkeypatch) -> None:
    """When every event's seq is its index, a closed turn's verdict needs no read of
    its turn/end (on a big zstd log each read decompressed a frame); a log with a seq
    break still reads the event, so a repeated seq is never taken for a turn/end."""
    import turnline.core.index as index_module
    from turnline.core.root import LoadedSession

    events: list[SessionEvent] = []
    for number in range(1, 6):
        events += turn(len(events), number)
    write_log(tmp_path, SessionHeader("s1", cwd="/p"), events)
    monkeypatch.setattr(index_module, "INDEX_THRESHOLD", 1)  # read it as a big log is
    reads: list[tuple[int, int | None]] = []
    real = LoadedSession.events_between

    def counting(self: LoadedSession, first: int, last: int | None, **kw: Any) -> Any:
        reads.append((first, last))
        return real(self, first, last, **kw)

    monkeypatch.setattr(LoadedSession, "events_between", counting)
    view = view_of(SessionRoot(tmp_path))
    assert view.contiguous == len(events)
    assert [tv.forkable for tv in view.turns] == [True] * 5
    assert reads == []
    gap = turn(len(events) + 3, 6)  # seqs jump by 3: the log is no longer contiguous
    write_log(tmp_path, SessionHeader("s1", cwd="/p"), events + gap)
    view = view_of(SessionRoot(tmp_path))
    assert view.contiguous == len(events)
    assert [tv.forkable for tv in view.turns] == [True] * 5 + [False]
    assert reads  # with a break, the fork rule reads what is at the index


def test_a_kept_refusal_names_the_last_seq_of_a_grown_view(tmp_path: Path) -> None:
    """A view grown by appends keeps the verdicts its prefix decided, and a refusal
    names the log's last seq: the number follows the appends, as a fresh load says."""
    user = {"role": "user", "content": [{"type": "text", "text": "hi"}]}

    def row(seq: int, etype: str, data: dict[str, Any]) -> bytes:
        return orjson.dumps({"type": etype, "seq": seq, "time": 1000 + seq, "data": data}) + b"\n"

    log = tmp_path / "p" / "s1" / "session.jsonl"
    log.parent.mkdir(parents=True)
    header = SessionHeader(id="s1", created_at=1, cwd="/w").to_json_line()
    end = {"turn": 1, "reason": {"kind": "completed"}}
    log.write_bytes(
        header + row(0, "user/message", user) + row(1, "turn/start", {"turn": 1})
        + row(3, "turn/end", end)  # seq 2 is missing: turn 1 ends past the gap
    )  # fmt: skip
    root = SessionRoot(tmp_path)
    view = SessionView(root.load(root.summaries()[0]))
    assert view.turns[0].refusal is not None and "(last seq 3)" in view.turns[0].refusal
    more = [SessionEvent("user/message", 4, 1004, user), SessionEvent("turn/start", 5, 1005, {})]
    with log.open("ab") as fh:
        fh.write(b"".join(row(e.seq, e.type, e.data) for e in more))
    assert view.extend([more])
    fresh = SessionView(SessionRoot(tmp_path).load(SessionRoot(tmp_path).summaries()[0]))
    assert view.turns[0].refusal == fresh.turns[0].refusal
    assert "(last seq 5)" in str(view.turns[0].refusal)
