"""The listing's count of a log's records (`summary._count_block`: every record line
decoded in one msgspec call, into the Struct of its type) answers exactly as a full
read does, and hands each log it cannot answer as surely to the slower counts: two
msgspec calls (`_count_heads`: a type the union does not know, a record its Struct
refuses), the line-by-line count (`_count_records`), or the full read.

Each case says which of them answered, so a change that quietly sends every log
down a slower path, or lets the fast one answer a log it should hand on, is caught.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace
from turnline.core import summary
from turnline.core.index import index_log
from turnline.core.summary import summarize

from ..conftest import fixture_logs
from .disk_logs import event, turn_records
from .test_index import BAD_CASES, HEADER, _line, _packed, full_read

HEADER_V5 = {
    "type": "session",
    "version": 5,
    "id": "s-5",
    "createdAt": 1,
    "isSeeded": False,
    "delegationDepth": 0,
    "cwd": "/w",
}


@pytest.fixture
def answered(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Which slower count answered, in order: `heads` (`_count_heads`), `lines`
    (`_count_records`), `full` (the full read); nothing when the union answered."""
    calls: list[str] = []
    for name, tag in (("_count_heads", "heads"), ("_count_records", "lines"), ("read_log", "full")):
        real = getattr(summary, name)

        def spy(*args: Any, _real: Any = real, _tag: str = tag, **kwargs: Any) -> Any:
            calls.append(_tag)
            return _real(*args, **kwargs)

        monkeypatch.setattr(summary, name, spy)
    return calls


def _records(*records: object) -> bytes:
    return b"".join(_line(r) for r in records)


def _turns(start: int, n: int) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for k in range(n):
        out += turn_records(start + len(out), k + 1)
    return out


def _title(seq: int, title: object) -> dict[str, object]:
    return event(seq, "session/title", title=title)


#: name -> (the records after a V0 header, which slower counts answer, in order)
CASES: dict[str, tuple[bytes, tuple[str, ...]]] = {
    "clean, with packed rows": (
        _records(*turn_records(0, 1), _packed(4, 5), *_turns(9, 2)),
        (),
    ),
    "a type the union does not know": (
        _records(*turn_records(0, 1), event(4, "plugin/new-kind", x=1), *_turns(5, 2)),
        ("heads",),
    ),
    # msgspec checks every duplicate of a Struct's field; `JSON.parse` takes the last.
    "a turn/end whose reason only its last data has": (
        _records(*turn_records(0, 1), event(4, "turn/start", turn=2))
        + b'{"type":"turn/end","seq":5,"time":1,"data":{"turn":2},'
        + b'"data":{"turn":2,"reason":{"kind":"completed"}}}\n'
        + _records(*turn_records(6, 3)),
        ("heads",),
    ),
    "type keys that disagree": (
        _records(*turn_records(0, 1))
        + b'{"type":"turn/start","type":"turn/end","seq":4,"time":1,'
        + b'"data":{"reason":{"kind":"completed"}}}\n'
        + _records(*turn_records(5, 3)),
        ("heads",),
    ),
    "a packed row's tag on a plain event": (
        _records(*turn_records(0, 1))
        + b'{"type":"text-chunks","seq":4,"time":1,"data":{"text":"x"}}\n'
        + _records(*turn_records(5, 2)),
        ("heads",),
    ),
    "a turn/end without a reason kind": (
        _records(*turn_records(0, 1), event(4, "turn/start", turn=2))
        + _records(event(5, "turn/end", turn=2, reason={"kind": 3})),
        ("heads", "lines", "full"),
    ),
    "a packed row without data": (
        _records(*turn_records(0, 1))
        + b'{"type":"text-chunks","seq0":4,"time0":1}\n'
        + _records(*turn_records(5, 2)),
        ("full",),
    ),
    "a packed row whose members and deltas disagree": (
        _records(*turn_records(0, 1), _packed(4, 4, dt=1), *_turns(8, 2)),
        ("full",),
    ),
    "a packed row with a gap after it": (
        _records(*turn_records(0, 1), _packed(4, 5), *_turns(10, 2)),
        ("full",),
    ),
    "a packed row whose seq0 is not the count before it": (
        _records(*turn_records(0, 1), _packed(5, 5), *_turns(10, 2)),
        ("full",),
    ),
    "an ordinary event without a seq": (
        _records(*turn_records(0, 1))
        + b'{"type":"step/start","time":1,"data":{}}\n'
        + _records(*turn_records(5, 2)),
        ("full",),
    ),
    "two records on one line": (
        _records(*turn_records(0, 1), event(4, "step/start", turn=1))[:-1]
        + b" "
        + _records(event(5, "step/end", turn=1), *_turns(6, 2)),
        ("lines", "full"),
    ),
    # The title: `title_between` is told how many `session/title` records there are.
    "two titles, the last one no string": (
        _records(*turn_records(0, 1), _title(4, "first"), _title(5, 7), *_turns(6, 1)),
        (),
    ),
    "one title, no string": (
        _records(*turn_records(0, 1), _title(4, None), *_turns(5, 1)),
        (),
    ),
    "one title, late": (
        _records(*_turns(0, 3), _title(12, "late")),
        (),
    ),
    "no title": (_records(*_turns(0, 2)), ()),
    "a title whose type keys disagree": (
        _records(*turn_records(0, 1))
        + b'{"type":"session/title","type":"step/end","seq":4,"data":{"title":"no"}}\n',
        ("heads",),
    ),
}

#: name -> (the records after a V5 header, which slower counts answer)
CASES_V5: dict[str, tuple[bytes, tuple[str, ...]]] = {
    "clean": (_records(*_turns(0, 3), _title(12, "t")), ()),
    "a packed row in a version without them": (
        _records(*turn_records(0, 1), _packed(4, 3), *_turns(7, 1)),
        ("full",),
    ),
    "a packed row's tag on a plain event": (
        _records(*turn_records(0, 1))
        + b'{"type":"text-chunks","seq":4,"time":1,"data":{"texts":["a"]}}\n'
        + _records(*turn_records(5, 2)),
        (),
    ),
    "a type the union does not know": (
        _records(*turn_records(0, 1), event(4, "plugin/new-kind"), *_turns(5, 1)),
        ("heads",),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_v0_log_is_counted_exactly_by_the_count_that_can(
    tmp_path: Path, answered: list[str], case: str
) -> None:
    body, expected = CASES[case]
    log = tmp_path / "session.jsonl"
    log.write_bytes(_line(HEADER) + body)
    listed = summarize(log)
    assert tuple(answered) == expected
    assert listed == full_read(log).summary


@pytest.mark.parametrize("case", list(CASES_V5))
def test_a_v5_log_is_counted_exactly_by_the_count_that_can(
    tmp_path: Path, answered: list[str], case: str
) -> None:
    body, expected = CASES_V5[case]
    log = tmp_path / "session.v5.jsonl"
    log.write_bytes(_line(HEADER_V5) + body)
    listed = summarize(log)
    assert tuple(answered) == expected
    assert listed == full_read(log).summary


@pytest.mark.parametrize("case", list(BAD_CASES))
def test_the_index_bad_cases_are_listed_as_a_full_read_lists_them(
    tmp_path: Path, case: str
) -> None:
    log = tmp_path / "session.jsonl"
    log.write_bytes(BAD_CASES[case][0])
    listed, full = summarize(log), full_read(log).summary
    # (A torn tail found by the byte scan does not say its line and seq.)
    assert replace(listed, problems=()) == replace(full, problems=())
    assert [(p.kind, p.message) for p in listed.problems] == [
        (p.kind, p.message) for p in full.problems
    ]


def test_the_union_counts_almost_every_real_fixture(answered: list[str]) -> None:
    slower = 0
    for path in fixture_logs():
        answered.clear()
        summarize(path)
        slower += bool(answered)
    # The fixtures' warts (a torn tail, a turn/end without a reason) go the slower
    # ways; the clean majority must not.
    assert slower <= 0.05 * len(fixture_logs())


def _escaped(record: dict[str, object]) -> bytes:
    """`record`'s line with the `/` of its type escaped (`\\/`): the same JSON, which
    `JSON.parse` reads as the same type, but bytes no search for dsh's spelling finds."""
    line = _line(record)
    etype = str(record["type"]).encode()
    return line.replace(etype, etype.replace(b"/", b"\\/"), 1)


def _user(seq: int, text: str) -> dict[str, object]:
    return event(seq, "user/message", role="user", content=[{"type": "text", "text": text}])


#: name -> (the header, the records after it): logs the listing once summarized
#: otherwise than the full read (both bugs were in every count, the fast one included).
HANDED_ON: dict[str, tuple[dict[str, object], bytes]] = {
    # A packed row's tag with `seq0` is a packed row to the full reader (expanded, or
    # refused if it is no good one), whatever `seq` it also has.
    # (Last: what follows it then follows on from no count, the listing's nor the
    # full reader's, and the listing once counted it as one event.)
    "a packed row that also has a seq": (
        HEADER,
        _records(*turn_records(0, 1), {**_packed(4, 3), "seq": 4}),
    ),
    "a packed row's tag with a seq and a null seq0": (
        HEADER,
        _records(*turn_records(0, 1))
        + b'{"type":"text-chunks","seq":4,"seq0":null,"time":1,"data":{"texts":["a"]}}\n'
        + _records(*turn_records(5, 2)),
    ),
    # Types escaped: the byte searches for the title, the first user message and the
    # inherited seed's end must not miss them.
    "an escaped title": (
        HEADER,
        _records(*turn_records(0, 1)) + _escaped(_title(4, "T")) + _records(*_turns(5, 1)),
    ),
    "an escaped title after a plain one": (
        HEADER,
        _records(*turn_records(0, 1), _title(4, "first"))
        + _escaped(_title(5, "second"))
        + _records(*_turns(6, 1)),
    ),
    "an escaped first user message": (
        HEADER,
        _records(event(0, "turn/start", turn=1))
        + _escaped(_user(1, "the escaped one"))
        + _records(_user(2, "a later one"), event(3, "turn/end", turn=1, reason={"kind": "x"})),
    ),
    "an escaped first user message (V5)": (
        HEADER_V5,
        _records(event(0, "turn/start", turn=1))
        + _escaped(_user(1, "the escaped one"))
        + _records(_user(2, "a later one"), event(3, "turn/end", turn=1, reason={"kind": "x"})),
    ),
}


@pytest.mark.parametrize("case", list(HANDED_ON))
def test_what_the_byte_scan_cannot_see_is_listed_as_a_full_read_lists_it(
    tmp_path: Path, case: str
) -> None:
    header, body = HANDED_ON[case]
    name = "session.v5.jsonl" if header.get("version") == 5 else "session.jsonl"
    log = tmp_path / name
    log.write_bytes(_line(header) + body)
    full = full_read(log).summary
    assert summarize(log) == full
    assert index_log(log).summary == full
