"""dsh's session format generations, each version's rules in one place.

dsh has written its session logs in seven versions so far. Upstream dsh defines V0 to
V4 (V3 released since `dsh-v0.1.5-alpha.1`, V4 finalized); TnzGit's line of dsh
writes a V5 whose only change from V4 is the header's `version` (its migration
`session-format-v4-to-v5` is the identity on every event), and quockhangluong1012's
line (whose V5 adds the `max-steps` turn end) writes a V6 that "keeps V5's physical
rows and changes only the canonical header version" (its `session-format-v5-to-v6`
codec; the edge renames `data.metadata.provenance` to `sourceRef` in task, evidence
and checkpoint events, none of which a reader here interprets). CoHarness's V6 is
the same framing with one more header key (`sshTarget`), which is kept and named as
any unknown key is. What differs, and where this module decides it:

- file name (`generation_of`): V0 `session.jsonl`; V2+ `session.vN.jsonl` (V1 is an
  intermediate dsh never publishes by itself); in dsh's snapshot corpus a child's are
  `session.K.jsonl` and `session.K.vN.jsonl` (`generation_role`);
- rows (`packed_rows`): V0/V1 one event per row or a packed chunk row (`seq0`); V2+
  one event per row, always with its `seq`;
- header: V0/V1 open, `seedLength` is the inherited count; V2+ a closed key set with
  `isSeeded` (`CLOSED_HEADER_KEYS`);
- the seed cut (`seeded_by_marker`): V0/V1 `seedLength`; V2+ the seq of the last
  `session/end-seed` whose data says `"inherited": true`;
- assistant output: V0/V1 `assistant/chunk` events beside `assistant/message`; V2+
  the stream inside `assistant/message.data.stream`, unclaimed streams as
  `assistant/attempt`;
- tool results (`tool_result_parts`, `result_parts_of`): legacy V0 rows the result's
  own fields; to V3 a user-role message holding `tool-result` parts; V4+ a
  `role: "tool"` message whose content is the result;
- usage (`usage_of`): V0/V1 usage chunks and `assistant/message.usage`; V2+
  `assistant/message.usage`, else the last usage chunk of its stream, and the streams
  of `assistant/attempt`.

V7 (CoHarness's own successor, which moves tool-result blocks out of assistant
messages and rewrites message sources) and anything newer is not read: its log is
listed with its header and one `foreign-version` problem.

The readers (`logfile`, `summary`, `index`) ask this module which rules a header's
version brings; what they hand on (`SessionEvent`s with their seqs, and a header
whose `seed_length` is the inherited count whatever the version) is the same for
every version, so nothing above them asks which version a log is.

Sources: dsh's `docs/persistence-changes/historical-formats/v0.md` … `v5.md`,
`2026-09-16-session-format-v4.md`, `packages/session/session-persistence-jsonl/src/
format.ts`, `session-format-v1-to-v2` … `v5-to-v6` (zsagi1368/deepseek-harness-zDSH,
TnzGit/deepseek-harness at c5e3fc58, quockhangluong1012/deepseek-harness at
8c92e622), CoHarness's `session-format-v6-to-v7` README (jsjm1986/CoHarness at
42c68352), summarized in `../shared/docs/dsh-format-generations.md`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final, NamedTuple

from .model import HEADER_FIELDS

#: The versions this reader reads exactly.
KNOWN_VERSIONS: Final = frozenset((0, 1, 2, 3, 4, 5, 6))
#: The newest of them (what a message about a newer log names).
NEWEST_VERSION: Final = 6
#: The first version with one event per row, `isSeeded` and the inherited marker.
MARKER_VERSION: Final = 2

#: A canonical generation file name: `session.jsonl` is version 0, `session.vN.jsonl`
#: version N (lowercase, decimal, no leading zero; `session.v0.jsonl` is not one),
#: either with `.zstd` after it (dsh's `parseSessionFormatLogFilename`).
_GENERATION: Final = re.compile(r"session(?:\.v([1-9][0-9]*))?\.jsonl(?:\.zstd)?")
#: A recorded-session fixture's child generation in dsh's snapshot corpus (where the
#: real logs under `shared/fixtures` come from): `session.K.jsonl` is child K's version
#: 0 and `session.K.vN.jsonl` its version N, beside the parent's `session[.vN].jsonl`
#: (dsh's `FIXTURE_FILE`, `sessionFixtureName`: K and N decimal with no leading zero,
#: raw only). A refresh writes the highest generation beside the older ones, which
#: "remain in the directory but do not count as extra Sessions".
_CHILD_GENERATION: Final = re.compile(r"session\.([1-9][0-9]*)(?:\.v([1-9][0-9]*))?\.jsonl")

#: The V2+ header's keys: required, then optional (dsh's `HEADER_REQUIRED_KEYS`,
#: `HEADER_OPTIONAL_KEYS`); any other key makes dsh refuse the log.
HEADER_REQUIRED: Final = ("type", "version", "id", "createdAt", "isSeeded", "delegationDepth")
HEADER_OPTIONAL: Final = ("cwd", "parentSession", "origin", "agentPreset")
CLOSED_HEADER_KEYS: Final = frozenset(HEADER_REQUIRED + HEADER_OPTIONAL)
#: The order dsh writes a V2+ header's keys in (absent ones left out): the writer's
#: order (`model.HEADER_FIELDS`) without V0's `seedLength`.
HEADER_ORDER: Final = ("type", *(key for key, _ in HEADER_FIELDS if key != "seedLength"))

END_SEED: Final = "session/end-seed"


def generation_of(name: str) -> int | None:
    """The format version a canonical generation file name says, or None for any other
    name (a snapshot child such as `session.1.jsonl`, a temporary file, `x.jsonl`)."""
    match = _GENERATION.fullmatch(name)
    if match is None:
        return None
    return int(match.group(1)) if match.group(1) else 0


def generation_role(name: str) -> tuple[int, int] | None:
    """(role, version) of a generation file name: role 0 for a session's own log
    (`generation_of`), K for a snapshot corpus child `session.K[.vN].jsonl`; None for
    any other name. The files of one role in one folder are one session's generations."""
    version = generation_of(name)
    if version is not None:
        return 0, version
    match = _CHILD_GENERATION.fullmatch(name)
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2)) if match.group(2) else 0


def superseded(names: Iterable[str]) -> set[str]:
    """The generation files among `names` (one folder's entries) that a higher
    generation of the same role supersedes: dsh runs a session from its numerically
    highest canonical generation and keeps the older files untouched beside it, as
    history (and so does its snapshot corpus, for the parent and each child)."""
    found = [(r, n) for n in names if (r := generation_role(n)) is not None]
    if len(found) < 2:
        return set()
    top: dict[int, int] = {}
    for (role, version), _ in found:
        if version > top.get(role, -1):
            top[role] = version
    return {n for (role, version), n in found if version < top[role]}


def generation_files(path: str) -> list[tuple[int, str]]:
    """(version, path) of every generation file in a log's folder, newest first: the
    log itself and the history dsh keeps beside it; empty when the log's name is not a
    canonical generation name, just the log when its folder cannot be listed. Plain
    strings, so a listing of ten thousand logs makes no `Path`."""
    folder, name = os.path.split(path)
    role = generation_role(name)
    if role is None:
        return []
    own = role[1]
    try:
        names = os.listdir(folder)  # a session folder holds one or two entries
    except OSError:
        return [(own, path)]
    if len(names) == 1:
        return [(own, path)]  # the common case: the log alone
    found = []
    for other in names:
        theirs = generation_role(other)
        if theirs is None or theirs[0] != role[0]:
            continue
        version = theirs[1]
        full = os.path.join(folder, other)
        if other == name or os.path.isfile(full):
            found.append((version, full))
    return sorted(found, key=lambda item: (-item[0], item[1]))


def generations(path: Path) -> list[tuple[int, Path]]:
    """`generation_files` of a log as `Path`s."""
    return [(v, Path(p)) for v, p in generation_files(str(path))]


def history(path: Path) -> list[tuple[int, Path]]:
    """The older generations kept beside a log (`generations` without the log itself):
    what `show` and the detail pane list as "also: session.jsonl (v0)"."""
    return [(v, p) for v, p in generations(path) if p.name != path.name]


def history_text(path: Path) -> str | None:
    """`session.jsonl (v0), session.v3.jsonl (v3)` for a log with history, else None."""
    older = history(path)
    if not older:
        return None
    return ", ".join(f"{p.name} (v{v})" for v, p in older)


def parent_generation(parent_path: Path, version: int | None) -> Path | None:
    """The parent's log to compare a child's seed with: the parent's generation in the
    child's format version (a child seeded from a V0 parent keeps V0 seqs after dsh
    migrated the parent to V5; the V0 file stays beside it). None when the parent's
    folder holds no generation of that version: then no exact comparison exists."""
    found = generations(parent_path)
    if not found:
        return parent_path  # not a canonical generation name: the log itself
    want = 0 if version is None else version
    for have, path in found:
        if have == want or (have == 0 and want == 1):
            return path
    return None


def seed_seqs_note(parent_path: Path, version: int | None) -> str:
    """Which log a child's seed seqs (its seed length, the seq it was forked at) are
    of, when that is not its parent's log as shown: "" for that log, " of its
    session.jsonl" for an older generation of the parent (a V0 child of a parent dsh
    migrated), " in this log's seqs" when the parent holds no generation of the
    child's version (a child dsh migrated by itself)."""
    older = parent_generation(parent_path, version)
    if older == parent_path:
        return ""
    if older is None:
        return " in this log's seqs"
    return f" of its {older.name}"


def generation_name(version: int, *, zstd: bool) -> str:
    """The canonical file name of a generation (`session.jsonl`, `session.v5.jsonl.zstd`)."""
    stem = "session.jsonl" if version == 0 else f"session.v{version}.jsonl"
    return stem + (".zstd" if zstd else "")


def known(version: int | None) -> bool:
    """True if this reader knows the rules of `version` (None: no version, read as 0)."""
    return version is None or (type(version) is int and version in KNOWN_VERSIONS)


def packed_rows(version: int | None) -> bool:
    """True if a log of this version may hold packed chunk rows (`seq0`): V0 and V1."""
    return version is None or version < MARKER_VERSION


def seeded_by_marker(version: int | None) -> bool:
    """True if the inherited count is the last inherited `session/end-seed`'s seq (V2+);
    False if it is the header's `seedLength` (V0, V1)."""
    return version is not None and version >= MARKER_VERSION


def is_inherited_marker(etype: Any, data: Any) -> bool:
    """True for a `session/end-seed` whose data says `"inherited": true`: the end of a
    V2+ child's seed. An untagged `{}` marker is a resume marker: it cuts nothing."""
    return etype == END_SEED and type(data) is dict and data.get("inherited") is True


def newer_version_message(version: Any) -> str:
    """The one-line problem of a log whose version this reader does not know."""
    if type(version) is int and version > NEWEST_VERSION:
        return (
            f"format version {version} is newer than turnline reads (versions 0 to "
            f"{NEWEST_VERSION}): its events are not read; upgrade turnline"
        )
    return (
        f"format version {version!r} is not a dsh format turnline knows (it reads versions "
        f"0 to {NEWEST_VERSION}): its events are not read"
    )


def name_mismatch(name: str, version: int | None) -> str | None:
    """Why a log's file name and its header's version disagree (dsh refuses such a
    generation), or None when they agree or the name is not a canonical one (a
    snapshot corpus child's name is: dsh's `assertSessionFixtureVersion`)."""
    role = generation_role(name)
    named = None if role is None else role[1]
    if named is None or version is None or not known(version):
        return None
    if named == version or (named == 0 and version == 1):
        # dsh never publishes V1 (an intermediate, in memory only), and a V1 header in
        # `session.jsonl` is what its v0-to-v1 step leaves: the same physical layout.
        return None
    return f"the file name says format version {named} but the header says {version}"


def unknown_header_keys(obj: Mapping[str, Any]) -> list[str]:
    """Keys of a V2+ header outside dsh's closed set (dsh refuses such a header)."""
    return [key for key in obj if key not in CLOSED_HEADER_KEYS]


# -- rows ------------------------------------------------------------------------------


class Projected(NamedTuple):
    """A row as dsh's test snapshots keep it: the top-level `seq` and `time` removed
    (dsh's snapshot writer strips them since 2026-08-18; its replay puts back `seq` =
    the running event count and `time` = 0). Real logs never have this shape."""

    type: str
    data: Any
    extra: dict[str, Any]


PROJECTED_MESSAGE: Final = (
    "the rows carry no seq or time: a dsh test snapshot (a projection of a log, which "
    "dsh itself does not read); read with seq = row number and time 0"
)


def snapshot_form(row: dict[str, Any]) -> dict[str, Any]:
    """A row as dsh's snapshot normalizer leaves it for comparison: the times inside an
    embedded stream (`time`, `time0`, `dt`) zeroed. Snapshot files keep no real time,
    and those inside streams are refreshed per file, so two snapshots of one event
    (a parent's and its child's seed copy) differ only there."""
    data = row.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("stream"), list):
        return row
    stream = data["stream"]
    zeroed = []
    for member in stream:
        if type(member) is dict:
            member = {**member}
            for key in ("time", "time0"):
                if key in member:
                    member[key] = 0
            if type(member.get("dt")) is list:
                member["dt"] = [0] * len(member["dt"])
        zeroed.append(member)
    return {**row, "data": {**data, "stream": zeroed}}


def projected_row(obj: Any) -> Projected | None:
    """The row as a projected snapshot row, or None if it is not one (it has a `seq`,
    `time`, `seq0` or `time0`, or no string type)."""
    if type(obj) is not dict:
        return None
    rtype = obj.get("type")
    if type(rtype) is not str or "seq" in obj or "time" in obj or "seq0" in obj or "time0" in obj:
        return None
    extra = {k: v for k, v in obj.items() if k != "type" and k != "data"}
    return Projected(rtype, obj.get("data"), extra)


# -- content shapes ---------------------------------------------------------------------


def assistant_message(data: Any) -> dict[str, Any] | None:
    """The message of an `assistant/message` event's data: `data.message`, or, for the
    legacy V0 shape `{turn, step, content, provenance}` that real V0 logs hold, the
    message dsh's v0-to-v1 step makes of it (`{role: "assistant", content, source:
    {...provenance, kind: "model"}}`); None when there is neither."""
    if type(data) is not dict:
        return None
    message = data.get("message")
    if type(message) is dict:
        return message
    if "message" in data or "content" not in data:
        return None
    provenance = data.get("provenance")
    source = {**provenance, "kind": "model"} if type(provenance) is dict else {"kind": "model"}
    return {"role": "assistant", "content": data["content"], "source": source}


def tool_result_parts(message: Any) -> list[dict[str, Any]]:
    """The `tool-result` parts of a `tool/result` event's message, as V0 to V3 write
    them (`{toolCallId, content, isError}`), whatever the version: a V4+ message is
    itself the result (`{role: "tool", toolCallId, content, isError}`)."""
    if not isinstance(message, dict):
        return []
    if message.get("role") == "tool":
        return [
            {
                "type": "tool-result",
                "toolCallId": message.get("toolCallId"),
                "content": message.get("content"),
                "isError": message.get("isError") is True,
            }
        ]
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [part for part in content if isinstance(part, dict)]


def result_parts_of(data: Any) -> list[dict[str, Any]]:
    """The `tool-result` parts of a `tool/result` event's data: its message's
    (`tool_result_parts`), or a legacy v0 row's own (`{callId, content, isError}`
    with no message: dsh's v0 → v1 migration wraps exactly those rows, a string call
    id and a boolean `isError` beside `content`, in one `tool-result` part)."""
    if not isinstance(data, dict):
        return []
    call_id = data.get("callId")
    is_error = data.get("isError")
    if (
        "message" not in data
        and isinstance(call_id, str)
        and isinstance(is_error, bool)
        and "content" in data
    ):
        return [
            {
                "type": "tool-result",
                "toolCallId": call_id,
                "content": data["content"],
                "isError": is_error,
            }
        ]
    return tool_result_parts(data.get("message"))


#: The system-prompt plugin that V2→V3 attributes the synthetic system messages to [S22].
SYSTEM_PROMPT_PLUGIN: Final = "@deepseek-ai/dsh-system-prompt"

#: V3→V4 plugin names that become a producer kind of another name [S4].
RENAMED_PLUGINS: Final = {
    "compact": "compact-checkpoint",
    "tools-code-mode": "ptc-mode",
    "tools-ptc": "ptc-mode",
    "dsh-compaction-basic": "compact-basic",
}

#: V3→V4 first-party producers that keep their plugin name as the source kind [S4].
SAME_NAME_PRODUCERS: Final = frozenset(
    {
        "agent-instructions",
        "session-reference",
        "team-message",
        "goal",
        "skill-invocation",
        "skill-catalog",
        "coordinator",
        "subagent-report",
        "subagent-settled",
        "webhook",
        "agent-message",
        "model-selection",
        "plan-mode",
        "time-context",
        "tmux-context",
        "user-approval",
        "repeat-tool-reminder",
        "tool-cordis",
        "cordis-host-runner",
        "tool-goal",
        "tool-jobs",
        "hooks-codex",
        "hooks-claude-code",
        "schedule",
        "dsh-session-title-llm",
    }
)


def source_kind(message: Any) -> str | None:
    """Who wrote a message (`source.kind`, None when absent: `user`, `model`, `tool`,
    a producer), in V4's words whatever the version: a V0–V3 `{kind: "plugin",
    plugin: NAME}` is the producer kind dsh's V3 → V4 step gives it (the system-prompt
    plugin's system messages `system-prompt`, its others `runtime-context`; a renamed
    or a first-party plugin its producer's name; any other `plugin:NAME`)."""
    if not isinstance(message, dict):
        return None
    source = message.get("source")
    if not isinstance(source, dict):
        return None
    kind = source.get("kind")
    if not isinstance(kind, str):
        return None
    plugin = source.get("plugin")
    if kind != "plugin" or not isinstance(plugin, str):
        return kind
    if plugin == SYSTEM_PROMPT_PLUGIN:
        return "system-prompt" if message.get("role") == "system" else "runtime-context"
    if plugin in RENAMED_PLUGINS:
        return RENAMED_PLUGINS[plugin]
    return plugin if plugin in SAME_NAME_PRODUCERS else f"plugin:{plugin}"


#: Event types that carry a usage sample (dsh's token meter reads only these).
USAGE_TYPES: Final = frozenset(("assistant/chunk", "assistant/message", "assistant/attempt"))
#: The event that clears the replacement slot of its (turn, step): the retried attempt
#: then adds its usage (dsh's `usage-projection.ts`).
RETRY_STARTED: Final = "llm/retry-started"


def usage_of(etype: str, data: Any) -> Any:
    """The usage object a usage-bearing event carries, or None.

    - `assistant/chunk` (V0, V1): its `usage` chunk's `usage`;
    - `assistant/message`: `data.usage`, else the last usage chunk of `data.stream` (V2+);
    - `assistant/attempt` (V2+): the last usage chunk of its stream.
    """
    if type(data) is not dict:
        return None
    if etype == "assistant/chunk":
        chunk = data.get("chunk")
        if type(chunk) is dict and chunk.get("type") == "usage":
            return chunk.get("usage")
        return None
    if etype == "assistant/message":
        usage = data.get("usage")
        if usage is not None:
            return usage
    elif etype != "assistant/attempt":
        return None
    stream = data.get("stream")
    if type(stream) is not list:
        return None
    for member in reversed(stream):
        if type(member) is dict and member.get("type") == "chunk":
            chunk = member.get("chunk")
            if type(chunk) is dict and chunk.get("type") == "usage":
                return chunk.get("usage")
    return None


def usage_time(etype: str, data: Any, time: Any) -> Any:
    """When the usage `usage_of` finds was reported: a usage chunk's own time where the
    sample is one (a V2+ stream keeps each member's `time`, as V0 wrote each chunk as
    an event of its own), else the event's `time`. So a V0 log and its V2+ twin count
    a sample in the same minute."""
    if type(data) is not dict or etype not in ("assistant/message", "assistant/attempt"):
        return time
    if etype == "assistant/message" and data.get("usage") is not None:
        return time
    stream = data.get("stream")
    if type(stream) is not list:
        return time
    for member in reversed(stream):
        if type(member) is dict and member.get("type") == "chunk":
            chunk = member.get("chunk")
            if type(chunk) is dict and chunk.get("type") == "usage":
                own = member.get("time")
                return own if type(own) in (int, float) else time
    return time


# -- ids dsh's migrations mint from a log's own session id ------------------------------

#: The ids dsh's V0 → V1 step gives what an old log left without one: a message, a
#: retry chain, a compaction, each `<prefix><the log's session id>:<the event's seq>`
#: (`session-format-v0-to-v1`: `legacyMessageId`, `legacy-retry:`, `legacy-compaction:`).
MINTED_PREFIXES: Final = ("legacy-message:", "legacy-retry:", "legacy-compaction:")
#: The id dsh's V2 → V3 step gives every system message it inserts: `v2-to-v3-system-`
#: and the SHA-256 of `JSON.stringify(["session-format-v2-to-v3", <the log's session
#: id>, <the anchor's V2 seq>, <the anchor's type>])` (`session-format-v2-to-v3`,
#: `emitSystem`). The anchor is the `step/start` the first one follows, or the
#: `request/header` a replacing one comes before.
SYSTEM_ID_PREFIX: Final = "v2-to-v3-system-"
_SYSTEM_ANCHORS: Final = ("step/start", "request/header")
#: How far below a system message's seq its anchor's V2 seq is looked for: the rows
#: the V2 → V3 step and later ones inserted before it (in practice a few).
ANCHOR_REACH: Final = 4096


def v2_to_v3_system_id(session: str, anchor_seq: int, anchor_type: str) -> str | None:
    """The id dsh's V2 → V3 step gives a system message it inserts (None for a session
    id JavaScript would hash otherwise: one holding a lone surrogate)."""
    identity = json.dumps(
        ["session-format-v2-to-v3", session, anchor_seq, anchor_type],
        separators=(",", ":"),
        ensure_ascii=False,
    )
    try:
        data = identity.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return SYSTEM_ID_PREFIX + hashlib.sha256(data).hexdigest()


def _both_minted(mine: str, theirs: str, my_id: str, their_id: str, seq: int) -> bool:
    """Whether two different strings at one place of two seed rows are the same id that
    dsh's migration minted in each log from that log's own session id."""
    for prefix in MINTED_PREFIXES:
        if mine.startswith(prefix) and theirs.startswith(prefix):
            mine_at = mine[len(prefix) :]
            theirs_at = theirs[len(prefix) :]
            head, own = my_id + ":", their_id + ":"
            seq_part = mine_at[len(head) :]
            return (
                mine_at.startswith(head)
                and theirs_at.startswith(own)
                and seq_part == theirs_at[len(own) :]
                and seq_part.isascii()
                and seq_part.isdigit()  # the whole rest is the event's seq: an id
            )
    if not (mine.startswith(SYSTEM_ID_PREFIX) and theirs.startswith(SYSTEM_ID_PREFIX)):
        return False
    for anchor_seq in range(seq, max(-1, seq - ANCHOR_REACH), -1):
        for anchor_type in _SYSTEM_ANCHORS:
            if v2_to_v3_system_id(my_id, anchor_seq, anchor_type) == mine:
                return v2_to_v3_system_id(their_id, anchor_seq, anchor_type) == theirs
    return False


def same_but_minted(
    mine: Any, theirs: Any, my_id: str, their_id: str, seq: int, their_cut: int | None = None
) -> bool:
    """Whether a child's seed row and its parent's row at the same place are the same
    row but for what dsh's migrations made of each log on its own.

    dsh migrates each session by itself when it opens it, and gives what an old log
    left without an id one made from that log's session id (`MINTED_PREFIXES`,
    `SYSTEM_ID_PREFIX`). A child and its parent migrated apart then hold the same seed
    with those ids differing, and only those: each such pair is checked to be the one
    id made from each side's own session id (for the same seq, or the same anchor), so
    any other difference is still one. The V1 → V2 step also tags the `session/end-seed`
    at the log's own cut `{"inherited": true}`, and only that one: where the parent's
    cut (`their_cut`) is inside the child's seed, the child keeps that marker untagged
    (`{}`, as V0 wrote it). `seq` is the rows' seq (both have it: a seed is a prefix).
    """
    if (
        seq == their_cut
        and type(mine) is dict
        and type(theirs) is dict
        and mine.get("type") == theirs.get("type") == END_SEED
        and mine.get("data") == {}
        and theirs.get("data") == {"inherited": True}
    ):
        mine = {**mine, "data": theirs["data"]}
    stack = [(mine, theirs)]
    while stack:  # (no recursion: a row may nest as deep as the decoder allows)
        a, b = stack.pop()
        ta, tb = type(a), type(b)
        if ta is dict and tb is dict:
            if a.keys() != b.keys():
                return False
            stack.extend((a[k], b[k]) for k in a)
        elif ta is list and tb is list:
            if len(a) != len(b):
                return False
            stack.extend(zip(a, b, strict=True))
        elif ta is str and tb is str:
            if a != b and not _both_minted(a, b, my_id, their_id, seq):
                return False
        elif ta in _CONTAINERS or tb in _CONTAINERS or a != b:
            return False
    return True


_CONTAINERS: Final = (dict, list)
