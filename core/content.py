"""A turn's content as typed blocks: what a reader, a search index or an export wants.

The one place that reads message shapes out of raw events. The TUI's detail pane,
`turnline export`, the search catalog and the usage fold all take these values and
never parse event data themselves (house style: "if a widget needs `json.loads`, the
core is missing a value").

Blocks come in log order. A tool call is paired with its result (matched by call id);
a result whose call is not in the events given becomes a `ToolCall` named `?`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, tzinfo
from typing import Any, Final, TypeAlias

import msgspec
import orjson

from .clipped import Clipped, join_texts, text_length
from .formats import USAGE_TYPES, assistant_message, result_parts_of, source_kind, usage_of
from .model import TURN_END, SessionEvent
from .records import is_user_input, message_text
from .textsafe import one_line

#: Token buckets of a usage sample, as dsh names them (`TokenUsage`). The first four
#: are disjoint (billed input = input + cacheRead + cacheWrite); reasoning is part of
#: output, reported but never added to a sum.
USAGE_BUCKETS: Final = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
REASONING_BUCKET: Final = "reasoningTokens"


# -- blocks ---------------------------------------------------------------------------


class UserText(msgspec.Struct, frozen=True):
    """What the user typed (a `user/message`, or one spliced in from the agent's inbox)."""

    text: str
    seq: int


class ContextText(msgspec.Struct, frozen=True):
    """A `user/message` a plugin injected (its `source.kind` names the plugin)."""

    text: str
    source: str
    seq: int


class AssistantText(msgspec.Struct, frozen=True):
    """The text of an `assistant/message` (the assembled, authoritative model output)."""

    text: str
    seq: int
    step: int | None = None


class Reasoning(msgspec.Struct, frozen=True):
    """The reasoning parts of an `assistant/message`."""

    text: str
    seq: int
    step: int | None = None


class ToolResult(msgspec.Struct, frozen=True):
    """A tool's result, as the `tool/result` event gives it.

    Attributes:
        text: The result's text parts joined (or its content as JSON when it has none).
        is_error: The result says `isError: true`.
        seq: Seq of the `tool/result` event.
        meta: The event's `data.meta` (e.g. `diffs` from file tools), or empty.
    """

    text: str
    is_error: bool
    seq: int
    meta: Mapping[str, Any] = msgspec.field(default_factory=dict)


#: Tools whose `command` argument is a shell command line.
SHELL_TOOLS: Final = frozenset({"bash", "shell"})


class FileEdit(msgspec.Struct, frozen=True):
    """An edit call's change: `old` replaced by `new` in `path` (`old` is empty for a
    whole-file write)."""

    path: str | None
    old: str
    new: str


class ToolCall(msgspec.Struct, frozen=True):
    """A tool invocation and, once it arrived, its result.

    Attributes:
        name: The tool's name (`?` when the log does not say).
        call_id: The call id, if any.
        arguments: The arguments decoded (a JSON string argument is parsed; anything
            that does not parse stays the string it was).
        arguments_text: The arguments for reading: indented JSON, or the raw string.
        seq: Seq of the `tool/call` event (of the result, for an orphan result).
        step: The step the call belongs to.
        result: The result, None while pending.
    """

    name: str
    call_id: str | None
    arguments: Any
    arguments_text: str
    seq: int
    step: int | None = None
    result: ToolResult | None = None

    @property
    def pending(self) -> bool:
        """True while no result arrived."""
        return self.result is None

    def argument(self, key: str) -> Any:
        """One named argument (None when the arguments are not an object or lack it)."""
        return self.arguments.get(key) if isinstance(self.arguments, dict) else None

    @property
    def shell_command(self) -> str | None:
        """The command of a shell call (`bash`, `shell`: a string
        `command` argument), None for any other call."""
        if self.name not in SHELL_TOOLS:
            return None
        command = self.argument("command")
        return command if isinstance(command, str) else None

    @property
    def file_edit(self) -> FileEdit | None:
        """What an edit call changes (dsh's `edit`, `write`, `str_replace_editor`'s
        `str_replace`/`create`), None for any other call."""
        path = self.argument("file_path")
        if not isinstance(path, str):
            path = self.argument("path")
        path = path if isinstance(path, str) else None
        old, new = self.argument("old_string"), self.argument("new_string")
        if self.name == "str_replace_editor":
            command = self.argument("command")
            if command == "str_replace":
                old, new = self.argument("old_str"), self.argument("new_str")
            elif command == "create":
                old, new = "", self.argument("file_text")
            else:
                return None
        elif self.name == "write":
            old, new = "", self.argument("content")
        elif self.name != "edit":
            return None
        if not isinstance(old, str) or not isinstance(new, str):
            return None
        return FileEdit(path, old, new)


class TurnError(msgspec.Struct, frozen=True):
    """An error ending (`turn/end` reason `error`, or a `{"error": …}` turn/end)."""

    message: str
    seq: int


class TokenUsage(msgspec.Struct, frozen=True):
    """One usage sample's buckets (dsh's `TokenUsage`); absent buckets are 0."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total(self) -> int:
        """All billed tokens: input + output + cache read + cache write (reasoning is
        part of output, so it is not added again)."""
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )

    def to_json_dict(self) -> dict[str, int]:
        """The buckets by dsh's names."""
        return {
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cacheReadTokens": self.cache_read_tokens,
            "cacheWriteTokens": self.cache_write_tokens,
            "reasoningTokens": self.reasoning_tokens,
        }


class StepUsage(msgspec.Struct, frozen=True):
    """The usage of one model call (a step), after later samples replaced earlier ones.

    Attributes:
        turn: The turn number the sample names.
        step: The step number the sample names.
        usage: The buckets.
        model: `provider/model`, None when the log does not say.
        seq: Seq of the sample that stands (the last one for this step).
    """

    turn: int | None
    step: int | None
    usage: TokenUsage
    model: str | None
    seq: int


Block: TypeAlias = (
    UserText | ContextText | AssistantText | Reasoning | ToolCall | TurnError | StepUsage
)


# -- usage samples (the rule of dsh's usage projection) --------------------------------


def token_usage(value: Any) -> TokenUsage | None:
    """A `TokenUsage` from a usage object; None if it is not one (no integer bucket)."""
    if not isinstance(value, dict):
        return None
    found = False
    numbers: list[int] = []
    for key in (*USAGE_BUCKETS, REASONING_BUCKET):
        raw = value.get(key)
        if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0:
            numbers.append(raw)
            found = True
        elif isinstance(raw, float) and raw >= 0 and raw.is_integer():
            numbers.append(int(raw))
            found = True
        else:
            numbers.append(0)
    return TokenUsage(*numbers) if found else None


def source_model(message: Any) -> str | None:
    """`provider/model` from a message's `source` (None when it names neither)."""
    source = message.get("source") if isinstance(message, dict) else None
    return config_model(source)


def config_model(config: Any) -> str | None:
    """`provider/model` from an object with `provider` and `model` keys."""
    if not isinstance(config, dict):
        return None
    provider, model = config.get("provider"), config.get("model")
    if isinstance(provider, str) and isinstance(model, str):
        return f"{provider}/{model}"
    if isinstance(model, str):
        return model
    return None


def header_model(event: SessionEvent) -> str | None:
    """The model a `request/header` event configures (`data.header.config`)."""
    data = event.data
    header = data.get("header") if isinstance(data, dict) else None
    return config_model(header.get("config") if isinstance(header, dict) else None)


class UsageSample(msgspec.Struct, frozen=True):
    """One usage sample: from an `assistant/chunk` of type `usage`, or an
    `assistant/message` with `data.usage`. A later sample for the same (turn, step)
    replaces an earlier one."""

    turn: int | None
    step: int | None
    usage: TokenUsage
    #: From the message's source; None for a chunk sample (the caller uses the latest
    #: `request/header` model then).
    model: str | None
    from_message: bool
    seq: int
    time: int | float


def usage_sample(event: SessionEvent) -> UsageSample | None:
    """The usage sample an event carries (`formats.usage_of`: a usage chunk, an
    `assistant/message`'s usage or its stream's, an `assistant/attempt`'s stream),
    or None."""
    etype = event.type
    if etype not in USAGE_TYPES:
        return None
    data = event.data
    usage = token_usage(usage_of(etype, data))
    if usage is None:
        return None
    turn, step = _int_or_none(data.get("turn")), _int_or_none(data.get("step"))
    if etype == "assistant/message":
        model = source_model(assistant_message(data))
        return UsageSample(turn, step, usage, model, True, event.seq, event.time)
    return UsageSample(turn, step, usage, None, False, event.seq, event.time)


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# -- a turn's blocks ------------------------------------------------------------------


def pretty_json(value: Any) -> str:
    """A decoded value as indented JSON (its `str` if it is not JSON-shaped)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        return str(value)


def decode_arguments(arguments: Any) -> tuple[Any, str]:
    """Tool-call arguments decoded, and as text for reading.

    dsh stores arguments as a JSON string: it is parsed when it holds JSON, and shown
    indented; a string that is not JSON stays itself, and so does a long one read
    bounded (a `Clipped` prefix, which is not the JSON it begins).
    """
    if isinstance(arguments, Clipped):
        return arguments, arguments
    if isinstance(arguments, str):
        try:
            value = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return arguments, arguments
        return value, pretty_json(value)
    return arguments, pretty_json(arguments)


def result_text(part: Mapping[str, Any]) -> str:
    """The text of one `tool-result` part: its text parts, else its content as JSON."""
    content = part.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            c["text"] for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)
        ]
        joined = join_texts([t for t in texts if t])
        if joined:
            return joined
    if content is None:
        return ""
    return pretty_json(content)


def turn_error(data: Any) -> str | None:
    """The error message of a `turn/end`'s data, if it ended in error with one."""
    if not isinstance(data, dict):
        return None
    reason = data.get("reason")
    if isinstance(reason, dict):
        error = reason.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
        return None
    if "error" in data:
        error = data["error"]
        return error if isinstance(error, str) else pretty_json(error)
    return None


class _PendingCall(msgspec.Struct):
    name: str
    call_id: str | None
    arguments: Any
    arguments_text: str
    seq: int
    step: int | None
    result: ToolResult | None = None

    def freeze(self) -> ToolCall:
        return ToolCall(
            self.name,
            self.call_id,
            self.arguments,
            self.arguments_text,
            self.seq,
            self.step,
            self.result,
        )


def _seen_message(message: Any, seen: set[str]) -> bool:
    """True if a message with this one's `id` was shown already (dsh writes a message
    spliced from the agent's inbox again as a `user/message` with the same id); records
    the id otherwise."""
    message_id = message.get("id") if isinstance(message, dict) else None
    if not isinstance(message_id, str):
        return False
    if message_id in seen:
        return True
    seen.add(message_id)
    return False


def turn_blocks(events: Iterable[SessionEvent], *, model: str | None = None) -> list[Block]:
    """A turn's events as blocks, in log order.

    Args:
        events: The turn's events in seq order.
        model: The model configured before these events (the latest `request/header`
            earlier in the log), for usage samples that do not name theirs.
    """
    out: list[Block | _PendingCall | None] = []  # (None: a step's usage, moved on)
    calls: dict[str, _PendingCall] = {}
    usage_at: dict[tuple[int | None, int | None], int] = {}  # (turn, step) -> index in out
    current_model = model
    seen_messages: set[str] = set()
    for event in events:
        etype = event.type
        data = event.data if isinstance(event.data, dict) else {}
        if etype == "user/message":
            if _seen_message(data, seen_messages):
                continue  # spliced from the inbox already: the same message, by id
            text = message_text(data)
            kind = source_kind(data)
            if kind in (None, "user"):
                out.append(UserText(text, event.seq))
            else:
                out.append(ContextText(text, kind, event.seq))
        elif etype == "agent/inbox/spliced":
            inserted = data.get("inserted")
            for message in inserted if isinstance(inserted, list) else ():
                if is_user_input(message) and not _seen_message(message, seen_messages):
                    out.append(UserText(message_text(message), event.seq))
        elif etype == "assistant/message":
            message = assistant_message(data)
            step = _int_or_none(data.get("step"))
            reasoning = message_text(message, kinds=("reasoning",))
            if reasoning:
                out.append(Reasoning(reasoning, event.seq, step))
            text = message_text(message)
            if text:
                out.append(AssistantText(text, event.seq, step))
            # A step's usage comes after its message: V0 wrote the usage chunk before
            # the message, V2+ keeps it in the message (its stream or `usage`).
            key = (_int_or_none(data.get("turn")), step)
            at = usage_at.get(key)
            if at is not None:
                usage_at[key] = len(out)
                out.append(out[at])
                out[at] = None
        elif etype == "tool/call":
            name = data.get("name")
            call_id = data.get("callId")
            value, shown = decode_arguments(data.get("arguments"))
            call = _PendingCall(
                name if isinstance(name, str) else "?",
                call_id if isinstance(call_id, str) else None,
                value,
                shown,
                event.seq,
                _int_or_none(data.get("step")),
            )
            if call.call_id is not None:
                calls[call.call_id] = call
            out.append(call)
        elif etype == "tool/result":
            meta = data.get("meta")
            for part in result_parts_of(data):
                call_id = part.get("toolCallId")
                target = calls.get(call_id) if isinstance(call_id, str) else None
                if target is None or target.result is not None:
                    target = _PendingCall(
                        "?",
                        call_id if isinstance(call_id, str) else None,
                        None,
                        "",
                        event.seq,
                        _int_or_none(data.get("step")),
                    )
                    out.append(target)
                target.result = ToolResult(
                    result_text(part),
                    part.get("isError") is True,
                    event.seq,
                    meta if isinstance(meta, dict) else {},
                )
        elif etype == "request/header":
            current_model = header_model(event) or current_model
        elif etype == TURN_END:
            message = turn_error(data)
            if message:
                out.append(TurnError(message, event.seq))
        sample = usage_sample(event)
        if sample is not None:
            standing = StepUsage(
                sample.turn,
                sample.step,
                sample.usage,
                sample.model or current_model,
                sample.seq,
            )
            key = (sample.turn, sample.step)
            if key in usage_at:
                out[usage_at[key]] = standing  # a later sample replaces the earlier one
            else:
                usage_at[key] = len(out)
                out.append(standing)
    return [b.freeze() if isinstance(b, _PendingCall) else b for b in out if b is not None]


# -- bounded text for screens -----------------------------------------------------------

#: A screen shows at most this many characters of one field (a message, a tool's
#: arguments or result); the rest is counted, never rendered.
FIELD_LIMIT: Final = 64 * 1024
#: The raw view shows at most this many events and characters of one turn.
RAW_EVENTS: Final = 400
RAW_CHARS: Final = 200_000
#: The one-line event view: at most this many characters of an event's data.
EXCERPT_CHARS: Final = 160


class Bounded(msgspec.Struct, frozen=True):
    """A prefix of a field, and how much of it was left off.

    Attributes:
        text: At most the limit's characters from the start of the field.
        more: Characters left off (0 when `text` is the whole field).
    """

    text: str
    more: int = 0

    @property
    def cut(self) -> bool:
        """True when part of the field was left off."""
        return self.more > 0


def bounded(text: str, limit: int = FIELD_LIMIT) -> Bounded:
    """The first `limit` characters of `text` (a slice: cheap whatever the size); for a
    field read bounded (`Clipped`), `more` counts the whole field past them."""
    total = text_length(text)
    if total <= limit and not isinstance(text, Clipped):
        return Bounded(text)
    shown = text[:limit]
    return Bounded(shown, max(0, total - len(shown)))


def size_words(chars: int) -> str:
    """A count of characters for a reader: `812 characters`, `64 KB`, `9.5 MB`."""
    if chars < 1024:
        return f"{chars} character{'s' if chars != 1 else ''}"
    if chars < 1024 * 1024:
        return f"{chars / 1024:.0f} KB"
    return f"{chars / (1024 * 1024):.1f} MB"


def _capped(value: Any, limit: int) -> Any:
    """`value` with every string longer than `limit` cut to a prefix and a note."""
    if isinstance(value, str):
        part = bounded(value, limit)
        return f"{part.text}… {size_words(part.more)} more" if part.cut else part.text
    if isinstance(value, dict):
        return {key: _capped(item, limit) for key, item in value.items()}
    if isinstance(value, list):
        return [_capped(item, limit) for item in value]
    return value


def raw_events_text(
    events: Sequence[SessionEvent],
    *,
    max_events: int = RAW_EVENTS,
    max_chars: int = RAW_CHARS,
    field_limit: int = FIELD_LIMIT,
) -> str:
    """The events as indented JSON for the raw view, bounded: each string field is cut
    to `field_limit` characters (with a note of what was left off), and the output
    stops after `max_events` events or once it passes `max_chars` characters."""
    return _bounded_events(
        events,
        lambda event: pretty_json(_capped(event.to_json_dict(), field_limit)),
        max_events,
        max_chars,
    )


def _bounded_events(
    events: Sequence[SessionEvent],
    render: Callable[[SessionEvent], str],
    max_events: int,
    max_chars: int,
) -> str:
    """Each event rendered, one per line or block, stopping after `max_events` events
    or once past `max_chars` characters, with a note of how many were left out."""
    out: list[str] = []
    size = 0
    for count, event in enumerate(events):
        if count >= max_events or size > max_chars:
            rest = len(events) - count
            out.append(f"… {rest} more event{'s' if rest != 1 else ''} not shown")
            break
        text = render(event)
        size += len(text) + 1
        out.append(text)
    return "\n".join(out)


def event_time(time: float, tz: tzinfo | None = UTC) -> str:
    """An event's time (epoch ms) as `HH:MM:SS.mmm` in `tz` (`—` for a time of 0)."""
    if not time:
        return "—"
    try:
        moment = datetime.fromtimestamp(time / 1000, tz)
    except (OverflowError, OSError, ValueError):
        return "?"
    return moment.strftime("%H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


def event_line(
    event: SessionEvent, *, tz: tzinfo | None = UTC, excerpt: int = EXCERPT_CHARS
) -> str:
    """One event as one safe line: seq, time, type, then a compact excerpt of its data
    (compact JSON on one line, each string cut first so a 200 MB field costs nothing)."""
    data = event.data
    if data is None or data == {}:
        shown = ""
    else:
        try:
            shown = orjson.dumps(_capped(data, excerpt)).decode()
        except TypeError:
            shown = str(data)[: excerpt * 2]
    head = f"{event.seq:>6}  {event_time(event.time, tz)}  {one_line(event.type, 40)}"
    return f"{head}  {one_line(shown, excerpt)}" if shown else head


def event_lines_text(
    events: Sequence[SessionEvent],
    *,
    tz: tzinfo | None = UTC,
    max_events: int = RAW_EVENTS,
    max_chars: int = RAW_CHARS,
    excerpt: int = EXCERPT_CHARS,
) -> str:
    """The events one line each (`event_line`), for the compact raw view; bounded as
    `raw_events_text` is: at most `max_events` lines, stopping once past `max_chars`."""
    return _bounded_events(
        events, lambda event: event_line(event, tz=tz, excerpt=excerpt), max_events, max_chars
    )
