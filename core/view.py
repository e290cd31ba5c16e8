"""One open session, as every reader sees it: turns, fork verdicts, content blocks.

`SessionView` is the one reading path on top of `SessionRoot.load`: the TUI draws its
values, `turnline show` prints them, and compare/export read turns through it. For each
turn it holds whether a fork there is allowed and, if not, why, both taken from the
fork rule itself (`store.check_boundary`), so a screen can never say "fork point" where
`fork` would refuse. It grows in place from appended events (the watcher's batches),
keeping the fork rule's inputs (event count, contiguous prefix, `turn/end` seqs) current.
"""

from __future__ import annotations

import bisect
import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

import msgspec

from .codec import RecordError, expand_record
from .content import Block, header_model, turn_blocks, usage_sample
from .formats import USAGE_TYPES, packed_rows
from .logfile import Encoding
from .longline import LONG_LINE, LinePlace, LongRecord, lines
from .model import TURN_END, LogProblem, SessionEvent
from .records import loads
from .root import LoadedSession
from .store import SessionForkError, check_boundary
from .summary import SessionSummary
from .timeline import Timeline, TimelineBuilder, Turn
from .usage import USAGE_NEEDLES, UsageFold

#: The refusal of a turn that has no `turn/end` yet.
OPEN_TURN = "turn {number} is still open: it has no turn/end yet"


class TurnView(msgspec.Struct, frozen=True):
    """One turn with the fork rule's verdict on its `turn/end`.

    Attributes:
        turn: The timeline row.
        index: Its position in the timeline.
        inherited: The turn is part of the seed the session inherited from its parent.
        refusal: None when `fork` at the turn's `turn/end` is allowed; otherwise why not,
            in the fork rule's own words.
        tokens: The turn's billed tokens (dsh's usage fold, a later sample for the
            same step replacing the earlier one), inherited turns included; None if
            the turn has no usage sample or the view has no fold (a big indexed log).
        pending: The fork rule has not judged the turn yet (a big log's head preview,
            shown while the rest is indexed): `refusal` says to wait, and the turn is
            neither a fork point nor past a seq gap.
    """

    turn: Turn
    index: int
    inherited: bool
    refusal: str | None
    tokens: int | None = None
    pending: bool = False

    @property
    def forkable(self) -> bool:
        """True when `fork` at this turn's `turn/end` would be accepted."""
        return self.refusal is None

    @property
    def boundary(self) -> int | None:
        """The seq a fork here copies through (the `turn/end`), None for an open turn."""
        return self.turn.end_seq

    @property
    def seed_length(self) -> int | None:
        """How many events a child forked here inherits."""
        return None if self.turn.end_seq is None else self.turn.end_seq + 1

    @property
    def past_gap(self) -> bool:
        """A closed turn the fork rule refuses (its `turn/end` lies past a seq break);
        never a `pending` one, which the rule has not judged yet."""
        return self.turn.end_seq is not None and self.refusal is not None and not self.pending


def _may_be_sample(etype: str, data: object) -> bool:
    """A cheap first look: could this event carry a usage sample (`usage_sample`)?"""
    if not isinstance(data, dict):
        return False
    if etype == "assistant/chunk":
        chunk = data.get("chunk")
        return isinstance(chunk, dict) and chunk.get("type") == "usage"
    if etype == "assistant/message" and data.get("usage") is not None:
        return True
    # V2+: the usage may be a chunk inside the stream (`formats.usage_of`)
    return etype in USAGE_TYPES and "stream" in data


class SessionView:
    """An open session: its timeline, fork verdicts and content, growing with appends.

    Build it with `SessionView(root.load(summary))`. It is owned by one thread at a
    time (the UI thread extends it; workers only read turns' events).
    """

    def __init__(self, loaded: LoadedSession) -> None:
        self.loaded = loaded
        self._builder: TimelineBuilder = loaded.timeline_builder()
        self._tail: list[SessionEvent] = []
        header = loaded.summary.header
        self._session_id = header.id if header is not None else loaded.summary.id
        self._count = len(loaded.events)
        self._contiguous = loaded.contiguous
        last = loaded.summary.last_seq
        self._last_seq: int | None = last
        self._turn_ends: list[int] = list(loaded.timeline.turn_ends)
        self._next_seq = last + 1 if last is not None else 0
        self._timeline: Timeline = loaded.timeline
        self._turns: tuple[TurnView, ...] = ()
        self._verdicts: dict[tuple[int, int | None], TurnView] = {}
        self._verdicts_contiguous = -1  # the prefix the cached verdicts were taken at
        self._verdicts_last: int | None = None  # the last seq their refusals name
        self._start_usage()
        self._rebuild_turns()

    # -- what the session is -----------------------------------------------------------

    @property
    def path(self) -> Path:
        """The log file."""
        return self.loaded.summary.path

    @property
    def summary(self) -> SessionSummary:
        """The listing entry as the load found it."""
        return self.loaded.summary

    @property
    def problems(self) -> tuple[LogProblem, ...]:
        """The log's problems, cross-session ones and the seed check included."""
        return self.loaded.problems

    @property
    def parent_path(self) -> Path | None:
        """The resolved parent log, if any."""
        return self.loaded.parent_path

    @property
    def seed_length(self) -> int:
        """Events inherited from the parent (0 if none)."""
        return self._timeline.seed_length

    @property
    def timeline(self) -> Timeline:
        """The timeline as it is now (appended events included)."""
        return self._timeline

    @property
    def turns(self) -> tuple[TurnView, ...]:
        """Every turn, with its fork verdict."""
        return self._turns

    @property
    def next_seq(self) -> int:
        """The seq an appended event must have to be new."""
        return self._next_seq

    @property
    def contiguous(self) -> int:
        """Leading events with `seq == index`: a fork may copy only within them."""
        return self._contiguous

    def turn_view(self, index: int) -> TurnView | None:
        """One turn by position."""
        return self._turns[index] if 0 <= index < len(self._turns) else None

    def turn_of_seq(self, seq: int) -> TurnView | None:
        """The turn that ends at `seq`, or (if none does) the open turn holding it."""
        for view in self._turns:
            turn = view.turn
            if turn.end_seq == seq or (turn.first_seq <= seq and turn.end_seq is None):
                return view
        return None

    # -- the fork rule ------------------------------------------------------------------

    def boundary_error(self, boundary: object) -> SessionForkError | None:
        """Why `fork` at `boundary` would be refused now, or None: `check_boundary` on
        the view's current state (appended events included)."""
        try:
            check_boundary(
                self._session_id,
                self._count,
                self._contiguous,
                self._turn_ends,
                boundary,
                type_at=self._type_at,
                last_seq=self._last_seq,
            )
        except SessionForkError as exc:
            return exc
        return None

    def _type_at(self, index: int) -> str:
        if self._contiguous == self._count:
            # Every event's seq is its index: the turn/end seqs are exactly the indices
            # of the turn/ends, and a fork verdict needs no read (a big zstd log's took
            # a frame's decompression per turn).
            k = bisect.bisect_left(self._turn_ends, index)
            if k < len(self._turn_ends) and self._turn_ends[k] == index:
                return TURN_END
        events = self.events_between(index, index, bounded=True)
        return events[0].type if events else "not an event"

    def _verdict(self, turn: Turn) -> str | None:
        if turn.end_seq is None:
            return OPEN_TURN.format(number=turn.number)
        error = self.boundary_error(turn.end_seq)
        return None if error is None else error.message

    def _rebuild_turns(self) -> None:
        seed = self._timeline.seed_length
        views: list[TurnView] = []
        cache: dict[tuple[int, int | None], TurnView] = {}
        same_prefix = self._verdicts_contiguous == self._contiguous
        # A refusal names the log's last seq (`check_boundary`); the rest of a kept one
        # holds while the prefix does, so only that number is brought up to date.
        last = self._count - 1 if self._last_seq is None or not self._count else self._last_seq
        named = self._verdicts_last if self._verdicts_last != last else None
        for index, turn in enumerate(self._timeline.turns):
            key = (index, turn.end_seq)
            old = self._verdicts.get(key)
            # A closed turn's verdict changes only when the contiguous prefix grows (a
            # refusal may then lift; an allowed fork stays allowed): a live append
            # re-decides the new and the changed turns, not all of them.
            # Equal, not only the same object: the first append's snapshot holds copies of
            # the loaded turns (the builder is a deep copy), and re-deciding all of them
            # read an event per turn of a big log (108 ms on 2,186 turns).
            if (
                old is not None
                and turn.end_seq is not None  # an open turn's tokens may still grow
                and (old.turn is turn or old.turn == turn)
                and (same_prefix or old.refusal is None)
            ):
                view = old
                if named is not None and old.refusal is not None:
                    view = msgspec.structs.replace(
                        old, refusal=_renamed_last(old.refusal, named, last)
                    )
            else:
                inherited = turn.end_seq is not None and turn.end_seq < seed
                view = TurnView(turn, index, inherited, self._verdict(turn), self._tokens_of(turn))
            views.append(view)
            cache[key] = view
        self._verdicts = cache
        self._verdicts_contiguous = self._contiguous
        self._verdicts_last = last
        self._turns = tuple(views)

    # -- content ------------------------------------------------------------------------

    def events_between(
        self, first_seq: int, last_seq: int | None, *, bounded: bool = False
    ) -> list[SessionEvent]:
        """The events whose seq lies in `[first_seq, last_seq]` (None: to the end), from
        the loaded log (read on demand for a big one) and the appended tail.

        `bounded`: for display. A line of `longline.LONG_LINE` bytes or more is never
        held whole: its long string fields are `clipped.Clipped` prefixes that know the
        whole field's length and where to stream it from (`longline.full_text`).
        """
        events = self.loaded.events_between(first_seq, last_seq, bounded=bounded)
        if self._tail:
            hi = float("inf") if last_seq is None else last_seq
            start = bisect.bisect_left([e.seq for e in self._tail], first_seq)
            events.extend(e for e in self._tail[start:] if e.seq <= hi)
        return events

    def turn_events(self, index: int, *, bounded: bool = True) -> list[SessionEvent]:
        """One turn's events (lead-in included), bounded for display unless asked not
        to be (see `events_between`)."""
        view = self.turn_view(index)
        if view is None:
            return []
        return self.events_between(view.turn.first_seq, view.turn.end_seq, bounded=bounded)

    def blocks(self, index: int, events: Sequence[SessionEvent] | None = None) -> list[Block]:
        """One turn's content as typed blocks (`core.content`), from its bounded events
        (`turn_events`; pass them when you have read them already)."""
        if events is None:
            events = self.turn_events(index)
        return turn_blocks(events, model=self._model_before(index, events))

    def _model_before(self, index: int, events: Sequence[SessionEvent]) -> str | None:
        """The model configured when the turn started: the turn's own `request/header`
        usually comes first; else look back one turn at a time (bounded)."""
        for event in events:
            if event.type == "request/header":
                return None  # the turn configures its own before any sample
        for back in range(index - 1, max(index - 4, -1), -1):
            for event in reversed(self.turn_events(back)):
                if event.type == "request/header":
                    return header_model(event)
        return None

    # -- growing ------------------------------------------------------------------------

    def extend(self, batches: Iterable[Sequence[SessionEvent]]) -> bool:
        """Feed appended events the view does not have yet (older seqs are skipped, so a
        batch that raced the load is harmless); True if any were new."""
        grew = False
        for events in batches:
            fresh = [e for e in events if e.seq >= self._next_seq]
            if not fresh:
                continue
            grew = True
            self._builder.feed(fresh)
            self._tail.extend(fresh)
            if self._tokens is not None:
                self._tokens.feed(fresh)
            for event in fresh:
                if event.seq == self._count and self._contiguous == self._count:
                    self._contiguous += 1
                self._count += 1
                self._last_seq = event.seq
                if event.type == TURN_END:
                    bisect.insort(self._turn_ends, event.seq)
            self._next_seq = fresh[-1].seq + 1
        if grew:
            self._timeline = self._builder.snapshot()
            self._rebuild_turns()
        return grew

    # -- usage ---------------------------------------------------------------------------

    @property
    def usage(self) -> UsageFold | None:
        """The session's usage fold (own and inherited), current with every append;
        None for a big indexed log until `install_usage` gave it one that is the full
        read's (no turn left open, none restarted)."""
        tokens = self._tokens
        return None if tokens is None or not tokens.whole else tokens.fold

    def turn_tokens(self, index: int) -> int | None:
        """The billed tokens of one turn (see `TurnView.tokens`)."""
        view = self.turn_view(index)
        return None if view is None else view.tokens

    def _start_usage(self) -> None:
        """Fold the loaded events once; `extend` feeds the appended ones only. A big
        indexed log holds no events: its fold comes later (`scan_usage`)."""
        self._tokens: TurnTokens | None = None
        if self.loaded.index is not None:
            return
        self._tokens = TurnTokens(self._timeline.seed_length)
        self._tokens.feed(self.loaded.events)

    @property
    def usage_pending(self) -> bool:
        """True for a big raw log whose tokens `scan_usage` can read."""
        return (
            self._tokens is None
            and self.loaded.index is not None
            and self.loaded.summary.encoding is Encoding.RAW
        )

    def scan_usage(self, cancel: threading.Event | None = None) -> TurnTokens | None:
        """The usage of a big raw log's indexed bytes, for `install_usage` (safe in a
        worker: it reads the file, never the view's changing state). The log is read
        a window at a time and only the lines that can matter to the fold are decoded
        (a line of `longline.LONG_LINE` bytes or more bounded, its long strings
        clipped: the usage fields are small, so exact). None if a line does not
        decode, the log is not a big raw one, or `cancel` was set."""
        index = self.loaded.index
        if not self.usage_pending or index is None:
            return None
        return scan_tokens(self.path, index.size, self._timeline.seed_length, cancel)

    def install_usage(self, tokens: TurnTokens) -> bool:
        """Take `scan_usage`'s result (on the thread that owns the view): the events
        appended since the load are fed to it, then every row gets its tokens.
        False (nothing changed) if the view has its usage already."""
        if self._tokens is not None:
            return False
        tokens.feed(self._tail)
        self._tokens = tokens
        self._turns = tuple(
            msgspec.structs.replace(v, tokens=tokens.of(v.turn)) for v in self._turns
        )
        self._verdicts = {(v.index, v.turn.end_seq): v for v in self._turns}
        return True

    def _tokens_of(self, turn: Turn) -> int | None:
        return None if self._tokens is None else self._tokens.of(turn)


def scan_tokens(
    path: Path, limit: int | None, seed_length: int, cancel: threading.Event | None = None
) -> TurnTokens | None:
    """`SessionView.scan_usage` of the raw log `path` up to the file offset `limit`
    (a line start; None: its whole lines).

    The log is read `_SCAN_WINDOW` bytes at a time; C-speed searches find the lines
    that can matter in each window, and only those are decoded. A line of
    `longline.LONG_LINE` bytes or more that matters is decoded bounded
    (`longline.lines`), so memory stays bounded by the window."""
    tokens = TurnTokens(seed_length, whole=False)
    try:
        with open(path, "rb") as fh:
            end = os.fstat(fh.fileno()).st_size if limit is None else limit
            head = fh.readline(LONG_LINE)
            if not head.endswith(b"\n"):
                return None  # no whole header line: the reader's business
            packed = _packed_rows_of(head)
            pos = len(head)
            while pos < end:
                if cancel is not None and cancel.is_set():
                    return None
                buf = os.pread(fh.fileno(), min(_SCAN_WINDOW, end - pos), pos)
                if not buf:
                    break
                cut = buf.rfind(b"\n") + 1
                if cut == 0:  # one line longer than the window: bounded, alone
                    got = _long_line(path, pos, end)
                    if got is None:
                        return None
                    record, length = got
                    tokens.feed(expand_record(record, packed_rows=packed))
                    pos += length + 1
                    continue
                if not _feed_window(tokens, path, buf, cut, pos, end, packed):
                    return None
                pos += cut
    except (OSError, ValueError, RecordError):
        return None
    tokens.whole = tokens.fold.settled
    return tokens


#: Bytes of a big log `scan_tokens` reads at a time.
_SCAN_WINDOW: Final = 8 << 20


def _packed_rows_of(header_line: bytes) -> bool:
    """Whether the rows of the log with this header line may be packed (its version's
    rule, `formats.packed_rows`; a header that does not say: as V0)."""
    try:
        header = loads(header_line)
    except ValueError:  # (orjson.JSONDecodeError)
        return True
    version = header.get("version") if isinstance(header, dict) else None
    return packed_rows(version if type(version) is int else None)


def _feed_window(
    tokens: TurnTokens, path: Path, buf: bytes, cut: int, pos: int, end: int, packed: bool
) -> bool:
    """Feed the lines of `buf[:cut]` (whole lines at file offset `pos`) that can
    matter, in order; False if one does not decode. `packed`: the log's version has
    packed rows."""
    found: set[int] = set()
    find, rfind = buf.find, buf.rfind
    for needle in USAGE_NEEDLES:  # memchr-speed searches, as `usage.fold_bytes` does
        at = find(needle, 0, cut)
        while at != -1:
            start = rfind(b"\n", 0, at) + 1
            found.add(start)
            at = find(needle, find(b"\n", at, cut), cut)
    for start in sorted(found):
        stop = find(b"\n", start, cut)
        if stop - start >= LONG_LINE:
            got = _long_line(path, pos + start, end)
            if got is None:
                return False
            tokens.feed(expand_record(got[0], packed_rows=packed))
            continue
        tokens.feed(expand_record(loads(buf[start:stop]), packed_rows=packed))
    return True


def _long_line(path: Path, at: int, end: int) -> tuple[Any, int] | None:
    """The line at file offset `at` decoded bounded, and its length; None if it does
    not decode."""
    for line in lines(LinePlace(path, False, at), limit=end):
        if isinstance(line, LongRecord):
            return None if line.error is not None else (line.value, line.length)
        return loads(line), len(line)
    return None


class TurnTokens:
    """A usage fold and where each sample's change to it lies, by seq: what a row's
    tokens column sums.

    `UsageFold.turn_tokens` is keyed by dsh's `data.turn`, which need not match a
    timeline row (a log may repeat turn numbers, a sample may sit in the lead-in of
    the next row): each sample's change to its key is recorded at the sample's seq
    instead, and a row sums the changes inside its seq range. A replacement is
    credited to the row of the sample that replaces (dsh's replaced sample is the one
    just before it, for the same step: in practice the same row).
    """

    __slots__ = ("fold", "ordered", "seqs", "sums", "whole")

    def __init__(self, seed_length: int, *, whole: bool = True) -> None:
        self.fold = UsageFold(seed_length)
        #: The fold is the full read's: fed every event, or (`scan_tokens`) only the
        #: lines that matter and it ended settled (`UsageFold.settled`).
        self.whole = whole
        self.seqs: list[int] = []
        self.sums: list[int] = [0]  # running total of the changes, by sample
        self.ordered = True

    def feed(self, events: Iterable[SessionEvent]) -> None:
        """Fold events, in log order."""
        fold = self.fold
        per_turn = fold.turn_tokens
        feed = fold.feed_one
        for event in events:
            etype, data = event.type, event.data
            # Most events are streamed text chunks: only a possible sample is looked at.
            if _may_be_sample(etype, data):
                sample = usage_sample(event)
                if sample is not None:
                    before = per_turn.get(sample.turn, 0)
                    feed(etype, event.seq, event.time, data)
                    self._record(event.seq, per_turn.get(sample.turn, 0) - before)
                    continue
            feed(etype, event.seq, event.time, data)

    def _record(self, seq: int, change: int) -> None:
        seqs = self.seqs
        if seqs and seq < seqs[-1]:
            self.ordered = False
        seqs.append(seq)
        self.sums.append(self.sums[-1] + change)

    def of(self, turn: Turn) -> int | None:
        """The billed tokens of the samples inside `turn`'s seq range, or None."""
        seqs, sums = self.seqs, self.sums
        last = turn.end_seq
        if self.ordered:
            lo = bisect.bisect_left(seqs, turn.first_seq)
            hi = len(seqs) if last is None else bisect.bisect_right(seqs, last)
            return sums[hi] - sums[lo] if hi > lo else None
        hits = [
            i
            for i, seq in enumerate(seqs)
            if turn.first_seq <= seq and (last is None or seq <= last)
        ]
        if not hits:
            return None
        return sum(sums[i + 1] - sums[i] for i in hits)


def _renamed_last(refusal: str, old: int, new: int) -> str:
    """A fork refusal that named `old` as the log's last seq, naming `new` instead (the
    last such mention: a session id before it may hold anything)."""
    head, sep, tail = refusal.rpartition(f" (last seq {old})")
    return f"{head} (last seq {new}){tail}" if sep else refusal
