"""Finding a query in shown text (`core.find`) and one turn's usage (`core.turn_usage`)."""

from __future__ import annotations

from turnline.core.find import Finder
from turnline.core.model import SessionEvent
from turnline.core.turn_usage import turn_usage


def test_a_literal_find_is_any_case_and_finds_chinese() -> None:
    finder = Finder.literal("Fork")
    assert finder is not None
    assert finder.spans("fork FORK Fork") == [(0, 4), (5, 9), (10, 14)]
    chinese = Finder.literal("分叉")
    assert chinese is not None
    assert chinese.spans("我们在这里分叉吧，再分叉") == [(5, 7), (10, 12)]
    assert Finder.literal("  ") is None


def test_a_literal_find_takes_query_characters_as_typed() -> None:
    finder = Finder.literal('"a[b]*')
    assert finder is not None
    assert finder.spans('x "a[b]* y') == [(2, 8)]


def test_a_search_query_highlights_each_term_and_joins_overlaps() -> None:
    finder = Finder.of_search('tok* "the parser"')
    assert finder is not None
    text = "The tokenizer feeds the  parser; retoken"
    assert finder.spans(text) == [(4, 7), (20, 31)]  # "retoken" is not a word start
    overlapping = Finder.of_search("abc bcd")
    assert overlapping is not None
    assert overlapping.spans("xabcdx") == [(1, 5)]
    # A query the search cannot parse is found literally.
    broken = Finder.of_search('"open')
    assert broken is not None and broken.spans('an "open quote') == [(3, 8)]


def _sample(seq: int, etype: str, data: dict[str, object]) -> SessionEvent:
    return SessionEvent(etype, seq, 0, data)


def test_a_turns_usage_takes_the_model_from_an_earlier_header() -> None:
    header = _sample(3, "request/header", {"header": {"config": {"provider": "p", "model": "m"}}})
    chunk = {"type": "usage", "usage": {"inputTokens": 5, "outputTokens": 2}}
    events = [
        _sample(10, "assistant/chunk", {"turn": 2, "step": 1, "chunk": chunk}),
        _sample(
            11,
            "assistant/chunk",
            {"turn": 2, "step": 1, "chunk": chunk | {"usage": {"inputTokens": 9}}},
        ),
    ]
    totals = turn_usage(events, [header, _sample(4, "turn/start", {"turn": 1})])
    assert totals.by_model() == {"p/m": [9, 0, 0, 0, 0, 1]}  # replaced, one call
    assert turn_usage(events).by_model() == {"unknown": [9, 0, 0, 0, 0, 1]}
    assert turn_usage(events, [header]).turns == 0  # the lead-in only names the model
