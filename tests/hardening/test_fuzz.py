"""Property and fuzz tests: random valid logs and byte-level mutations of them.

The budget is small and derandomized (about 100 examples in all), so the suite stays
fast and a failure reproduces on every run.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st
from turnline.core.logfile import Encoding, read_log, torn_frame_message, torn_line_message
from turnline.core.model import REASON_KINDS, LogProblem, ProblemKind, SessionEvent
from turnline.core.root import SessionRoot
from turnline.core.store import SessionForkError
from turnline.core.summary import summarize
from turnline.core.writer import encode_new_log

from .corpus import header, header_obj, log_path, put, to_events

# Text that exercises escaping, multi-byte UTF-8 and JSON-looking content, but stays
# valid Unicode (lone surrogates cannot be stored: see test_hostile).
TEXT = st.text(
    st.characters(codec="utf-8") | st.sampled_from(list('{}[]",:\\\n\x1b')),
    max_size=12,
)


@dataclass(frozen=True)
class TurnSpec:
    chunks: list[str]
    user: str
    tool: bool
    reason: str
    closed: bool


TURNS = st.builds(
    TurnSpec,
    chunks=st.lists(TEXT, max_size=6),
    user=TEXT,
    tool=st.booleans(),
    reason=st.sampled_from([*REASON_KINDS, "something-new"]),
    closed=st.booleans(),
)


def build_events(turns: list[TurnSpec]) -> list[dict[str, Any]]:
    """dsh events for the turns; only the last turn may be left open."""
    events: list[dict[str, Any]] = []

    def add(etype: str, data: Any) -> None:
        events.append({"type": etype, "seq": len(events), "time": 1000 + len(events), "data": data})

    for n, spec in enumerate(turns, start=1):
        add("turn/start", {"turn": n})
        add(
            "user/message",
            {"role": "user", "content": [{"type": "text", "text": spec.user}], "source": {}},
        )
        add("step/start", {"turn": n, "step": 1})
        for piece in spec.chunks:
            add(
                "assistant/chunk",
                {"turn": n, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": piece}},
            )
        if spec.tool:
            add(
                "tool/call",
                {"turn": n, "step": 1, "callId": "c", "name": spec.user, "arguments": {}},
            )
        add("step/end", {"turn": n, "step": 1})
        if spec.closed or n < len(turns):
            add("turn/end", {"turn": n, "reason": {"kind": spec.reason}})
    return events


def encode(session_id: str, events: list[dict[str, Any]], zstd: bool, pack: bool) -> bytes:
    head = header_obj(header(session_id))
    if zstd:
        return encode_new_log(head, to_events(events), Encoding.ZSTD)
    from turnline.core.codec import encode_log

    return encode_log(head, to_events(events), pack=pack)


@contextmanager
def scratch() -> Iterator[Path]:
    # hypothesis runs many examples per test: a fresh folder per example, not tmp_path.
    with tempfile.TemporaryDirectory(prefix="turnline-fuzz-") as name:
        yield Path(name)


def as_dicts(events: Sequence[SessionEvent]) -> list[dict[str, Any]]:
    return [e.to_json_dict() for e in events]


@settings(max_examples=30)
@given(turns=st.lists(TURNS, min_size=1, max_size=4), zstd=st.booleans(), pack=st.booleans())
def test_random_valid_logs_read_exactly_and_every_turn_end_forks(
    turns: list[TurnSpec], zstd: bool, pack: bool
) -> None:
    events = build_events(turns)
    data = encode("s", events, zstd, pack)
    with scratch() as rootdir:
        path = put(log_path(rootdir, "s", zstd=zstd), data)
        contents = read_log(path)
        assert contents.problems == ()
        assert as_dicts(contents.events) == events
        summary = summarize(path)
        root = SessionRoot(rootdir)
        loaded = root.load(root.resolve("s"))
        assert loaded.problems == ()
        assert (summary.events, summary.last_seq, summary.turns, summary.open_turn) == (
            loaded.summary.events,
            loaded.summary.last_seq,
            loaded.summary.turns,
            loaded.summary.open_turn,
        )
        before = hashlib.sha256(path.read_bytes()).hexdigest()
        ends = [e["seq"] for e in events if e["type"] == "turn/end"]
        for k, seq in enumerate(ends):
            done = root.fork("s", seq, f"child-{k}")
            child = read_log(done.child.path)
            assert child.problems == ()
            assert child.header is not None and child.header.seed_length == seq + 1
            assert as_dicts(child.events[:-1]) == events[: seq + 1]
            assert child.events[-1].type == "session/end-seed"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == before


MUTATION = st.tuples(
    st.sampled_from(["flip", "insert", "delete", "truncate"]),
    st.floats(0.0, 1.0, exclude_max=True),
    st.binary(min_size=1, max_size=4),
    st.integers(1, 40),
)


def mutate(data: bytes, mutations: list[tuple[str, float, bytes, int]]) -> bytes:
    buf = bytearray(data)
    for op, where, payload, length in mutations:
        at = int(where * len(buf)) if buf else 0
        if op == "flip" and buf:
            buf[at] ^= payload[0] or 0x20
        elif op == "insert":
            buf[at:at] = payload
        elif op == "delete":
            del buf[at : at + length]
        elif op == "truncate":
            del buf[at:]
    return bytes(buf)


def check_problems(problems: tuple[LogProblem, ...] | list[LogProblem]) -> None:
    for problem in problems:
        assert isinstance(problem, LogProblem) and isinstance(problem.kind, ProblemKind)
        assert problem.message


@settings(max_examples=70)
@given(
    turns=st.lists(TURNS, min_size=1, max_size=3),
    zstd=st.booleans(),
    mutations=st.lists(MUTATION, min_size=1, max_size=3),
)
def test_mutated_logs_give_typed_problems_never_exceptions(
    turns: list[TurnSpec], zstd: bool, mutations: list[tuple[str, float, bytes, int]]
) -> None:
    events = build_events(turns)
    data = mutate(encode("s", events, zstd, pack=True), mutations)
    with scratch() as rootdir:
        path = put(log_path(rootdir, "s", zstd=zstd), data)
        contents = read_log(path)
        check_problems(contents.problems)
        assert all(isinstance(e, SessionEvent) for e in contents.events)
        summary = summarize(path, "s")
        check_problems(summary.problems)
        root = SessionRoot(rootdir)
        (listed,) = root.scan()
        loaded = root.load(listed)
        check_problems(loaded.problems)
        event(",".join(sorted({str(p.kind) for p in loaded.problems})) or "clean")
        assert len(loaded.events) == len(contents.events)
        # The listing is a byte scan: a record corrupted inside (its line still ends in
        # "}") is only found by the full read, which calls it corruption, or a torn
        # tail when no completed turn follows it. Short of that, the two agree exactly.
        physical = (torn_line_message(0).split("(")[0], torn_frame_message(0).split("(")[0])
        if not any(
            p.kind in (ProblemKind.CORRUPT, ProblemKind.BAD_PACKED_ROW)
            or (p.kind is ProblemKind.TORN_TAIL and not p.message.startswith(physical))
            for p in loaded.problems
        ):
            assert summary.events == len(loaded.events)
        before = hashlib.sha256(path.read_bytes()).hexdigest()
        for turn in loaded.timeline.turns:
            if turn.end_seq is None:
                continue
            try:
                done = root.fork(listed, turn.end_seq, f"child-{turn.end_seq}")
            except SessionForkError as exc:
                assert not turn.forkable, exc  # refused only where the timeline says so
                continue
            assert turn.forkable
            child = read_log(done.child.path)
            # The seed's odd events are copied, so the child reports them too; nothing else.
            odd = {(p.kind, p.seq) for p in loaded.problems if p.kind is ProblemKind.ODD_EVENT}
            assert {(p.kind, p.seq) for p in child.problems} <= odd, child.problems
            assert as_dicts(child.events[:-1]) == as_dicts(loaded.events[: turn.end_seq + 1])
            marker = child.events[-1]
            assert (marker.type, marker.seq, marker.data) == (
                "session/end-seed",
                turn.end_seq + 1,
                {},
            )
        assert hashlib.sha256(path.read_bytes()).hexdigest() == before
