"""The command line fixes of issue 23: where a fork of a log path lands, `search` and
`diff` argument shapes, `search --session` of no session, `fork`'s default boundary,
the units of `diff` and `usage`, the help texts, and the app without a terminal."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from turnline.cli import render
from turnline.cli.main import COMMANDS, build_parser, main

from tests.core.rich_logs import forked_pair, rich_turn

from .test_cli import HEADER, rec, turn, write
from .test_cli import root as root  # the fixture: a parent (open last turn), a child, an orphan

README = Path(__file__).resolve().parents[2] / "README.md"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _console(
    argv: list[str], env: dict[str, str] | None = None, *, front: bool = True
) -> subprocess.CompletedProcess[str]:
    """The console script (its front door `cli.fast`, or `cli.main`) in a subprocess."""
    module = "turnline.cli.fast" if front else "turnline.cli.main"
    code = (
        f"import sys; sys.argv = ['turnline', *{argv!r}]; from {module} import console; console()"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def no_default_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DSH_HOME", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


# -- bug 2: a fork of a log opened by its path ---------------------------------------------


def test_fork_of_a_layout_log_path_lands_under_the_sessions_root(root: Path, capsys: Any) -> None:
    log = root / "--w-app--" / "aaaa-parent" / "session.jsonl"
    code, out, err = run(capsys, "fork", str(log), "--at", "4", "--id", "dddd-new", "--json")
    assert (code, err) == (0, "")
    forked = json.loads(out)
    want = root.resolve() / "--w-app--" / "dddd-new" / "session.jsonl"
    assert forked["child"]["path"] == str(want) and want.is_file()
    assert forked["root"] == str(root.resolve())
    assert not (log.parent / "--w-app--").exists()
    code, out, _ = run(capsys, "ls", str(root), "--json")
    assert "dddd-new" in {entry["id"] for entry in json.loads(out)}
    code, out, err = run(capsys, "fork", str(log), "--at", "4", "--id", "eeee-new")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert Path(lines[1].strip()) == root.resolve() / "--w-app--" / "eeee-new" / "session.jsonl"


def test_fork_of_a_log_outside_the_layout_stays_beside_it(tmp_path: Path, capsys: Any) -> None:
    flat = write(tmp_path / "dump" / "flat.jsonl", HEADER, turn(0, 1, "q"))
    code, out, _ = run(capsys, "fork", str(flat), "--id", "kid", "--json")
    assert code == 0
    child = json.loads(out)["child"]["path"]
    assert child == str(flat.parent.resolve() / "--w-app--" / "kid" / "session.jsonl")


# -- bug 8: search and diff argument shapes ----------------------------------------------


def test_search_with_a_missing_root_says_so_as_show_does(
    root: Path, tmp_path: Path, capsys: Any, no_default_root: None
) -> None:
    missing = str(tmp_path / "nope")
    code, _, shown = run(capsys, "show", missing, "aaaa")
    assert code == 1 and "does not exist" in shown
    code, out, err = run(capsys, "search", missing, "first")
    assert (code, out) == (1, "")
    assert err.startswith(shown.rstrip("\n"))  # show's message, then how to quote a query
    assert 'quote them: turnline search "' in err
    for front in (True, False):
        proc = _console(
            ["search", missing, "first", "--json"],
            {"XDG_CACHE_HOME": str(tmp_path / "cache")},
            front=front,
        )
        assert proc.returncode == 1, proc.stderr
        assert json.loads(proc.stdout)["error"]["code"] == "ROOT_NOT_FOUND"


def test_search_a_query_word_naming_a_folder_without_logs_is_not_a_silent_root(
    root: Path, tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    words = tmp_path / "docs"
    words.mkdir()
    (words / "notes.txt").write_text("x")
    code, out, err = run(capsys, "search", str(words), "first")
    assert (code, out) == (1, "")
    assert "no sessions under" in err and "quote" in err
    for front in (True, False):
        proc = _console(
            ["search", str(words), "first", "--json"],
            {"XDG_CACHE_HOME": str(tmp_path / "cache")},
            front=front,
        )
        assert proc.returncode == 1, proc.stderr
        assert json.loads(proc.stdout)["error"]["code"] == "ROOT_INVALID"
    # A real root still answers, with several query words after it.
    code, out, _ = run(capsys, "search", str(root), "first", "question", "--json")
    assert code == 0 and json.loads(out)["total"] >= 1


def test_search_a_lone_folder_is_the_query_as_show_takes_a_lone_folder(
    root: Path, tmp_path: Path, capsys: Any, no_default_root: None
) -> None:
    code, out, _ = run(capsys, "search", str(root), "--json")
    assert code == 1
    error = json.loads(out)["error"]
    assert error["code"] == "ROOT_NOT_FOUND"
    assert "is a folder: to search it, give a QUERY after it" in error["message"]


def test_diff_with_b_forgotten_names_the_folder(
    root: Path, tmp_path: Path, capsys: Any, no_default_root: None
) -> None:
    code, out, err = run(capsys, "diff", str(root), "aaaa")
    assert (code, out) == (1, "")
    assert "no ROOT was given" not in err
    assert "is a folder, not a session; to use it as ROOT, name sessions A and B after it" in err
    code, out, _ = run(capsys, "diff", str(root), "aaaa", "--json")
    assert json.loads(out)["error"]["code"] == "NOT_A_SESSION"


def test_diff_with_b_forgotten_under_a_default_root(
    root: Path, tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_HOME", str(tmp_path))
    (tmp_path / "sessions").symlink_to(root, target_is_directory=True)
    code, out, _ = run(capsys, "diff", str(root), "aaaa", "--json")
    assert code == 1
    error = json.loads(out)["error"]
    assert error["code"] == "SESSION_NOT_FOUND"
    assert "is a folder: to use it as ROOT, name sessions A and B after it" in error["message"]
    code, out, _ = run(capsys, "diff", "aaaa", "bbbb", "--json")  # A B under the default root
    assert code == 0 and json.loads(out)["ancestor"]["id"] == "aaaa-parent"


# -- bug 9: search --session of no session ------------------------------------------------


def test_search_session_of_no_session_is_session_not_found(
    root: Path, tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    code, _, shown = run(capsys, "show", str(root), "nosuch")
    assert code == 1
    code, out, err = run(capsys, "search", str(root), "first", "--session", "nosuch")
    assert (code, out, err) == (1, "", shown)  # the same code, message and exit as `show`
    code, out, _ = run(capsys, "search", str(root), "first", "--session", "aaaa", "--json")
    assert code == 0 and json.loads(out)["total"] == 1
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    for front in (True, False):
        proc = _console(
            ["search", str(root), "first", "--session", "nosuch", "--json"], env, front=front
        )
        assert proc.returncode == 1, proc.stderr
        assert json.loads(proc.stdout)["error"]["code"] == "SESSION_NOT_FOUND"


# -- fork: --at defaults to the last turn/end ---------------------------------------------


def test_fork_without_at_on_a_live_session_takes_the_last_turn_end(root: Path, capsys: Any) -> None:
    code, out, err = run(capsys, "fork", str(root), "aaaa-parent", "--id", "kid-1", "--json")
    assert (code, err) == (0, "")
    forked = json.loads(out)
    assert (forked["boundary"], forked["boundaryDefault"]) == (9, True)
    assert forked["child"]["seedLength"] == 10
    code, out, _ = run(capsys, "fork", str(root), "aaaa-parent", "--id", "kid-2")
    assert code == 0
    assert out.splitlines()[0].startswith(
        "forked aaaa-parent at seq 9 (the last turn/end: --at not given) → kid-2"
    )
    code, out, _ = run(capsys, "fork", str(root), "aaaa", "--at", "4", "--id", "kid-3", "--json")
    assert code == 0 and json.loads(out)["boundaryDefault"] is False


def test_fork_without_at_on_a_fresh_child(root: Path, capsys: Any) -> None:
    code, out, _ = run(capsys, "fork", str(root), "aaaa", "--at", "4", "--id", "fresh", "--json")
    assert code == 0
    code, out, err = run(capsys, "fork", str(root), "fresh", "--id", "grandkid", "--json")
    assert (code, err) == (0, "")
    forked = json.loads(out)
    assert (forked["boundary"], forked["parent"]) == (4, "fresh")


def test_fork_without_at_and_no_turn_end_is_still_refused(tmp_path: Path, capsys: Any) -> None:
    log = write(
        tmp_path / "r" / "--w-app--" / "x-1" / "session.jsonl",
        {**HEADER, "id": "x-1"},
        [rec(0, "user/message", role="user", content=[], source={"kind": "user"})],
    )
    code, out, _ = run(capsys, "fork", str(log), "--json")
    assert code == 1
    error = json.loads(out)["error"]
    assert error["code"] == "INVALID_BOUNDARY" and "no earlier turn/end" in error["message"]


# -- units: diff and usage ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (0, "0.0 s"),
        (3_240, "3.2 s"),
        (59_940, "59.9 s"),
        (725_000, "12m 5s"),
        (3_600_000, "1h 0m"),
        (621_606_300, "7d 4h"),
    ],
)
def test_durations_read_as_people_write_them(ms: int, text: str) -> None:
    assert render.duration(ms) == text


def test_diff_text_units(tmp_path: Path, capsys: Any) -> None:
    forked_pair(tmp_path)
    # `left` gets a turn with 9,703 tokens that ends 7 days, 4 hours later.
    left = tmp_path / "--home-dev-app--" / "left" / "session.jsonl"
    lines = left.read_bytes().splitlines()
    last = orjson.loads(lines[-1])
    records = rich_turn(last["seq"] + 1, 3, "big")
    records[-1]["time"] = int(records[0]["time"]) + 621_606_300  # type: ignore[call-overload]
    records[4]["data"]["usage"] = {"inputTokens": 9_000, "outputTokens": 703}  # type: ignore[index]
    with left.open("ab") as stream:
        stream.write(b"".join(orjson.dumps(r) + b"\n" for r in records))
    code, out, _ = run(capsys, "diff", str(tmp_path), "left", "right")
    assert code == 0
    head, left_line, right_line = out.splitlines()[:3]
    assert head.endswith("(shared: 1 turn)")
    assert "left: 2 turns," in left_line and "right: 2 turns," in right_line
    assert "9.7k tokens" in left_line and "9703" not in left_line
    assert "0 errors" in left_line
    assert ", 7d 4h," in left_line and "621606" not in left_line


def _day_log(root: Path, sid: str, day: int, tokens: int) -> None:
    """A one-turn session on day `day` (days since the epoch) that spent `tokens`."""
    records = rich_turn(0, 1, sid)
    for record in records:
        record["time"] = day * 86_400_000 + 3_600_000 + record["seq"]
    records[4]["data"]["usage"] = {"inputTokens": tokens, "outputTokens": 0}  # type: ignore[index]
    write(root / "--w-app--" / sid / "session.jsonl", {**HEADER, "id": sid}, records)


def test_usage_by_day_is_newest_first_and_by_model_has_no_turns(
    tmp_path: Path, capsys: Any
) -> None:
    for sid, day, tokens in (("a", 20_000, 50), ("b", 20_001, 900), ("c", 20_002, 10)):
        _day_log(tmp_path, sid, day, tokens)
    code, out, _ = run(capsys, "usage", str(tmp_path), "--by", "day")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["input", "output", "cache-r", "cache-w", "calls", "cost", "day"]
    assert [ln.split()[-1] for ln in lines[1:4]] == ["2024-10-06", "2024-10-05", "2024-10-04"]
    assert lines[4].split()[-1] == "total"
    code, out, _ = run(capsys, "usage", str(tmp_path), "--by", "model")
    assert code == 0
    assert out.splitlines()[0].split() == [
        "input",
        "output",
        "cache-r",
        "cache-w",
        "calls",
        "cost",
        "model",
    ]
    code, out, _ = run(capsys, "usage", str(tmp_path), "--by", "project")
    assert "turns" in out.splitlines()[0].split()  # a project's turns are its sessions'


# -- help and README ----------------------------------------------------------------------


def test_top_help_shows_the_app_form_and_every_command(capsys: Any) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "turnline [ROOT|FILE] [--poll]" in out
    for command in COMMANDS:
        assert re.search(rf"^\s+{re.escape(command)}\b", out, re.M), command


def test_every_subcommand_help_says_what_it_does(capsys: Any) -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    helps = {c.dest: c.help for c in sub._choices_actions}  # type: ignore[attr-defined]
    assert set(helps) == set(COMMANDS)
    for command in COMMANDS:
        assert helps[command]
        with pytest.raises(SystemExit):
            main([command, "--help"])
        out = " ".join(capsys.readouterr().out.split())
        first = str(helps[command])
        assert first[:1].upper() + first[1:] in out, command


def test_readme_cli_blocks_list_every_command() -> None:
    blocks = re.findall(r"```\n(turnline \[ROOT\|FILE\].*?)```", README.read_text(), re.S)
    assert len(blocks) >= 2  # near the top, and in "CLI reference"
    for block in blocks:
        for command in COMMANDS:
            assert re.search(rf"^turnline {re.escape(command)}\b", block, re.M), command


# -- the app without a terminal -----------------------------------------------------------


def test_the_app_into_a_pipe_says_it_needs_a_terminal(root: Path) -> None:
    code = (
        "import sys; sys.argv = ['turnline', sys.argv[1]]\n"
        "from turnline.cli.fast import console\n"
        "try:\n"
        "    console()\n"
        "finally:\n"
        "    print('TEXTUAL', 'textual' in sys.modules, file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(root)],
        capture_output=True,  # stdout is a pipe, as in `turnline ROOT | cat`
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    said, textual = proc.stderr.splitlines()
    assert "needs a terminal" in said and "turnline ls" in said and "turnline show" in said
    assert "turnline tree" in said and "\x1b" not in proc.stderr
    assert textual == "TEXTUAL False"
    # A missing root is still refused as such first.
    gone = subprocess.run(
        [sys.executable, "-m", "turnline.cli", str(root / "nope")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert gone.returncode == 1 and "does not exist" in gone.stderr


def test_the_front_doors_log_names_are_the_cores() -> None:
    """`cli.fast.holds_no_log` (lean: no reader loaded) knows a log's name as the core
    does (`core.root.is_log_name`)."""
    from turnline.cli import fast
    from turnline.core.logfile import RAW_SUFFIX, ZSTD_SUFFIX
    from turnline.core.writer import TEMP_PREFIX

    assert fast._LOG_SUFFIXES == (RAW_SUFFIX, ZSTD_SUFFIX)
    assert fast._TEMP_PREFIX == TEMP_PREFIX
