"""The catalog: incremental, crash-safe, shared, and a summary cache."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
import pytest
from turnline.core.catalog import SCHEMA, Catalog, catalog_path
from turnline.core.model import SessionHeader
from turnline.core.query import fts_trigrams
from turnline.core.search import search
from turnline.core.summary import summarize

from .search_logs import CWD, make_lineage, turn, write


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache


@pytest.fixture
def root(tmp_path: Path) -> Path:
    make_lineage(tmp_path / "root")
    return tmp_path / "root"


def found(root: Path, query: str, **kw: object) -> list[tuple[str, int]]:
    catalog = Catalog(root)
    try:
        return [(h.session, h.turn) for h in search(catalog, query, **kw).hits]  # type: ignore[arg-type]
    finally:
        catalog.close()


def doc_count(catalog: Catalog, path: Path) -> int:
    rows = list(
        catalog.query(
            "SELECT count(*) FROM docs JOIN logs ON logs.id = docs.log WHERE logs.path = ?",
            (str(path),),
        )
    )
    return int(rows[0][0])


def test_catalog_lives_under_xdg_cache(root: Path, _cache: Path) -> None:
    Catalog(root).close()
    assert catalog_path(root).parent == _cache / "turnline"
    assert catalog_path(root).exists()
    assert catalog_path(root) != catalog_path(root / "p")


def test_seed_is_not_indexed_again(root: Path) -> None:
    logs = make_lineage(root)
    catalog = Catalog(root)
    catalog.refresh()
    # the child holds 12 inherited events, the end-seed marker and one own turn
    texts = {
        r[0]
        for r in catalog.query(
            "SELECT text FROM docs JOIN logs ON logs.id=docs.log WHERE logs.path=?",
            (str(logs["C"]),),
        )
    }
    assert texts == {"a childword here", "fine"}
    catalog.close()


def test_appended_turn_is_found_and_only_it_is_indexed(root: Path) -> None:
    p = root / "p" / "session.jsonl"
    catalog = Catalog(root)
    catalog.refresh()
    before = doc_count(catalog, p)
    with p.open("ab") as fh:
        for r in turn(17, 4, "an appended quokka", "yes"):
            fh.write(orjson.dumps(r) + b"\n")
    resume = next(catalog.query("SELECT resume_seq FROM logs WHERE path=?", (str(p),)))[0]
    assert resume == 17  # the next append starts after the last turn/end
    assert [(h.session, h.turn) for h in search(catalog, "quokka").hits] == [("P", 4)]
    assert doc_count(catalog, p) == before + 2
    # the earlier turns are still there exactly once
    assert [(h.session, h.turn) for h in search(catalog, "zebracorn").hits] == [("P", 1)]
    catalog.close()


def test_a_new_file_given_the_old_inode_number_is_read_from_scratch(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log written again at its path as a new file that got the old inode number back
    (ext4 hands a freed number out again at once), longer than before: its inode's
    generation differs, so its first turns are read again, not kept from the old file
    (stood in here: the log rewritten in place, its generation changed)."""
    from turnline.core import inodes

    p = root / "p" / "session.jsonl"
    catalog = Catalog(root)
    catalog.refresh()
    assert [(h.session, h.turn) for h in search(catalog, "zebracorn").hits] == [("P", 1)]
    data = p.read_bytes()
    assert data.count(b"zebracorn") == 1
    with p.open("r+b") as fh:  # the same inode, its first turn's text changed
        fh.write(data.replace(b"zebracorn", b"axolotlzz"))
        for r in turn(17, 4, "an appended quokka", "yes"):
            fh.write(orjson.dumps(r) + b"\n")
    real = inodes.generation_of
    monkeypatch.setattr(inodes, "generation_of", lambda path: (real(path) or 0) + 1)
    catalog.refresh()
    assert [(h.session, h.turn) for h in search(catalog, "zebracorn").hits] == []
    assert [(h.session, h.turn) for h in search(catalog, "axolotlzz").hits] == [("P", 1)]
    assert [(h.session, h.turn) for h in search(catalog, "quokka").hits] == [("P", 4)]
    catalog.close()


def test_a_log_rewritten_in_place_is_read_again(root: Path) -> None:
    """The same inode, changed without a new generation: at the same size (a word
    replaced), or longer but with another log's lines where the last indexed turn
    ended (`cp other.jsonl session.jsonl`). Neither is an append: the catalog reads
    the log again instead of keeping its first turns."""
    p = root / "p" / "session.jsonl"
    catalog = Catalog(root)
    catalog.refresh()
    data = p.read_bytes()
    with p.open("r+b") as fh:  # the same size
        fh.write(data.replace(b"zebracorn", b"axolotlzz"))
    os.utime(p, ns=(time.time_ns(), time.time_ns() + 10**9))
    catalog.refresh()
    assert [(h.session, h.turn) for h in search(catalog, "zebracorn").hits] == []
    assert [(h.session, h.turn) for h in search(catalog, "axolotlzz").hits] == [("P", 1)]
    other = b"".join(
        orjson.dumps(r) + b"\n"
        for r in [
            {"type": "session", "version": 0, "id": "P", "createdAt": 1, "cwd": CWD,
             "delegationDepth": 0},
            *turn(0, 1, "a longer tapir " + "x" * len(data), "yes"),
        ]
    )  # fmt: skip
    with p.open("r+b") as fh:  # longer, in place
        fh.write(other)
    catalog.refresh()
    assert [(h.session, h.turn) for h in search(catalog, "axolotlzz").hits] == []
    assert [(h.session, h.turn) for h in search(catalog, "tapir").hits] == [("P", 1)]
    catalog.close()


def test_a_queued_message_after_the_last_turn_is_found(root: Path) -> None:
    """A user message queued after the last `turn/end` (`agent/inbox/spliced`, no turn
    of its own yet) is found as a whole read finds it: in the last turn."""
    p = root / "p" / "session.jsonl"
    catalog = Catalog(root)
    catalog.refresh()
    seq = max(orjson.loads(line)["seq"] for line in p.read_bytes().splitlines()[1:])
    queued = {
        "type": "agent/inbox/spliced",
        "seq": seq + 1,
        "time": 9,
        "data": {
            "target": "next-turn",
            "inserted": [{"role": "user", "content": [{"type": "text", "text": "then a numbat"}]}],
        },
    }
    with p.open("ab") as fh:
        fh.write(orjson.dumps(queued) + b"\n")
    warm = [(h.session, h.turn) for h in search(catalog, "numbat").hits]
    catalog.close()
    assert warm and warm == found_fresh(root, "numbat")


def found_fresh(root: Path, query: str) -> list[tuple[str, int]]:
    catalog = Catalog(root, ":memory:")
    try:
        return [(h.session, h.turn) for h in search(catalog, query).hits]
    finally:
        catalog.close()


def test_new_log_is_found(root: Path) -> None:
    assert found(root, "wombat") == []
    write(
        root / "n" / "session.jsonl",
        SessionHeader("N", 9, cwd=CWD, delegation_depth=0),
        turn(0, 1, "a wombat", "ok"),
    )
    assert found(root, "wombat") == [("N", 1)]


def test_replaced_log_leaves_no_stale_hit(root: Path) -> None:
    assert found(root, "childword") == [("C", 3)]
    c = root / "c" / "session.jsonl"
    tmp = root / "c" / "new.tmp"
    write(tmp, SessionHeader("C", 2, cwd=CWD, delegation_depth=0), turn(0, 1, "otter", "ok"))
    os.replace(tmp, c)
    assert found(root, "childword") == []
    assert found(root, "otter") == [("C", 1)]
    # no longer a fork: the parent's turn is inherited by G only through C... which is gone
    catalog = Catalog(root)
    hits = search(catalog, "zebracorn").hits
    assert [(h.session, h.inherited_by) for h in hits] == [("P", 0)]
    catalog.close()


def test_shrunk_log_is_reindexed(root: Path) -> None:
    p = root / "n" / "session.jsonl"
    records = turn(0, 1, "first kiwi", "a") + turn(6, 2, "second mango", "b")
    write(p, SessionHeader("N", 9, cwd=CWD, delegation_depth=0), records)
    assert found(root, "mango") == [("N", 2)]
    write(p, SessionHeader("N", 9, cwd=CWD, delegation_depth=0), records[:6])
    assert found(root, "mango") == []
    assert found(root, "kiwi") == [("N", 1)]


def test_deleted_log_leaves_no_stale_hit(root: Path) -> None:
    assert found(root, "childword") == [("C", 3)]
    (root / "c" / "session.jsonl").unlink()
    assert found(root, "childword") == []


@pytest.mark.parametrize("damage", ["delete", "garbage", "truncate", "old-schema"])
def test_damaged_catalog_gives_the_same_answers(root: Path, damage: str) -> None:
    queries = ["zebracorn", "分叉", "childword"]
    first = [found(root, q) for q in queries]
    path = catalog_path(root)
    if damage == "delete":
        path.unlink()
    elif damage == "garbage":
        for suffix in ("-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        path.write_bytes(b"this is not a database" * 100)
    elif damage == "truncate":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 3])
    else:
        import sqlite3

        db = sqlite3.connect(path)
        db.execute("UPDATE meta SET value=? WHERE key='schema'", (str(SCHEMA - 1),))
        db.commit()
        db.close()
    assert [found(root, q) for q in queries] == first


def test_summary_cache_is_validated(root: Path) -> None:
    p = root / "p" / "session.jsonl"
    catalog = Catalog(root)
    catalog.refresh()
    cached = catalog.summary(p)
    assert cached is not None
    assert cached.to_state() == summarize(p).to_state()
    with p.open("ab") as fh:
        for r in turn(17, 4, "more", "yes"):
            fh.write(orjson.dumps(r) + b"\n")
    again = catalog.summary(p)
    assert again is not None
    assert again.turns == cached.turns + 1
    assert again.to_state() == summarize(p).to_state()
    assert {s.path for s in catalog.summaries()} == {
        root / "p" / "session.jsonl",
        root / "c" / "session.jsonl",
        root / "g" / "session.jsonl",
    }
    (root / "g" / "session.jsonl").unlink()
    assert root / "g" / "session.jsonl" not in {s.path for s in catalog.summaries()}
    catalog.close()


def test_two_processes_index_at_once(root: Path, tmp_path: Path) -> None:
    for i in range(40):
        write(
            root / f"x{i}" / "session.jsonl",
            SessionHeader(f"X{i}", 10 + i, cwd=CWD, delegation_depth=0),
            turn(0, 1, f"parallel platypus {i}", "ok"),
        )
    code = textwrap.dedent(
        f"""
        from pathlib import Path
        from turnline.core.catalog import Catalog
        from turnline.core.search import search
        c = Catalog(Path({str(root)!r}))
        print(search(c, "platypus").total)
        """
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ},
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    for proc, (out, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err
        assert out.strip() == "40"
        assert "Traceback" not in err
    assert len(found(root, "platypus")) == 40


def test_fixtures_index_and_turns_match_the_timeline(fixtures_root: Path) -> None:
    from turnline.core.root import SessionRoot

    catalog = Catalog(fixtures_root, ":memory:")
    assert catalog.refresh() > 100
    sroot = SessionRoot(fixtures_root)
    checked = 0
    for summary in sroot.scan()[:40]:
        if summary.broken:
            continue
        view = sroot.load(summary)
        rows = catalog.query(
            "SELECT seq, turn FROM docs JOIN logs ON logs.id=docs.log WHERE logs.path=?",
            (str(summary.path),),
        )
        for seq, number in rows:
            t = view.timeline.turn_at(seq)
            assert t is not None and t.number == number, (summary.path, seq)
            checked += 1
    assert checked > 100


# -- freshness without a walk, the bulk path, the summary cache ------------------------


def _age(root: Path, seconds: float = 3600) -> None:
    """Set every folder's mtime back: the catalog trusts only folders older than a
    second (a newer one could still change within the same clock tick)."""
    past = os.stat(root).st_mtime - seconds
    for folder, _dirs, _files in os.walk(root):
        os.utime(folder, (past, past))


def test_a_current_catalog_is_checked_without_a_walk(root: Path) -> None:
    _age(root)
    catalog = Catalog(root)
    catalog.refresh()
    jobs, gone, walked = catalog.changes()
    assert (jobs, gone, walked) == ([], [], None)  # no walk: the folders did not change
    p = root / "p" / "session.jsonl"
    with p.open("ab") as fh:
        for r in turn(17, 4, "an appended numbat", "yes"):
            fh.write(orjson.dumps(r) + b"\n")
    jobs, gone, walked = catalog.changes()
    assert [j[0] for j in jobs] == [str(p)] and gone == [] and walked is None
    assert [(h.session, h.turn) for h in search(catalog, "numbat").hits] == [("P", 4)]
    catalog.close()


@pytest.mark.parametrize("where", ["new folder", "existing folder", "nested folder"])
def test_a_new_log_is_found_wherever_it_appears(root: Path, where: str) -> None:
    _age(root)
    catalog = Catalog(root)
    catalog.refresh()
    _age(root)  # the walk above recorded them; still old
    folder = {
        "new folder": root / "n",
        "existing folder": root / "p",  # a second log beside p's own
        "nested folder": root / "p" / "sub",
    }[where]
    write(
        folder / "extra.jsonl",
        SessionHeader("N", 9, cwd=CWD, delegation_depth=0),
        turn(0, 1, "a planted wallaby", "ok"),
    )
    assert [(h.session, h.turn) for h in search(catalog, "wallaby").hits] == [("N", 1)]
    (folder / "extra.jsonl").unlink()
    assert search(catalog, "wallaby").hits == []
    catalog.close()


def test_a_log_whose_header_decides_is_rechecked(root: Path) -> None:
    """A `*.jsonl` not named like a session counts only if its first record is a
    session header: rewriting it in place (no folder change) is still seen."""
    _age(root)
    other = root / "p" / "notes.jsonl"
    other.write_bytes(b'{"type":"note"}\n')
    _age(root)
    catalog = Catalog(root)
    catalog.refresh()
    assert search(catalog, "kookaburra").hits == []
    write(
        other,
        SessionHeader("K", 9, cwd=CWD, delegation_depth=0),
        turn(0, 1, "a kookaburra laughs", "ok"),
    )
    _age(root)
    assert [(h.session, h.turn) for h in search(catalog, "kookaburra").hits] == [("K", 1)]
    catalog.close()


def test_a_recent_folder_is_walked_again(root: Path) -> None:
    catalog = Catalog(root)
    catalog.refresh()  # the folders were just made: their mtimes are not trusted yet
    assert catalog.changes()[2] is not None
    catalog.close()


def _answers(catalog: Catalog, queries: list[str]) -> list[object]:
    out: list[object] = []
    for q in queries:
        for fields in (("user", "assistant"), ("reasoning", "tool")):
            for inherited in (False, True):
                result = search(catalog, q, fields=fields, include_inherited=inherited)
                out.append([(h.to_json_dict(), h.marks, h.title) for h in result.hits])
    return out


FIXTURE_QUERIES = ["fork", "the", "分叉", "error", "te", '"to the"', "sess*", "import os"]


def test_fixtures_same_answers_with_and_without_the_cache(
    fixtures_root: Path, tmp_path: Path
) -> None:
    cold = Catalog(fixtures_root)  # the shared catalog, built here
    first = _answers(cold, FIXTURE_QUERIES)
    assert sum(len(a) for a in first if isinstance(a, list)) > 50  # the queries do hit
    cold.close()
    warm = Catalog(fixtures_root)  # a new process would open it so
    assert warm.changes() == ([], [], None)  # current: no walk, nothing to index
    assert _answers(warm, FIXTURE_QUERIES) == first
    warm.close()
    memory = Catalog(fixtures_root, ":memory:")  # --no-cache
    assert _answers(memory, FIXTURE_QUERIES) == first
    memory.close()


def test_generated_root_same_answers_and_summaries(tmp_path: Path) -> None:
    from turnline.core.root import SessionRoot, _cached_states

    from benchmarks.generate import write_wide_root

    root = write_wide_root(tmp_path / "wide", sessions=300).path
    _age(root)
    queries = ["assert", "session", "fork error", '"the branch"', "upd*"]
    built = Catalog(root)
    first = _answers(built, queries)
    assert sum(len(a) for a in first if isinstance(a, list)) > 100
    built.close()
    assert _answers(Catalog(root, ":memory:"), queries) == first
    again = Catalog(root)
    assert _answers(again, queries) == first
    again.close()

    def scanned() -> list[tuple[str, object]]:
        return [(str(s.path), s.to_state()) for s in SessionRoot(root).scan()]

    cached = _cached_states(str(root))
    assert cached is not None
    assert [(p, state) for p, _sid, state in cached[0]] == scanned()
    # Changes the catalog has not seen: an append, a new log, a removed log.
    logs = sorted(root.rglob("session.jsonl"))
    with logs[0].open("ab") as fh:
        for r in turn(900, 90, "a late cassowary", "yes"):
            fh.write(orjson.dumps(r) + b"\n")
    logs[1].unlink()
    write(
        logs[2].parent.parent / "new-session" / "session.jsonl",
        SessionHeader("NEW", 9, cwd=CWD, delegation_depth=0),
        turn(0, 1, "a new cassowary", "ok"),
    )
    cached = _cached_states(str(root))
    assert cached is not None
    assert [(p, state) for p, _sid, state in cached[0]] == scanned()


def test_fixtures_summary_cache_is_the_scan(fixtures_root: Path) -> None:
    from turnline.core.root import BackgroundScan, SessionRoot, _cached_states

    Catalog(fixtures_root).refresh()
    plain = SessionRoot(fixtures_root)
    expected = [(s.path, s.to_state()) for s in plain.scan()]
    cached = _cached_states(str(fixtures_root))
    assert cached is not None
    assert [(Path(p), state) for p, _sid, state in cached[0]] == expected
    root = SessionRoot(fixtures_root)
    scan = BackgroundScan(root)  # no pool here: taken in this thread
    assert [(s.path, s.to_state()) for s in scan.result()] == expected
    assert root.scan_problems == plain.scan_problems


def test_no_catalog_is_built_by_the_tree(root: Path) -> None:
    from turnline.core.root import BackgroundScan, SessionRoot

    summaries = BackgroundScan(SessionRoot(root)).result()
    assert len(summaries) == 3
    assert not catalog_path(root).exists()


def test_bulk_index_in_the_pool_equals_the_serial_one(tmp_path: Path) -> None:
    """`refresh` in a fresh process reads the logs in the process pool; the rows are
    the ones a serial, in-memory catalog makes."""
    from benchmarks.generate import write_wide_root

    root = write_wide_root(tmp_path / "wide", sessions=400).path
    code = textwrap.dedent(
        f"""
        from turnline.core import parallel
        from turnline.core.catalog import Catalog
        c = Catalog({str(root)!r})
        c.refresh()
        print(parallel.process_pool() is not None)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True"]  # the pool did read them
    shared = Catalog(root)
    serial = Catalog(root, ":memory:")
    serial.refresh()

    def rows(c: Catalog) -> list[tuple[object, ...]]:
        return sorted(
            c.query(
                "SELECT logs.path, turn, seq, field, text FROM docs JOIN logs ON logs.id=docs.log"
            )
        )

    def logs(c: Catalog) -> list[tuple[object, ...]]:
        return sorted(c.query("SELECT path, layout, summary, listed, resume_seq FROM logs"))

    assert rows(shared) == rows(serial) and len(rows(serial)) > 1000
    assert logs(shared) == logs(serial)
    found = "SELECT count(*) FROM fts WHERE fts MATCH ?"
    wanted = (fts_trigrams("assert"),)
    assert list(shared.query(found, wanted)) == list(serial.query(found, wanted))
    shared.close()
    serial.close()


def test_lean_read_indexes_exactly_as_the_log_reader(fixtures_root: Path, tmp_path: Path) -> None:
    """Indexing reads a plain raw log without expanding its chunk rows; every fixture
    and every log of a generated root gives the same documents, summary and resume
    point as through `LogReader`."""
    from turnline.core.catalog import _extract, _lean_read
    from turnline.core.root import discover

    from benchmarks.generate import write_wide_root

    wide = write_wide_root(tmp_path / "wide", sessions=150).path
    lean = 0
    checked = 0
    for where in (fixtures_root, wide):
        for path, sid in discover(where):
            job = (str(path), sid, None)
            assert _extract(job) == _extract(job, lean_read=False), path
            lean += _lean_read(str(path)) is not None
            checked += 1
    assert checked > 290
    assert lean > 200  # the lean path is the common one
    assert lean < checked  # and some fixtures are odd enough for LogReader


def test_parent_links_follow_index_alone_and_an_interrupted_build(root: Path) -> None:
    """Lineage credit survives logs catalogued without a `refresh` (the app's watcher
    calls `index`) and a build killed before it linked the logs."""
    catalog = Catalog(root)
    jobs, _gone, _walked = catalog.changes()
    catalog.index_many(jobs)  # as if killed here: nothing linked yet
    catalog.close()
    assert [(h.session, h.inherited_by) for h in search(Catalog(root), "zebracorn").hits] == [
        ("P", 2)
    ]
    fresh = Catalog(root, ":memory:")
    for log in ("p", "c", "g"):
        fresh.index(root / log / "session.jsonl")
    assert [(h.session, h.inherited_by) for h in search(fresh, "zebracorn").hits] == [("P", 2)]
    fresh.close()


def test_many_write_batches_store_every_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Indexing in many small read and write batches stores every log once, with
    progress counting up to the total."""
    from turnline.core import catalog as module

    from benchmarks.generate import write_wide_root

    root = write_wide_root(tmp_path / "wide", sessions=60).path
    whole = Catalog(root, ":memory:")
    whole.refresh()
    monkeypatch.setattr(module, "BATCH", 2)
    monkeypatch.setattr(module, "WRITE_BATCH", 7)
    small = Catalog(root, ":memory:")
    seen: list[tuple[int, int]] = []
    small.refresh(lambda done, total: seen.append((done, total)))
    query = "SELECT logs.path, turn, seq, field, text FROM docs JOIN logs ON logs.id=docs.log"
    assert sorted(small.query(query)) == sorted(whole.query(query))
    assert list(small.query("SELECT count(*) FROM logs")) == [(60,)]
    assert seen[0] == (0, 60) and seen[-1] == (60, 60)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_tree_scan_from_the_cache_in_the_pool(fixtures_root: Path) -> None:
    """As `turnline ROOT` starts it: the pool takes the cached listing, and the app's
    summaries are the plain scan's, in order."""
    Catalog(fixtures_root).refresh()
    code = textwrap.dedent(
        f"""
        from pathlib import Path
        from turnline.core.parallel import start_pool
        from turnline.core.root import SessionRoot
        assert start_pool() is not None
        root = SessionRoot(Path({str(fixtures_root)!r}))
        scan = root.scan_in_background()
        used = scan.cached is not None
        got = [(s.path, s.to_state()) for s in scan.result()]
        plain = SessionRoot(Path({str(fixtures_root)!r}))
        want = [(s.path, s.to_state()) for s in plain.scan()]
        print(used, got == want, root.scan_problems == plain.scan_problems, len(got))
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[:3] == ["True", "True", "True"], proc.stdout
