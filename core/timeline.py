"""Turn timelines: the rows a browser shows for one session.

`build_timeline` only looks at the structural event types in `TIMELINE_TYPES`, so
a caller that indexes a huge log may feed it just those events (in seq order) and
get exactly the timeline a full read would give.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import msgspec

from .formats import assistant_message
from .model import TURN_END, TURN_START, SessionEvent
from .records import fallback_title, session_title
from .records import is_user_input as _is_user_input
from .records import message_text as message_text  # re-exported (the TUI imports it here)

#: The only event types the timeline reads.
TIMELINE_TYPES: Final = frozenset(
    {
        TURN_START,
        TURN_END,
        "step/start",
        "tool/call",
        "user/message",
        "assistant/message",
        "agent/inbox/spliced",
        "session/title",
        "session/end-seed",
    }
)
EXCERPT: Final = 2000


class Turn(msgspec.Struct, frozen=True):
    """One turn of a session, as a timeline row.

    Attributes:
        number: The turn number from `turn/start` (or `turn/end`).
        first_seq: First seq that belongs to this turn, lead-in events included
            (the user input spliced in before `turn/start`).
        start_seq: Seq of the `turn/start`, None if the log lacks one.
        end_seq: Seq of the `turn/end`, None while the turn is open.
        reason: `completed`, `aborted`, `error`, `max-tokens`, `interrupted`, another
            kind the log names, `unknown` for a `turn/end` without one, or `open`.
        detail: The error message or abort reason, if the log gives one.
        steps: How many model request rounds (`step/start`) the turn had.
        tools: Tool names called, in order, repeats included.
        user: The user's text that started the turn (first user message), or "".
        assistant: The last assistant text of the turn, or "".
        started: Epoch ms of the turn/start (or first event), None if unknown.
        ended: Epoch ms of the turn/end, None while open.
    """

    number: int
    first_seq: int
    start_seq: int | None
    end_seq: int | None
    reason: str
    detail: str | None = None
    steps: int = 0
    tools: tuple[str, ...] = ()
    user: str = ""
    assistant: str = ""
    started: int | float | None = None
    ended: int | float | None = None

    @property
    def forkable(self) -> bool:
        """True when the turn ends with a `turn/end`: a valid fork boundary."""
        return self.end_seq is not None

    @property
    def is_open(self) -> bool:
        """True while no `turn/end` closed the turn."""
        return self.end_seq is None

    def to_json_dict(self) -> dict[str, Any]:
        """The CLI's JSON shape of a turn: `startSeq`…`endSeq` are its seqs as `show`
        prints them (`first_seq`, lead-in included), `turnStartSeq` its `turn/start`."""
        return {
            "turn": self.number,
            "startSeq": self.first_seq,
            "endSeq": self.end_seq,
            "turnStartSeq": self.start_seq,
            "reason": self.reason,
            "steps": self.steps,
            "tools": list(self.tools),
            "user": self.user,
            "assistant": self.assistant,
            "forkable": self.forkable,
        }


class Timeline(msgspec.Struct, frozen=True):
    """The turns of one session, plus what a browser needs around them.

    Attributes:
        turns: Turns in order.
        title: The latest `session/title`, else the first user text, else None.
        seed_length: How many leading events the session inherited (0 if none).
        end_seed_seq: Seq of a `session/end-seed` marker, if the log has one.
    """

    turns: tuple[Turn, ...]
    title: str | None
    seed_length: int = 0
    end_seed_seq: int | None = None
    turn_ends: tuple[int, ...] = ()
    #: Each `session/title` that set the title, as (seq, title), in order.
    titles: tuple[tuple[int, str], ...] = ()
    #: The first user text that is not blank (the title without one), as (seq, text).
    first_user: tuple[int, str] | None = None

    def title_through(self, seq: int) -> str | None:
        """The title of the session's events up to `seq` alone (a fork's seed): the
        latest title among them, else the first user text among them, else None.
        From the decoded records, so however a record spells its type."""
        for at, title in reversed(self.titles):
            if at <= seq:
                return title
        if self.first_user is not None and self.first_user[0] <= seq:
            return fallback_title(self.first_user[1])
        return None

    def split_at(self, seq: int) -> Turn | None:
        """The turn that `seq` cuts in two: it starts before `seq` and has not ended
        before it. A dsh fork (V4+) may cut its parent inside an open turn: the
        child's seed ends there, and the child closes that turn with its own closers
        (`turn/end` reason `forked`). None when `seq` falls between turns."""
        if seq <= 0:
            return None
        for k, turn in enumerate(self.turns):
            if turn.first_seq >= seq:
                return None
            end = self.last_seq_of(k)
            if end is None or end >= seq:
                return turn
        return None

    def last_seq_of(self, k: int) -> int | None:
        """The last seq of turn `k` (by position): its `turn/end`, or for a turn left
        open when a later one started (a crash; dsh's migration closes it there as
        `interrupted`), the seq before that turn's first; None for the last turn while
        it is open."""
        turns = self.turns
        end = turns[k].end_seq
        if end is None and k + 1 < len(turns):
            return turns[k + 1].first_seq - 1
        return end

    def turn_at(self, seq: int) -> Turn | None:
        """The turn a seq belongs to, if any."""
        for turn in self.turns:
            last = turn.end_seq if turn.end_seq is not None else float("inf")
            if turn.first_seq <= seq <= last:
                return turn
        return None


def _reason(data: Any) -> tuple[str, str | None]:
    if not isinstance(data, dict):
        return "unknown", None
    reason = data.get("reason")
    if isinstance(reason, dict) and isinstance(reason.get("kind"), str):
        kind = reason["kind"]
        detail: str | None = None
        error = reason.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            detail = error["message"]
        inner = reason.get("reason")
        if isinstance(inner, dict) and isinstance(inner.get("kind"), str):
            detail = inner["kind"]
        return kind, detail
    if "error" in data:
        # Real logs hold `turn/end` rows with only `{"error": "…"}`: an error ending.
        error = data["error"]
        return "error", error if isinstance(error, str) else str(error)
    return "unknown", None


class OpenTurnState(msgspec.Struct, array_like=True, gc=False):
    """A turn still being built (`TimelineBuilder.state`)."""

    number: int
    first_seq: int
    start_seq: int | None
    started: int | float | None
    steps: int
    tools: list[str]
    user: str
    inbox_user: str
    assistant: str
    counted: bool


class BuilderState(msgspec.Struct, array_like=True):
    """A `TimelineBuilder`'s whole state as plain typed values (`TimelineBuilder.state`)."""

    seed_length: int
    turns: list[Turn]
    titles: list[tuple[int, str]]
    first_user: tuple[int, str] | None
    end_seed: int | None
    turn_ends: list[int]
    current: OpenTurnState | None
    lead_in: int
    counted: bool


class _TurnBuilder:
    def __init__(self, number: int, first_seq: int) -> None:
        self.number = number
        self.first_seq = first_seq
        self.start_seq: int | None = None
        self.started: int | float | None = None
        self.steps = 0
        self.tools: list[str] = []
        self.user = ""
        self.inbox_user = ""
        self.assistant = ""
        self.counted = False  # `number` came from counting the turns before it

    def copy(self) -> _TurnBuilder:
        return _TurnBuilder.from_state(self.state())

    def state(self) -> OpenTurnState:
        """This turn so far, as plain typed values (its tools copied)."""
        return OpenTurnState(
            self.number,
            self.first_seq,
            self.start_seq,
            self.started,
            self.steps,
            list(self.tools),
            self.user,
            self.inbox_user,
            self.assistant,
            self.counted,
        )

    @classmethod
    def from_state(cls, state: OpenTurnState) -> _TurnBuilder:
        """The turn `state` was taken from (its own list of tools)."""
        turn = cls(state.number, state.first_seq)
        turn.start_seq = state.start_seq
        turn.started = state.started
        turn.steps = state.steps
        turn.tools = list(state.tools)
        turn.user = state.user
        turn.inbox_user = state.inbox_user
        turn.assistant = state.assistant
        turn.counted = state.counted
        return turn

    def finish(self, end: tuple[int, int | float] | None, reason: str, detail: str | None) -> Turn:
        """The finished turn; `end` is its `turn/end`'s (seq, time), None if open."""
        return Turn(
            number=self.number,
            first_seq=self.first_seq,
            start_seq=self.start_seq,
            end_seq=end[0] if end is not None else None,
            reason=reason,
            detail=detail,
            steps=self.steps,
            tools=tuple(self.tools),
            user=(self.user or self.inbox_user)[:EXCERPT],
            assistant=self.assistant[:EXCERPT],
            started=self.started if self.started is not None else (end[1] if end else None),
            ended=end[1] if end is not None else None,
        )


class TimelineBuilder:
    """Builds a timeline incrementally: `feed` appended events, take `snapshot`s.

    Feeding a log in pieces gives exactly the timeline of feeding it whole, so a
    live view extends its timeline with only the appended events.
    """

    def __init__(self, seed_length: int = 0) -> None:
        self.seed_length = seed_length
        self._turns: list[Turn] = []
        #: Each title set, as (seq, title): the last is the title.
        self._titles: list[tuple[int, str]] = []
        #: The first user text that is not blank, as (seq, text).
        self._first_user: tuple[int, str] | None = None
        self._end_seed: int | None = None
        self._turn_ends: list[int] = []
        self._current: _TurnBuilder | None = None
        self._lead_in = 0  # first seq after the previous turn's end
        #: A finished turn was numbered by counting the turns before it (its records
        #: had no number): see `continue_with`.
        self._counted = False

    def feed(self, events: Iterable[SessionEvent]) -> TimelineBuilder:
        """Consume events in seq order; never raises on odd event shapes."""
        for event in events:
            if event.type in TIMELINE_TYPES:
                self.feed_fields(event.type, event.seq, event.time, event.data)
        return self

    def feed_one(self, event: SessionEvent) -> None:
        """Consume one event of a `TIMELINE_TYPES` type (the next in seq order)."""
        self.feed_fields(event.type, event.seq, event.time, event.data)

    def count_step(self) -> bool:
        """`feed_fields` of a `step/start` while a turn is open (all it does then is
        count the step): True; False, having done nothing, when no turn is open."""
        current = self._current
        if current is None:
            return False
        current.steps += 1
        return True

    def add_tool(self, name: Any) -> bool:
        """`feed_fields` of a `tool/call` whose data's name is `name` while a turn is
        open: True; False, having done nothing, when no turn is open."""
        current = self._current
        if current is None:
            return False
        current.tools.append(name if isinstance(name, str) else "?")
        return True

    def feed_fields(self, etype: str, seq: int, time: int | float, data: Any) -> None:
        """`feed_one` for an event given by its fields (a reader that decodes only
        what the timeline reads need not build the event)."""
        data = data if isinstance(data, dict) else {}
        current = self._current
        if etype == TURN_START:
            if current is not None and current.start_seq is not None:
                # A turn/start without a turn/end before it: the earlier turn never closed.
                self._counted |= current.counted
                self._turns.append(current.finish(None, "open", "no turn/end before the next turn"))
                self._lead_in = seq
                current = None
            number = data.get("turn")
            if current is None:
                current = _TurnBuilder(_turn_number(number, len(self._turns) + 1), self._lead_in)
                current.counted = not _is_number(number)
            elif _is_number(number):
                current.number = _turn_number(number, current.number)
                current.counted = False
            current.start_seq = seq
            current.started = time
            self._current = current
            return
        if etype == "session/title":
            title = session_title(data)
            if title is not None:
                self._titles.append((seq, title))
            return
        if etype == "session/end-seed":
            # The end of the inherited part: no turn's event, not the child's own work.
            self._end_seed = seq
            if current is None:
                self._lead_in = seq + 1
            return
        if current is None:
            current = _TurnBuilder(
                _turn_number(data.get("turn"), len(self._turns) + 1), self._lead_in
            )
            current.counted = not _is_number(data.get("turn"))
            self._current = current
        if etype == TURN_END:
            reason, detail = _reason(data)
            if current.start_seq is None and isinstance(data.get("turn"), int):
                current.number = data["turn"]
                current.counted = False
            self._counted |= current.counted
            self._turns.append(current.finish((seq, time), reason, detail))
            self._turn_ends.append(seq)
            self._current = None
            self._lead_in = seq + 1
        elif etype == "step/start":
            current.steps += 1
        elif etype == "tool/call":
            name = data.get("name")
            current.tools.append(name if isinstance(name, str) else "?")
        elif etype == "user/message":
            if not current.user and _is_user_input(data):
                current.user = message_text(data)
                if self._first_user is None and current.user.strip():
                    self._first_user = (seq, current.user)
        elif etype == "assistant/message":
            text = message_text(assistant_message(data))
            if text:
                current.assistant = text
        elif etype == "agent/inbox/spliced" and not current.inbox_user:
            inserted = data.get("inserted")
            if isinstance(inserted, list):
                for message in inserted:
                    if _is_user_input(message):
                        current.inbox_user = message_text(message)
                        break

    def copy(self) -> TimelineBuilder:
        """An independent copy: feeding either leaves the other as it was. The finished
        turns are frozen, so only the lists that hold them and the open turn are copied
        (a deep copy of a long log's builder took a twentieth of a second)."""
        return TimelineBuilder.from_state(self.state())

    def state(self) -> BuilderState:
        """Everything this builder holds, as plain typed values (`from_state` undoes it):
        what `core.indexcache` keeps of a big log between runs."""
        current = self._current
        return BuilderState(
            self.seed_length,
            list(self._turns),
            list(self._titles),
            self._first_user,
            self._end_seed,
            list(self._turn_ends),
            None if current is None else current.state(),
            self._lead_in,
            self._counted,
        )

    @classmethod
    def from_state(cls, state: BuilderState) -> TimelineBuilder:
        """The builder `state` was taken from, in the state it was in."""
        builder = cls(state.seed_length)
        builder._turns = list(state.turns)
        builder._titles = list(state.titles)
        builder._first_user = state.first_user
        builder._end_seed = state.end_seed
        builder._turn_ends = list(state.turn_ends)
        if state.current is not None:
            builder._current = _TurnBuilder.from_state(state.current)
        builder._lead_in = state.lead_in
        builder._counted = state.counted
        return builder

    def starting_at(self, lead_in: int) -> TimelineBuilder:
        """A fresh builder (same seed length) for the events from seq `lead_in` on,
        which follow a `turn/end`: fed those events and passed to `continue_with`, it
        gives what feeding them to this builder gives."""
        later = TimelineBuilder(self.seed_length)
        later._lead_in = lead_in
        return later

    def continue_with(self, later: TimelineBuilder) -> bool:
        """Take over the turns `later` built from the events after this builder's.

        `later` comes from `starting_at(seq after this builder's last turn/end)`.
        Nothing that builder saw depends on the turns before it, except the number of
        a turn whose record has none (it counts the turns before it): then, or if this
        builder has a turn open, nothing changes and the answer is False.
        """
        counted = later._counted or (later._current is not None and later._current.counted)
        if self._current is not None or counted or later.seed_length != self.seed_length:
            return False
        self._turns.extend(later._turns)
        self._turn_ends.extend(later._turn_ends)
        self._titles.extend(later._titles)
        if self._first_user is None:
            self._first_user = later._first_user
        if later._end_seed is not None:
            self._end_seed = later._end_seed
        self._current = later._current
        self._lead_in = later._lead_in
        self._counted = self._counted or later._counted
        return True

    def snapshot(self) -> Timeline:
        """The timeline so far (an open last turn included)."""
        turns = list(self._turns)
        current = self._current
        if current is not None and (current.start_seq is not None or current.steps):
            turns.append(current.finish(None, "open", None))
        if self._titles:
            title: str | None = self._titles[-1][1]
        else:
            title = None if self._first_user is None else fallback_title(self._first_user[1])
        return Timeline(
            tuple(turns),
            title,
            self.seed_length,
            self._end_seed,
            tuple(self._turn_ends),
            tuple(self._titles),
            self._first_user,
        )


def build_timeline(events: Iterable[SessionEvent], seed_length: int = 0) -> Timeline:
    """Group events into turns. Tolerates odd logs: never raises on event shapes."""
    return TimelineBuilder(seed_length).feed(events).snapshot()


def _is_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _turn_number(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default
