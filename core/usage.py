"""Fork-aware token, cost and time accounting: dsh's usage fold, split by lineage.

The rule is dsh's own (`packages/llm/token-meter/src/usage-projection.ts`):

- a usage sample comes from an `assistant/chunk` of type `usage` or an
  `assistant/message` with `data.usage` (`content.usage_sample`);
- a sample for the same `(turn, step)` as the sample just before it replaces that one
  (dsh keeps a single `last` slot: usage reports for one step are adjacent), so the
  final message replaces the early chunk sample and a chunk with no message still counts;
- a sample's model is its message's `source`, else the latest `request/header` config.

turnline adds the lineage: for a session with `seedLength` L, events with seq < L are
inherited and seq >= L its own; the `session/end-seed` marker is neither. A subtree is
a session's own plus its children's subtrees; totals over a root are the sum of owns.

LLM calls the log records without usage (`*-llm-request` events) are counted under
`unmeteredCalls`. Turns, tool calls, errors and active time (turn/start -> turn/end,
an open turn up to its last event) are split the same way.

`UsageFold` is incremental: `feed` it appended events only. Costs are applied at view
time (`UsageTotals.cost(prices)`), so the fold keeps tokens by (model, UTC minute of
the day, UTC day): the price table picks a window by the minute, the chart by the day.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from itertools import compress, repeat
from operator import add, attrgetter, is_not
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import msgspec
import orjson

from .codec import PACKED_TAGS, RecordError, expand_record, parse_header, plain_header_values
from .content import TokenUsage, header_model, source_model, token_usage
from .formats import (
    RETRY_STARTED,
    USAGE_TYPES,
    assistant_message,
    packed_rows,
    seeded_by_marker,
    usage_of,
    usage_time,
)
from .formats import known as known_version
from .lineage import link_sessions
from .logfile import ZSTD_SUFFIX, Encoding, LogReader, encoding_of, read_log
from .model import TURN_END, TURN_START, SessionEvent
from .parallel import split_map
from .records import MAX_HEADER_LINE, HeadError, PackedData, Seq, member_count
from .root import discover, layout_session_id, map_root_logs, no_gc
from .summary import HeaderState, inherited_cut_between, read_batches, read_whole, valid_utf8

if TYPE_CHECKING:
    from .prices import PriceTable
    from .root import SessionRoot
    from .summary import SessionSummary

END_SEED: Final = "session/end-seed"
#: The LLM-request event types dsh writes without usage (grep of dsh's vocabulary);
#: any other type ending in `-llm-request` is counted the same way.
UNMETERED_TYPES: Final = ("session/title-llm-request", "web/deepseek-search-llm-request")
UNKNOWN_MODEL: Final = "unknown"
_DAY_MS: Final = 86_400_000
_MINUTE_MS: Final = 60_000


def is_unmetered(etype: str) -> bool:
    """An event type that records an LLM call without usage."""
    return etype.endswith("-llm-request")


#: Bucket key: (model, UTC day number, UTC minute of the day).
Key = tuple[str, int, int]


def _ms(time: object, default: int) -> int:
    """An event time as whole milliseconds; `default` for one that is not a finite
    number (a log may hold `1e400`, read as infinity as JSON.parse does)."""
    if isinstance(time, int):
        return time
    if isinstance(time, float) and math.isfinite(time):
        return int(time)
    return default


def _key(model: str | None, time: int | float) -> Key:
    ms = _ms(time, 0)
    day, rest = divmod(ms, _DAY_MS)
    return (model or UNKNOWN_MODEL, day, rest // _MINUTE_MS)


class UsageTotals(msgspec.Struct):
    """One usage object (the issue's U) being summed.

    `tokens` maps (model, day, minute) -> [input, output, cacheRead, cacheWrite,
    reasoning, calls]; the rest are activity counts. A row is never changed in place
    (copies share rows): to change one, assign a new list.
    """

    tokens: dict[Key, list[int]] = msgspec.field(default_factory=dict)
    turns: int = 0
    tool_calls: int = 0
    errors: int = 0
    active_ms: int = 0
    unmetered: dict[str, int] = msgspec.field(default_factory=dict)

    def _apply(self, key: Key, usage: TokenUsage, sign: int, calls: int) -> None:
        # A new row, never a change in place: copies share rows (see `copy`).
        old = self.tokens.get(key)
        row = [
            sign * usage.input_tokens,
            sign * usage.output_tokens,
            sign * usage.cache_read_tokens,
            sign * usage.cache_write_tokens,
            sign * usage.reasoning_tokens,
            calls,
        ]
        if old is not None:
            row = list(map(add, old, row))  # (rows: 6 long)
        if any(row):
            self.tokens[key] = row
        elif old is not None:
            del self.tokens[key]

    def add(self, other: UsageTotals) -> None:
        """Add another usage object into this one."""
        tokens = self.tokens
        for key, row in other.tokens.items():
            mine = tokens.get(key)
            # Rows are shared between copies: a sum is a new row.
            tokens[key] = row if mine is None else list(map(add, mine, row))  # (rows: 6 long)
        self.turns += other.turns
        self.tool_calls += other.tool_calls
        self.errors += other.errors
        self.active_ms += other.active_ms
        for etype, n in other.unmetered.items():
            self.unmetered[etype] = self.unmetered.get(etype, 0) + n

    def copy(self) -> UsageTotals:
        """An independent copy, in time proportional to its number of keys (not its
        events): the rows are shared, which is safe because no `UsageTotals` method
        changes a row in place (callers must not either)."""
        return UsageTotals(
            dict(self.tokens),
            self.turns,
            self.tool_calls,
            self.errors,
            self.active_ms,
            dict(self.unmetered),
        )

    # -- views ----------------------------------------------------------------------

    def by_model(self) -> dict[str, list[int]]:
        """model -> [input, output, cacheRead, cacheWrite, reasoning, calls]."""
        out: dict[str, list[int]] = {}
        for (model, _day, _minute), row in self.tokens.items():
            mine = out.get(model)
            out[model] = row[:] if mine is None else list(map(add, mine, row))
        return out

    def buckets(self) -> list[int]:
        """[input, output, cacheRead, cacheWrite, reasoning, calls] over every model."""
        out = [0, 0, 0, 0, 0, 0]
        for row in self.tokens.values():
            for i, value in enumerate(row):
                out[i] += value
        return out

    @property
    def total_tokens(self) -> int:
        """Billed tokens: input + output + cacheRead + cacheWrite (not reasoning)."""
        b = self.buckets()
        return b[0] + b[1] + b[2] + b[3]

    def cost(self, prices: PriceTable | None, model: str | None = None) -> float | None:
        """The cost by `prices`; None unless every sample (of `model`, if given) is priced."""
        if prices is None:
            return None
        total = 0.0
        for (m, _day, minute), row in self.tokens.items():
            if model is not None and m != model:
                continue
            price = prices.price(m, minute)
            if price is None:
                return None
            total += price.cost(row)
        return total

    def unpriced(self, prices: PriceTable | None) -> set[str]:
        """Models with samples that `prices` does not price."""
        out: set[str] = set()
        for m, _day, minute in self.tokens:
            if prices is None or prices.price(m, minute) is None:
                out.add(m)
        return out

    def cost_by_day(self, prices: PriceTable | None) -> dict[int, float]:
        """UTC day number -> the priced cost of that day (unpriced samples left out)."""
        out: dict[int, float] = {}
        for (m, day, minute), row in self.tokens.items():
            price = prices.price(m, minute) if prices is not None else None
            out[day] = out.get(day, 0.0) + (price.cost(row) if price is not None else 0.0)
        return out

    def tokens_by_day(self) -> dict[int, int]:
        """UTC day number -> billed tokens that day."""
        out: dict[int, int] = {}
        for (_m, day, _minute), row in self.tokens.items():
            out[day] = out.get(day, 0) + row[0] + row[1] + row[2] + row[3]
        return out

    def cost_by_hour(self, prices: PriceTable | None, day: int) -> list[float]:
        """The priced cost of each UTC hour (0–23) of `day` (unpriced samples left out)."""
        out = [0.0] * 24
        for (m, d, minute), row in self.tokens.items():
            price = prices.price(m, minute) if prices is not None and d == day else None
            if price is not None:
                out[min(minute // 60, 23)] += price.cost(row)
        return out

    def tokens_by_hour(self, day: int) -> list[int]:
        """Billed tokens in each UTC hour (0–23) of `day`."""
        out = [0] * 24
        for (_m, d, minute), row in self.tokens.items():
            if d == day:
                out[min(minute // 60, 23)] += row[0] + row[1] + row[2] + row[3]
        return out

    def to_json_dict(self, prices: PriceTable | None = None) -> dict[str, Any]:
        """The issue's usage object U (ten thousand sessions write three each: kept
        to a few calls in C)."""
        if not self.tokens:  # (most sessions' inherited usage)
            return {
                "inputTokens": 0,
                "outputTokens": 0,
                "cacheReadTokens": 0,
                "cacheWriteTokens": 0,
                "reasoningTokens": 0,
                "calls": 0,
                "turns": self.turns,
                "toolCalls": self.tool_calls,
                "errors": self.errors,
                "activeMs": self.active_ms,
                "cost": self.cost(prices),
                "byModel": {},
                "unmeteredCalls": dict(sorted(self.unmetered.items())) if self.unmetered else {},
            }
        models = self.by_model()
        if len(models) == 1:
            b: Sequence[int] = next(iter(models.values()))
        else:
            b = [sum(column) for column in zip(*models.values(), strict=True)]
        by_model = {}
        for model, row in sorted(models.items()):
            by_model[model] = {
                "inputTokens": row[0],
                "outputTokens": row[1],
                "cacheReadTokens": row[2],
                "cacheWriteTokens": row[3],
                "reasoningTokens": row[4],
                "calls": row[5],
                "cost": self.cost(prices, model),
            }
        return {
            "inputTokens": b[0],
            "outputTokens": b[1],
            "cacheReadTokens": b[2],
            "cacheWriteTokens": b[3],
            "reasoningTokens": b[4],
            "calls": b[5],
            "turns": self.turns,
            "toolCalls": self.tool_calls,
            "errors": self.errors,
            "activeMs": self.active_ms,
            "cost": self.cost(prices),
            "byModel": by_model,
            "unmeteredCalls": dict(sorted(self.unmetered.items())),
        }


def _error_ending(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    reason = data.get("reason")
    if isinstance(reason, dict) and isinstance(reason.get("kind"), str):
        return bool(reason["kind"] == "error")
    return "error" in data


class _Last(msgspec.Struct):
    turn: int | None
    step: int | None
    usage: TokenUsage
    key: Key
    own: bool


class UsageFold:
    """One session's usage, own and inherited, fed events in log order.

    Args:
        seed_length: The header's `seedLength` (0 or None: nothing inherited).
    """

    __slots__ = (
        "_last",
        "_last_time",
        "_model",
        "_open",
        "events",
        "inherited_totals",
        "own_totals",
        "restarts",
        "seed_length",
        "turn_tokens",
    )

    def __init__(self, seed_length: int | None = 0) -> None:
        self.seed_length = seed_length or 0
        self.own_totals = UsageTotals()
        self.inherited_totals = UsageTotals()
        self._last: _Last | None = None
        self._model: str | None = None
        #: The open turn: (start time, own?).
        self._open: tuple[int, bool] | None = None
        self._last_time = 0
        #: Events fed (the end-seed marker included).
        self.events = 0
        #: turn number -> billed tokens standing for it (for a timeline column).
        self.turn_tokens: dict[int | None, int] = {}
        #: `turn/start`s met while a turn was open (its span then ends at the event
        #: before: the fast pass cannot see that one, so it defers to the full read).
        self.restarts = 0

    def feed(self, events: Iterable[SessionEvent]) -> UsageFold:
        """Fold events (appended ones only, in order)."""
        for event in events:
            self.feed_one(event.type, event.seq, event.time, event.data)
        return self

    def feed_one(self, etype: str, seq: int, time: int | float, data: Any) -> None:
        """Fold one event given by its fields."""
        self.events += 1
        if etype == END_SEED:
            return
        own = seq >= self.seed_length
        now = _ms(time, self._last_time)
        totals = self.own_totals if own else self.inherited_totals
        if etype in USAGE_TYPES:
            if isinstance(data, dict):
                self._sample(etype, data, own, time)
        elif etype == RETRY_STARTED:
            self._retry(data)
        elif etype == "request/header":
            if isinstance(data, dict):
                header = data.get("header")
                model = header_model_of(header)
                if model is not None:
                    self._model = model
        elif etype == TURN_START:
            totals.turns += 1
            if self._open is not None:
                self.restarts += 1
            self._close(self._last_time)
            self._open = (now, own)
        elif etype == TURN_END:
            if self._open is None:
                # A turn/end with no turn/start since the last one still ends a turn
                # (the timeline's rule: `show` lists it), counted where it falls.
                totals.turns += 1
            self._close(now)
            if _error_ending(data):
                totals.errors += 1
        elif etype == "tool/call":
            totals.tool_calls += 1
        elif is_unmetered(etype):
            totals.unmetered[etype] = totals.unmetered.get(etype, 0) + 1
        self._last_time = now

    def _close(self, end: int) -> None:
        if self._open is not None:
            start, own = self._open
            totals = self.own_totals if own else self.inherited_totals
            totals.active_ms += max(0, end - start)
            self._open = None

    def _retry(self, data: Any) -> None:
        """`llm/retry-started` for the slot's (turn, step) empties the slot: the retried
        attempt's usage adds to the failed one's instead of replacing it (dsh's
        `usage-projection.ts`; both attempts were billed)."""
        last = self._last
        if last is None or not isinstance(data, dict):
            return
        turn, step = _int_or_none(data.get("turn")), _int_or_none(data.get("step"))
        if last.turn == turn and last.step == step:
            self._last = None

    def _sample(self, etype: str, data: dict[str, Any], own: bool, time: int | float) -> None:
        usage = token_usage(usage_of(etype, data))
        if usage is None:
            return
        model = source_model(assistant_message(data)) if etype == "assistant/message" else None
        turn, step = _int_or_none(data.get("turn")), _int_or_none(data.get("step"))
        key = _key(model or self._model, usage_time(etype, data, time))
        last = self._last
        calls = 1
        if last is not None and last.turn == turn and last.step == step:
            if last.usage == usage and last.key == key:
                return
            # (a later sample replaces the earlier whole, its time too: V0 writes a
            # step's usage chunk, then its message with the same usage, and V2+ keeps
            # only the message, so the minute counted is the message's in both)
            (self.own_totals if last.own else self.inherited_totals)._apply(
                last.key, last.usage, -1, -1
            )
            self.turn_tokens[turn] = self.turn_tokens.get(turn, 0) - last.usage.total
        (self.own_totals if own else self.inherited_totals)._apply(key, usage, 1, calls)
        self.turn_tokens[turn] = self.turn_tokens.get(turn, 0) + usage.total
        self._last = _Last(turn, step, usage, key, own)

    @property
    def settled(self) -> bool:
        """True if no turn is open and none restarted: then a fold fed only the lines
        that matter (`fold_bytes`) is the full read's."""
        return self._open is None and not self.restarts

    def own(self) -> UsageTotals:
        """The session's own usage (an open own turn counted up to its last event)."""
        return self._with_open(self.own_totals, True)

    def inherited(self) -> UsageTotals:
        """The usage of the inherited prefix."""
        return self._with_open(self.inherited_totals, False)

    def whole(self) -> UsageTotals:
        """Own plus inherited."""
        out = self.own()
        out.add(self.inherited())
        return out

    def _with_open(self, totals: UsageTotals, own: bool) -> UsageTotals:
        out = totals.copy()
        if self._open is not None and self._open[1] == own:
            out.active_ms += max(0, self._last_time - self._open[0])
        return out


def header_model_of(header: Any) -> str | None:
    """The model a `request/header`'s `data.header` configures."""
    if not isinstance(header, dict):
        return None
    return header_model(SessionEvent("request/header", 0, 0, {"header": header}))


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# -- a root ------------------------------------------------------------------------


class SessionUsage(msgspec.Struct, frozen=True):
    """One session's usage within a root.

    Attributes:
        id: Session id.
        path: Its log.
        parent_session: The header's parentSession.
        seed_length: The header's seedLength.
        own: Its own usage.
        inherited: The usage of its inherited prefix.
        subtree: Own plus every descendant's own (subagents included).
        parent_outside: True if it has a parent that is not under the root.
    """

    id: str
    path: str
    parent_session: str | None
    seed_length: int | None
    own: UsageTotals
    inherited: UsageTotals
    subtree: UsageTotals
    parent_outside: bool


class RootUsage(msgspec.Struct, frozen=True):
    """Usage over a root (or a session's subtree)."""

    sessions: tuple[SessionUsage, ...]
    totals: UsageTotals
    inherited_from_outside: UsageTotals

    def unpriced_models(self, prices: PriceTable | None) -> list[str]:
        """Models whose samples the price table does not price."""
        return sorted(self.totals.unpriced(prices) | self.inherited_from_outside.unpriced(prices))

    def to_json_dict(self, prices: PriceTable | None = None) -> dict[str, Any]:
        """The `usage --json` document."""
        sessions = []
        for s in self.sessions:
            own = s.own.to_json_dict(prices)
            sessions.append(
                {
                    "id": s.id,
                    "path": s.path,
                    "parentSession": s.parent_session,
                    "seedLength": s.seed_length,
                    "own": own,
                    "inherited": s.inherited.to_json_dict(prices),
                    # A leaf's subtree is its own usage (the same object): written once.
                    "subtree": dict(own) if s.subtree is s.own else s.subtree.to_json_dict(prices),
                }
            )
        return {
            "sessions": sessions,
            "totals": self.totals.to_json_dict(prices),
            "inheritedFromOutside": self.inherited_from_outside.to_json_dict(prices),
            "unpricedModels": self.unpriced_models(prices),
        }


def combine(
    folds: Mapping[str, tuple[str, str | None, int | None, UsageFold | FoldViews]],
    parent_of: Mapping[str, str],
    has_parent: Mapping[str, bool],
    only: str | None = None,
) -> RootUsage:
    """Sessions' folds put together by lineage.

    Args:
        folds: path -> (id, parentSession, seedLength, fold).
        parent_of: child path -> parent path, for parents under the root.
        has_parent: path -> whether the header names a parent (under the root or not).
        only: a path: report that session and its subtree only.
    """
    own = {path: f[3].own() for path, f in folds.items()}
    children: dict[str, list[str]] = {}
    for child, parent in parent_of.items():
        if child in folds and parent in folds:
            children.setdefault(parent, []).append(child)
    subtree: dict[str, UsageTotals] = {}

    def sub(path: str) -> UsageTotals:
        found = subtree.get(path)
        if found is not None:
            return found
        if path not in children:  # a leaf (most sessions): its own usage, shared
            found = subtree[path] = own[path]
            return found
        # Iterative post-order (lineages can be deep).
        stack = [(path, False)]
        seen: set[str] = set()
        while stack:
            p, done = stack.pop()
            if p in subtree:
                continue
            if done:
                total = own[p].copy()
                for c in children.get(p, ()):
                    if c in subtree:
                        total.add(subtree[c])
                subtree[p] = total
                continue
            if p in seen:
                continue
            seen.add(p)
            stack.append((p, True))
            stack.extend((c, False) for c in children.get(p, ()) if c not in subtree)
        return subtree[path]

    if only is not None:
        keep: list[str] = []
        stack = [only]
        while stack:
            p = stack.pop()
            keep.append(p)
            stack.extend(reversed(children.get(p, [])))
        paths = [p for p in folds if p in set(keep)]
    else:
        paths = list(folds)
    sessions = []
    totals = UsageTotals()
    outside = UsageTotals()
    for path in paths:
        sid, parent_id, seed, fold = folds[path]
        inherited = fold.inherited()
        parent_outside = has_parent.get(path, False) and (
            path not in parent_of or (only is not None and path == only)
        )
        if parent_outside or (path == only and has_parent.get(path, False)):
            outside.add(inherited)
        totals.add(own[path])
        sessions.append(
            SessionUsage(
                sid, path, parent_id, seed, own[path], inherited, sub(path), parent_outside
            )
        )
    return RootUsage(tuple(sessions), totals, outside)


# -- reading logs --------------------------------------------------------------------

#: Substrings a line must hold to matter to the fold (others are skipped undecoded).
USAGE_NEEDLES: Final = (
    b'"usage"',
    b"retry-started",
    b"request/header",
    b'"turn/',
    b"tool/call",
    b"llm-request",
    b"end-seed",
)


def fold_events(events: Iterable[SessionEvent], seed_length: int | None) -> UsageFold:
    """The fold of a sequence of events (the reference path)."""
    return UsageFold(seed_length).feed(events)


def fold_log(path: Path, seed_length: int | None, *, fast: bool = True) -> UsageFold:
    """A log's fold.

    The fast pass splits a raw log's bytes into lines and decodes only the lines that
    can matter (usage-bearing chunks and messages, request headers, turn and tool
    events, unmetered requests); its result is the full fold's (the tests check that
    on every fixture). It falls back to the full read for zstd logs, a torn or bad
    line, and an open turn (whose span runs to the log's last event).
    """
    if fast and encoding_of(path) is Encoding.RAW:
        try:
            data = path.read_bytes()
        except OSError:
            data = None
        fold = None if data is None else fold_bytes(data, seed_length)
        if fold is not None:
            return fold
    return fold_events(LogReader(path).read().events, seed_length)


#: Escapes JSON allows but no known writer uses where a byte search could meet them
#: (`turn\/end`, `"us\u0061ge"`): an escaped solidus, an escaped printable ASCII
#: character. A log that holds one is folded from the full read (`_spelled_plainly`).
_ODD_ESCAPE: Final = re.compile(rb"\\(?:/|u00[2-7][0-9a-fA-F])")


def _spelled_plainly(data: bytes) -> bool:
    """Whether the byte searches of the fast pass (`USAGE_NEEDLES`, the inherited
    marker) see every type and key as it decodes: no `_ODD_ESCAPE` in `data` (one
    regular-expression search: four times faster than two substring tests)."""
    return _ODD_ESCAPE.search(data) is None


def fold_bytes(
    data: bytes, seed_length: int | None, *, header_checked: bool = False
) -> UsageFold | None:
    """The fast pass of `fold_log` over a raw log's bytes (header line included), or
    None when only the full read can say (a torn or bad line, an open turn, a type or
    key spelled with an escape the byte searches would not see, a first line the
    reader takes for no header). `header_checked`: the caller found the first line a
    session header the reader takes (`_raw_header`)."""
    if not data.endswith(b"\n"):
        return None  # a torn tail or an empty file: the reader's rules apply
    if not data.isascii() and not valid_utf8(data):
        return None  # bytes that are not UTF-8: the full reader says which line
    fold = UsageFold(seed_length)
    header_end = data.find(b"\n") + 1
    # Every line one record, by its shape: every line break (the header's included)
    # is between a `}` and a `{`, and the last line ends with `}` (so a line break is
    # never inside a record: `}` then `{` is no JSON). A blank line, a record over two
    # lines, or a line the reader refuses for its shape is the full reader's to read
    # (it says where the log stops). (One count of the three bytes: two counts of
    # two bytes took twice as long.)
    lines = data.count(b"\n", header_end)
    if lines and (
        header_end < 2 or not data.endswith(b"}\n") or data.count(b"}\n{", header_end - 2) != lines
    ):
        return None
    if header_end - 1 > MAX_HEADER_LINE:
        return None  # not a header to the reader (it reads no events then)
    try:
        header = orjson.loads(data[: header_end - 1])
    except orjson.JSONDecodeError:
        return None
    if not header_checked and parse_header(header)[0] is None:
        return None  # not a session header: the reader's rules apply
    version = header.get("version") if isinstance(header, dict) else None
    if not known_version(version):
        return fold  # a version whose rows are not read (`LogReader` reads none either)
    packed = packed_rows(version)
    if not packed:
        rows = _rows_of(data, header_end)  # decoded: however a type or key is spelled
        # A row the reader refuses (no string type or integer seq) stops it there;
        # as many values as lines: one per line (two on a line: it refuses that line).
        if rows is None or len(rows) != lines:
            return None
        return _fold_rows(fold, rows)
    if not _spelled_plainly(data):
        return None  # a type or key the searches below would not see
    # The searches below decode only the lines that matter; the others must still be
    # records the reader takes, or it stops there (a torn write with a record after it
    # keeps a line's shape): checked by one msgspec call (it takes no JSON the reader
    # refuses), as many values as lines, each with a string type and an integer seq,
    # or a packed row as `codec.expand_record` takes one.
    if not _records_hold(memoryview(data)[header_end:], lines):
        return None
    # Find the lines that matter with C-speed searches over the whole buffer (most
    # lines are streamed text chunks that hold none of the needles), then decode
    # just those, in file order. The header line (offset 0) is never an event.
    starts: set[int] = set()
    find, rfind = data.find, data.rfind
    for needle in USAGE_NEEDLES:
        at = find(needle, header_end)
        while at != -1:
            start = rfind(b"\n", 0, at) + 1
            end = find(b"\n", at)
            starts.add(start)
            at = find(needle, end)
    feed = fold.feed_one
    loads = orjson.loads
    for start in sorted(starts):
        try:
            obj = loads(data[start : find(b"\n", start)])
        except orjson.JSONDecodeError:
            return None
        # A plain event, checked as `expand_record` checks it (packed rows go there).
        etype = obj.get("type") if isinstance(obj, dict) else None
        seq = obj.get("seq") if etype is not None else None
        if type(etype) is str and type(seq) is int and etype not in PACKED_TAGS:
            time = obj.get("time", 0)
            if not isinstance(time, int | float) or isinstance(time, bool):
                time = 0
            feed(etype, seq, time, obj.get("data"))
            continue
        try:
            events = expand_record(obj, packed_rows=packed)
        except RecordError:
            return None
        for event in events:
            feed(event.type, event.seq, event.time, event.data)
    if not fold.settled:
        return None
    return fold


class _Row(msgspec.Struct, gc=False):
    """A V2+ row as the full reader takes it (`codec.expand_record`: a string type, an
    integer seq), its time and data kept as written (decoded only for the rows the
    fold reads)."""

    type: str
    seq: Seq  # (out of orjson's integers: not this fast way, see `Seq`)
    time: msgspec.Raw = msgspec.Raw(b"0")
    data: msgspec.Raw = msgspec.Raw(b"null")


_decode_rows: Final = msgspec.json.Decoder(_Row).decode_lines


class _Record(msgspec.Struct, gc=False):
    """A V0/V1 record as the reader takes it: a string type and an integer `seq`, or
    (a packed row's tag with a `seq0` key) an integer `seq0` and its data, checked by
    `_packed_row_holds`."""

    type: str
    seq: Seq | None = None
    seq0: Any = msgspec.UNSET
    data: msgspec.Raw = msgspec.Raw(b"null")


_decode_records: Final = msgspec.json.Decoder(_Record).decode_lines
_SEQ_OF: Final = attrgetter("seq")
_SEQ0_OF: Final = attrgetter("seq0")
_decode_packed_data: Final = msgspec.json.Decoder(PackedData).decode


def _records_hold(data: memoryview, lines: int) -> bool:
    """Whether `data` (a V0/V1 log's lines after its header) holds `lines` records,
    each one the reader expands without refusing it."""
    try:
        records = _decode_records(data)
    except HeadError:
        return False
    if len(records) != lines:
        return False
    seqs = list(map(_SEQ_OF, records))
    for k in compress(range(lines), map(is_not, map(_SEQ0_OF, records), repeat(msgspec.UNSET))):
        if records[k].type in PACKED_TAGS:
            if not _packed_row_holds(records[k]):
                return False
            seqs[k] = 0  # (a packed row's seq is its seq0)
    return None not in seqs


def _packed_row_holds(row: _Record) -> bool:
    """Whether the packed row `row` is one `codec.expand_record` expands."""
    if type(row.seq0) is not int:
        return False
    try:
        packed = _decode_packed_data(row.data)
    except HeadError:
        return False
    return member_count(packed, row.type) is not None


#: The row types `UsageFold.feed_one` reads beyond counting them (and `is_unmetered`'s).
_FOLDED: Final = frozenset(
    (*USAGE_TYPES, RETRY_STARTED, "request/header", TURN_START, TURN_END, "tool/call")
)


def _rows_of(data: bytes, start: int) -> list[_Row] | None:
    """Every row of a V2+ log (one event per line) from `start` on, in one msgspec
    call; None when a line is not such a row (a projected snapshot's rows have no seq,
    a row may be odd): the needle search and the full reader decide then."""
    try:
        return _decode_rows(memoryview(data)[start:])
    except HeadError:  # (a ValidationError, or nested too deep: see `HeadError`)
        return None


def _fold_rows(fold: UsageFold, rows: list[_Row]) -> UsageFold | None:
    """`fold_bytes` of a V2+ log whose rows `_rows_of` decoded: the rows the fold
    reads, their time and data decoded as the needle search decodes a line (orjson;
    a value it refuses leaves the log to the full read); None when only the full read
    can say. Rows the fold only counts are not fed: no total depends on them."""
    feed = fold.feed_one
    loads = orjson.loads
    for row in rows:
        etype = row.type
        if etype not in _FOLDED and not is_unmetered(etype):
            continue
        try:
            time = loads(memoryview(row.time))
            payload = loads(memoryview(row.data))
        except orjson.JSONDecodeError:
            return None
        if not isinstance(time, int | float) or isinstance(time, bool):
            time = 0
        feed(etype, row.seq, time, payload)
    return fold if fold.settled else None


def root_usage(root: SessionRoot, only: SessionSummary | None = None) -> RootUsage:
    """Usage over every session under a root (or `only` and its subtree).

    Over a whole root, each log is read once: its header (id and lineage fields) and
    its fold come from the same bytes, on all cores (`_log_usage`), and the lineage
    is linked on plain values; no summary is made. The answer is the one the root's
    summaries and lineage give (`_summaries_usage`; the tests compare the two).
    """
    if only is not None:
        return _summaries_usage(root, only)
    with no_gc():  # tens of thousands of small containers and no cycles
        # Walking, reading and folding ten thousand logs is CPU-bound: all of it is
        # spread over the cores, as the listing's scan is.
        mapped = None if root.single is not None else map_root_logs(root.path, _log_usage_batch)
        if mapped is not None:
            logs, packed = mapped
            found = [_unpack_logged(item, p) for item, p in zip(logs, packed, strict=True)]
        else:
            if root.single is not None:
                logs = [(str(root.single), layout_session_id(root.single))]
            else:
                logs = [(str(path), sid) for path, sid in discover(root.path)]
            found = split_map(_log_usage, logs, pack=_pack_logged, unpack=_unpack_logged)
        links = link_sessions(
            [
                (u.id, u.parent_session, u.created_at, path, u.has_header)
                for (path, _sid), u in zip(logs, found, strict=True)
            ]
        )
        parent_of = {logs[c][0]: logs[p][0] for c, p in links.parent.items()}
        folds = {
            path: (u.id, u.parent_session, u.seed_length, u.fold)
            for (path, _sid), u in zip(logs, found, strict=True)
        }
        has_parent = {
            path: u.parent_session is not None for (path, _sid), u in zip(logs, found, strict=True)
        }
        return combine(folds, parent_of, has_parent)


def _summaries_usage(root: SessionRoot, only: SessionSummary | None = None) -> RootUsage:
    """`root_usage` from the root's summaries and lineage (scanning once if needed)."""
    summaries = root.summaries()
    lineage = root.lineage()
    parent_of = {str(c): str(p) for c, p in lineage.parent_of.items()}
    wanted: set[str] | None = None
    if only is not None:
        children: dict[str, list[str]] = {}
        for c, p in parent_of.items():
            children.setdefault(p, []).append(c)
        wanted, stack = set(), [str(only.path)]
        while stack:
            p = stack.pop()
            if p not in wanted:
                wanted.add(p)
                stack.extend(children.get(p, ()))
    folds: dict[str, tuple[str, str | None, int | None, UsageFold]] = {}
    has_parent: dict[str, bool] = {}
    chosen = [s for s in summaries if wanted is None or str(s.path) in wanted]
    items = [(str(s.path), s.seed_length) for s in chosen]
    # Folding ten thousand logs is CPU-bound: spread it over the cores (same results).
    results = split_map(_fold_item, items, pack=_pack_fold, unpack=_unpack_fold)
    for summary, fold in zip(chosen, results, strict=True):
        key = str(summary.path)
        folds[key] = (summary.id, summary.parent_session, summary.seed_length, fold)
        has_parent[key] = summary.parent_session is not None
    return combine(folds, parent_of, has_parent, None if only is None else str(only.path))


class _Logged(NamedTuple):
    """What `root_usage` needs of one log: the summary's id and lineage fields (as
    `lineage.link_key` gives them) and the fold."""

    id: str
    parent_session: str | None
    seed_length: int | None
    created_at: int
    has_header: bool
    fold: UsageFold | FoldViews


def _log_usage(item: tuple[str, str | None]) -> _Logged:
    """One log's `_Logged`, its bytes read once (`_log_usage_of`)."""
    asked = _raw_path(item)
    return _log_usage_of(item, None if asked is None else read_whole(*asked))


def _log_usage_batch(items: list[tuple[str, str | None]]) -> list[object]:
    """`_log_usage` of each log, packed (`_pack_logged`): a `root.map_root_logs` batch,
    its logs read a batch at a time before they are folded (`summary.read_batches`)."""
    return [
        _pack_logged(_log_usage_of(item, got))
        for batch in read_batches(items, _raw_path)
        for item, got in batch
    ]


def _raw_path(item: tuple[str, str | None]) -> tuple[str, None] | None:
    """What `_log_usage_of` reads of a log: a raw log whole, a zstd log nothing (the
    full reader reads it)."""
    path = item[0]
    return None if path.endswith(ZSTD_SUFFIX) else (path, None)


def _log_usage_of(
    item: tuple[str, str | None], got: tuple[bytes, float] | OSError | None
) -> _Logged:
    """One log's `_Logged` from its bytes (`summary.read_whole`'s; None for a zstd
    log, or an error: the full reader reads it then).

    The header is the one the listing takes (`summary_state`): a raw log's first line
    when it is a whole line that decodes to a header, else the full reader's (which
    the listing also falls back to); the id is the header's, else the layout's, else
    the path (`SessionSummary.id`).
    """
    path, layout_id = item
    if type(got) is tuple:
        data = got[0]
        header = _raw_header(data)
        if header is not None:
            seed = header.seed_length
            fold = fold_bytes(data, seed, header_checked=True)
            if fold is None:
                fold = fold_events(LogReader(Path(path)).read().events, seed)
            return _Logged(header.id, header.parent_session, seed, header.created_at, True, fold)
    contents = read_log(Path(path))
    head = contents.header
    if head is None:
        fallback = layout_id if layout_id is not None else path
        return _Logged(fallback, None, None, 0, False, fold_events(contents.events, None))
    return _Logged(
        head.id,
        head.parent_session,
        head.seed_length,
        head.created_at,
        True,
        fold_events(contents.events, head.seed_length),
    )


class _HeaderLinks(NamedTuple):
    id: str
    created_at: int
    parent_session: str | None
    seed_length: int | None


def _raw_header(data: bytes) -> _HeaderLinks | None:
    """A raw log's header fields from its first line, as the listing's byte scan takes
    them; None when the listing would read the log whole to tell (or it has no header)."""
    end = data.rfind(b"\n") + 1
    first_nl = data.find(b"\n", 0, MAX_HEADER_LINE + 1)
    if first_nl < 0 or first_nl >= end:
        return None
    try:
        obj = orjson.loads(data[:first_nl])
    except orjson.JSONDecodeError:
        return None
    values = plain_header_values(obj)
    if values is not None:
        h = HeaderState._make(values)
        links = _HeaderLinks(h.id, h.created_at, h.parent_session, h.seed_length)
        version, seeded = h.version, h.is_seeded
    else:
        header, _problems = parse_header(obj)
        if header is None or not known_version(header.version):
            return None
        links = _HeaderLinks(header.id, header.created_at, header.parent_session, None)
        links = links._replace(seed_length=header.seed_length)
        version, seeded = header.version, header.is_seeded
    if seeded_by_marker(version) and seeded:
        # V2+: the inherited count is the last inherited marker's seq (as the listing),
        # found by a search for its line as dsh writes it: only when every mention of
        # the type is such a line, and no escape could hide one (else the full read).
        if not _spelled_plainly(data) or data.count(_END_SEED_TYPE) != data.count(_END_SEED_LINE):
            return None
        cut = inherited_cut_between(data, first_nl, end)
        return None if cut is None else links._replace(seed_length=cut)
    return links


_END_SEED_TYPE: Final = b'"session/end-seed"'
_END_SEED_LINE: Final = b'\n{"type":"session/end-seed"'


def _pack_logged(logged: _Logged) -> object:
    return (*logged[:5], _pack_fold(logged.fold))


def _unpack_logged(item: tuple[str, str | None], packed: Any) -> _Logged:
    sid, parent, seed, created, has_header, (own, inherited, events) = packed
    views = FoldViews(_unpack_totals(own), _unpack_totals(inherited), events)
    return _Logged(sid, parent, seed, created, has_header, views)


class FoldViews(NamedTuple):
    """A fold's views as `_pack_fold` sent them: what `combine` asks of a fold (ten
    thousand of them are not rebuilt into folds, each view copied again)."""

    own_view: UsageTotals
    inherited_view: UsageTotals
    events: int

    def own(self) -> UsageTotals:
        """The session's own usage (as `UsageFold.own` gave it)."""
        return self.own_view

    def inherited(self) -> UsageTotals:
        """The usage of the inherited prefix (as `UsageFold.inherited` gave it)."""
        return self.inherited_view


def _fold_item(item: tuple[str, int | None]) -> UsageFold:
    return fold_log(Path(item[0]), item[1])


def _pack_totals(t: UsageTotals) -> tuple[Any, ...]:
    return (t.tokens, t.turns, t.tool_calls, t.errors, t.active_ms, t.unmetered)


def _unpack_totals(v: Any) -> UsageTotals:
    """The `UsageTotals` `_pack_totals` packed (its dicts are taken as they are: a
    reply's, or the fresh copies of a fold's views)."""
    tokens, turns, tools, errors, active, unmetered = v
    return UsageTotals(tokens, turns, tools, errors, active, unmetered)


def _pack_fold(fold: UsageFold | FoldViews) -> object:
    # The views (an open turn's span included), so the parent needs no other state.
    return (_pack_totals(fold.own()), _pack_totals(fold.inherited()), fold.events)


def _unpack_fold(item: tuple[str, int | None], packed: Any) -> UsageFold:
    own, inherited, events = packed
    fold = UsageFold(item[1])
    fold.own_totals = _unpack_totals(own)
    fold.inherited_totals = _unpack_totals(inherited)
    fold.events = events
    return fold


def compact_tokens(n: int) -> str:
    """A token count in a few characters: 950, 12.3k, 4.1M."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"


def format_cost(value: float | None) -> str:
    """A cost for a table: four decimals, `-` when unknown (some sample unpriced)."""
    return "-" if value is None else f"{value:.4f}"
