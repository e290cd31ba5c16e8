"""Records <-> events: the header line, plain event lines and packed chunk rows.

A *record* is one logical line of a log after the header: either one event verbatim
or a packed run of `assistant/chunk` deltas (`text-chunks`, `reasoning-chunks`,
`tool-call-chunks`). Readers must expand rows; writers may pack or not.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final

from . import formats
from .model import (
    FORMAT_VERSION,
    HEADER_FIELDS,
    LogProblem,
    ProblemKind,
    SessionEvent,
    SessionHeader,
    json_line,
)

#: Packed row tag -> (assistant/chunk delta kind, name of the per-member array).
PACKED_TAGS: Final[dict[str, tuple[str, str]]] = {
    "text-chunks": ("text-delta", "texts"),
    "reasoning-chunks": ("reasoning-delta", "texts"),
    "tool-call-chunks": ("tool-call-delta", "args"),
}
_PACKABLE: Final = {kind: tag for tag, (kind, _) in PACKED_TAGS.items()}
_EVENT_KEYS: Final = frozenset(("type", "seq", "time", "data"))
_NUMBER_TYPES: Final = frozenset((int, float))
MIN_PACKED_RUN: Final = 3


class RecordError(ValueError):
    """A record that cannot be decoded into events."""

    def __init__(self, kind: ProblemKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


_V0_KEYS: Final = frozenset({key for key, _ in HEADER_FIELDS if key != "isSeeded"} | {"type"})
_INT_FIELDS: Final = ("createdAt", "seedLength", "delegationDepth")
_STR_FIELDS: Final = ("cwd", "parentSession", "origin", "agentPreset")


def _plain_header(obj: dict[str, Any], keys: frozenset[str]) -> bool:
    """True if the header has only `keys`, each absent or of its expected type."""
    if not keys.issuperset(obj):
        return False
    for key in _INT_FIELDS:
        value = obj.get(key)
        if value is not None and (type(value) is not int or value < 0):
            return False
    for key in _STR_FIELDS:
        value = obj.get(key)
        if value is not None and type(value) is not str:
            return False
    return True


def plain_header_values(obj: Any) -> tuple[Any, ...] | None:
    """The `SessionHeader` fields, in order, of a header `parse_header` would take with
    no problem and no field dropped; None for any other record (then ask
    `parse_header`). A listing builds no header object for the common case.

    A V2+ header's `seed_length` is None here: the reader sets it from the log's
    inherited marker (`formats.seeded_by_marker`)."""
    if (
        type(obj) is not dict
        or obj.get("type") != "session"
        or type(obj.get("id")) is not str
        or type(obj.get("version")) is not int
        or type(obj.get("delegationDepth")) is not int
    ):
        return None
    version = obj["version"]
    if version == FORMAT_VERSION:
        if not _plain_header(obj, _V0_KEYS):
            return None
        is_seeded = None
    elif version in formats.KNOWN_VERSIONS and formats.seeded_by_marker(version):
        is_seeded = obj.get("isSeeded")
        if type(is_seeded) is not bool or not _plain_header(obj, formats.CLOSED_HEADER_KEYS):
            return None
    else:
        return None
    get = obj.get
    return (
        obj["id"],
        get("createdAt") or 0,
        version,
        get("cwd"),
        get("parentSession"),
        get("seedLength"),
        get("origin"),
        get("delegationDepth"),
        get("agentPreset"),
        {},
        is_seeded,
    )


def parse_header(obj: Any) -> tuple[SessionHeader | None, list[LogProblem]]:
    """Read a decoded first record as a header, by the rules of its version.

    Returns the header (None if this is not a session header) and the problems
    found in it (missing or unknown version, keys dsh would refuse). A header of a
    version this reader does not know keeps the fields it shares with the known
    ones and says which version it is; its readers read no event of it.
    """
    if not isinstance(obj, dict) or obj.get("type") != "session":
        return None, [
            LogProblem(ProblemKind.BAD_HEADER, "the first record is not a session header", line=1)
        ]
    sid = obj.get("id")
    if not isinstance(sid, str):
        return None, [
            LogProblem(ProblemKind.BAD_HEADER, "the session header has no string id", line=1)
        ]
    problems: list[LogProblem] = []
    version = obj.get("version")
    marker_cut = False
    if "version" not in obj:
        problems.append(
            LogProblem(
                ProblemKind.MISSING_VERSION,
                "the header has no version; read as version 0 (dsh's current reader "
                "refuses such a header)",
                line=1,
            )
        )
    elif isinstance(version, bool) or not formats.known(version):
        problems.append(
            LogProblem(ProblemKind.FOREIGN_VERSION, formats.newer_version_message(version), line=1)
        )
    else:
        marker_cut = formats.seeded_by_marker(version)
    if "delegationDepth" not in obj:
        problems.append(
            LogProblem(
                ProblemKind.LEGACY_HEADER,
                "the header has no delegationDepth (dsh writes 0 for a top-level "
                "session); dsh's current reader refuses such a header",
                line=1,
            )
        )
    if marker_cut and type(version) is int:
        return _marker_header(obj, sid, version, problems)
    if _plain_header(obj, _V0_KEYS):
        # The common case (every field of the expected type): no per-field checks.
        return (
            SessionHeader(
                id=sid,
                created_at=obj.get("createdAt") or 0,
                version=version,
                cwd=obj.get("cwd"),
                parent_session=obj.get("parentSession"),
                seed_length=obj.get("seedLength"),
                origin=obj.get("origin"),
                delegation_depth=obj.get("delegationDepth"),
                agent_preset=obj.get("agentPreset"),
            ),
            problems,
        )
    values = _header_fields(obj, problems, seed_key=True)
    extra = {k: v for k, v in obj.items() if k not in _V0_KEYS}
    return SessionHeader(**values, extra=extra), problems


def _header_fields(
    obj: dict[str, Any], problems: list[LogProblem], *, seed_key: bool
) -> dict[str, Any]:
    """The `SessionHeader` attributes of a header's known keys, each checked (a
    field of the wrong type is dropped, with a problem for the numbers)."""
    values: dict[str, Any] = {}
    for key, attr in HEADER_FIELDS:
        if key == "isSeeded" or (key == "seedLength" and not seed_key):
            continue
        value = obj.get(key)
        if key in _INT_FIELDS:
            # The format says all three are integers >= 0: a negative seedLength would
            # otherwise pass as a seed and skew the timeline and the seed check.
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
                if value is not None:
                    problems.append(
                        LogProblem(
                            ProblemKind.BAD_HEADER,
                            f"header field {key} is {value!r}, not an integer >= 0; ignored",
                            line=1,
                        )
                    )
                value = None
        elif key in ("cwd", "parentSession", "origin", "agentPreset", "id") and not isinstance(
            value, str
        ):
            value = None
        values[attr] = value
    if values["created_at"] is None:
        values["created_at"] = 0
    return values


def _marker_header(
    obj: dict[str, Any], sid: str, version: int, problems: list[LogProblem]
) -> tuple[SessionHeader, list[LogProblem]]:
    """A V2+ header: dsh's closed key set, `isSeeded` instead of `seedLength`. Keys
    outside the set (dsh refuses the log; another fork's V5 may add its own) are kept
    and named; the inherited count is the reader's to set from the log."""
    values = _header_fields(obj, problems, seed_key=False)
    is_seeded = obj.get("isSeeded")
    if type(is_seeded) is not bool:
        problems.append(
            LogProblem(
                ProblemKind.BAD_HEADER,
                f"a version {version} header needs isSeeded true or false, not "
                f"{'nothing' if is_seeded is None else repr(is_seeded)}; read as false",
                line=1,
            )
        )
        is_seeded = False
    unknown = formats.unknown_header_keys(obj)
    if unknown:
        shown = ", ".join(unknown[:5]) + (", …" if len(unknown) > 5 else "")
        problems.append(
            LogProblem(
                ProblemKind.BAD_HEADER,
                f"header key{'s' if len(unknown) > 1 else ''} {shown} not in dsh's version "
                f"{version} header (dsh refuses it; another harness's dialect?): kept, not used",
                line=1,
            )
        )
    extra = {k: obj[k] for k in unknown}
    return SessionHeader(**values, extra=extra, is_seeded=is_seeded), problems


def expand_record(obj: Any, *, packed_rows: bool = True) -> list[SessionEvent]:
    """Decode one storage record (already JSON-parsed) into its events.

    Args:
        obj: The record.
        packed_rows: Whether the log's version has packed chunk rows (V0, V1:
            `formats.packed_rows`); from V2 on every row is one event with its `seq`.

    Raises:
        RecordError: the record is not an event object or a consistent packed row.
    """
    if not isinstance(obj, dict):
        raise RecordError(ProblemKind.CORRUPT, "record is not a JSON object")
    rtype = obj.get("type")
    if not isinstance(rtype, str):
        raise RecordError(ProblemKind.CORRUPT, "record has no string type")
    packed = PACKED_TAGS.get(rtype) if packed_rows else None
    if packed is not None and "seq0" in obj:
        return _expand_packed(rtype, packed, obj)
    seq = obj.get("seq")
    if not isinstance(seq, int) or isinstance(seq, bool):
        raise RecordError(ProblemKind.CORRUPT, f"{rtype} record has no integer seq")
    time = obj.get("time", 0)
    if not isinstance(time, int | float) or isinstance(time, bool):
        time = 0
    extra = {k: v for k, v in obj.items() if k not in _EVENT_KEYS}
    return [SessionEvent(rtype, seq, time, obj.get("data"), extra)]


def _expand_packed(tag: str, packed: tuple[str, str], obj: dict[str, Any]) -> list[SessionEvent]:
    kind, array_key = packed
    seq0, time0, data = obj.get("seq0"), obj.get("time0", 0), obj.get("data")
    if not isinstance(seq0, int) or isinstance(seq0, bool) or not isinstance(data, dict):
        raise RecordError(ProblemKind.BAD_PACKED_ROW, f"{tag} row lacks an integer seq0 or data")
    members = data.get(array_key)
    dt = data.get("dt")
    if not isinstance(members, list) or not isinstance(dt, list) or not members:
        raise RecordError(ProblemKind.BAD_PACKED_ROW, f"{tag} row lacks its {array_key}/dt arrays")
    if len(dt) != len(members) - 1:
        raise RecordError(
            ProblemKind.BAD_PACKED_ROW,
            f"{tag} row at seq {seq0} has {len(members)} members but {len(dt)} time deltas "
            f"(expected {len(members) - 1})",
        )
    ids = data.get("id") if kind == "tool-call-delta" else None
    name = data.get("name") if kind == "tool-call-delta" else None
    if not isinstance(time0, int | float) or isinstance(time0, bool):
        time0 = 0
    events: list[SessionEvent] = []
    time = time0
    base = {"turn": data.get("turn"), "step": data.get("step")}
    for k, member in enumerate(members):
        if k:
            delta = dt[k - 1]
            if not isinstance(delta, int | float) or isinstance(delta, bool):
                raise RecordError(ProblemKind.BAD_PACKED_ROW, f"{tag} row has a non-numeric dt")
            time += delta
        chunk: dict[str, Any] = {"type": kind, "index": data.get("index")}
        if kind == "tool-call-delta":
            chunk["id"] = ids
            if name is not None:
                chunk["name"] = name
            chunk["argumentsDelta"] = member
        else:
            chunk["text"] = member
        events.append(SessionEvent("assistant/chunk", seq0 + k, time, {**base, "chunk": chunk}))
    return events


def packed_count(obj: Any) -> int | None:
    """Members of a well-formed packed row (as `expand_record` would give), else None.

    The cheap check a scanner uses instead of expanding the row into events.
    """
    if not isinstance(obj, dict):
        return None
    data = obj.get("data")
    seq0 = obj.get("seq0")
    if type(seq0) is not int or not isinstance(data, dict):
        return None
    members = data.get(PACKED_TAGS[obj["type"]][1])
    dt = data.get("dt")
    if type(members) is not list or type(dt) is not list or not members:
        return None
    if len(dt) != len(members) - 1:
        return None
    if not _NUMBER_TYPES.issuperset(map(type, dt)):
        return None
    return len(members)


def record_seqs(obj: Any) -> tuple[int, int] | None:
    """First and last seq of the events a decoded record holds, or None if
    `expand_record` would refuse it (without building the events)."""
    if type(obj) is not dict:
        return None
    rtype = obj.get("type")
    if type(rtype) is not str:
        return None
    if rtype in PACKED_TAGS and "seq0" in obj:
        n = packed_count(obj)
        return None if n is None else (obj["seq0"], obj["seq0"] + n - 1)
    seq = obj.get("seq")
    return (seq, seq) if type(seq) is int else None


def _packing_key(event: SessionEvent) -> tuple[Any, ...] | None:
    """The run key of a packable chunk event, or None if it cannot be packed."""
    if event.type != "assistant/chunk" or event.extra:
        return None
    data = event.data
    if not isinstance(data, dict) or set(data) != {"turn", "step", "chunk"}:
        return None
    chunk = data["chunk"]
    if not isinstance(chunk, dict):
        return None
    kind = chunk.get("type")
    if kind in ("text-delta", "reasoning-delta"):
        if set(chunk) != {"type", "index", "text"} or not isinstance(chunk["text"], str):
            return None
        return (kind, data["turn"], data["step"], chunk["index"])
    if kind == "tool-call-delta":
        if set(chunk) - {"name"} != {"type", "index", "id", "argumentsDelta"}:
            return None
        return (kind, data["turn"], data["step"], chunk["index"], chunk["id"], chunk.get("name"))
    return None


def encode_records(events: Sequence[SessionEvent], *, pack: bool = True) -> Iterator[bytes]:
    """Yield `\\n`-terminated record lines for events, packing runs of chunk deltas.

    Packing only ever produces rows that `expand_record` turns back into exactly
    the same events, so a packed log reloads identical.
    """
    i, n = 0, len(events)
    while i < n:
        key = _packing_key(events[i]) if pack else None
        j = i + 1
        if key is not None:
            while (
                j < n
                and _packing_key(events[j]) == key
                and events[j].seq == events[j - 1].seq + 1
                and isinstance(events[j].time, int)
                and isinstance(events[j - 1].time, int)
            ):
                j += 1
        if key is not None and j - i >= MIN_PACKED_RUN and isinstance(events[i].time, int):
            yield _pack_row(events[i:j], key)
            i = j
        else:
            yield json_line(events[i].to_json_dict())
            i += 1


def _pack_row(run: Sequence[SessionEvent], key: tuple[Any, ...]) -> bytes:
    kind, turn, step, index = key[0], key[1], key[2], key[3]
    first = run[0]
    dt = [int(run[k].time) - int(run[k - 1].time) for k in range(1, len(run))]
    data: dict[str, Any] = {"turn": turn, "step": step, "index": index, "dt": dt}
    if kind == "tool-call-delta":
        data["id"] = key[4]
        if key[5] is not None:
            data["name"] = key[5]
        data["args"] = [e.data["chunk"]["argumentsDelta"] for e in run]
        tag = "tool-call-chunks"
    else:
        data["texts"] = [e.data["chunk"]["text"] for e in run]
        tag = _PACKABLE[kind]
    row = {"type": tag, "seq0": first.seq, "time0": first.time, "data": data}
    return json_line(row)


def encode_log(
    header: SessionHeader, events: Iterable[SessionEvent], *, pack: bool = True
) -> bytes:
    """A whole raw log: the header line then the records."""
    return header.to_json_line() + b"".join(encode_records(list(events), pack=pack))
