"""Issue 10's CLI items and issue 14's strict JSON, through the real `turnline` entry
point (a subprocess, like a user's shell), and the in-process `main` where a sweep
over all 151 fixtures would cost a process each.

- `ls` shows CREATED and LAST in local time with the date, sorts by `--sort`, never
  cuts an id (the title gives way) at any width;
- a missing default root, a lone file that is not a log and a lone folder each get a
  sentence that says what is wrong;
- an ambiguous prefix counts sessions, not logs;
- `show` and `show --json` agree on each turn's first seq;
- every `--json` output is strict JSON, whatever numbers a log holds.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import unicodedata
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import orjson
import pytest
from turnline.cli import main
from turnline.cli.main import _json_bytes

from ..conftest import fixture_logs
from .test_cli import HEADER, rec, turn, write

#: A zone far from UTC (and half an hour off it), so a UTC rendering cannot pass.
TZ = "Asia/Kolkata"
#: 2026-03-01 12:00 UTC and later: recent epoch ms, as dsh writes them.
T0 = 1_772_366_400_000
LONG_ID = "ffffffff-0000-4000-8000-999999999999"


def cli(
    *argv: str,
    columns: int | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """The real console entry (`python -m turnline.cli`), its output not a terminal."""
    base = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    base["TZ"] = TZ
    if columns is not None:
        base["COLUMNS"] = str(columns)
    return subprocess.run(
        [sys.executable, "-m", "turnline.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, **(env or {})},
        cwd=cwd,
    )


def cells(text: str) -> int:
    """Terminal cells of `text` (wide characters take two), measured independently."""
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


def local(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, ZoneInfo(TZ)).strftime("%Y-%m-%d %H:%M")


def timed_turn(start: int, n: int, text: str, at: int) -> list[dict[str, Any]]:
    """`turn` with its events at epoch ms `at`, `at + 1`, …"""
    return [{**r, "time": at + i} for i, r in enumerate(turn(start, n, text))]


@pytest.fixture
def dated(tmp_path: Path) -> Path:
    """Four sessions whose created and last times, turn counts and titles all order
    them differently; one is a fork of another, one has a long title."""
    root = tmp_path / "root"
    day = 86_400_000
    specs = [
        # id, created, last event, turns, title, parent
        ("bbbb-old", T0, T0 + 9 * day, 1, "Zebra crossing", None),
        ("aaaa-new", T0 + 5 * day, T0 + 6 * day, 3, "apple pie", None),
        ("cccc-kid", T0 + 7 * day, T0 + 8 * day, 2, "Middle child", "bbbb-old"),
        (LONG_ID, T0 + 2 * day, T0 + 3 * day, 1, "A very long title " * 8, None),
    ]
    logs: dict[str, list[dict[str, Any]]] = {}
    for sid, created, last, turns, title, parent in specs:
        header = {**HEADER, "id": sid, "createdAt": created}
        records: list[dict[str, Any]] = []
        if parent is not None:
            header |= {"parentSession": parent, "seedLength": 5}
            records += logs[parent][:5]  # the parent's first turn, its seed
        for n in range(len(records) // 5 + 1, turns + 1):
            records += timed_turn(len(records), n, title, created + n)
        records.append({**rec(len(records), "session/title", title=title), "time": last})
        logs[sid] = records
        write(root / "--w-app--" / sid / "session.jsonl", header, records)
    return root


def table(out: str) -> tuple[list[str], list[str]]:
    """The header's column names and the rows of an `ls` table."""
    lines = out.splitlines()
    return re.split(r"\s{2,}", lines[0].strip()), lines[1:]


def ids_in(rows: list[str]) -> list[str]:
    return [row.split()[0] for row in rows]


# -- ls: CREATED, LAST, --sort ------------------------------------------------------------


def test_ls_shows_created_and_last_activity_in_local_time(dated: Path) -> None:
    proc = cli("ls", str(dated), columns=200)
    assert proc.returncode == 0 and proc.stderr == ""
    names, rows = table(proc.stdout)
    assert names == ["ID", "TURNS", "EVENTS", "CREATED", "LAST", "FLAGS", "TITLE"]
    listed = {e["id"]: e for e in json.loads(cli("ls", str(dated), "--json").stdout)}
    for row in rows:
        entry = listed[row.split()[0]]
        # The JSON has the same two times, as epoch ms.
        assert f"  {local(entry['createdAt'])}  {local(entry['lastActivity'])}  " in row, row
    old = next(row for row in rows if row.startswith("bbbb-old"))
    assert local(T0) in old and local(T0 + 9 * 86_400_000) in old
    assert "2026-03-01 17:30" in old  # 12:00 UTC is 17:30 in Kolkata: local, with the date


def test_ls_times_unknown_or_absurd_show_a_dash(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "a.jsonl", {**HEADER, "id": "no-time", "createdAt": 0}, turn(0, 1, "x"))
    data = orjson.dumps({**HEADER, "id": "far"}) + b"\n"
    data += b"".join(orjson.dumps(r) + b"\n" for r in turn(0, 1, "y")[:-1])
    last = orjson.dumps(turn(0, 1, "y")[-1]).replace(b'"time":1004', b'"time":1e300')
    (root / "b.jsonl").write_bytes(data + last + b"\n")
    proc = cli("ls", str(root), columns=200)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    _, rows = table(proc.stdout)
    no_time = next(r for r in rows if r.startswith("no-time"))
    assert re.search(r"  -  +\d{4}-\d\d-\d\d \d\d:\d\d  ", no_time), no_time
    far = next(r for r in rows if r.startswith("far"))
    assert re.search(r"\d\d:\d\d  +-  ", far), far  # year 10^13 is no calendar date


@pytest.mark.parametrize(
    ("sort", "expected"),
    [
        ("path", ["aaaa-new", "bbbb-old", "cccc-kid", LONG_ID]),  # as found: today's order
        ("created", ["cccc-kid", "aaaa-new", LONG_ID, "bbbb-old"]),  # newest first
        ("last", ["bbbb-old", "cccc-kid", "aaaa-new", LONG_ID]),  # newest first
        ("title", [LONG_ID, "aaaa-new", "cccc-kid", "bbbb-old"]),  # case-insensitive
        ("turns", ["aaaa-new", "cccc-kid", "bbbb-old", LONG_ID]),  # most first, ties as found
        ("id", ["aaaa-new", "bbbb-old", "cccc-kid", LONG_ID]),
        ("lineage", ["bbbb-old", "cccc-kid", LONG_ID, "aaaa-new"]),  # tree order
    ],
)
def test_ls_sort(dated: Path, sort: str, expected: list[str]) -> None:
    text = cli("ls", str(dated), "--sort", sort, columns=200)
    assert text.returncode == 0, text.stderr
    assert ids_in(table(text.stdout)[1]) == expected
    listed = json.loads(cli("ls", str(dated), "--sort", sort, "--json").stdout)
    assert [e["id"] for e in listed] == expected
    flipped = cli("ls", str(dated), "--sort", sort, "--reverse", columns=200)
    assert ids_in(table(flipped.stdout)[1]) == expected[::-1]
    listed = json.loads(cli("ls", str(dated), "--sort", sort, "--reverse", "--json").stdout)
    assert [e["id"] for e in listed] == expected[::-1]


def test_ls_lineage_sort_follows_the_tree(dated: Path) -> None:
    tree = cli("tree", str(dated)).stdout.splitlines()
    order = ids_in(table(cli("ls", str(dated), "--sort", "lineage", columns=200).stdout)[1])
    drawn = [re.sub(r"^[│├└─ ]*(\[[^\]]*\] )?", "", line).split()[0] for line in tree]
    assert len(order) == len(drawn) == 4
    assert all(sid.startswith(short.rstrip("…")) for sid, short in zip(order, drawn, strict=True))


def test_ls_bad_sort_is_a_usage_error(dated: Path) -> None:
    proc = cli("ls", str(dated), "--sort", "size")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "invalid choice: 'size'" in proc.stderr and "Traceback" not in proc.stderr


# -- ls: ids whole, titles fitted -------------------------------------------------------


@pytest.mark.parametrize("columns", [60, 200])
def test_ls_never_cuts_an_id_and_fits_the_title(dated: Path, columns: int) -> None:
    proc = cli("ls", str(dated), columns=columns)
    assert proc.returncode == 0
    names, rows = table(proc.stdout)
    assert names[0] == "ID" and names[-1] == "TITLE"
    assert sorted(ids_in(rows)) == sorted(["aaaa-new", "bbbb-old", "cccc-kid", LONG_ID])
    assert all(cells(line) <= columns for line in proc.stdout.splitlines()), proc.stdout
    long_row = next(r for r in rows if r.startswith(LONG_ID + " "))
    if columns == 60:
        assert names == ["ID", "TITLE"]  # the other columns give way before the id
        assert long_row.endswith("…") and "A very long" in long_row
    else:
        assert names == ["ID", "TURNS", "EVENTS", "CREATED", "LAST", "FLAGS", "TITLE"]
        assert long_row.endswith("…")  # 144 characters: cut to the 200 columns
        assert any(r.endswith("Zebra crossing") for r in rows)  # short titles stay whole


def test_ls_piped_without_columns_keeps_every_column(dated: Path) -> None:
    proc = cli("ls", str(dated))  # stdout is a pipe and $COLUMNS is unset
    names, rows = table(proc.stdout)
    assert names == ["ID", "TURNS", "EVENTS", "CREATED", "LAST", "FLAGS", "TITLE"]
    long_row = next(r for r in rows if r.startswith(LONG_ID + " "))
    assert long_row.endswith("…") and len(long_row.split("  ")[-1]) == 100  # TITLE_MAX


@pytest.mark.parametrize("columns", [60, 200])
def test_ls_on_the_fixtures_shows_every_id_whole(fixtures_root: Path, columns: int) -> None:
    listed = json.loads(cli("ls", str(fixtures_root), "--json").stdout)
    proc = cli("ls", str(fixtures_root), columns=columns)
    _, rows = table(proc.stdout)
    assert len(rows) == len(listed) == len(fixture_logs())
    for row, entry in zip(rows, listed, strict=True):
        assert row.startswith(entry["id"] + "  "), (row, entry["id"])
    widest = max(len(entry["id"]) for entry in listed)
    for line in proc.stdout.splitlines():
        assert cells(line) <= max(columns, widest + 2 + 20), line  # TITLE_MIN


def test_ls_keeps_an_id_wider_than_the_terminal_whole(tmp_path: Path) -> None:
    sid = "x" * 90
    write(tmp_path / "r" / "a.jsonl", {**HEADER, "id": sid}, turn(0, 1, "a title here"))
    row = cli("ls", str(tmp_path / "r"), columns=60).stdout.splitlines()[1]
    assert row.startswith(sid + "  ") and row.endswith("a title here")


def test_ls_fits_wide_characters_by_cells(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "a.jsonl", {**HEADER, "id": "cjk-1"}, turn(0, 1, "分叉" * 40))
    out = cli("ls", str(root), columns=60).stdout
    row = out.splitlines()[1]
    assert "分叉分叉" in row and row.endswith("…") and cells(row) <= 60


# -- messages ------------------------------------------------------------------------------


def test_missing_default_root_names_the_paths_it_tried(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home"), "DSH_HOME": str(tmp_path / "dsh")}
    for argv in (["ls"], ["tree"], ["show", "abc"], ["usage"]):
        proc = cli(*argv, env=env)
        assert proc.returncode == 1 and proc.stdout == "", argv
        (line,) = proc.stderr.splitlines()
        assert "neither" not in line and "Traceback" not in line
        assert str(tmp_path / "dsh" / "sessions") in line
        assert str(tmp_path / "home" / ".dsh" / "sessions") in line
        assert "$DSH_HOME/sessions" in line and "~/.dsh/sessions" in line
        assert "as ROOT" in line and "turnline demo" in line
    only_home = cli("ls", env={"HOME": str(tmp_path / "home"), "DSH_HOME": ""})
    assert "tried ~/.dsh/sessions (" in only_home.stderr and "DSH_HOME/sessions" not in (
        only_home.stderr
    )
    error = json.loads(cli("ls", "--json", env=env).stdout)["error"]
    assert error["code"] == "ROOT_NOT_FOUND" and str(tmp_path / "dsh") in error["message"]


@pytest.mark.parametrize("with_default_root", [False, True])
def test_a_lone_file_that_is_not_a_log_says_so(
    tmp_path: Path, dated: Path, with_default_root: bool
) -> None:
    home = tmp_path / "home"
    if with_default_root:
        (home / ".dsh").mkdir(parents=True)
        (home / ".dsh" / "sessions").symlink_to(dated, target_is_directory=True)
    work = tmp_path / "work"
    (work / "empty-folder").mkdir(parents=True)
    (work / "README.md").write_text("# not a log\n")
    (work / "data.json").write_text('{"type": "config", "id": "x"}\n')
    (work / "notes.jsonl").write_text('{"type": "config", "id": "x"}\n')
    env = {"HOME": str(home), "DSH_HOME": ""}
    expected = {
        "README.md": "README.md is not a session log: a dsh session log is a .jsonl or "
        ".jsonl.zstd file whose first line is a session header",
        "data.json": "data.json is not a session log: a dsh session log is a .jsonl",
        "notes.jsonl": "notes.jsonl is not a session log: its first line is not a dsh "
        "session header",
    }
    for name, says in expected.items():
        for command in ("show", "fork", "export"):
            extra = ["--format", "md"] if command == "export" else []
            proc = cli(command, *extra, name, env=env, cwd=work)
            assert proc.returncode == 1 and proc.stdout == "", (command, name)
            assert proc.stderr.startswith("turnline: " + says), proc.stderr
            assert ".dsh" not in proc.stderr and "root" not in proc.stderr
        error = json.loads(cli("show", name, "--json", env=env, cwd=work).stdout)["error"]
        assert error["code"] == "NOT_A_LOG"
    folder = cli("show", "empty-folder", env=env, cwd=work)
    assert folder.returncode == 1
    if with_default_root:  # looked up as a session id under the default root
        assert "no session 'empty-folder'" in folder.stderr
        assert "empty-folder is a folder" in folder.stderr
    else:
        assert folder.stderr == (
            "turnline: empty-folder is a folder with no session logs in it, not a session\n"
        )
    assert json.loads(cli("show", "empty-folder", "--json", env=env, cwd=work).stdout)


def test_a_lone_log_file_is_still_its_own_root(dated: Path, tmp_path: Path) -> None:
    log = dated / "--w-app--" / "aaaa-new" / "session.jsonl"
    env = {"HOME": str(tmp_path), "DSH_HOME": ""}
    proc = cli("show", str(log), env=env)
    assert proc.returncode == 0 and proc.stdout.startswith("session aaaa-new")
    flat = tmp_path / "flat.jsonl"  # outside the dsh layout, with a session header
    flat.write_bytes(log.read_bytes())
    assert cli("show", str(flat), env=env).returncode == 0


def test_an_ambiguous_prefix_counts_sessions_not_logs(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for n, sid in enumerate(["5aaa-one", "5aaa-one", "5aaa-one", "5bbb-two"]):
        write(root / f"copy{n}" / "--w-app--" / sid / "session.jsonl", {**HEADER, "id": sid}, [])
    proc = cli("show", str(root), "5")
    assert proc.returncode == 1
    assert proc.stderr == "turnline: '5' matches 2 sessions (4 logs): 5aaa-one, 5bbb-two\n"


def test_an_ambiguous_prefix_on_the_fixtures_lists_as_many_ids_as_it_counts(
    fixtures_root: Path,
) -> None:
    for prefix in ("5", "0", "1"):
        err = cli("show", str(fixtures_root), prefix).stderr
        found = re.fullmatch(
            r"turnline: '.' matches (\d+) sessions(?: \((\d+) logs\))?: (.*)\n", err
        )
        assert found is not None, err
        ids = [i for i in found[3].split(", ") if not i.startswith("…")]
        assert int(found[1]) == len(ids) or found[3].endswith("more")
        assert len(set(ids)) == len(ids) and all(i.startswith(prefix) for i in ids)


# -- show: one first seq ---------------------------------------------------------------------


_ROW = re.compile(r"^[◆ ] +(\d+)  +(\d+)–(\d+|…)  ")


def test_show_text_and_json_agree_on_every_first_seq_of_the_fixtures(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    checked = 0
    logs = fixture_logs()
    assert len(logs) == 151
    for log in logs:
        assert main(["show", str(log), "--json"]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert main(["show", str(log)]) == 0
        rows = [m for line in capsys.readouterr().out.splitlines() if (m := _ROW.match(line))]
        assert len(rows) == len(shown["turns"]), log
        for row, entry in zip(rows, shown["turns"], strict=True):
            end = None if row[3] == "…" else int(row[3])
            assert (int(row[1]), int(row[2]), end) == (
                entry["turn"],
                entry["startSeq"],
                entry["endSeq"],
            ), log
            checked += 1
    assert checked == 147  # every turn of every fixture


def test_show_json_start_seq_is_the_turns_first_seq(dated: Path) -> None:
    shown = json.loads(cli("show", str(dated), "aaaa", "--json").stdout)
    first, second, _ = shown["turns"]
    # seq 0 is the user message that opens turn 1, its turn/start is seq 1
    assert (first["startSeq"], first["turnStartSeq"], first["endSeq"]) == (0, 1, 4)
    assert (second["startSeq"], second["turnStartSeq"]) == (5, 6)
    assert "◆     1  0–4  " in cli("show", str(dated), "aaaa").stdout


# -- strict JSON (issue 14) ------------------------------------------------------------------


def _refuse(constant: str) -> Any:
    raise ValueError(f"not strict JSON: {constant}")


def strict(text: str) -> Any:
    return json.loads(text, parse_constant=_refuse)


def test_json_bytes_writes_null_for_infinity_and_nan() -> None:
    value = {"a": [1.5, float("inf"), {"b": float("nan")}], "c": (float("-inf"), 2), "d": 3}
    assert strict(_json_bytes(value).decode()) == {
        "a": [1.5, None, {"b": None}],
        "c": [None, 2],
        "d": 3,
    }
    assert _json_bytes([1e-05, 10**30]) == b"[\n  1e-05,\n  1000000000000000000000000000000\n]\n"


@pytest.fixture
def infinite(tmp_path: Path) -> Path:
    """A root whose logs hold 1e400 (read as infinity, as `JSON.parse` reads it): in
    event data and a usage count (a parent and its two forks, for `diff`, the second
    with infinite times in its own turn), in the
    header, and as every event time of a session of its own."""
    root = tmp_path / "root"

    def put(sid: str, header: dict[str, Any], records: list[dict[str, Any]]) -> None:
        lines = [orjson.dumps({**HEADER, "id": sid, **header})]
        lines += [orjson.dumps(r) for r in records]
        data = b"\n".join(lines).replace(b'"INF"', b"1e400")
        path = root / "--w-app--" / sid / "session.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data + b"\n")

    base = turn(0, 1, "infinite question")
    base[2]["data"]["x"] = "INF"
    base.insert(4, rec(4, "assistant/message", turn=1, step=1, usage={"inputTokens": "INF"}))
    for i, r in enumerate(base):
        r["seq"] = i
    put("inf-parent", {"version": 0}, base)
    for kid in ("inf-kid1", "inf-kid2"):
        own = turn(6, 2, f"{kid} asks")
        own[1]["data"]["x"] = "INF"
        if kid == "inf-kid2":  # diff folds a side whose event times are infinite
            for r in own:
                r["time"] = "INF"
        put(kid, {"parentSession": "inf-parent", "seedLength": 6, "createdAt": 9}, base + own)
    put("inf-header", {"createdAt": "INF", "seedLength": "INF"}, turn(0, 1, "header"))
    timeless = turn(0, 1, "timeless question")
    for r in timeless:
        r["time"] = "INF"
    put("inf-time", {}, timeless)
    return root


def test_every_json_output_is_strict_with_infinite_numbers(infinite: Path) -> None:
    root = str(infinite)
    commands = [
        ["ls", root],
        ["show", root, "inf-parent"],
        ["show", root, "inf-kid1"],
        ["show", root, "inf-header"],
        ["show", root, "inf-time"],
        ["usage", root],
        ["usage", root, "inf-time"],
        ["search", root, "question", "--no-cache"],
        ["diff", root, "inf-kid1", "inf-kid2"],
        ["fork", root, "inf-time", "--id", "inf-kid3"],
    ]
    for argv in commands:
        proc = cli(*argv, "--json")
        assert "Traceback" not in proc.stderr, (argv, proc.stderr)
        assert proc.returncode == 0, (argv, proc.stdout, proc.stderr)
        assert "Infinity" not in proc.stdout and "NaN" not in proc.stdout, argv
        strict(proc.stdout)
        text = cli(*argv[:-1], "inf-kid4") if argv[0] == "fork" else cli(*argv)
        assert text.returncode == 0 and "Traceback" not in text.stderr, (argv, text.stderr)
    listed = {e["id"]: e for e in strict(cli("ls", root, "--json").stdout)}
    assert listed["inf-time"]["lastActivity"] is None  # its last event's time is no instant
    assert listed["inf-header"]["createdAt"] == 0  # refused by the header check, reported
    found = strict(cli("search", root, "question", "--no-cache", "--json").stdout)
    assert {hit["session"] for hit in found["hits"]} == {"inf-parent", "inf-time"}


# -- bad input: a message, never a traceback ---------------------------------------------------


#: Event times and `createdAt` values a log may hold that are no sane instant.
ODD_TIMES = ["1e400", "-1e400", "99999999999999999999999", "-5", '"x"', "1e300", "null"]
ODD_CREATED = ["1e400", "99999999999999999999999", "-1", '"x"', "1.5"]


def test_every_command_over_odd_logs_answers_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from .test_cli import GARBAGE

    monkeypatch.setenv("COLUMNS", "80")
    root = tmp_path / "root"
    for name, data in GARBAGE.items():
        (root / "garbage").mkdir(parents=True, exist_ok=True)
        (root / "garbage" / f"{name}.jsonl").write_bytes(data)
    first = [orjson.dumps(r).decode() for r in turn(0, 1, "odd")]
    odd: list[str] = []
    for n, value in enumerate(ODD_TIMES + ODD_CREATED):
        sid = f"odd-{n}"
        head = orjson.dumps({**HEADER, "id": sid}).decode()
        body = list(first)
        if n < len(ODD_TIMES):
            body = [line.replace('"time":100', f'"time":{value},"was":100') for line in body]
        else:
            head = head.replace('"createdAt":5', f'"createdAt":{value}')
        log = root / "--w-odd--" / sid / "session.jsonl"
        log.parent.mkdir(parents=True)
        log.write_text("\n".join([head, *body]) + "\n")
        odd.append(sid)

    def answer(*argv: str) -> str:
        code = main(list(argv))  # an exception here is the traceback a user would see
        out, err = capsys.readouterr()
        assert code in (0, 1), (argv, err)
        assert (code == 1) == bool(err or '"error"' in out), (argv, out, err)
        if "--json" in argv:
            strict(out)
        return out

    for sort in ("path", "created", "last", "title", "turns", "id", "lineage"):
        answer("ls", str(root), "--sort", sort)
        answer("ls", str(root), "--sort", sort, "--reverse", "--json")
    answer("tree", str(root))
    answer("search", str(root), "odd", "--no-cache", "--json")
    for entry in strict(answer("ls", str(root), "--json")):
        for command in (["show"], ["show", "--json"], ["export", "--format", "md"]):
            answer(*command, str(root), entry["path"])
        answer("fork", str(root), entry["path"], "--json", "--id", entry["id"] + "-kid")
        answer("diff", str(root), entry["path"], "odd-0", "--json")
    answer("usage", str(root), "--json")
    answer("usage", str(root), "--by", "day")
