"""The catalog's fresh state: stored once the catalog is found current, dropped by
every write, and broken by every change on disk the catalog would notice."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from turnline.core.catalog import Catalog
from turnline.core.fresh import (
    CHECK_CHUNK,
    FreshCheck,
    FreshState,
    catalog_file,
    fresh_file,
    read_fresh,
    state_bytes,
)
from turnline.core.model import SessionHeader
from turnline.core.search import search

from .search_logs import CWD, make_lineage, turn, write


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    make_lineage(tmp_path / "root")
    _age(tmp_path / "root")
    return tmp_path / "root"


def _age(root: Path) -> None:
    """Folders (and logs) an hour old: a walk trusts a folder older than a second."""
    past = os.stat(root).st_mtime - 3600
    for folder, _dirs, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(folder, name), (past, past))
        os.utime(folder, (past, past))


def _hits(catalog: Catalog, query: str) -> list[tuple[str, int]]:
    return sorted((h.session, h.turn) for h in search(catalog, query).hits)


def test_a_refresh_stores_it_and_every_write_drops_it(root: Path) -> None:
    catalog = Catalog(root)
    catalog.refresh()
    state = catalog.fresh_state()
    assert state is not None and state.check()
    assert os.fsencode(str(root)) in state.paths()  # the root folder itself is watched
    logs = {r[0] for r in catalog.query("SELECT path FROM logs")}
    assert logs <= {os.fsdecode(p) for p in state.paths()}
    log = root / "p" / "session.jsonl"
    catalog.index(log)
    assert catalog.fresh_state() is None
    catalog.refresh()
    assert catalog.fresh_state() is not None
    catalog.drop(log)
    assert catalog.fresh_state() is None
    catalog.refresh()  # finds the log again
    assert catalog.quick_current()
    assert _hits(catalog, "zebracorn") == [("P", 1)]
    catalog.close()


def _append_turn(root: Path) -> str:
    log = root / "c" / "session.jsonl"
    with log.open("ab") as fh:
        import orjson

        lines = [orjson.dumps(r) + b"\n" for r in turn(20, 4, "an appendedword", "sure")]
        fh.write(b"".join(lines))
    return "appendedword"


def _one_turn_log(path: Path, session: str, word: str) -> str:
    """A new log of one turn whose user text holds `word`; the word."""
    header = SessionHeader(session, 9, cwd=CWD, delegation_depth=0)
    write(path, header, turn(0, 1, f"a {word}", "ok"))
    return word


def _new_session(root: Path) -> str:
    return _one_turn_log(root / "n" / "session.jsonl", "N", "newsessionword")


def _second_log_in_a_folder(root: Path) -> str:
    """A log beside another one in the same folder: only the folder's mtime tells."""
    return _one_turn_log(root / "p" / "other.jsonl", "Q", "besideword")


def _replace_same_size(root: Path) -> str:
    """The same bytes with one word changed, renamed over the log with its mtime."""
    log = root / "p" / "session.jsonl"
    data = log.read_bytes().replace(b"zebracorn", b"quaggaxyz")
    st = log.stat()
    tmp = log.with_name("session.tmp")
    tmp.write_bytes(data)
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp, log)
    return "quaggaxyz"


CHANGES: dict[str, Callable[[Path], str]] = {
    "appended turn": _append_turn,
    "new session": _new_session,
    "second log in a folder": _second_log_in_a_folder,
    "replaced, same size and mtime": _replace_same_size,
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_every_change_breaks_it_and_the_answer_follows(root: Path, change: str) -> None:
    catalog = Catalog(root)
    catalog.refresh()
    assert catalog.quick_current()
    word = CHANGES[change](root)
    assert not catalog.quick_current()
    assert _hits(catalog, word) != []  # refreshed first: the change is found
    catalog.close()


def test_a_removed_log_breaks_it(root: Path) -> None:
    catalog = Catalog(root)
    catalog.refresh()
    (root / "c" / "session.jsonl").unlink()
    assert not catalog.quick_current()
    assert _hits(catalog, "childword") == []
    catalog.close()


@pytest.mark.parametrize("damage", ["junk", "cut short", "gone", "another generation"])
def test_a_state_it_cannot_read_is_replaced(root: Path, damage: str) -> None:
    catalog = Catalog(root)
    catalog.refresh()
    state_path = fresh_file(catalog.path)
    data = Path(state_path).read_bytes()
    if damage == "junk":
        Path(state_path).write_bytes(b"not a state")
    elif damage == "cut short":
        Path(state_path).write_bytes(data[:-10])
    elif damage == "gone":
        os.unlink(state_path)
    else:
        catalog.db.execute("UPDATE fresh SET gen=?", (b"12345678",))
    assert catalog.fresh_state() is None
    assert _hits(catalog, "zebracorn") == [("P", 1)]  # the ordinary check answers
    assert catalog.quick_current()  # and the state is whole again
    catalog.close()


def test_the_state_file_names_the_catalogs_generation(root: Path) -> None:
    """The file is read without the catalog; its generation is the `fresh` row's, and
    a write removes the row, so the file names no catalog any more."""
    from turnline.core.fresh import same_generation

    catalog = Catalog(root)
    catalog.refresh()
    path = fresh_file(catalog_file(os.path.realpath(root)))
    assert path == fresh_file(catalog.path)
    state = read_fresh(path, whole=False)
    whole = read_fresh(path)
    assert state is not None and whole is not None
    assert state.check() and state.gen == whole.gen and len(state.gen) == 8
    assert state.paths() == whole.paths()
    assert same_generation(catalog.db, state.gen)
    catalog.index(root / "p" / "session.jsonl")  # a write: the row is gone
    assert not same_generation(catalog.db, state.gen)
    assert catalog.fresh_state() is None
    catalog.refresh()
    again = catalog.fresh_state()
    assert again is not None and again.gen != state.gen  # a new generation
    catalog.close()


def test_no_catalog_no_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert read_fresh(fresh_file(catalog_file(str(tmp_path)))) is None
    assert not (tmp_path / "cache").exists()


def _files(tmp_path: Path, n: int) -> FreshState:
    folder = tmp_path / "many"
    folder.mkdir()
    rows = []
    for k in range(n):
        p = folder / f"f{k}"
        p.write_bytes(b"x" * k)
        st = p.stat()
        rows.append((str(p), st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev))
    path = tmp_path / "state"
    path.write_bytes(state_bytes(rows, b"gen-id-8"))
    state = read_fresh(str(path), whole=False)
    assert state is not None and state.gen == b"gen-id-8"
    assert state.paths() == [os.fsencode(r[0]) for r in rows]
    return state


@pytest.mark.parametrize("where", [None, 0, -1, "gone"])
def test_the_forked_check(tmp_path: Path, where: int | str | None) -> None:
    """Whichever process takes the changed entry's chunk, the check fails; the child is
    always reaped."""
    state = _files(tmp_path, CHECK_CHUNK * 6 + 7)
    paths = state.paths()
    if isinstance(where, int):
        with open(paths[where], "ab") as fh:
            fh.write(b"more")
    elif where == "gone":
        os.unlink(paths[len(paths) // 2])
    with FreshCheck(state) as check:
        pid = check.pid
        assert pid > 0  # a child took part
        assert check.finish() is (where is None)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


@pytest.mark.parametrize("outcome", ["output", "none", "raises", "changed"])
def test_the_child_hands_over_its_task(tmp_path: Path, outcome: str) -> None:
    """The child's first task's output reaches the parent whole (more than a pipe
    holds), read or sent; a task with no output, or one that fails, hands over
    nothing, and the stats still count."""
    state = _files(tmp_path, CHECK_CHUNK * 3 + 1)
    data = bytes(range(256)) * 4096  # 1 MiB

    def task(write: Callable[[bytes], object]) -> bool:
        write(data[:1000])
        if outcome == "raises":
            raise RuntimeError("the task failed")
        write(data[1000:])
        return outcome != "none"

    if outcome == "changed":
        with open(state.paths()[-1], "ab") as fh:
            fh.write(b"more")
    with FreshCheck(state, task) as check:
        pid = check.pid
        assert pid > 0 and check.split
        handed = check.handoff()
        assert handed == (len(data) if outcome in ("output", "changed") else None)
        assert check.handoff() is None  # once
        if handed is not None:
            assert check.output() == data
            sent = tmp_path / "sent"
            with sent.open("wb") as out:
                check.send(out.fileno())
            assert sent.read_bytes() == data
        assert check.finish() is (outcome != "changed")
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_finish_alone_reaps_a_child_with_a_task(tmp_path: Path) -> None:
    state = _files(tmp_path, 5)
    with FreshCheck(state, lambda write: bool(write(b"unread"))) as check:
        pid = check.pid
        assert pid > 0 and check.finish()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_a_check_that_does_not_reap_leaves_the_child_to_exit(tmp_path: Path) -> None:
    """`finish(reap=False)` (a process about to exit) has the verdict without waiting
    for the child's exit; the child's output goes nowhere, so a reader of the parent's
    output need not wait for the child either."""
    import subprocess
    import sys

    code = (
        "import os, sys\n"
        "from turnline.core.fresh import FreshCheck, read_fresh\n"
        f"state = read_fresh({str(tmp_path / 'state')!r}, whole=False)\n"
        "check = FreshCheck(state, lambda write: bool(print('from the child')))\n"
        "print(check.pid > 0, check.finish(reap=False), check.pid, flush=True)\n"
    )
    _files(tmp_path, CHECK_CHUNK * 3)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout == "True True 0\n", proc.stderr
    assert proc.stderr == ""


def test_leaving_without_finish_reaps_the_child(tmp_path: Path) -> None:
    state = _files(tmp_path, CHECK_CHUNK * 3)
    with FreshCheck(state, lambda write: True) as check:
        pid = check.pid
        assert pid > 0
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_a_snapshot_search_needs_the_same_generation(root: Path) -> None:
    """The child answers only from a snapshot of the state's generation: the answer a
    search makes on the catalog's own connection."""
    from turnline.core.search import snapshot_search

    catalog = Catalog(root)
    catalog.refresh()
    state = catalog.fresh_state()
    assert state is not None
    for query in ("zebracorn 分叉", "zebra*", "分"):
        got = snapshot_search(catalog.path, state.gen, query)
        assert got is not None
        assert got.to_json() == search(catalog, query).to_json()
    assert snapshot_search(catalog.path, b"other-id", "zebracorn") is None
    catalog.index(root / "p" / "session.jsonl")  # a write: the state is gone
    assert snapshot_search(catalog.path, state.gen, "zebracorn") is None
    catalog.close()


def test_a_small_state_is_checked_here(tmp_path: Path) -> None:
    state = _files(tmp_path, 3)
    with FreshCheck(state) as check:
        assert check.pid == 0 and check.finish()


@pytest.mark.parametrize(
    "data",
    [
        b"junk",
        b"",
        state_bytes([("/a", 1, 2, 3, 4)], b"12345678")[:-1],  # cut short
        state_bytes([("/a", 1, 2, 3, 4)], b"12345678") + b"more",  # longer
        state_bytes([("/a", 1, 2, 3, 4)], b"12345678").replace(b"fresh", b"stale"),
    ],
)
def test_a_state_of_mismatched_parts_is_refused(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "state"
    path.write_bytes(data)
    assert read_fresh(str(path)) is None
    assert read_fresh(str(path), whole=False) is None
    with pytest.raises(ValueError):
        FreshState.of_bytes(data)


def test_the_catalog_file_is_untouched_by_a_check(root: Path) -> None:
    catalog = Catalog(root)
    catalog.refresh()
    catalog.close()
    path = Catalog(root).path
    before = os.stat(path).st_mtime_ns
    state = read_fresh(fresh_file(path), whole=False)
    assert state is not None
    with FreshCheck(state) as check:
        assert check.finish()
    assert os.stat(path).st_mtime_ns == before
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM fresh").fetchone() == (1,)


def test_the_tree_starts_from_the_fresh_state_and_sees_a_change(root: Path) -> None:
    """`listing_states` takes the cached summaries without a stat per row while the
    fresh state holds, and equals the plain scan before and after an append."""
    from turnline.core.root import SessionRoot

    catalog = Catalog(root)
    catalog.refresh()

    def plain() -> list[tuple[Path, object]]:
        return [(s.path, s.to_state()) for s in SessionRoot(root).scan()]

    def cached() -> list[tuple[Path, object]]:
        got = catalog.listing_states()
        assert got is not None
        return [(Path(p), state) for p, _layout, state in got[0]]

    assert catalog._listing_if_current() is not None
    assert cached() == plain()
    _append_turn(root)
    assert catalog._listing_if_current() is None  # the log changed: checked row by row
    assert cached() == plain()
    catalog.close()
