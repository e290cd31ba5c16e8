"""The `turnline` console script's front door: `turnline search ROOT QUERY --json`
without loading the rest of the command line.

A search is often run again and again from scripts and editors, each time in a new
process; loading `cli.main` (argparse, the log readers, the lineage, the renderers)
costs more than a warm query itself. This module recognises the plain form of that
command, with an explicit ROOT folder and `--json`, and answers it through
`core.search` alone. Anything else, and anything unusual (an unknown or abbreviated
option, `--help`, `--no-cache`, an error of any kind), goes to `cli.main.console`,
which then answers exactly as it always does: the output never depends on which
door was taken.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # `typing` loads `re` and more: they wait until after the fork
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn

    from turnline.core.search import SearchResult

#: Options of `turnline search` this door takes, and whether each takes a value.
_OPTIONS = {"--json": False, "--include-inherited": False, "--in": True, "--session": True}


def console() -> NoReturn:
    """The `turnline` console script. Ctrl-C ends any command quietly (`_interrupted`)."""
    try:
        argv = sys.argv[1:]
        if argv[:1] == ["search"]:
            status = _search(argv[1:])
            if status is not None:
                _leave(status)
        from .main import console as full

        full()
    except KeyboardInterrupt:
        _interrupted()


def _interrupted() -> NoReturn:
    """Ctrl-C: no traceback. The pool is stopped (a `split_map`'s forked children are
    already killed and reaped on the way out), then the process ends by SIGINT itself,
    as a shell expects of an interrupted command (status 130), with what it had
    not yet written left unwritten."""
    import signal

    _stop_pool()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)
    os._exit(130)  # (if the signal did not end the process)


def _leave(status: int) -> NoReturn:
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        status = status or 1
    _stop_pool()
    os._exit(status)


def _stop_pool() -> None:
    """No pool worker outlives the command (`os._exit` runs no atexit), if one started."""
    parallel = sys.modules.get("turnline.core.parallel")
    if parallel is not None:
        parallel.stop_pool()


def _parse(args: list[str]) -> dict[str, Any] | None:
    """`search` arguments in the plain form, or None (`cli.main` parses them then)."""
    got: dict[str, Any] = {"words": [], "limit": None}
    k = 0
    while k < len(args):
        arg = args[k]
        k += 1
        if not arg.startswith("-") or arg == "-":
            got["words"].append(arg)
            continue
        name, eq, value = arg.partition("=")
        if name == "--limit":
            if not eq:
                if k >= len(args):
                    return None
                value, k = args[k], k + 1
            if not (value.isascii() and value.isdigit()) or got["limit"] is not None:
                return None
            got["limit"] = int(value)
            continue
        if name not in _OPTIONS or name in got:
            return None
        if _OPTIONS[name]:
            if not eq:
                if k >= len(args) or args[k].startswith("-"):
                    return None
                value, k = args[k], k + 1
            got[name] = value
        elif eq:
            return None
        else:
            got[name] = True
    words: list[str] = got["words"]
    if "--json" not in got or len(words) < 2 or not os.path.isdir(words[0]):
        return None
    if holds_no_log(words[0]):
        return None  # not a root of sessions: `cli.main` refuses it (ROOT_INVALID)
    return got


#: Suffixes of a log's file name, and the prefix of a fork's temporary (which is not
#: one): `core.root.is_log_name`'s rule, here without loading the readers.
_LOG_SUFFIXES = (".jsonl", ".jsonl.zstd")
_TEMP_PREFIX = ".turnline-tmp-"


def holds_no_log(folder: str, budget: int = 5000) -> bool:
    """True if no file under `folder` has a log's name, looking at `budget` entries at
    most (a check must not walk a whole disk: `turnline show /`); False when one is
    found, when the budget runs out first, or at a symlinked folder (which discovery
    may follow: it cannot be told cheaply)."""
    pending = [folder]
    while pending:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    budget -= 1
                    if budget < 0:
                        return False
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                    elif (entry.is_symlink() and entry.is_dir()) or (
                        entry.name.endswith(_LOG_SUFFIXES)
                        and not entry.name.startswith(_TEMP_PREFIX)
                    ):
                        return False
        except OSError:
            continue  # an unreadable folder holds nothing we could show
    return True


def _search(args: list[str]) -> int | None:
    """Answer `search` here; None when `cli.main` must (see the module doc)."""
    got = _parse(args)
    if got is None:
        return None
    import gc

    gc.disable()  # many small objects and no cycles (as `cli.main` does for search)
    try:
        return _answer(got)
    except BrokenPipeError:
        _silence_stdout()
        return 1
    finally:
        gc.enable()


def _answer(got: dict[str, Any]) -> int | None:
    """Print the `--json` document and return 0, or return None for `cli.main` to
    answer.

    A catalog found current since its last write has a fresh state (`core.fresh`):
    one file, of which only the header is read here, with nothing but the standard
    library's `os`. A forked child then answers the query whole, on a connection of
    its own, and leaves the document in a memory file (`search.snapshot_search`: only
    from the snapshot whose `fresh` row names the state's generation, so from the
    catalog that state describes), while this process stats the state's entries;
    whoever is free takes the next chunk of them. Only when every entry still stats
    the same is that document printed (copied by the kernel); otherwise (or with no
    fresh state, or when the child had no answer) the catalog is brought up to date
    first, as always.

    (Splitting the query itself between the two processes was tried: on a virtual
    machine whose page faults are dear, two processes loading the same modules and
    filling their heaps at once took longer than one.)"""
    words: list[str] = got["words"]
    root = os.path.realpath(words[0])  # as `SessionRoot` resolves it
    query = " ".join(words[1:])
    from turnline.core.fresh import FreshCheck, catalog_file, fresh_file, read_fresh

    catalog = catalog_file(root)
    state = read_fresh(fresh_file(catalog), whole=False)
    if state is not None:
        gen = state.gen
        with FreshCheck(state, lambda write: _document(catalog, gen, query, got, write)) as check:
            pieces: list[bytes] = []
            made = check.handoff() is not None
            if not made and not check.split:  # no child could take it
                made = _document(catalog, gen, query, got, pieces.append)
            if check.finish(reap=False) and made:  # this process exits next
                sys.stdout.flush()
                out = _stdout_fd()
                if check.split and out is not None:
                    check.send(out)
                    return 0
                if check.split:
                    pieces = [check.output()]
                for piece in pieces:
                    sys.stdout.buffer.write(piece)
                sys.stdout.buffer.flush()
                return 0
    import sqlite3

    from turnline.core.search import QueryError, parse_fields

    try:
        result = _refreshed(root, query, _options(got, parse_fields(got.get("--in"))))
    except (QueryError, OSError, sqlite3.Error):
        return None  # `cli.main` says what is wrong, its own way
    if result is None:
        return None
    sys.stdout.buffer.write(result.to_json())
    sys.stdout.buffer.flush()
    return 0


def _stdout_fd() -> int | None:
    """Standard output's file descriptor, or None if it has none (a replaced stream)."""
    try:
        return sys.stdout.fileno()
    except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is both
        return None


def _options(got: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """`search`'s keyword arguments for these command-line arguments."""
    return {
        "fields": fields,
        "include_inherited": bool(got.get("--include-inherited")),
        "session": got.get("--session"),
        "limit": got["limit"],
    }


def _document(
    catalog: str, gen: bytes, query: str, got: dict[str, Any], write: Callable[[bytes], object]
) -> bool:
    """The forked child's task: the whole answer from the catalog the fresh state of
    generation `gen` describes (`snapshot_search`), its `--json` document written to
    `write`; False if that catalog is not the one the state describes, or for
    anything that goes wrong (then this process takes the ordinary way, and
    `cli.main` says what is wrong)."""
    import sqlite3

    from turnline.core.search import QueryError, parse_fields, snapshot_search

    try:
        options = _options(got, parse_fields(got.get("--in")))
        result = snapshot_search(catalog, gen, query, **options)
    except (QueryError, OSError, sqlite3.Error):
        return False
    if result is None:
        return False
    result.write_json(write)
    return True


def _refreshed(root: str, query: str, options: dict[str, Any]) -> SearchResult | None:
    """The search on the catalog brought up to date first (None on a catalog error:
    `cli.main` says what is wrong)."""
    from turnline.core.catalog import Catalog, CatalogError
    from turnline.core.search import search

    try:
        catalog = Catalog(root)
        try:
            result = search(catalog, query, **options)
            # Logs the catalog cannot hold: `cli.main` answers, and says which.
            return None if catalog.unstorable else result
        finally:
            catalog.close()
    except CatalogError:
        return None


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
