"""Record rules, each in one place: what a title is, what user input is, how a
record's seqs and time are read, and the byte marks the scans search for.

The full reader (`logfile`), the listing's byte scan (`summary`), the big-log index
(`index`), the timeline and the watcher all ask these functions, so a rule changed
here changes everywhere at once.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Annotated, Any, ClassVar, Final, NamedTuple, Union

import msgspec
import orjson
import zstandard

from .clipped import join_texts
from .codec import PACKED_TAGS, packed_count

#: A fallback title (cut from the first user text) ends with this when text was left out.
ELLIPSIS: Final = "…"

#: Logs at least this big are indexed instead of read whole (see `SessionRoot.load`).
INDEX_THRESHOLD: Final = 8 << 20
#: A zstd log is indexed from this compressed size (dsh's text compresses about 4:1).
ZSTD_INDEX_THRESHOLD: Final = INDEX_THRESHOLD // 4

#: A first line longer than this is not a session header (a header is a few hundred
#: bytes): a crash-zeroed or junk file is called a bad header at once, read no further.
MAX_HEADER_LINE: Final = 1 << 20


def long_header_message(limit: int = MAX_HEADER_LINE) -> str:
    """The bad-header message for a first line longer than `limit` bytes."""
    return f"the first line is longer than {limit >> 20} MiB: not a session header"


#: How a `turn/end` record starts when dsh writes it (a fork copies up to such a line).
TURN_END_LINE: Final = b'{"type":"turn/end"'
#: A `"type":"turn/end"` member as any JSON writer spaces it (`json.dumps` writes
#: `"type": "turn/end"`): what says that a completed turn follows a bad line.
_TURN_END_MEMBER: Final = re.compile(rb'"type"[ \t\r]{0,32}:[ \t\r]{0,32}"turn/end"')
#: Bytes a chunked search for that member must overlap its chunks by.
TURN_END_OVERLAP: Final = 96


def has_turn_end(buf: bytes, start: int = 0, end: int | None = None) -> bool:
    """True if `buf[start:end]` holds a `"type":"turn/end"` member, however spaced."""
    found = _TURN_END_MEMBER.search(buf, start, len(buf) if end is None else end)
    return found is not None


#: A seq as the scans decode it: an integer orjson (the full reader) reads as one. Past
#: 64 bits orjson reads a float, which is no seq; msgspec would read an integer. So a
#: seq out of this range (64 signed bits: msgspec's bounds must fit in them) does not
#: decode, and the line is read as the full reader reads it, which names the problem.
Seq = Annotated[int, msgspec.Meta(ge=-(1 << 63), le=(1 << 63) - 1)]


class RecordHead(msgspec.Struct, gc=False):
    """What the scans need of a record line: its type and first seq (a plain event's
    `seq`, a packed row's `seq0`). Decoding a line into it checks that the line is one
    JSON value (every other key is skipped, its syntax still checked) and, as
    `JSON.parse` and a `dict` do, takes the last of duplicate keys. A line whose
    `type` is not a string or whose seq is not an integer fails with a
    `msgspec.ValidationError`: the exact problem is then the full reader's to name.

    What it does not check: that skipped strings are UTF-8 (the scans check bytes
    that are not ASCII themselves) and that skipped numbers fit a double.
    """

    type: str
    seq: Seq | None = None
    #: UNSET when the line has no `seq0` key: a packed row's tag with one, even null
    #: and beside a `seq`, is a packed row to the full reader (`codec.expand_record`).
    seq0: Seq | msgspec.UnsetType | None = msgspec.UNSET


class PackedData(msgspec.Struct, gc=False):
    """A packed row's data as `codec.expand_record` reads it: its member array (the
    tag's, `texts` or `args`, each member left undecoded) and one time delta per member
    after the first (`member_count`)."""

    dt: list[int | float]
    texts: list[msgspec.Raw] | None = None
    args: list[msgspec.Raw] | None = None


class _PackedHead(msgspec.Struct, gc=False):
    seq0: Seq
    data: PackedData


_decode_packed: Final = msgspec.json.Decoder(_PackedHead).decode


def packed_members(line: bytes, tag: str) -> tuple[int, int] | None:
    """(seq0, member count) of a packed row line that `codec.packed_count` would take,
    checked without building its members; None when this quick decode cannot tell
    (then decode the line whole and ask `packed_count`)."""
    try:
        head = _decode_packed(line)
    except HeadError:
        return None
    count = member_count(head.data, tag)
    return None if count is None else (head.seq0, count)


def member_count(data: PackedData, tag: str) -> int | None:
    """How many events a packed row of type `tag` with `data` expands to, as
    `codec.expand_record` takes one: its member array not empty, and one time delta
    per member after the first; None for a row it refuses."""
    members = data.args if PACKED_TAGS[tag][1] == "args" else data.texts
    if not members or len(data.dt) != len(members) - 1:
        return None
    return len(members)


#: Decodes one record line (bytes) into a `RecordHead`.
decode_head: Final = msgspec.json.Decoder(RecordHead).decode
#: Errors `decode_head` raises for a line it does not take (`ValidationError` included;
#: `RecursionError` for a value nested past the interpreter's limit): the line is then
#: read as the full reader reads it.
HeadError: Final = (msgspec.DecodeError, RecursionError)


#: A record's `data` when it has none (what `dict.get("data")` gives: None).
_NO_DATA: Final = msgspec.Raw(b"null")


class ListingHead(msgspec.Struct, gc=False):
    """`RecordHead` plus the record's `data` left undecoded: what the listing's byte
    scan needs of every record line. The few records whose data it reads (packed
    rows' member counts, a `turn/end`'s reason) decode just that `msgspec.Raw`
    afterwards, with a Struct of the fields they need (`packed_row_counts`,
    `has_reason_kind_raw`); no record's content is ever built. As for `RecordHead`,
    the last of duplicate keys is taken, and a `type` that is no string or a seq
    that is no integer fails with a `msgspec.ValidationError`.
    """

    type: str
    seq: Seq | None = None
    #: UNSET when the line has no `seq0` key: a packed row's tag with one, even null
    #: and beside a `seq`, is a packed row to the full reader (`codec.expand_record`).
    seq0: Seq | msgspec.UnsetType | None = msgspec.UNSET
    data: msgspec.Raw = _NO_DATA


#: Decodes a buffer of record lines into `ListingHead`s in one call. msgspec reads it
#: as JSON values separated by whitespace, not line by line: a caller checks that it
#: got one head per line (a line holding two values gives more).
decode_listing_heads: Final = msgspec.json.Decoder(ListingHead).decode_lines

_decode_packed_data_lines: Final = msgspec.json.Decoder(PackedData).decode_lines


def packed_row_counts(rows: Sequence[ListingHead]) -> list[int] | None:
    """The member counts of the packed rows `rows` (whose `seq0` is an integer), from
    their data alone, decoded in one msgspec call: what `packed_members` checks of a
    whole line; None when that check would not take one of them (or one's type is no
    packed row's)."""
    if not all(row.type in PACKED_TAGS for row in rows):
        return None
    try:
        packed = _decode_packed_data_lines(b"\n".join([row.data for row in rows]))
    except HeadError:
        return None
    if len(packed) != len(rows):
        return None  # (cannot happen: each data is one whole JSON value)
    counts = []
    for row, data in zip(rows, packed, strict=True):
        count = member_count(data, row.type)
        if count is None:
            return None
        counts.append(count)
    return counts


class _Reason(msgspec.Struct, gc=False):
    kind: str


class _TurnEndData(msgspec.Struct, gc=False):
    reason: _Reason


_decode_turn_end_data: Final = msgspec.json.Decoder(_TurnEndData).decode


def has_reason_kind_raw(data: msgspec.Raw) -> bool:
    """`has_reason_kind` of a `turn/end`'s data left undecoded, without building it.

    True only when it holds (an object whose `reason` is an object with a string
    `kind`): msgspec checks every duplicate of a key, not only the last, so it may
    say False where `has_reason_kind` says True (a caller then asks the exact way),
    never the other way round.
    """
    try:
        _decode_turn_end_data(data)
    except HeadError:
        return False
    return True


# -- the listing's count in one msgspec call: a Struct per record type ------------------

#: dsh's record types, V0 to V6, but for the packed rows' tags (`PACKED_TAGS`): what
#: the one-call unions name, the listing's (`listing_decoder`) and the index's batch
#: union (`index._batch_decoder`). A log holding any other type is still read, in a
#: few more calls, with the same result.
RECORD_TYPES: Final = (
    "turn/start",
    "turn/end",
    "user/message",
    "session/title",
    "session/end-seed",
    "assistant/message",
    "assistant/chunk",
    "assistant/attempt",
    "step/start",
    "step/end",
    "tool/call",
    "tool/result",
    "session/title-llm-request",
    "agent/inbox/spliced",
    "agent/degenerate-response",
    "request/context",
    "request/header",
    "system/message",
    "developer/message",
    "sandbox/mode",
    "approval/policy",
    "approval/asked",
    "approval/decided",
    "permission/preset",
    "plan/mode",
    "goal/change",
    "hook/invoked",
    "hook/result",
    "tool/code-dispatch",
    "tool/code-dispatch-start",
    "tool-workflow/run-start",
    "tool-workflow/run-end",
    "tool-workflow/agent-start",
    "tool-workflow/agent-end",
    "command/run",
    "command/done",
    "todo/write",
    "llm/retry",
    "llm/retry-started",
    "compaction/start",
    "compaction/summary",
    "compaction/end",
    "image/offload",
    "subagent/descriptor",
    "subagent/catalog",
)

#: The types the listing's union gives a class of their own (they are counted).
_LISTED_APART: Final = frozenset(
    ("turn/start", "turn/end", "session/title", "user/message", "session/end-seed")
)
#: The types of the listing's union that share one record shape.
LISTED_TYPES: Final = tuple(t for t in RECORD_TYPES if t not in _LISTED_APART)


class _Listed(msgspec.Struct, tag_field="type", gc=False):
    """A record of the listing's union (`listing_decoder`): its tag is its type, its
    seqs are checked as `ListingHead` checks them, and its data is skipped (its
    syntax still checked). A record whose `type` keys disagree (`JSON.parse` takes
    the last) does not decode: msgspec checks every duplicate of the tag against the
    first, so a record that decodes has the type `JSON.parse` reads."""

    seq: Seq | None = None
    #: UNSET without a `seq0` key (see `ListingHead.seq0`).
    seq0: Seq | msgspec.UnsetType | None = msgspec.UNSET

    def width(self) -> int | None:
        """How many events the record holds as a packed row (its line has no `seq`):
        None, for it is no packed row."""
        return None


class _ListedTurnStart(_Listed, tag="turn/start", gc=False):
    """A `turn/start` (a class of its own: the count tells turn records by class)."""


class _ListedTurnEnd(_Listed, tag="turn/end", kw_only=True, gc=False):
    """A `turn/end` whose data has a reason with a string kind (`has_reason_kind_raw`'s
    Struct, decoded in place): one without does not decode."""

    data: _TurnEndData


class _ListedTitle(_Listed, tag="session/title", gc=False):
    """A `session/title` (a class of its own: the listing counts them), its data kept
    as written (a record's last `data` key, as `JSON.parse` takes it), for the title."""

    data: msgspec.Raw = _NO_DATA


class _ListedUser(_Listed, tag="user/message", gc=False):
    """A `user/message` (a class of its own: the listing counts them), its data kept
    as written, for the title of a session without a `session/title`."""

    data: msgspec.Raw = _NO_DATA


class _ListedEndSeed(_Listed, tag="session/end-seed", gc=False):
    """A `session/end-seed` (a class of its own: the listing counts them)."""


class _ListedRow(_Listed, gc=False):
    """A packed row's tag in a version that packs rows: its data decoded as
    `packed_row_counts` decodes it (a record of the tag that has a `seq` is a plain
    event, its data only checked to be JSON)."""

    data: PackedData | None = None
    #: Its members are its data's `args` (else its `texts`): `PACKED_TAGS`.
    in_args: ClassVar[bool] = False

    def width(self) -> int | None:
        """Its member count when `packed_members` would take it, else None."""
        data = self.data
        if data is None:
            return None
        members = data.args if self.in_args else data.texts
        if not members or len(data.dt) != len(members) - 1:
            return None
        return len(members)


class _ListedArgsRow(_ListedRow, gc=False):
    in_args: ClassVar[bool] = True


def _listed_kind(base: type[_Listed], tag: str) -> type[msgspec.Struct]:
    """A subclass of `base` tagged `tag`."""
    name = "_Listed_" + "".join(c if c.isalnum() else "_" for c in tag)
    return msgspec.defstruct(name, [], bases=(base,), tag=tag, gc=False)


@functools.cache
def listing_decoder(packed_rows: bool) -> Callable[[bytes | memoryview], list[Any]]:
    """Decodes a buffer of record lines in one call, each into the `_Listed` Struct of
    its type: a V0/V1 log's (`packed_rows`: a packed row's member lists decoded, for
    their counts) or a V2+ log's (a packed tag is a plain type there). As for
    `decode_listing_heads`, values are separated by whitespace, not lines. A type
    it does not know (not in `LISTED_TYPES`), a seq that is no integer or a
    `turn/end` without a reason kind fails with a `msgspec.ValidationError`. Made on
    first use: building the union takes a few milliseconds."""
    kinds = [_listed_kind(_Listed, tag) for tag in LISTED_TYPES]
    for tag, (_, members) in PACKED_TAGS.items():
        base = (_ListedArgsRow if members == "args" else _ListedRow) if packed_rows else _Listed
        kinds.append(_listed_kind(base, tag))
    union: Any = Union[
        (*kinds, _ListedTurnStart, _ListedTurnEnd, _ListedTitle, _ListedUser, _ListedEndSeed)
    ]
    return msgspec.json.Decoder(union).decode_lines


#: The class of a `listing_decoder` record that is a `session/title`.
LISTED_TITLE: Final = _ListedTitle
#: The classes of `listing_decoder` records that are a `user/message`, a `session/end-seed`.
LISTED_USER: Final = _ListedUser
LISTED_END_SEED: Final = _ListedEndSeed
#: The type of a `listing_decoder` record that is a turn record, by its class.
_TURN_KINDS: Final[dict[type[msgspec.Struct], str]] = {
    _ListedTurnStart: "turn/start",
    _ListedTurnEnd: "turn/end",
}


def listed_turn_kinds(classes: Iterable[type[msgspec.Struct]]) -> list[str]:
    """The turn types (`turn/start`, `turn/end`), in order, of `listing_decoder`
    records of the classes `classes` (walked in C)."""
    kinds = _TURN_KINDS
    return list(map(kinds.__getitem__, filter(kinds.__contains__, classes)))


class ZstdFrame(NamedTuple):
    """One frame of a zstd log, as `zstd_frames` finds it.

    Attributes:
        start: Offset of the frame in the compressed bytes.
        end: Offset just past it (`start` for a frame that stops the walk).
        content: Its decompressed bytes; None if the walk stops here.
        error: Why it does not decode (corruption); None for a whole frame, and for an
            incomplete last frame (an unfinished write: `content` is None too).
    """

    start: int
    end: int
    content: bytes | None
    error: str | None


def zstd_frames(data: bytes, dctx: zstandard.ZstdDecompressor | None = None) -> Iterator[ZstdFrame]:
    """The frames of a multi-frame zstd log held in memory, in order: whole ones, then
    (if the bytes end inside one or reach one that does not decode) one that stops the
    walk. The one frame loop of the full reader and the listing; the index streams the
    same frames from the file in bounded windows (`index._FrameReader`)."""
    dctx = dctx or zstandard.ZstdDecompressor()
    view = memoryview(data)
    pos = 0
    while pos < len(view):
        dobj = dctx.decompressobj()
        try:
            content = dobj.decompress(view[pos:])
        except zstandard.ZstdError as exc:
            yield ZstdFrame(pos, pos, None, str(exc))
            return
        if not dobj.eof:
            yield ZstdFrame(pos, pos, None, None)
            return
        end = len(view) - len(dobj.unused_data)
        yield ZstdFrame(pos, end, content, None)
        pos = end


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(line: bytes) -> Any:
    """One JSON value, as the logs' writer (JavaScript's `JSON.parse`) reads it.

    orjson reads almost every line. It refuses two things that `JSON.parse` takes
    and that a JavaScript writer can produce, and for those only the standard
    library's `json` reads the line instead:

    - a lone surrogate escape (`"\\ud83d"`: `JSON.stringify` writes one for half an
      emoji). The string keeps the lone half; shown text replaces it with U+FFFD
      (`textsafe`).
    - a number out of a double's range (`1e400`). `JSON.parse` reads it as
      Infinity, so it is read as `float("inf")`: legal JSON, not corruption.

    Raises:
        orjson.JSONDecodeError: neither accepts the line (orjson's own error).
    """
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        why = str(exc)
        if "surrogate" not in why and "infinity" not in why:
            raise
        try:
            return json.loads(line.decode("utf-8"), parse_constant=_no_constant)
        except (ValueError, RecursionError):
            raise exc from None


#: How many seq problems one log reports before it only counts them.
MAX_SEQ_PROBLEMS: Final = 20


def seq_step(
    count: int, contiguous: int, prev: int | None, seq: int, n: int = 1
) -> tuple[int, bool]:
    """The seq rule of the full reader and the index, for `n` events with consecutive
    seqs from `seq` that follow `count` events (the last with seq `prev`, None for
    none), of which the first `contiguous` have `seq == index`.

    Returns the new `contiguous` and whether these events break the order (a gap, a
    duplicate, a step back, a first seq other than 0): one problem per break, and
    none while the seqs go on consecutively after one.
    """
    if seq == count and contiguous == count:
        return count + n, False
    if prev is not None and seq == prev + 1:
        return contiguous, False
    if prev is None and seq == count:
        return contiguous, False
    return contiguous, True


#: The record types that open and close a turn.
TURN_TYPES: Final = frozenset(("turn/start", "turn/end"))


def count_turns(kinds: Iterable[str], turns: int = 0, open_turn: bool = False) -> tuple[int, bool]:
    """(turns, open turn?) after the turn records `kinds` (`turn/start`, `turn/end`;
    other types are ignored), from `turns` and `open_turn`: a `turn/start` starts a
    turn; a `turn/end` closes the open one, or is a turn of its own when none is open
    (real logs hold such rows), the way the timeline groups them."""
    for kind in kinds:
        if kind == "turn/start":
            turns += 1
            open_turn = True
        elif kind == "turn/end":
            turns += 0 if open_turn else 1
            open_turn = False
    return turns, open_turn


def has_reason_kind(data: Any) -> bool:
    """True if a `turn/end` event's data has a `reason.kind` string (else the log has
    an odd event: `logfile.turn_end_problem`)."""
    reason = data.get("reason") if isinstance(data, dict) else None
    return isinstance(reason, dict) and isinstance(reason.get("kind"), str)


def message_text(message: Any, *, kinds: tuple[str, ...] = ("text",)) -> str:
    """The text parts of a message (`{content:[{type:"text",text}…]}`), joined by newlines."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content if "text" in kinds else ""
    if not isinstance(content, list):
        return ""
    parts = [
        part.get("text", "")
        for part in content
        if isinstance(part, dict)
        and part.get("type") in kinds
        and isinstance(part.get("text"), str)
    ]
    return join_texts([p for p in parts if p])  # a long part stays `Clipped`


def is_user_input(message: Any) -> bool:
    """True for a message the user typed (no `source.kind`, or `user`); False for
    plugin-injected context and for anything that is not a message."""
    if not isinstance(message, dict):
        return False
    source = message.get("source")
    kind = source.get("kind") if isinstance(source, dict) else None
    return kind in (None, "user")


def fallback_title(text: str) -> str | None:
    """The title a session without `session/title` takes from its first user text:
    its first non-blank line, ending with `…` when the text goes on past it; None
    for blank text."""
    stripped = text.strip()
    if not stripped:
        return None
    first, _, rest = stripped.partition("\n")
    first = first.rstrip("\r")
    return first + ELLIPSIS if rest.strip() else first


def user_title(message: Any) -> str | None:
    """The fallback title a `user/message` event's data gives, or None if it gives none
    (not user input, or blank)."""
    if not is_user_input(message):
        return None
    return fallback_title(message_text(message))


def session_title(data: Any) -> str | None:
    """The title a `session/title` event's data sets, or None if it sets none."""
    if isinstance(data, dict):
        title = data.get("title")
        if isinstance(title, str):
            return title
    return None


def _number(value: Any) -> bool:
    return type(value) is int or type(value) is float


def record_last_time(obj: Any, *, packed_rows: bool = True) -> float | None:
    """Epoch ms of the last event a decoded record holds, as `codec.expand_record`
    times it (a missing or non-numeric time is 0; a packed row is `time0` plus its
    deltas, added in order), or None if `expand_record` would refuse the record.
    `packed_rows`: whether the log's version has packed rows (`expand_record`'s)."""
    if type(obj) is not dict:
        return None
    rtype = obj.get("type")
    if packed_rows and rtype in PACKED_TAGS and "seq0" in obj:
        if packed_count(obj) is None:
            return None
        time = obj.get("time0", 0)
        if not _number(time):
            time = 0
        for delta in obj["data"]["dt"]:
            time += delta
        return time  # type: ignore[no-any-return]
    time = obj.get("time", 0)
    return time if _number(time) else 0
