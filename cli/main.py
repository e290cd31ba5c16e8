"""`turnline`: the command line (argparse), headless except for `open` and `demo`.

`ls`, `show`, `fork` and `tree` only import the core, so they start fast and work
without a terminal UI; `open` (the default) and `demo` import the TUI lazily.
Bad input never ends in a traceback: refused operations become one line on stderr
(or `{"error": {"code", "message"}}` on stdout with `--json`) and exit status 1;
usage errors exit 2 (argparse).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import math
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, NamedTuple, NoReturn, cast

import orjson
from turnline.core.lineage import Links, link_key, link_sessions
from turnline.core.parallel import stop_pool
from turnline.core.root import (
    PlainListing,
    RootError,
    SessionLookupError,
    SessionRoot,
    has_session_header,
    is_log_name,
    layout_session_id,
    no_sessions_message,
)
from turnline.core.store import SessionForkError
from turnline.core.summary import (
    HeaderState,
    SummaryState,
    state_json,
    state_json_bytes,
    state_link_key,
)
from turnline.core.textsafe import one_line

from .fast import holds_no_log

# `render` and `core.view` (and the content and usage modules they load) are imported
# by the commands that draw text, not here: `ls --json` needs neither, and loading
# them takes about 35 ms on the benchmark's VM, paid by every listing for nothing.

COMMANDS: Final = (
    "ls",
    "show",
    "fork",
    "tree",
    "usage",
    "search",
    "open",
    "demo",
    "diff",
    "export",
    "resume-cmd",
)
#: Commands that never open the terminal UI.
HEADLESS: Final = frozenset(
    ("ls", "show", "fork", "tree", "usage", "search", "diff", "export", "resume-cmd")
)
VERSION_FALLBACK: Final = "0.1.0"


class CliError(Exception):
    """A refused command: a stable `code` and a one-line message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# -- output ----------------------------------------------------------------------------


def _write(stream: Any, text: str) -> None:
    """Write text that survives any terminal encoding (unencodable characters escaped)."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    stream.write(text.encode(encoding, "backslashreplace").decode(encoding))


def _print_lines(lines: Sequence[str]) -> None:
    _write(sys.stdout, "".join(line + "\n" for line in lines))


def _print_json(value: Any, *, floats: bool = True) -> None:
    """Print `value` as indented JSON; `floats=False` promises it holds no float."""
    _print_bytes(_json_bytes(value, floats))


def _print_parts(parts: Sequence[bytes]) -> None:
    """Print UTF-8 `parts` (a JSON document in pieces) as they are, one after another
    (a big document is not copied again to join its pieces)."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        _write(sys.stdout, b"".join(parts).decode("utf-8"))
        return
    sys.stdout.flush()
    for part in parts:
        buffer.write(part)
    buffer.flush()


def _print_bytes(data: bytes) -> None:
    """Print UTF-8 `data` (a JSON document) as it is."""
    _print_parts((data,))


def _json_bytes(value: Any, floats: bool = True) -> bytes:
    """`json.dumps(value, ensure_ascii=False, indent=2)` + newline, as UTF-8 bytes, and
    always strict JSON: a float that is not finite (a log's `1e400` reads as infinity,
    as `JSON.parse` reads it) is written as `null`, as `JSON.stringify` and orjson
    write it, never as `Infinity` or `NaN`.

    orjson writes exactly those bytes (same layout and escapes) about ten times faster,
    except for floats (`1e-05` vs `0.00001`), integers beyond 64 bits and lone
    surrogates; a value holding any of those goes through `json`.
    """
    if not (floats and _has_float(value)):
        try:
            return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
        except orjson.JSONEncodeError:
            pass  # a lone surrogate or a huge integer: json below handles both
    # Lone surrogates (ids decoded from folder names, undecodable file names) cannot be
    # UTF-8 encoded; `backslashreplace` writes them as `\udXXX`, which inside a JSON
    # string literal is exactly their JSON escape, so the output stays valid JSON.
    import json  # only for the rare value above: keeps the module off every start

    text = json.dumps(_finite(value), ensure_ascii=False, indent=2, allow_nan=False) + "\n"
    return text.encode("utf-8", "backslashreplace")


def _finite(value: Any) -> Any:
    """`value` with every float that is not finite replaced by None (iterative: a log's
    JSON can nest deeper than the recursion limit)."""
    if not _has_nonfinite(value):
        return value  # the common case: nothing copied
    root: list[Any] = [value]
    # (container copy, key or index into it, original value)
    work: list[tuple[Any, Any, Any]] = [(root, 0, value)]
    while work:
        target, key, item = work.pop()
        kind = type(item)
        if kind is dict:
            copy: Any = dict(item)
            for k, v in item.items():
                work.append((copy, k, v))
        elif kind is list or kind is tuple:
            copy = list(item)
            for i, v in enumerate(item):
                work.append((copy, i, v))
        elif isinstance(item, float) and not math.isfinite(item):
            copy = None
        else:
            copy = item
        target[key] = copy
    return root[0]


def _has_nonfinite(value: Any) -> bool:
    """True if an infinite or NaN float sits anywhere in a JSON-shaped value."""
    return _any_float(value, lambda x: not math.isfinite(x))


def _has_float(value: Any) -> bool:
    """True if a float sits anywhere in a JSON-shaped value (dicts, lists, scalars)."""
    return _any_float(value, lambda x: True)


def _any_float(value: Any, wanted: Callable[[float], bool]) -> bool:
    """True if a float for which `wanted` holds sits anywhere in a JSON-shaped value."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
        elif (kind is float or (kind not in _PLAIN and isinstance(item, float))) and wanted(item):
            return True
    return False


_PLAIN: Final = frozenset((str, int, bool, type(None)))


def _width() -> int:
    return shutil.get_terminal_size((100, 24)).columns


# -- roots -----------------------------------------------------------------------------


def default_root() -> Path:
    """`$DSH_HOME/sessions` if it exists, else `~/.dsh/sessions` if that exists.

    Raises:
        CliError: ROOT_NOT_FOUND naming each path tried, how to pass a root, and
            `turnline demo`.
    """
    candidates: list[tuple[str, Path]] = []
    dsh_home = os.environ.get("DSH_HOME")
    if dsh_home:
        candidates.append(("$DSH_HOME/sessions", Path(dsh_home) / "sessions"))
    candidates.append(("~/.dsh/sessions", Path.home() / ".dsh" / "sessions"))
    for _, candidate in candidates:
        if candidate.is_dir():
            return candidate
    tried = " and ".join(
        f"{name} ({path}{'' if not path.exists() else ', not a folder'})"
        for name, path in candidates
    )
    raise CliError(
        "ROOT_NOT_FOUND",
        f"no ROOT was given and no default session root exists: tried {tried}. "
        "Pass a folder of dsh logs (or one log file) as ROOT, e.g. `turnline ls PATH`, "
        "or set $DSH_HOME; `turnline demo` opens a generated demo root",
    )


def _open_root(path: str | None) -> SessionRoot:
    return SessionRoot(Path(path) if path is not None else default_root())


def _root_and_session(first: str, second: str | None) -> tuple[SessionRoot, str]:
    """Split `[ROOT] SESSION`: two positionals are ROOT SESSION; one is SESSION, unless it
    is an existing file, which is then opened as its own root if it is a session log
    (and refused as not one if it is not: the default root has nothing to do with it).

    Raises:
        CliError: NOT_A_LOG for a lone file that is not a log; NOT_A_SESSION for a lone
            folder when there is no default root to look the name up in.
    """
    if second is not None:
        return _open_root(first), second
    candidate = Path(first)
    is_file, is_dir = _kind_of(first)
    if is_file:
        why = _not_a_log(candidate)
        if why is not None:
            raise CliError("NOT_A_LOG", f"{first} is not a session log: {why}")
        return SessionRoot(candidate), first
    if is_dir:
        try:
            default = default_root()
        except CliError:
            raise CliError("NOT_A_SESSION", _folder_message(first, candidate)) from None
        return SessionRoot(default), first
    return _open_root(None), first


def _kind_of(name: str) -> tuple[bool, bool]:
    """(is a file, is a folder) for a positional: neither for "" (`Path("")` would be the
    current folder) or a name no path can have (too long, say)."""
    if not name:
        return False, False
    path = Path(name)
    try:
        return path.is_file(), path.is_dir()
    except (OSError, ValueError):
        return False, False


def _not_a_log(path: Path) -> str | None:
    """Why the file at `path` is not a session log, or None if it is one: a log's name
    ends in .jsonl or .jsonl.zstd, and it sits in the dsh layout or starts with a
    session header (what discovery under a root accepts)."""
    if not is_log_name(path.name):
        return (
            "a dsh session log is a .jsonl or .jsonl.zstd file whose first line is a session header"
        )
    if layout_session_id(path) is not None:
        return None  # a log of the layout, even with a broken header: `show` reports that
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    if has_session_header(path):
        return None
    return "its first line is not a dsh session header"


def _folder_message(first: str, folder: Path, sessions: str = "a SESSION") -> str:
    """What to say when a lone positional names a folder and no default root exists
    (`sessions`: what to name after it, `a SESSION` or, for `diff`, `sessions A and B`)."""
    if holds_no_log(str(folder)):
        return f"{first} is a folder with no session logs in it, not a session"
    return (
        f"{first} is a folder, not a session; to use it as ROOT, name {sessions} after it "
        f"(`turnline ls {first}` lists them)"
    )


def _folder_hint(
    first: str, second: str | None, exc: Exception, sessions: str = "a SESSION"
) -> CliError | None:
    """A clearer error when a lone positional is a folder: the SESSION was forgotten."""
    if second is not None or not _kind_of(first)[1]:
        return None
    if isinstance(exc, SessionForkError) and exc.code != "SESSION_NOT_FOUND":
        return None  # the fork itself was refused: that message is the right one
    if isinstance(exc, CliError) and exc.code in ("NOT_A_LOG", "NOT_A_SESSION"):
        return None  # already says what the folder is
    code = getattr(exc, "code", "SESSION_NOT_FOUND")
    message = getattr(exc, "message", str(exc))
    return CliError(
        str(code),
        f"{message}; {first} is a folder: to use it as ROOT, name {sessions} after it",
    )


def _problems_of(root: SessionRoot, summary: Any) -> tuple[Any, ...]:
    return tuple(root.lineage().problems.get(summary.path, ()))


# -- commands --------------------------------------------------------------------------


#: `ls --sort` keys; `path` (the order logs are found in) is the default.
LS_SORTS: Final = ("path", "created", "last", "title", "turns", "id", "lineage")


class _Listed(NamedTuple):
    """What `ls --sort` orders one log by."""

    id: str
    title: str | None
    created: int
    last: int | None
    turns: int


def _ls_order(
    listed: Sequence[_Listed], sort: str, reverse: bool, links: Callable[[], Links]
) -> list[int]:
    """Indices of `listed` in `ls --sort` order: `created` and `last` newest first
    (unknown times last), `turns` most first, `title` and `id` alphabetical (untitled
    last), `lineage` as `tree` draws it, `path` as found. Ties keep the found order;
    `reverse` flips the whole list."""
    order = list(range(len(listed)))
    if sort == "created":
        order.sort(key=lambda i: (listed[i].created <= 0, -listed[i].created))
    elif sort == "last":
        order.sort(key=lambda i: (listed[i].last is None, -(listed[i].last or 0)))
    elif sort == "turns":
        order.sort(key=lambda i: -listed[i].turns)
    elif sort == "title":
        order.sort(key=lambda i: (listed[i].title is None, (listed[i].title or "").casefold()))
    elif sort == "id":
        order.sort(key=lambda i: listed[i].id)
    elif sort == "lineage":
        order = _lineage_order(links())
    if reverse:
        order.reverse()
    return order


def _lineage_order(links: Links) -> list[int]:
    """Every index in the order `turnline tree` draws the sessions: each root (oldest
    first) followed by its descendants depth first, then the children of missing
    parents. Iterative: a lineage chain can be deeper than the recursion limit."""
    rank = {i: r for r, i in enumerate(links.order)}
    children: dict[int, list[int]] = {}
    for child, parent in links.parent.items():
        children.setdefault(parent, []).append(child)
    in_missing = {i for kids in links.missing.values() for i in kids}
    tops = [i for i in links.order if i not in links.parent and i not in in_missing]
    for kids in links.missing.values():
        tops.extend(kids)
    out: list[int] = []
    seen: set[int] = set()
    stack = tops[::-1]
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        out.append(i)
        stack.extend(sorted(children.get(i, ()), key=rank.__getitem__, reverse=True))
    out.extend(i for i in links.order if i not in seen)  # nothing, unless a cycle slipped
    return out


def _ls_width() -> int | None:
    """The terminal's width for `ls` (`$COLUMNS` first), None when stdout is no
    terminal and `$COLUMNS` is unset: then the table is not fitted to a guess."""
    columns = shutil.get_terminal_size((0, 0)).columns
    return columns if columns > 0 else None


def cmd_ls(args: argparse.Namespace) -> int:
    """`turnline ls [ROOT] [--sort KEY] [--reverse] [--json]`."""
    root = _open_root(args.root)
    sort: str = args.sort
    if args.json:
        # Straight from the scan's plain values to JSON: no summary objects, and the
        # lineage rules run on plain values too (ten thousand logs: a third faster).
        found, _ = root.scan_plain()
        links = link_sessions(list(map(state_link_key, found.paths, found.states)))
        order: Sequence[int] = range(len(found.paths))
        if sort != "path" or args.reverse:
            listed = [_listed_state(state) for state in found.states]
            order = _ls_order(listed, sort, args.reverse, lambda: links)
        rendered = _json_entries(found, order, links)
        if rendered is not None:
            # The document orjson writes for the list of entries, joined from the
            # entries themselves (most written by the processes that scanned them).
            if rendered:
                _print_parts([b"[\n", b",\n".join(rendered), b"\n]\n"])
            else:
                _print_parts([b"[]\n"])
            return 0
        # An entry orjson cannot write (see `state_json_bytes`). Listing entries hold
        # only strings, integers, booleans and None (the header's numbers are integers
        # by `parse_header`), so the float walk is skipped.
        _print_json(
            [state_json(found.paths[i], found.states[i], links.problems.get(i, ())) for i in order],
            floats=False,
        )
        return 0
    summaries = root.scan()
    for folder, why in root.scan_problems:
        _write(sys.stderr, f"turnline: cannot list {one_line(str(folder))}: {one_line(why)}\n")
    if not summaries:
        _print_lines([no_sessions_message(root.path)])
        return 0
    texts = [_Listed(s.id, s.title, s.created_at, s.last_activity, s.turns) for s in summaries]
    ranked = _ls_order(
        texts, sort, args.reverse, lambda: link_sessions([link_key(s) for s in summaries])
    )
    entries = [(summaries[i], root.problems_of(summaries[i])) for i in ranked]
    from . import render

    _print_lines(render.ls_lines(entries, _ls_width()))
    return 0


def _json_entries(found: PlainListing, order: Sequence[int], links: Links) -> list[bytes] | None:
    """The `ls --json` entries of `found` in `order` (`summary.state_json_bytes`),
    each as the scan wrote it unless the lineage found problems in it; None if one
    cannot be written so."""
    entries = found.entries
    if not links.problems and None not in entries:
        written = cast(list[bytes], entries)  # (no entry is None)
        return written if order == range(len(written)) else [written[i] for i in order]
    out = []
    for i in order:
        problems = links.problems.get(i)
        entry = entries[i] if not problems else None
        if entry is None:
            entry = state_json_bytes(found.paths[i], found.states[i], problems or ())
            if entry is None:
                return None
        out.append(entry)
    return out


def _listed_state(state: tuple[Any, ...]) -> _Listed:
    """`_Listed` of a summary given as `SessionSummary.to_state` values."""
    st = SummaryState._make(state)
    created = HeaderState._make(st.header).created_at if st.header is not None else 0
    return _Listed(st.id, st.title, created, st.last_activity, st.turns)


def cmd_show(args: argparse.Namespace) -> int:
    """`turnline show [ROOT] SESSION [--json]`."""
    from turnline.core.view import SessionView

    from . import render

    try:
        root, ref = _root_and_session(args.first, args.second)
        view = SessionView(root.load(root.resolve(ref)))
    except (SessionLookupError, RootError, CliError) as exc:
        hint = _folder_hint(args.first, args.second, exc)
        if hint is None:
            raise
        raise hint from exc
    if args.json:
        session = view.summary.to_json_dict()
        # The full problem list: the log's own, cross-session ones and the seed check.
        session["problems"] = [p.to_json_dict() for p in view.problems]
        turns = []
        for tv in view.turns:
            entry = tv.turn.to_json_dict()
            entry["forkable"] = tv.forkable  # the fork rule's verdict, past seq gaps too
            turns.append(entry)
        document = {"session": session, "turns": turns, "seedLength": view.seed_length}
        # A turn's fields are ints, strings and bools (`Turn.to_json_dict`): only the
        # session's can hold a float (walking 2,000 turns for one took 25 ms).
        _print_json(document, floats=_has_float(session))
        return 0
    _print_lines(render.show_lines(view, _width()))
    return 0


def _boundary(text: str | None) -> object:
    """`--at` as given: an int when it is one, else the value the fork rule refuses.

    Parsing is left to the fork rule on purpose, so `--at 1.5` and `--at -1` get the
    same INVALID_BOUNDARY error (and message) as any other caller of the core.
    """
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def cmd_fork(args: argparse.Namespace) -> int:
    """`turnline fork [ROOT] SESSION [--at SEQ] [--id CHILD] [--json]`."""
    boundary: Any = _boundary(args.at)
    try:
        root, ref = _root_and_session(args.first, args.second)
        source = root.resolve(ref)
        if args.at is None:
            boundary = _last_fork_point(root, source)
        result = root.fork(source, boundary, args.id)
    except (SessionLookupError, RootError, CliError, SessionForkError) as exc:
        hint = _folder_hint(args.first, args.second, exc)
        if hint is None:
            raise
        raise hint from exc
    child = result.child
    default = args.at is None
    if args.json:
        _print_json(
            {
                "child": child.to_json_dict(extra_problems=_problems_of(root, child)),
                "parent": result.parent_id,
                "boundary": result.boundary,
                "boundaryDefault": default,
                "root": str(root.write_root),
            }
        )
        return 0
    at = "an empty seed" if result.boundary is None else f"seq {result.boundary}"
    if default and result.boundary is not None:
        at += " (the last turn/end: --at not given)"
    _print_lines(
        [
            f"forked {one_line(result.parent_id)} at {at} → {one_line(child.id)}",
            f"  {one_line(str(child.path))}",
        ]
    )
    return 0


def _last_fork_point(root: SessionRoot, source: Any) -> int | None:
    """The CLI's default `--at`: the last `turn/end` the fork rule accepts (the core's
    own default, the last event, is refused on every live session and fresh child).
    None, the core's default, when there is none: an empty session then forks to an
    empty child, and any other is refused by the fork rule, which says why."""
    from turnline.core.view import SessionView

    view = SessionView(root.load(source, check_seed=False))
    for tv in reversed(view.turns):
        if tv.forkable and tv.boundary is not None:
            return tv.boundary
    return None


def cmd_tree(args: argparse.Namespace) -> int:
    """`turnline tree [ROOT]`."""
    from . import render

    root = _open_root(args.root)
    root.scan()
    lines = render.tree_lines(root.lineage(), root.path)
    _print_lines(lines or [no_sessions_message(root.path)])
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    """`turnline diff [ROOT] A B [--json]`."""
    from turnline.core.compare import CompareError, compare

    if args.third is not None:
        root, refs = _open_root(args.first), [args.second, args.third]
    else:
        # A B, as `show` takes a lone SESSION: a folder in A's place is looked up as a
        # session under the default root, and named as a ROOT whose B was forgotten.
        root, refs = _diff_default_root(args.first), [args.first, args.second]
    root.scan()
    try:
        left, right = root.resolve(refs[0]), root.resolve(refs[1])
    except SessionLookupError as exc:
        if args.third is None:
            hint = _folder_hint(args.first, None, exc, DIFF_SESSIONS)
            if hint is not None:
                raise hint from exc
        raise
    try:
        result = compare(root, left, right)
    except CompareError as exc:
        raise CliError(exc.code, exc.message) from exc
    if args.json:
        _print_json(result.to_json_dict())
        return 0
    _print_lines(_diff_lines(result))
    return 0


#: What `diff`'s errors say to name after a ROOT.
DIFF_SESSIONS: Final = "sessions A and B"


def _diff_default_root(first: str) -> SessionRoot:
    """The root of `diff A B`: the default root, by `show`'s rules for A (a file that
    is not a log is refused; a folder, when there is no default root, is named as a
    ROOT given without B).

    Raises:
        CliError: NOT_A_LOG, NOT_A_SESSION, ROOT_NOT_FOUND.
    """
    is_file, is_dir = _kind_of(first)
    if is_file:
        why = _not_a_log(Path(first))
        if why is not None:
            raise CliError("NOT_A_LOG", f"{first} is not a session log: {why}")
    try:
        return _open_root(None)
    except CliError:
        if not is_dir:
            raise
        raise CliError(
            "NOT_A_SESSION", _folder_message(first, Path(first), DIFF_SESSIONS)
        ) from None


def _diff_lines(result: Any) -> list[str]:
    """`turnline diff` as text: the split, each side's outcome, the aligned rows."""
    from turnline.core.usage import compact_tokens

    from . import render

    lines = [
        f"ancestor {one_line(result.ancestor.id)}, diverged at seq {result.diverged_at}"
        f" (shared: {render.plural(result.shared_turns, 'turn')}"
        + (f"; split inside turn {result.split_turn}" if result.split_turn is not None else "")
        + ")",
    ]
    for label, side in (("left", result.left), ("right", result.right)):
        tools = ", ".join(f"{one_line(k)}×{v:,}" for k, v in side.tool_calls.items()) or "none"
        lines.append(
            f"{label:5} {one_line(side.summary.id)}: {render.plural(len(side.turns), 'turn')}, "
            f"last {one_line(side.last_reason or '-', 40)}, "
            f"{compact_tokens(side.tokens.total)} tokens, "
            f"{render.plural(side.errors, 'error')}, {render.duration(side.wall_ms)}, "
            f"tools {tools}, {render.plural(len(side.files), 'file')}"
        )
    for k, (left, right) in enumerate(result.rows, 1):

        def cell(turn: Any) -> str:
            if turn is None:
                return "-"
            return f"turn {turn.number} [{one_line(turn.reason, 40)}] {one_line(turn.user, 40)}"

        lines.append(f"{k:>3}  {cell(left)}  |  {cell(right)}")
    return lines


def cmd_export(args: argparse.Namespace) -> int:
    """`turnline export [ROOT] SESSION --format md|html [--own-only] [-o FILE] [--force]`."""
    from turnline.core.export import ExportError, export, write_export

    root, ref = _root_and_session(args.first, args.second)
    text = export(root.load(root.resolve(ref)), args.format, own_only=args.own_only)
    if args.output is None:
        _write(sys.stdout, text)
        return 0
    try:
        written = write_export(Path(args.output), text, replace=args.force)
    except ExportError as exc:
        raise CliError(exc.code, exc.message) from exc
    _write(sys.stderr, f"turnline: wrote {one_line(str(written))}\n")
    return 0


def cmd_resume_cmd(args: argparse.Namespace) -> int:
    """`turnline resume-cmd [ROOT] SESSION`."""
    from turnline.core.resume import resume_command
    from turnline.core.xdg import ConfigError

    root, ref = _root_and_session(args.first, args.second)
    try:
        command = resume_command(root.resolve(ref), printable=True)
    except ConfigError as exc:
        raise CliError("CONFIG_ERROR", exc.message) from exc
    _write(sys.stdout, command + "\n")
    return 0


def cmd_usage(args: argparse.Namespace) -> int:
    """`turnline usage [ROOT] [SESSION] [--by ...] [--prices FILE] [--json]`."""
    from turnline.core.ids import log_labels
    from turnline.core.prices import load_prices
    from turnline.core.usage import UsageTotals, compact_tokens, root_usage
    from turnline.core.xdg import ConfigError

    from . import render

    try:
        prices = load_prices(Path(args.prices) if args.prices else None)
    except ConfigError as exc:
        raise CliError("BAD_PRICES", exc.message) from exc
    if args.second is not None:
        root, ref = _open_root(args.first), args.second
    elif args.first is not None and not Path(args.first).exists():
        root, ref = _open_root(None), args.first  # a lone SESSION under the default root
    else:
        root, ref = _open_root(args.first), None
    only = root.resolve(ref) if ref is not None else None
    usage = root_usage(root, only)
    if args.json:
        # Without a price table every cost is null: the document holds no float.
        _print_json(usage.to_json_dict(prices), floats=prices is not None)
        return 0
    rows: list[tuple[str, UsageTotals]] = []
    if args.by == "session":
        # An id several logs claim gets the tree's short id with its folder part.
        labels = log_labels((s.id, s.path) for s in root.summaries())
        rows = [(labels.get(Path(s.path), s.id), s.own) for s in usage.sessions]
    else:
        groups: dict[str, UsageTotals] = {}
        cwd_of = {str(summary.path): summary.cwd for summary in root.summaries()}
        for s in usage.sessions:
            if args.by == "project":
                key = cwd_of.get(s.path) or "?"
                groups.setdefault(key, UsageTotals()).add(s.own)
            else:
                for k, row in s.own.tokens.items():
                    label = k[0] if args.by == "model" else _day(k[1])
                    target = groups.setdefault(label, UsageTotals())
                    target.tokens[k] = [
                        a + b for a, b in zip(target.tokens.get(k, [0] * 6), row, strict=True)
                    ]
        rows = list(groups.items())
    _print_lines(render.usage_lines(rows, usage.totals, prices, args.by))
    if usage.inherited_from_outside.tokens:
        _print_lines(
            [
                "inherited from outside: "
                f"{compact_tokens(usage.inherited_from_outside.total_tokens)} tokens"
            ]
        )
    unpriced = usage.unpriced_models(prices)
    if prices is not None and unpriced:
        _print_lines([f"unpriced models: {', '.join(one_line(m) for m in unpriced)}"])
    return 0


def _day(day: int) -> str:
    """A usage day's date; a day outside the calendar's years 1 to 9999 (a log's time
    past them) is named as having none, as the usage screen leaves it unplotted."""
    import datetime

    epoch = datetime.date(1970, 1, 1).toordinal()
    if not datetime.date.min.toordinal() <= epoch + day <= datetime.date.max.toordinal():
        return "(no date)"
    return datetime.date.fromordinal(epoch + day).isoformat()


def cmd_search(args: argparse.Namespace) -> int:
    """`turnline search [ROOT] QUERY [--in ...] [--include-inherited] [--session ID]
    [--limit N] [--no-cache] [--json]`."""
    from turnline.core.catalog import CatalogError
    from turnline.core.search import (
        QueryError,
        UnknownSessionError,
        open_catalog,
        parse_fields,
        search,
    )

    root, query = _search_root_and_query(args.words)
    try:
        fields = parse_fields(args.fields)
        if args.limit is not None and args.limit < 0:
            raise QueryError("--limit must be 0 or more")
        session = args.session if root.single is None else str(root.single)
        progress = _search_progress() if sys.stderr.isatty() and not args.json else None
        catalog = open_catalog(root.path, no_cache=args.no_cache)
        try:
            result = search(
                catalog,
                query,
                fields=fields,
                include_inherited=args.include_inherited,
                session=session,
                limit=args.limit,
                progress=progress,
            )
            # The tree's short ids (`{{sessio@acp/cancel` for an id several logs claim).
            shorts = {} if args.json else _catalog_short_ids(catalog)
            unsearched = list(catalog.unstorable)
        finally:
            catalog.close()
    except UnknownSessionError as exc:  # as `show` says it (`SessionRoot.resolve`)
        raise CliError(
            "SESSION_NOT_FOUND", f"no session {exc.session!r} under {root.path}"
        ) from exc
    except QueryError as exc:
        raise CliError("BAD_QUERY", str(exc)) from exc
    except CatalogError as exc:
        raise CliError("CATALOG_ERROR", str(exc)) from exc
    if unsearched:
        # Not lost in silence: the catalog (SQLite, UTF-8) cannot hold these paths.
        shown = ", ".join(one_line(p) for p in unsearched[:3])
        more = f" and {len(unsearched) - 3} more" if len(unsearched) > 3 else ""
        plural = "s" if len(unsearched) > 1 else ""
        _write(
            sys.stderr,
            f"turnline: not searched: {len(unsearched)} log{plural} whose path (or the"
            " session id its folder names) is not UTF-8"
            f" ({shown}{more})\n",
        )
    if args.json:
        _print_bytes(result.to_json())  # the very bytes `cli.fast` prints
        return 0
    lines = [_search_line(hit, shorts.get(hit.path)) for hit in result.hits]
    if result.total > len(result.hits):
        lines.append(f"… {result.total - len(result.hits)} more (--limit)")
    _print_lines(lines or ["no hits"])
    return 0


def _search_root_and_query(words: Sequence[str]) -> tuple[SessionRoot, str]:
    """Split `search [ROOT] QUERY` as `show` splits `[ROOT] SESSION`: with several
    positionals the first is ROOT (it must exist, and hold session logs), and the rest
    is the QUERY (several words may go unquoted); one positional is the QUERY under the
    default root.

    Raises:
        RootError, CliError: ROOT_NOT_FOUND (a missing ROOT; no default root),
            ROOT_INVALID (a ROOT folder with no session log in it), each saying how to
            quote a query of several words, or how to search a lone folder.
    """
    if len(words) > 1:
        first, query = words[0], " ".join(words[1:])
        quote = (
            "to search several words under the default root, quote them: "
            f"turnline search {_shell_quote(' '.join(words))}"
        )
        try:
            root = _open_root(first)
        except RootError as exc:
            raise CliError(exc.code, f"{exc.message}; {quote}") from exc
        if root.single is None and holds_no_log(str(root.path)):
            raise CliError("ROOT_INVALID", f"{no_sessions_message(root.path)}; {quote}")
        return root, query
    (query,) = words
    try:
        return _open_root(None), query
    except CliError as exc:
        if not _kind_of(query)[1]:
            raise
        raise CliError(
            exc.code,
            f"no ROOT was given and no default session root exists; {query} is a folder: "
            f"to search it, give a QUERY after it (`turnline search {query} QUERY`)",
        ) from exc


def _shell_quote(text: str) -> str:
    """`text` in double quotes for a shell (what a user would type)."""
    escaped = "".join("\\" + c if c in '"\\$`' else c for c in text)
    return f'"{escaped}"'


def _catalog_short_ids(catalog: Any) -> dict[str, str]:
    """Log path -> the tree's short id (`core.ids.short_ids`), over every catalogued log."""
    from turnline.core.ids import short_ids

    pairs = [(sid, Path(path)) for sid, path in catalog.query("SELECT session, path FROM logs")]
    return {str(path): short for path, short in short_ids(pairs).items()}


def _search_line(hit: Any, short: str | None = None) -> str:
    """One hit: title, short id (`short`, the tree's, else the id's first 8
    characters), turn, field and the marked snippet (all sanitized)."""
    title = one_line(hit.title or hit.session, 40)
    credit = f" (from {one_line(hit.inherited_from)[:8]})" if hit.inherited_from else ""
    heirs = f" +{hit.inherited_by} forks" if hit.inherited_by else ""
    shown = one_line(short) if short is not None else one_line(hit.session)[:8]
    return f"{title}  {shown}  turn {hit.turn}  {hit.field}{credit}{heirs}\n    {hit.marked()}"


def _search_progress() -> Callable[[int, int], None]:
    """Progress of a catalog update on the terminal (stderr), cleared when done."""

    def show(done: int, total: int) -> None:
        if total < 20:
            return
        end = "\r\x1b[K" if done >= total else ""
        _write(sys.stderr, f"\rindexing logs for search: {done}/{total}{end}")
        sys.stderr.flush()

    return show


def _lazy(module: str, name: str, what: str) -> Callable[..., Any]:
    """Import `module.name` only when a command needs it (keeps textual out of `ls`)."""
    try:
        found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise CliError(
            "UNAVAILABLE", f"{what} is not available in this installation ({exc})"
        ) from exc
    if not callable(found):
        raise CliError("UNAVAILABLE", f"{what} is not available in this installation")
    return found  # type: ignore[no-any-return]


def cmd_open(args: argparse.Namespace) -> int:
    """`turnline [open] [ROOT|FILE] [--poll]`: the terminal UI."""
    path = Path(args.root) if args.root is not None else default_root()
    root = SessionRoot(path)  # a missing or odd path is refused here, before textual loads
    if not _on_terminal():
        # The app would fill a pipe or a file with escape codes, or wait for keys that
        # never come: say so, and name the commands that do work there.
        _write(
            sys.stderr,
            "turnline: the app needs a terminal (stdin and stdout); in a pipe or a "
            "script use `turnline ls`, `turnline show SESSION` or `turnline tree`\n",
        )
        return 2
    # The scan runs in the process pool while Textual loads (half a second of imports):
    # the pool's workers are forked now, while this process has one thread, and never
    # again (the app forks nothing: see docs/ARCHITECTURE.md, Processes). One big log
    # gets the pool too: its index takes the second half there.
    scan = root.start_before_ui()
    run_app = _lazy("turnline.tui", "run_app", "the terminal UI")
    status = run_app(path, poll=args.poll, scan=scan)
    return status if isinstance(status, int) else 0


def _on_terminal() -> bool:
    """True when both stdin and stdout are terminals (what the app draws on and reads)."""
    try:
        return sys.stdin is not None and sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def cmd_demo(args: argparse.Namespace) -> int:
    """`turnline demo [--dir DIR] [--poll]`: the UI on a generated root that keeps growing."""
    build_demo_root = _lazy("turnline.demo", "build_demo_root", "the demo generator")
    live_writer = _lazy("turnline.demo", "LiveWriter", "the demo writer")
    run_app = _lazy("turnline.tui", "run_app", "the terminal UI")
    import tempfile  # only the demo needs it

    temporary = not args.dir
    dest = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="turnline-demo-"))
    demo = build_demo_root(dest)
    _write(sys.stderr, f"turnline: demo root at {demo.path}\n")
    writer = live_writer(demo.live_path)
    writer.start()
    try:
        status = run_app(demo.path, poll=args.poll, subtitle=f"demo · {demo.path}")
    finally:
        writer.stop()
        if temporary and not args.keep:
            shutil.rmtree(dest, ignore_errors=True)
            _write(sys.stderr, f"turnline: removed the demo root {dest} (--keep keeps it)\n")
        elif temporary:
            _write(sys.stderr, f"turnline: the demo root is kept at {dest}\n")
    return status if isinstance(status, int) else 0


# -- parsing ---------------------------------------------------------------------------


def _version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover - stdlib since 3.8
        return VERSION_FALLBACK
    try:
        return version("turnline")
    except PackageNotFoundError:
        return VERSION_FALLBACK


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors that keep argparse's exit status 2 but stay one line."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        # (argv can hold a log's folder name: a glob over a root)
        self.exit(2, f"{self.prog}: error: {one_line(message)}\n")


class _IntermixedParser(_Parser):
    """A subcommand parser that takes options between its positionals
    (`search ROOT --in tool WORD`)."""

    _inside = False

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self._inside:
            return super().parse_known_args(args, namespace)
        self._inside = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._inside = False


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for the docs and the tests)."""
    parser = _Parser(
        prog="turnline",
        usage="turnline [-h] [--version] COMMAND ...\n"
        "       turnline [ROOT|FILE] [--poll]   (open the app, as `turnline open`)",
        description="Browse and fork dsh session logs. With no command, open the app.",
        epilog="ROOT defaults to $DSH_HOME/sessions, else ~/.dsh/sessions.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=_Parser, prog="turnline"
    )

    ls = sub.add_parser("ls", help="one line (or JSON entry) per session")
    ls.add_argument("root", nargs="?", metavar="ROOT", help="a folder of logs, or one log")
    ls.add_argument(
        "--sort",
        choices=LS_SORTS,
        default="path",
        help="order: path (as found, the default), created or last (newest first), "
        "title, turns (most first), id, lineage (as `tree` draws it)",
    )
    ls.add_argument("--reverse", action="store_true", help="reverse the order")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(run=cmd_ls)

    show = sub.add_parser(
        "show",
        help="a session's turns",
        usage="turnline show [-h] [--json] [ROOT] SESSION",
        description="SESSION is an id, a unique id prefix, or a log path.",
    )
    show.add_argument("first", metavar="ROOT|SESSION")
    show.add_argument("second", nargs="?", metavar="SESSION")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(run=cmd_show)

    fork = sub.add_parser(
        "fork",
        help="fork a session at a turn/end and write the child under ROOT",
        usage="turnline fork [-h] [--at SEQ] [--id CHILD] [--json] [ROOT] SESSION",
        description="SESSION is an id, a unique id prefix, or a log path.",
    )
    fork.add_argument("first", metavar="ROOT|SESSION")
    fork.add_argument("second", nargs="?", metavar="SESSION")
    fork.add_argument(
        "--at", metavar="SEQ", help="the turn/end seq to copy through (default: last)"
    )
    fork.add_argument("--id", metavar="CHILD", help="the child's id (default: a new UUID4)")
    fork.add_argument("--json", action="store_true", help="print JSON")
    fork.set_defaults(run=cmd_fork)

    tree = sub.add_parser("tree", help="the lineage forest")
    tree.add_argument("root", nargs="?", metavar="ROOT")
    tree.set_defaults(run=cmd_tree)

    diff = sub.add_parser(
        "diff",
        help="compare two sessions of one lineage from where they split",
        usage="turnline diff [-h] [--json] [ROOT] A B",
    )
    diff.add_argument("first", metavar="ROOT|A")
    diff.add_argument("second", metavar="A|B")
    diff.add_argument("third", nargs="?", metavar="B")
    diff.add_argument("--json", action="store_true", help="print JSON")
    diff.set_defaults(run=cmd_diff)

    export = sub.add_parser(
        "export",
        help="a session as Markdown or HTML",
        usage="turnline export [-h] --format md|html [--own-only] [-o FILE] [--force] "
        "[ROOT] SESSION",
        description="Writes to stdout, or atomically to FILE (never over an existing "
        "file unless --force; no temporary is left behind).",
    )
    export.add_argument("first", metavar="ROOT|SESSION")
    export.add_argument("second", nargs="?", metavar="SESSION")
    export.add_argument("--format", choices=("md", "html"), required=True)
    export.add_argument(
        "--own-only", action="store_true", help="replace inherited turns by one line"
    )
    export.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    export.add_argument("--force", action="store_true", help="replace an existing FILE")
    export.set_defaults(run=cmd_export)

    resume = sub.add_parser(
        "resume-cmd",
        help="print the shell command that continues a session in the agent",
        usage="turnline resume-cmd [-h] [ROOT] SESSION",
    )
    resume.add_argument("first", metavar="ROOT|SESSION")
    resume.add_argument("second", nargs="?", metavar="SESSION")
    resume.set_defaults(run=cmd_resume_cmd)
    find = sub.add_parser(
        "search",
        help="find text in every session, credited to the session that said it",
        usage="turnline search [-h] [--in FIELDS] [--include-inherited] [--session ID] "
        "[--limit N] [--no-cache] [--json] [ROOT] QUERY",
        description='QUERY: words (all within one turn), "a phrase", prefix*.',
    )
    find.__class__ = _IntermixedParser
    find.add_argument("words", nargs="+", metavar="[ROOT] QUERY")
    find.add_argument(
        "--in",
        dest="fields",
        metavar="FIELDS",
        help="comma-separated: user,assistant,reasoning,tool (default: user,assistant)",
    )
    find.add_argument(
        "--include-inherited", action="store_true", help="also list each fork's inherited copy"
    )
    find.add_argument("--session", metavar="ID", help="only hits in this session (id prefix)")
    find.add_argument("--limit", type=int, metavar="N", help="at most N hits (newest first)")
    find.add_argument("--no-cache", action="store_true", help="do not use the catalog")
    find.add_argument("--json", action="store_true", help="print JSON")
    find.set_defaults(run=cmd_search)

    open_ = sub.add_parser("open", help="open the app (the default command)")
    open_.add_argument("root", nargs="?", metavar="ROOT|FILE")
    open_.add_argument("--poll", action="store_true", help="poll for changes (no inotify)")
    open_.set_defaults(run=cmd_open)

    usage = sub.add_parser(
        "usage",
        help="tokens, cost and time: each session's own, inherited and subtree",
        usage="turnline usage [-h] [--by {session,model,project,day}] [--prices FILE] "
        "[--json] [ROOT] [SESSION]",
        description="SESSION (an id, a unique id prefix, or a log path) limits the output "
        "to it and its subtree. Prices come from --prices FILE or "
        "$XDG_CONFIG_HOME/turnline/prices.toml.",
    )
    usage.add_argument("first", nargs="?", metavar="ROOT|SESSION")
    usage.add_argument("second", nargs="?", metavar="SESSION")
    usage.add_argument("--by", choices=("session", "model", "project", "day"), default="session")
    usage.add_argument("--prices", metavar="FILE", help="a price table (TOML)")
    usage.add_argument("--json", action="store_true", help="print JSON")
    usage.set_defaults(run=cmd_usage)

    demo = sub.add_parser("demo", help="open the app on a generated, live demo root")
    demo.add_argument("--dir", metavar="DIR", help="build the demo here (default: a temp dir)")
    demo.add_argument("--poll", action="store_true", help="poll for changes (no inotify)")
    demo.add_argument(
        "--keep", action="store_true", help="keep the temporary demo root when the app closes"
    )
    demo.set_defaults(run=cmd_demo)
    _describe(sub)
    return parser


def _describe(sub: Any) -> None:
    """Start each subcommand's own help (`turnline tree -h`) with its one-line help
    from `turnline -h`, then what it already said."""
    for action in sub._choices_actions:
        parser = sub.choices[action.dest]
        line = str(action.help)
        said = f"{line[:1].upper()}{line[1:]}."
        parser.description = f"{said} {parser.description}" if parser.description else said


def _with_command(argv: list[str]) -> list[str]:
    """Insert the default `open` command unless argv names one (or asks for help)."""
    if argv and (argv[0] in COMMANDS or argv[0] in ("-h", "--help", "--version")):
        return argv
    return ["open", *argv]


def _fail(code: str, message: str, as_json: bool) -> int:
    if as_json:
        _print_json({"error": {"code": code, "message": message}})
    else:
        _write(sys.stderr, f"turnline: {one_line(message)}\n")
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `turnline` console script; returns the exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(_with_command(args_list))
    if args.version:
        _write(sys.stdout, f"turnline {_version()}\n")
        return 0
    if args.command is None:
        build_parser().print_help(sys.stderr)
        return 2
    as_json = bool(getattr(args, "json", False))
    run: Callable[[argparse.Namespace], int] = args.run
    # The headless commands build many small objects (ten thousand summaries for a wide
    # root) and no reference cycles: the cyclic collector's passes over them cost about
    # a quarter of an `ls`, and free nothing. The app keeps the collector on.
    collect = gc.isenabled() and args.command in HEADLESS
    if collect:
        gc.disable()
    try:
        return run(args)
    except SessionForkError as exc:
        return _fail(str(exc.code), exc.message, as_json)
    except SessionLookupError as exc:
        return _fail(exc.code, exc.message, as_json)
    except RootError as exc:
        return _fail(exc.code, exc.message, as_json)
    except CliError as exc:
        return _fail(exc.code, exc.message, as_json)
    except BrokenPipeError:
        _silence_stdout()
        return 1
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        return _fail("IO_ERROR", f"{exc.strerror or exc}{where}", as_json)
    finally:
        if collect:
            gc.enable()


def console() -> NoReturn:
    """The `turnline` console script: `main`, then exit.

    A headless command leaves through `os._exit` once its output is flushed: the
    interpreter's teardown would otherwise free the ten thousand summaries of a wide
    root object by object, a tenth of an `ls`, for nothing.
    """
    status = main()
    args = sys.argv[1:]
    command = _with_command(list(args))[0] if args else None
    if command in HEADLESS:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BrokenPipeError:
            _silence_stdout()
            status = status or 1
        except (OSError, ValueError):
            status = status or 1
        stop_pool()  # no pool worker outlives the command (`_exit` runs no atexit)
        os._exit(status)
    sys.exit(status)


def _silence_stdout() -> None:
    """After the reader of our stdout went away (`| head`), point stdout at /dev/null so
    the interpreter's final flush does not print a second BrokenPipeError."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
