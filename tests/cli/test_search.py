"""`turnline search`: output, JSON shape, exit statuses, the catalog's absence."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from turnline.cli.main import main
from turnline.core.catalog import catalog_path
from turnline.core.model import SessionHeader

from tests.core.search_logs import make_lineage, turn, write


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    make_lineage(tmp_path / "root")
    return tmp_path / "root"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["search", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_shape(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(root), "zebracorn", "--json")
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert doc == {
        "hits": [
            {
                "session": "P",
                "path": str(root / "p" / "session.jsonl"),
                "turn": 1,
                "seq": 1,
                "field": "user",
                "snippet": "tell me about the zebracorn",
                "inheritedBy": 2,
            }
        ],
        "total": 1,
    }


def test_include_inherited_json(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(root), "zebracorn", "--include-inherited", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["total"] == 3
    assert sorted((h["session"], h.get("inheritedFrom")) for h in doc["hits"]) == [
        ("C", "P"),
        ("G", "P"),
        ("P", None),
    ]


def test_text_output_marks_the_match(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(root), "zebracorn")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("tell me about the zebracorn  P  turn 1  user")
    assert "«zebracorn»" in lines[1]


def test_options_between_positionals(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(root), "--in", "tool", "toolonlyword", "--json")
    assert code == 0 and json.loads(out)["total"] == 1
    code, out, _ = run(capsys, str(root), "toolonlyword", "--json")
    assert code == 0 and json.loads(out)["total"] == 0


def test_no_hits_exit_zero(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(root), "nowhere-to-be-found")
    assert code == 0 and out == "no hits\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (['"unclosed'], "unbalanced quote"),
        (["x", "--in", "bogus"], "unknown field bogus"),
        (["x", "--limit", "-1"], "--limit"),
        (["*"], "lone *"),
    ],
)
def test_bad_query_is_a_clear_error(
    root: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, str(root), *argv)
    assert code == 1 and out == ""
    assert message in err and "Traceback" not in err


def test_no_cache_writes_nothing_and_gives_the_same_answer(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, str(root), "分叉", "--no-cache", "--json")
    assert code == 0
    assert not catalog_path(root).exists()
    assert not (tmp_path / "cache").exists()
    _, cached, _ = run(capsys, str(root), "分叉", "--json")
    assert catalog_path(root).exists()
    assert json.loads(out) == json.loads(cached)


def test_subprocess_corrupt_catalog_no_traceback(root: Path, tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def cli(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "turnline.cli", "search", *argv],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )

    first = cli(str(root), "childword", "--json")
    assert first.returncode == 0, first.stderr
    catalog_path(root).write_bytes(b"\0garbage" * 512)
    write(
        root / "n" / "session.jsonl",
        SessionHeader("N", 9, cwd="/x", delegation_depth=0),
        turn(0, 1, "childword too", "ok"),
    )
    again = cli(str(root), "childword", "--json")
    assert again.returncode == 0 and "Traceback" not in again.stderr
    assert {h["session"] for h in json.loads(again.stdout)["hits"]} == {"C", "N"}
    bad = cli(str(root), '"oops')
    assert bad.returncode == 1 and "Traceback" not in bad.stderr


def _console(argv: list[str], env: dict[str, str], front: bool) -> tuple[int, str, str]:
    """Run the console script's front door (`cli.fast`) or `cli.main` directly."""
    module = "turnline.cli.fast" if front else "turnline.cli.main"
    code = (
        f"import sys; sys.argv = ['turnline', *{argv!r}]; from {module} import console; console()"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["zebracorn", "--json"],
        ["--json", "zebracorn"],
        ["zebracorn", "--include-inherited", "--json", "--limit", "2"],
        ["--in", "tool,user", "toolonlyword", "--json"],
        ["--in=reasoning", "pondering", "--json", "--limit=0"],
        ["分叉", "--session", "P", "--json"],
        ["zebra*", "--json"],
        ['"the zebracorn"', "--json"],
        ["zebracorn"],  # text output: cli.main answers
        ['"oops', "--json"],  # a bad query: cli.main says so
        ["x", "--in", "bogus", "--json"],
        ["x", "--limit", "-1", "--json"],
        ["x", "--lim", "3", "--json"],  # an abbreviation: argparse's business
        ["x", "--no-cache", "--json"],
        ["x", "--json", "--json"],
        ["-h"],
    ],
)
def test_front_door_answers_as_the_full_cli(root: Path, tmp_path: Path, argv: list[str]) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    args = ["search", str(root), *argv] if argv != ["-h"] else ["search", "-h"]
    full = _console(args, env, front=False)
    front = _console(args, env, front=True)
    assert front == full
    assert "Traceback" not in full[2]


@pytest.mark.parametrize(
    "argv",
    [
        ["zebracorn"],
        ["zebracorn", "分叉"],
        ["zebra*", "zebracorn"],
        ['"the zebracorn"'],
        ["分"],
        ["--in", "tool,user", "toolonlyword"],
        ["zebracorn", "--session", "P", "--limit", "1"],
        ["nowhere-at-all"],
    ],
)
def test_a_warm_front_door_answers_from_the_childs_reads(
    root: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    argv: list[str],
) -> None:
    """With a fresh state, the front door prints the document its forked child made
    (`FreshCheck.handoff`), and it is the full CLI's answer byte for byte."""
    from turnline.cli import fast
    from turnline.core.fresh import FreshCheck

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    past = os.stat(root).st_mtime - 3600  # folders older than a second are trusted
    for folder, _dirs, _files in os.walk(root):
        os.utime(folder, (past, past))
    args = [str(root), *argv, "--json"]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    full = _console(["search", *args], env, front=False)
    assert full[0] == 0
    handed: list[int | None] = []
    real = FreshCheck.handoff

    def spy(self: FreshCheck) -> int | None:
        got = real(self)
        handed.append(got)
        return got

    monkeypatch.setattr(FreshCheck, "handoff", spy)
    parsed = fast._parse(args)
    assert parsed is not None
    capfd.readouterr()
    assert fast._answer(parsed) == 0
    assert capfd.readouterr().out == full[1]
    assert handed == [len(full[1].encode())]  # the child's document, sent as it is


def test_front_door_loads_no_log_reader(root: Path, tmp_path: Path) -> None:
    """A warm `search --json` does not import the readers, the lineage or `cli.main`."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    past = os.stat(root).st_mtime - 3600  # folders older than a second are trusted
    for folder, _dirs, _files in os.walk(root):
        os.utime(folder, (past, past))
    assert _console(["search", str(root), "zebracorn", "--json"], env, front=True)[0] == 0
    code = (
        "import sys, io; sys.argv = ['turnline', 'search', "
        f"{str(root)!r}, 'zebracorn', '--json']\n"
        "from turnline.cli import fast\n"
        "out = sys.stdout; sys.stdout = io.TextIOWrapper(io.BytesIO())\n"
        "status = fast._search(sys.argv[2:])\n"
        "sys.stdout = out\n"
        "heavy = [m for m in ('turnline.cli.main', 'turnline.core.logfile', 'turnline.core.root',"
        " 'turnline.core.lineage', 'turnline.core.summary', 'zstandard', 'argparse')"
        " if m in sys.modules]\n"
        "print(status, heavy)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.stdout.strip() == "0 []", proc.stderr


def test_front_door_sees_every_change_after_a_warm_query(root: Path, tmp_path: Path) -> None:
    """The console script answers from the fresh state only while every folder and
    log still stats the same: an appended turn, then a removed log, are seen."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    past = os.stat(root).st_mtime - 3600
    for folder, _dirs, _files in os.walk(root):
        os.utime(folder, (past, past))
    argv = ["search", str(root), "laterword", "--json"]
    assert json.loads(_console(argv, env, front=True)[1])["total"] == 0
    assert json.loads(_console(argv, env, front=True)[1])["total"] == 0  # from the state
    log = root / "g" / "session.jsonl"
    import orjson

    with log.open("ab") as fh:
        fh.write(b"".join(orjson.dumps(r) + b"\n" for r in turn(40, 9, "a laterword", "ok")))
    got = json.loads(_console(argv, env, front=True)[1])
    assert [(h["session"], h["turn"]) for h in got["hits"]] == [("G", 9)]
    log.unlink()
    assert json.loads(_console(argv, env, front=True)[1])["total"] == 0


def _raw_log(path: Path, lines: list[str]) -> None:
    """A log written as given (JSON text: a lone surrogate as its `\\ud83d` escape,
    which orjson cannot write)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="ascii")


def _surrogate_log(path: Path) -> None:
    """A stream cut inside an emoji leaves a lone surrogate; here in the id, the title,
    a text, a tool's name and a `turn/end` with no reason."""
    _raw_log(
        path,
        [
            '{"type":"session","version":0,"id":"S-\\ud83d","createdAt":1,"cwd":"/w",'
            '"parentSession":"Q-\\udc00"}',
            '{"type":"session/title","seq":0,"time":1,"data":{"title":"title \\ud83d"}}',
            '{"type":"turn/start","seq":1,"time":2,"data":{"turn":1}}',
            '{"type":"user/message","seq":2,"time":3,"data":{"role":"user","content":'
            '[{"type":"text","text":"surrogateword \\ud83d here"}],"source":{"kind":"user"}}}',
            '{"type":"step/start","seq":3,"time":4,"data":{"turn":1,"step":1}}',
            '{"type":"tool/call","seq":4,"time":5,"data":{"turn":1,"name":"sh\\udc00"}}',
            '{"type":"turn/end","seq":5,"time":6,"data":{"turn":1,"reason":{"kind":"completed"}}}',
            '{"type":"turn/start","seq":6,"time":7,"data":{"turn":2}}',
            '{"type":"turn/end","seq":7,"time":8,"data":{"turn":2,"note":"\\ud83d"}}',
        ],
    )


@pytest.mark.parametrize("front", [False, True])
def test_lone_surrogates_in_a_log_are_no_traceback(root: Path, tmp_path: Path, front: bool) -> None:
    """Every command reads such a log: a `turn/end` with no reason shows its data with
    the surrogate escaped, and the catalog keeps the id and title with U+FFFD for it
    (SQLite holds UTF-8 only), as every view shows them."""
    _surrogate_log(root / "s" / "session.jsonl")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    code, out, err = _console(["search", str(root), "surrogateword", "--json"], env, front)
    assert code == 0 and "Traceback" not in err, err
    hits = json.loads(out)["hits"]
    assert [(h["session"], h["turn"]) for h in hits] == [("S-\ufffd", 1)]
    log = str(root / "s" / "session.jsonl")
    for argv in (["ls", "--json", str(root)], ["show", "--json", log]):
        code, out, err = _console(argv, env, front)
        assert code == 0 and "Traceback" not in err, (argv, err)
    problems = json.loads(out)["session"]["problems"]
    assert any('{"turn":2,"note":"\\ud83d"}' in p["message"] for p in problems), problems


@pytest.mark.skipif(sys.platform != "linux", reason="a file name that is not UTF-8 (Linux)")
@pytest.mark.parametrize("front", [False, True])
def test_a_log_whose_path_is_not_utf8_is_said_unsearched(
    root: Path, tmp_path: Path, front: bool
) -> None:
    """The catalog (SQLite: UTF-8 text) cannot hold such a path: the log is left out,
    the search says so on stderr every time (no fresh state hides it), and finds the
    rest."""
    folder = os.fsencode(root) + b"/odd-\xff"
    os.makedirs(folder)
    with open(folder + b"/session.jsonl", "wb") as fh:
        fh.write(
            SessionHeader("U", 5, cwd="/x", delegation_depth=0).to_json_line()
            + b"".join(json.dumps(r).encode() + b"\n" for r in turn(0, 1, "zebracorn again", "ok"))
        )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for _ in range(2):
        code, out, err = _console(["search", str(root), "zebracorn", "--json"], env, front)
        assert code == 0 and "Traceback" not in err, err
        assert "not searched: 1 log whose path (or the session id its folder names)" in err
        assert "odd-\ufffd" in err  # shown safely
        assert [h["session"] for h in json.loads(out)["hits"]] == ["P"]


def test_odd_search_input_is_said_not_a_traceback(root: Path, tmp_path: Path) -> None:
    """A record whose type holds a lone surrogate is read (its log still found), and a
    query or `--session` holding a byte that is not UTF-8 (a shell can pass one) is a
    clear error, through both doors."""
    _raw_log(
        root / "t" / "session.jsonl",
        [
            '{"type":"session","version":0,"id":"T","createdAt":1,"cwd":"/w"}',
            '{"type":"x\\ud83d","seq":0,"time":1,"data":{}}',
            '{"type":"turn/start","seq":1,"time":2,"data":{"turn":1}}',
            '{"type":"user/message","seq":2,"time":3,"data":{"role":"user","content":'
            '[{"type":"text","text":"oddtypeword"}],"source":{"kind":"user"}}}',
            '{"type":"turn/end","seq":3,"time":4,"data":{"turn":1,"reason":{"kind":"completed"}}}',
        ],
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for front in (False, True):
        code, out, err = _console(["search", str(root), "oddtypeword", "--json"], env, front)
        assert code == 0 and "Traceback" not in err, err
        assert [h["session"] for h in json.loads(out)["hits"]] == ["T"]
    code, out, err = _console(["search", str(root), "ab\udcffc", "--json"], env, True)
    assert code == 1 and "Traceback" not in err
    assert json.loads(out)["error"]["code"] == "BAD_QUERY" and "not UTF-8" in out
    argv = ["search", str(root), "zebracorn", "--session", "\udcff", "--json"]
    code, out, err = _console(argv, env, True)
    assert code == 1 and "Traceback" not in err
    assert json.loads(out)["error"]["code"] == "SESSION_NOT_FOUND"


@pytest.mark.parametrize("front", [False, True])
def test_a_log_whose_folder_names_a_lone_surrogate_is_said_unsearched(
    root: Path, tmp_path: Path, front: bool
) -> None:
    """dsh's folder name `~D83D` is the session id "\\ud83d" (a lone surrogate), which
    SQLite cannot hold: left out of the catalog and said so, as a path that is not
    UTF-8 is (it raised UnicodeEncodeError)."""
    write(
        root / "--w--" / "~D83D" / "session.jsonl",
        SessionHeader("V", 5, cwd="/w", delegation_depth=0),
        turn(0, 1, "zebracorn here too", "ok"),
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    code, out, err = _console(["search", str(root), "zebracorn", "--json"], env, front)
    assert code == 0 and "Traceback" not in err, err
    assert "not searched: 1 log" in err
    assert [h["session"] for h in json.loads(out)["hits"]] == ["P"]


def test_links_another_rule_resolved_are_resolved_again(root: Path, tmp_path: Path) -> None:
    """A catalog whose parent links another version's rule resolved (its `linked` mark
    is not `fresh.LINKED`) is linked again before a warm query answers from it; its
    fresh state is not taken meanwhile (it outlives the links it was written with)."""
    import sqlite3

    from turnline.core.fresh import catalog_file
    from turnline.core.query import pack_links

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    past = os.stat(root).st_mtime - 3600
    for folder, _dirs, _files in os.walk(root):
        os.utime(folder, (past, past))
    argv = ["search", str(root), "zebracorn", "--include-inherited", "--json"]
    want = _console(argv, env, front=True)[1]
    assert _console(argv, env, front=True)[1] == want  # (from the fresh state)
    db = sqlite3.connect(catalog_file(os.path.realpath(root)))
    with db:
        db.execute("UPDATE links SET data=?", (pack_links([]),))  # as another rule left them
        db.execute("UPDATE meta SET value='1' WHERE key='linked'")
    db.close()
    got = _console(argv, env, front=True)[1]
    assert got == want and json.loads(got)["hits"]
    assert _console(argv, env, front=True)[1] == want
