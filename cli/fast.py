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
    from typing import Any, NoReturn

    from turnline.core.search import SearchResult

#: Options of `turnline search` this door takes, and whether each takes a value.
_OPTIONS = {"--json": False, "--include-inherited": False, "--in": True, "--session": True}


def console() -> NoReturn:
    """The `turnline` console script."""
    argv = sys.argv[1:]
    if argv[:1] == ["search"]:
        status = _search(argv[1:])
        if status is not None:
            _leave(status)
    from .main import console as full

    full()


def _leave(status: int) -> NoReturn:
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        status = status or 1
    parallel = sys.modules.get("turnline.core.parallel")
    if parallel is not None:
        parallel.stop_pool()  # no pool worker outlives the command (`_exit` runs no atexit)
    os._exit(status)


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
    return got


def _search(args: list[str]) -> int | None:
    """Answer `search` here; None when `cli.main` must (see the module doc)."""
    got = _parse(args)
    if got is None:
        return None
    import gc

    gc.disable()  # many small objects and no cycles (as `cli.main` does for search)
    try:
        data = _answer(got)
        if data is None:
            return None
        try:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        except BrokenPipeError:
            _silence_stdout()
            return 1
        return 0
    finally:
        gc.enable()


def _answer(got: dict[str, Any]) -> bytes | None:
    """The `--json` document, or None for `cli.main` to answer.

    A catalog found current since its last write holds a fresh state (`core.fresh`).
    Its stats start in a forked child before the query's own modules are even
    imported. The child first makes the query's catalog reads, on a connection of its
    own (`query.snapshot_reads`), and hands them over; this process, meanwhile, loads
    the modules that turn them into hits (and takes chunks of the stats while it
    waits). Both snapshots hold the same fresh state (its generation id), so they are
    one catalog. Only when every entry still stats the same is that answer given;
    otherwise (or with no fresh state) the catalog is brought up to date first, as
    always. (`--include-inherited` reads more than those rows: its query runs here, on
    the snapshot the state was read in.)"""
    words: list[str] = got["words"]
    root = os.path.realpath(words[0])  # as `SessionRoot` resolves it
    query = " ".join(words[1:])
    from turnline.core.fresh import FreshCheck, catalog_file, open_fresh

    opened = open_fresh(root)
    check = None
    db = None
    if opened is not None:
        db, state, gen = opened
        fields = got.get("--in")
        if not got.get("--include-inherited") and hasattr(os, "memfd_create"):
            db.close()  # no connection of ours may cross the fork (SQLite forbids it)
            db = None
            check = FreshCheck(state, lambda: _reads(catalog_file(root), gen, query, fields))
        else:
            check = FreshCheck(state)
    import sqlite3

    import orjson
    from turnline.core.search import QueryError, check_options, parse_fields, parse_query, search_db

    options: dict[str, Any] = {
        "fields": (),
        "include_inherited": bool(got.get("--include-inherited")),
        "session": got.get("--session"),
        "limit": got["limit"],
    }

    def document(result: SearchResult) -> bytes:
        return orjson.dumps(
            result.to_json_dict(), option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE
        )

    try:
        options["fields"] = parse_fields(got.get("--in"))
        if check is not None:
            answer = None
            try:
                terms = parse_query(query)
                check_options(options["fields"], options["limit"])
                if db is not None:
                    answer = document(search_db(db, terms, **options))
                    db.execute("COMMIT")
                else:
                    from turnline.core.query import snapshot_of

                    data = check.handoff()
                    if data is not None:
                        read = snapshot_of(data, terms)
                        answer = document(search_db(None, terms, read=read, **options))
            finally:
                current = check.finish()  # the document is made while the child stats
                if db is not None:
                    db.close()
            if current and answer is not None:
                return answer
        result = _refreshed(root, query, options)
        return None if result is None else document(result)
    except (QueryError, orjson.JSONEncodeError, OSError, sqlite3.Error):
        return None  # `cli.main` says what is wrong, its own way


def _reads(catalog: str, gen: bytes, query: str, fields: str | None) -> bytes | None:
    """The forked child's first task: the query's catalog reads (`snapshot_reads`)."""
    from turnline.core.query import parse_fields, snapshot_reads

    return snapshot_reads(catalog, gen, query, parse_fields(fields))


def _refreshed(root: str, query: str, options: dict[str, Any]) -> SearchResult | None:
    """The search on the catalog brought up to date first (None on a catalog error:
    `cli.main` says what is wrong)."""
    from turnline.core.catalog import Catalog, CatalogError
    from turnline.core.search import search

    try:
        catalog = Catalog(root)
        try:
            return search(catalog, query, **options)
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
