"""Builders for the hardening corpus: healthy sessions and one generator per bad case.

Everything is written for real into a folder (a `tmp_path`), in the dsh layout
(`--<project>--/<encoded id>/session.jsonl[.zstd]`), with bytes built here rather than
through the writer under test, so a writer bug cannot hide a reader bug.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import threading
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Final, TypeVar

import orjson
import zstandard
from turnline.core.layout import session_dir
from turnline.core.model import ProblemKind, SessionEvent, SessionHeader

T = TypeVar("T")

CWD: Final = "/home/dev/app"
#: Size of the single huge line (the issue's "50 MB single line").
BIG_LINE_BYTES: Final = 50 * 1024 * 1024


def header(session_id: str, **fields: Any) -> dict[str, Any]:
    """A dsh header dict (version 0, fixed createdAt, the corpus cwd) with overrides."""
    out: dict[str, Any] = {
        "type": "session",
        "version": 0,
        "id": session_id,
        "createdAt": 1_783_352_134_000,
        "delegationDepth": 0,
        "cwd": CWD,
    }
    out.update(fields)
    return {k: v for k, v in out.items() if v is not None}


def turn_events(
    turn: int, seq0: int, *, text: str = "hello", title: str | None = None
) -> list[dict[str, Any]]:
    """One completed turn as dsh event dicts: start, user, 4 text chunks, message, tool, end."""
    t = 1_783_352_135_000 + seq0 * 10
    evs: list[dict[str, Any]] = [
        {"type": "turn/start", "data": {"turn": turn}},
        {
            "type": "user/message",
            "data": {
                "role": "user",
                "content": [{"type": "text", "text": text}],
                "source": {"kind": "user"},
                "id": f"m{turn}",
            },
        },
        {"type": "step/start", "data": {"turn": turn, "step": 1}},
    ]
    for piece in ("Hel", "lo ", "wor", "ld"):
        evs.append(
            {
                "type": "assistant/chunk",
                "data": {
                    "turn": turn,
                    "step": 1,
                    "chunk": {"type": "text-delta", "index": 0, "text": piece},
                },
            }
        )
    evs += [
        {
            "type": "assistant/message",
            "data": {
                "turn": turn,
                "step": 1,
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "Hello world"}],
                    "source": {"kind": "model"},
                },
            },
        },
        {
            "type": "tool/call",
            "data": {
                "turn": turn,
                "step": 1,
                "callId": f"c{turn}",
                "name": "bash",
                "arguments": {"cmd": "ls"},
            },
        },
        {
            "type": "tool/result",
            "data": {
                "turn": turn,
                "step": 1,
                "message": {
                    "content": [
                        {
                            "type": "tool-result",
                            "toolCallId": f"c{turn}",
                            "content": "README.md",
                            "isError": False,
                        }
                    ]
                },
            },
        },
        {"type": "step/end", "data": {"turn": turn, "step": 1}},
    ]
    if title is not None:
        evs.append(
            {"type": "session/title", "data": {"title": title, "messageSeqs": [], "source": "x"}}
        )
    evs.append({"type": "turn/end", "data": {"turn": turn, "reason": {"kind": "completed"}}})
    out = []
    for k, ev in enumerate(evs):
        full = {"type": ev["type"], "seq": seq0 + k, "time": t + k, "data": ev["data"]}
        out.append(full)
    return out


def conversation(turns: int, *, title: str | None = None) -> list[dict[str, Any]]:
    """`turns` completed turns, seqs contiguous from 0; the first turn sets `title`."""
    events: list[dict[str, Any]] = []
    for n in range(1, turns + 1):
        events += turn_events(n, len(events), title=title if n == 1 else None)
    return events


def lines(records: Sequence[dict[str, Any]]) -> bytes:
    """Records as `\\n`-terminated dsh lines (unpacked)."""
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def raw_log(hdr: dict[str, Any], events: Sequence[dict[str, Any]]) -> bytes:
    """A raw log: header line then one line per event."""
    return lines([hdr, *events])


def zstd_log(hdr: dict[str, Any], batches: Sequence[Sequence[dict[str, Any]]]) -> bytes:
    """A zstd log: one checksummed frame for the header, one per batch of events."""
    cctx = zstandard.ZstdCompressor(level=3, write_checksum=True)
    return cctx.compress(lines([hdr])) + b"".join(cctx.compress(lines(b)) for b in batches)


def log_path(root: Path, session_id: str, *, zstd: bool = False, cwd: str | None = CWD) -> Path:
    """Where a session's log lives under a root in the dsh layout."""
    name = "session.jsonl.zstd" if zstd else "session.jsonl"
    return session_dir(root, session_id, cwd) / name


def put(path: Path, data: bytes) -> Path:
    """Write `data` to `path`, creating folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def to_events(records: Sequence[dict[str, Any]]) -> list[SessionEvent]:
    """Event dicts as `SessionEvent`s."""
    return [
        SessionEvent(
            r["type"],
            r["seq"],
            r["time"],
            r["data"],
            {k: v for k, v in r.items() if k not in ("type", "seq", "time", "data")},
        )
        for r in records
    ]


def header_obj(hdr: dict[str, Any]) -> SessionHeader:
    """A header dict as a `SessionHeader` (the fields this corpus uses)."""
    return SessionHeader(
        id=hdr["id"],
        created_at=hdr.get("createdAt", 0),
        version=hdr.get("version"),
        cwd=hdr.get("cwd"),
        parent_session=hdr.get("parentSession"),
        seed_length=hdr.get("seedLength"),
    )


# -- healthy sessions ---------------------------------------------------------------------

HEALTHY_IDS: Final = ("healthy-raw", "healthy-zstd", "healthy-child")


def build_healthy(root: Path) -> dict[str, Path]:
    """Three healthy sessions: a raw one, a zstd one, and a proper fork child of the raw."""
    parent = conversation(2, title="healthy raw")
    out = {
        "healthy-raw": put(log_path(root, "healthy-raw"), raw_log(header("healthy-raw"), parent)),
        "healthy-zstd": put(
            log_path(root, "healthy-zstd", zstd=True),
            zstd_log(header("healthy-zstd"), [conversation(1), turn_events(2, 12)]),
        ),
    }
    seed = parent[:13]  # the first turn ends at seq 12
    child = [*seed, *turn_events(2, 13, text="child")]
    out["healthy-child"] = put(
        log_path(root, "healthy-child"),
        raw_log(
            header(
                "healthy-child",
                parentSession="healthy-raw",
                seedLength=13,
                createdAt=1_783_352_136_000,
            ),
            child,
        ),
    )
    return out


# -- the bad cases --------------------------------------------------------------------------


@dataclass(frozen=True)
class BadCase:
    """One bad-input case.

    Attributes:
        name: Test id; also the session id (and folder) the case uses where it has one.
        build: Writes the case under a root; returns the log paths it concerns.
        kinds: The problem kinds each of those logs must report (via scan + load).
        forbidden: Kinds that must NOT be reported (e.g. corruption for a foreign version).
    """

    name: str
    build: Callable[[Path], list[Path]]
    kinds: frozenset[ProblemKind]
    forbidden: frozenset[ProblemKind] = frozenset()


def _one(session_id: str, data: bytes, *, zstd: bool = False) -> Callable[[Path], list[Path]]:
    def build(root: Path) -> list[Path]:
        return [put(log_path(root, session_id, zstd=zstd), data)]

    return build


def _bad_json_middle() -> bytes:
    events = conversation(2)
    body = lines([header("bad-json-middle"), *events[:5]])
    # Line 7 (header is line 1) holds seq 5, cut short: a later turn/end completes after it.
    return body + b'{"type":"assistant/chunk","seq":5,"ti\n' + lines(events[6:])


def _torn_last_line() -> bytes:
    events = conversation(1)
    return raw_log(header("torn-last-line"), events) + b'{"type":"turn/start","seq":12,"da'


def _seq_gap() -> bytes:
    events = conversation(2)
    for ev in events[14:]:  # inside the second turn (seqs 12..23)
        ev["seq"] += 3
    return raw_log(header("seq-gap"), events)


def _seq_dup() -> bytes:
    events = conversation(1)
    return raw_log(header("seq-dup"), [*events[:6], events[5], *events[6:]])


def _bad_packed_row() -> bytes:
    events = conversation(1)
    row = {
        "type": "text-chunks",
        "seq0": 3,
        "time0": events[3]["time"],
        "data": {"turn": 1, "step": 1, "index": 0, "dt": [1, 1], "texts": ["He", "ll", "o", "!"]},
    }
    return lines([header("bad-packed-row"), *events[:3], row, *events[7:]])


def _non_utf8() -> bytes:
    events = conversation(2)
    bad = orjson.dumps(events[3]).replace(b'"Hel"', b'"H\xff\xfe\xc3l"')
    assert bad != orjson.dumps(events[3])
    return lines([header("non-utf8"), *events[:3]]) + bad + b"\n" + lines(events[4:])


def _zstd_frames(session_id: str) -> tuple[bytes, list[bytes]]:
    cctx = zstandard.ZstdCompressor(level=3, write_checksum=True)
    events = conversation(3)
    frames = [cctx.compress(lines(b)) for b in (events[:12], events[12:24], events[24:])]
    return cctx.compress(lines([header(session_id)])), frames


def _zstd_bad_checksum() -> bytes:
    head, frames = _zstd_frames("zstd-bad-checksum")
    middle = bytearray(frames[1])
    middle[-1] ^= 0xFF  # the last 4 bytes of a checksummed frame are its XXH64 checksum
    return head + frames[0] + bytes(middle) + frames[2]


def _zstd_torn() -> bytes:
    head, frames = _zstd_frames("zstd-torn")
    return head + frames[0] + frames[1] + frames[2][: len(frames[2]) // 2]


def _duplicate_id(root: Path) -> list[Path]:
    data = raw_log(header("dup-id"), conversation(1))
    a = put(root / "--home-dev-app--" / "dup-id" / "session.jsonl", data)
    b = put(root / "--elsewhere--" / "dup-id" / "session.jsonl", data)
    return [a, b]


def _seed_too_long(root: Path) -> list[Path]:
    parent = conversation(1)
    p = put(log_path(root, "seed-long-parent"), raw_log(header("seed-long-parent"), parent))
    child_hdr = header("seed-long-child", parentSession="seed-long-parent", seedLength=40)
    c = put(log_path(root, "seed-long-child"), raw_log(child_hdr, conversation(1)))
    del p
    return [c]


def _seed_differs(root: Path) -> list[Path]:
    parent = conversation(2)
    put(log_path(root, "seed-diff-parent"), raw_log(header("seed-diff-parent"), parent))
    seed = [dict(e) for e in parent[:12]]  # the first turn ends at seq 11
    seed[1] = {**seed[1], "data": {**seed[1]["data"], "id": "tampered"}}
    child_hdr = header("seed-diff-child", parentSession="seed-diff-parent", seedLength=12)
    return [put(log_path(root, "seed-diff-child"), raw_log(child_hdr, seed))]


def _cycle(root: Path) -> list[Path]:
    events = conversation(1)
    a = put(
        log_path(root, "cycle-a"),
        raw_log(header("cycle-a", parentSession="cycle-b", seedLength=12), events),
    )
    b = put(
        log_path(root, "cycle-b"),
        raw_log(header("cycle-b", parentSession="cycle-a", seedLength=12), events),
    )
    return [a, b]


def _big_line(big: Path) -> Callable[[Path], list[Path]]:
    def build(root: Path) -> list[Path]:
        path = log_path(root, "big-line")
        path.parent.mkdir(parents=True, exist_ok=True)
        # A hard link: the 50 MB file is generated once per test session.
        try:
            os.link(big, path)
        except OSError:
            shutil.copyfile(big, path)
        return [path]

    return build


def write_big_line_log(path: Path) -> Path:
    """A valid log whose one tool result is a single 50 MB line."""
    events = conversation(1)
    result = events[9]
    assert result["type"] == "tool/result"
    filler = "x" * BIG_LINE_BYTES
    result["data"]["message"]["content"][0]["content"] = filler
    return put(path, raw_log(header("big-line"), events))


def bad_cases(big_line_log: Path) -> list[BadCase]:
    """Every bad-input case; `big_line_log` is the pre-built 50 MB log to link in."""
    K = ProblemKind
    events1 = conversation(1)
    return [
        BadCase("empty", _one("empty", b""), frozenset({K.EMPTY})),
        BadCase(
            "header-only",
            _one("header-only", lines([header("header-only")])),
            frozenset(),
        ),
        BadCase(
            "not-a-header",
            _one("not-a-header", lines(events1)),
            frozenset({K.BAD_HEADER}),
        ),
        BadCase(
            "foreign-version",
            _one("foreign-version", raw_log(header("foreign-version", version=7), events1)),
            frozenset({K.FOREIGN_VERSION}),
            frozenset({K.CORRUPT}),
        ),
        BadCase(
            "missing-version",
            _one("missing-version", raw_log(header("missing-version", version=None), events1)),
            frozenset({K.MISSING_VERSION}),
            frozenset({K.CORRUPT}),
        ),
        BadCase(
            "bad-json-middle", _one("bad-json-middle", _bad_json_middle()), frozenset({K.CORRUPT})
        ),
        BadCase(
            "torn-last-line",
            _one("torn-last-line", _torn_last_line()),
            frozenset({K.TORN_TAIL}),
            frozenset({K.CORRUPT}),
        ),
        BadCase("seq-gap", _one("seq-gap", _seq_gap()), frozenset({K.SEQ_GAP})),
        BadCase("seq-dup", _one("seq-dup", _seq_dup()), frozenset({K.SEQ_GAP})),
        BadCase(
            "bad-packed-row",
            _one("bad-packed-row", _bad_packed_row()),
            frozenset({K.BAD_PACKED_ROW}),
        ),
        BadCase("big-line", _big_line(big_line_log), frozenset()),
        BadCase("non-utf8", _one("non-utf8", _non_utf8()), frozenset({K.CORRUPT})),
        BadCase("nul-filled", _one("nul-filled", b"\0" * 8192), frozenset({K.BAD_HEADER})),
        BadCase(
            "zstd-bad-checksum",
            _one("zstd-bad-checksum", _zstd_bad_checksum(), zstd=True),
            frozenset({K.CORRUPT}),
        ),
        BadCase(
            "zstd-torn",
            _one("zstd-torn", _zstd_torn(), zstd=True),
            frozenset({K.TORN_TAIL}),
            frozenset({K.CORRUPT}),
        ),
        BadCase("duplicate-id", _duplicate_id, frozenset({K.DUPLICATE_ID})),
        BadCase("seed-too-long", _seed_too_long, frozenset({K.SEED_MISMATCH})),
        BadCase("seed-differs", _seed_differs, frozenset({K.SEED_MISMATCH})),
        BadCase("lineage-cycle", _cycle, frozenset({K.LINEAGE_CYCLE})),
        BadCase(
            "self-parent",
            _one(
                "self-parent",
                raw_log(header("self-parent", parentSession="self-parent", seedLength=12), events1),
            ),
            frozenset({K.LINEAGE_CYCLE}),
            frozenset({K.MISSING_PARENT}),
        ),
        BadCase(
            "negative-seed",
            _one("negative-seed", raw_log(header("negative-seed", seedLength=-3), events1)),
            frozenset({K.BAD_HEADER}),
        ),
    ]


# -- unreadable files when running as root ---------------------------------------------------

_CAP_DAC_OVERRIDE: Final = 1
_CAP_DAC_READ_SEARCH: Final = 2
_CAPS_V3: Final = 0x20080522
_PR_CAPBSET_DROP: Final = 24


class _CapHeader(ctypes.Structure):
    _fields_: ClassVar = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_: ClassVar = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def make_unreadable(path: Path) -> bool:
    """chmod 000 `path`; True if that alone denies reading it (False when we are root).

    Root (CI containers) reads through mode 000 thanks to CAP_DAC_OVERRIDE; the tests
    then read with that capability dropped (`run_without_dac_override`), which is the
    same permission check a non-root user meets. A directory named `session.jsonl` or
    a FIFO would not do: discovery skips directories, and opening a FIFO blocks.
    """
    path.chmod(0)
    try:
        with open(path, "rb"):
            return False
    except PermissionError:
        return True


@contextmanager
def dac_override_dropped() -> Iterator[None]:
    """Within the block, this thread (and threads it starts) cannot read through file modes.

    Linux credentials are per thread and new threads copy their creator's, so only this
    thread and the threads started inside the block lose CAP_DAC_OVERRIDE and
    CAP_DAC_READ_SEARCH from their effective set; the capabilities stay permitted and
    this thread gets them back on exit. Without those capabilities (non-root) it does
    nothing.
    """
    libc = _libc()
    hdr = _CapHeader(_CAPS_V3, 0)
    data = (_CapData * 2)()
    if libc.capget(ctypes.byref(hdr), data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    saved = [(d.effective, d.permitted, d.inheritable) for d in data]
    data[0].effective &= ~((1 << _CAP_DAC_OVERRIDE) | (1 << _CAP_DAC_READ_SEARCH))
    if libc.capset(ctypes.byref(hdr), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")
    try:
        yield
    finally:
        for d, (eff, perm, inh) in zip(data, saved, strict=True):
            d.effective, d.permitted, d.inheritable = eff, perm, inh
        libc.capset(ctypes.byref(hdr), data)


def run_without_dac_override(fn: Callable[[], T]) -> T:
    """Run `fn` in a fresh thread under `dac_override_dropped` and return its result."""
    result: list[T] = []
    error: list[BaseException] = []

    def body() -> None:
        with dac_override_dropped():
            try:
                result.append(fn())
            except BaseException as exc:
                error.append(exc)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    if error:
        raise error[0]
    return result[0]


def drop_dac_override_in_child() -> None:
    """`preexec_fn` for a subprocess: drop DAC override/read-search from its bounding set,
    so even as root the program cannot read a mode-000 file (it survives exec)."""
    if os.geteuid() != 0:
        return
    libc = _libc()
    for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


# -- the whole corpus in one root (for the CLI, TUI and watcher runs) ----------------------

UNREADABLE_ID: Final = "unreadable"


def build_symlink_loops(root: Path) -> list[Path]:
    """Symlinks that loop: a folder link back to the root, a self-link, a log self-link."""
    project = root / "--home-dev-app--"
    project.mkdir(parents=True, exist_ok=True)
    links = [project / "loop-to-root", root / "self-loop", project / "looped" / "session.jsonl"]
    links[0].symlink_to(root, target_is_directory=True)
    links[1].symlink_to(links[1])
    links[2].parent.mkdir()
    links[2].symlink_to(links[2])
    return links


def build_unreadable(root: Path) -> Path:
    """A valid log under mode 000 (see `make_unreadable` for how tests deny root)."""
    path = put(log_path(root, UNREADABLE_ID), raw_log(header(UNREADABLE_ID), conversation(1)))
    make_unreadable(path)
    return path


def build_corpus(root: Path, big_line_log: Path) -> dict[str, tuple[list[Path], BadCase]]:
    """Healthy sessions plus every bad case, the unreadable log and symlink loops, in one root.

    Returns:
        Case name -> (the logs it concerns, the case).
    """
    build_healthy(root)
    out: dict[str, tuple[list[Path], BadCase]] = {}
    for case in bad_cases(big_line_log):
        out[case.name] = (case.build(root), case)
    unreadable = BadCase(UNREADABLE_ID, lambda r: [], frozenset({ProblemKind.UNREADABLE}))
    out[UNREADABLE_ID] = ([build_unreadable(root)], unreadable)
    build_symlink_loops(root)
    return out


def long_conversation(turns: int, result_bytes: int) -> list[dict[str, Any]]:
    """`turns` completed turns whose tool results carry `result_bytes` of text each."""
    events: list[dict[str, Any]] = []
    for n in range(1, turns + 1):
        turn = turn_events(n, len(events))
        turn[9]["data"]["message"]["content"][0]["content"] = f"{n:08d}" * (result_bytes // 8)
        events += turn
    return events


def frame(records: Sequence[dict[str, Any]]) -> bytes:
    """One checksummed zstd frame holding `records` as lines (an append batch)."""
    return zstandard.ZstdCompressor(level=3, write_checksum=True).compress(lines(records))


# -- hostile content ---------------------------------------------------------------------

MARKUP = "[bold red]x[/]"
OSC52 = "\x1b]52;c;SGVsbG8=\x07"  # a clipboard write
CLEAR = "\x1b[2J"
BIDI = "\u202e"
C1 = "\x9b31m"  # CSI as a single C1 byte
LONG = "L" * 20_000
HOSTILE = f"{MARKUP}{OSC52}{CLEAR}{BIDI}gnp.exe{C1}\r\x08\x00tail"
EVIL_ID = f"evil{MARKUP}{CLEAR}{BIDI}"


def hostile_events() -> list[dict[str, Any]]:
    """One turn whose every shown string carries markup, escapes and bidi overrides."""
    events = conversation(1, title=HOSTILE + LONG)
    events[1]["data"]["content"][0]["text"] = HOSTILE + "\n" + LONG
    events[7]["data"]["message"]["content"][0]["text"] = HOSTILE
    events[8]["data"]["name"] = f"bash{CLEAR}{MARKUP}"
    events[8]["data"]["arguments"] = {"cmd": HOSTILE}
    events[9]["data"]["message"]["content"][0]["content"] = HOSTILE + LONG
    events[-1]["data"] = {"turn": 1, "reason": {"kind": "error", "error": {"message": HOSTILE}}}
    return events


def unsafe_characters(text: str) -> list[str]:
    """Characters that would act on a terminal: C0 (but newline), DEL, C1, bidi controls."""
    return sorted(
        {
            f"U+{ord(c):04X}"
            for c in text
            if (ord(c) < 0x20 and c != "\n")
            or 0x7F <= ord(c) < 0xA0
            or c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
            or unicodedata.category(c) == "Cs"
        }
    )


def build_hostile_root(root: Path) -> Path:
    """A root whose session (and its child) carry hostile ids, titles and content."""
    events = hostile_events()
    put(log_path(root, EVIL_ID), raw_log(header(EVIL_ID, cwd=f"/home/{CLEAR}{BIDI}"), events))
    # A child whose title and id are hostile too, so the tree draws a hostile edge.
    child = f"child{OSC52}"
    put(
        log_path(root, child),
        raw_log(header(child, parentSession=EVIL_ID, seedLength=13), events),
    )
    return root


# -- odd event shapes ----------------------------------------------------------------------

#: Events of known types whose data has shapes the format does not promise: logs from
#: other harness versions or plugins. Each must be shown, never crash a view.
ODD_EVENTS: Final[dict[str, tuple[str, Any]]] = {
    "user-data-str": ("user/message", "just a string"),
    "user-content-str": ("user/message", {"role": "user", "content": "not a list"}),
    "user-content-junk": (
        "user/message",
        {"content": [1, None, {"type": "text", "text": 5}, {"type": "image"}], "source": 3},
    ),
    "assistant-message-list": ("assistant/message", {"turn": 1, "message": []}),
    "assistant-parts-junk": (
        "assistant/message",
        {"message": {"content": [{"type": "tool-call", "args": None}, "text", {"text": None}]}},
    ),
    "tool-call-dict-name": ("tool/call", {"name": {"a": 1}, "arguments": "x" * 5000}),
    "tool-result-nested": (
        "tool/result",
        {"message": {"content": [{"type": "tool-result", "content": {"nested": [1, [2]]}}]}},
    ),
    "tool-result-not-list": ("tool/result", {"message": {"content": "plain"}}),
    "title-int": ("session/title", {"title": 123}),
    "chunk-junk": ("assistant/chunk", {"chunk": {"type": "text-delta", "text": ["a"]}}),
    "data-null": ("step/start", None),
}
#: `turn/end` data of odd shapes.
ODD_ENDS: Final[dict[str, Any]] = {
    "end-kind-int": {"turn": 1, "reason": {"kind": 5}},
    "end-error-str": {"turn": 1, "reason": {"kind": "error", "error": "flat string"}},
    "end-aborted-str": {"turn": 1, "reason": {"kind": "aborted", "reason": "why"}},
    "end-no-reason": {"error": "boom"},
    "end-list": [1, 2],
}


def build_odd_shapes(root: Path) -> dict[str, Path]:
    """One log per odd shape: a turn holding the odd event, or ending oddly."""
    out: dict[str, Path] = {}
    for name, (etype, data) in ODD_EVENTS.items():
        events = conversation(1)
        events[1]["data"]["content"][0]["text"] = f"hello {name}"
        events.insert(3, {"type": etype, "seq": 3, "time": -1, "data": data})
        for seq, event in enumerate(events):
            event["seq"] = seq
        out[name] = put(log_path(root, name), raw_log(header(name), events))
    for name, data in ODD_ENDS.items():
        events = conversation(1)
        events[1]["data"]["content"][0]["text"] = f"hello {name}"
        events[-1]["data"] = data
        events[-1]["time"] = 1e300
        out[name] = put(log_path(root, name), raw_log(header(name), events))
    return out
