"""The `turnline` CLI: commands, JSON shapes, errors and exit codes, safe text output.

Most cases call `main([...])` in-process (fast); a few run the real console entry in
a subprocess to check exit statuses, stdout/stderr separation and the absence of
tracebacks end to end.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import zstandard
from turnline.cli import main
from turnline.cli.main import default_root

HEADER = {
    "type": "session",
    "version": 0,
    "delegationDepth": 0,
    "id": "aaaa-parent",
    "createdAt": 5,
    "cwd": "/w/app",
}
SESSION_KEYS = [
    "id",
    "title",
    "cwd",
    "createdAt",
    "parentSession",
    "seedLength",
    "origin",
    "delegationDepth",
    "path",
    "format",
    "generations",
    "encoding",
    "events",
    "lastSeq",
    "lastActivity",
    "turns",
    "openTurn",
    "problems",
]
TURN_KEYS = [
    "turn",
    "startSeq",
    "endSeq",
    "turnStartSeq",
    "reason",
    "steps",
    "tools",
    "user",
    "assistant",
    "forkable",
]


def rec(seq: int, etype: str, **data: Any) -> dict[str, Any]:
    return {"type": etype, "seq": seq, "time": 1000 + seq, "data": data}


def turn(start: int, n: int, text: str, kind: str = "completed") -> list[dict[str, Any]]:
    return [
        rec(
            start,
            "user/message",
            role="user",
            content=[{"type": "text", "text": text}],
            source={"kind": "user"},
        ),
        rec(start + 1, "turn/start", turn=n),
        rec(start + 2, "step/start", turn=n, step=1),
        rec(start + 3, "tool/call", turn=n, step=1, callId=f"c{n}", name="bash"),
        rec(start + 4, "turn/end", turn=n, reason={"kind": kind}),
    ]


def write(path: Path, header: dict[str, Any], records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in [header, *records]))
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root with a parent (2 turns, then an open third), a seeded child and an orphan."""
    folder = tmp_path / "root"
    write(
        folder / "--w-app--" / "aaaa-parent" / "session.jsonl",
        HEADER,
        [
            *turn(0, 1, "first question"),
            *turn(5, 2, "second", "max-tokens"),
            rec(
                10,
                "user/message",
                role="user",
                content=[{"type": "text", "text": "third"}],
                source={"kind": "user"},
            ),
            rec(11, "turn/start", turn=3),
        ],
    )
    write(
        folder / "--w-app--" / "bbbb-child" / "session.jsonl",
        {
            **HEADER,
            "id": "bbbb-child",
            "createdAt": 6,
            "parentSession": "aaaa-parent",
            "seedLength": 5,
        },
        [*turn(0, 1, "first question"), *turn(5, 2, "child work")],
    )
    write(
        folder / "--w-app--" / "cccc-orphan" / "session.jsonl",
        {
            **HEADER,
            "id": "cccc-orphan",
            "createdAt": 7,
            "parentSession": "gone-1",
            "origin": "subagent",
        },
        turn(0, 1, "orphan"),
    )
    return folder


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code, out, err = run(capsys, *argv, "--json")
    assert err == ""
    return code, json.loads(out)


def digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# -- ls ----------------------------------------------------------------------------------


def test_ls_json_shape_and_cross_session_problems(root: Path, capsys: Any) -> None:
    code, entries = run_json(capsys, "ls", str(root))
    assert code == 0
    assert [list(e) for e in entries] == [SESSION_KEYS] * 3
    by_id = {e["id"]: e for e in entries}
    parent = by_id["aaaa-parent"]
    assert (parent["events"], parent["lastSeq"], parent["turns"], parent["openTurn"]) == (
        12,
        11,
        3,
        True,
    )
    assert parent["title"] == "first question"
    assert (parent["cwd"], parent["createdAt"], parent["encoding"]) == ("/w/app", 5, "raw")
    assert by_id["bbbb-child"]["parentSession"] == "aaaa-parent"
    assert by_id["bbbb-child"]["seedLength"] == 5
    orphan = by_id["cccc-orphan"]
    assert [p["kind"] for p in orphan["problems"]] == ["missing-parent"]
    assert set(orphan["problems"][0]) == {"kind", "message", "seq"}


@pytest.mark.parametrize("sort", [[], ["--sort", "created"], ["--sort", "lineage", "--reverse"]])
def test_ls_json_of_a_root_scanned_in_parallel_is_the_serial_document(
    tmp_path: Path, capsys: Any, monkeypatch: Any, sort: list[str]
) -> None:
    """A root big enough for the parallel scan (its entries written by the processes
    that scanned them, the columns joined here) prints the serial scan's very bytes,
    entries with cross-session problems (a missing parent, a duplicate id) included."""
    from turnline.core import root as root_module

    for k in range(1100):
        folder = tmp_path / f"--home-dev-p{k % 3}--" / f"s{k:05d}"
        folder.mkdir(parents=True)
        header = {**HEADER, "id": f"s{k % 1090:05d}", "createdAt": k * 7 % 13}
        if k % 9 == 4:
            header |= {"parentSession": f"s{k - 1 if k % 2 else k + 5000:05d}", "seedLength": 0}
        lines = [header, {"type": "user/message", "seq": 0, "time": 1, "data": {"content": "q"}}]
        (folder / "session.jsonl").write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    parallel_scans: list[bool] = []
    real = root_module.SessionRoot._scan_parallel

    def watched(self: Any, render: bool = False) -> Any:
        got = real(self, render=render)
        parallel_scans.append(got is not None)
        return got

    monkeypatch.setattr(root_module.SessionRoot, "_scan_parallel", watched)
    code, parallel_out, _ = run(capsys, "ls", str(tmp_path), "--json", *sort)
    assert code == 0 and parallel_scans == [True]
    monkeypatch.setattr(root_module.SessionRoot, "_scan_parallel", lambda self, render=False: None)
    code, serial_out, _ = run(capsys, "ls", str(tmp_path), "--json", *sort)
    assert code == 0
    assert parallel_out == serial_out
    kinds = {p["kind"] for e in json.loads(parallel_out) for p in e["problems"]}
    assert kinds == {"missing-parent", "duplicate-id"}


def test_ls_text_is_aligned_with_flags(root: Path, capsys: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run(capsys, "ls", str(root))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "TURNS", "EVENTS", "CREATED", "LAST", "FLAGS", "TITLE"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert "open-turn" in rows["aaaa-parent"]
    assert "fork" in rows["bbbb-child"]
    assert "subagent,1 problem" in rows["cccc-orphan"]
    title_col = lines[0].index("TITLE")
    assert all(line[title_col - 2 : title_col] == "  " for line in lines[1:])
    assert rows["aaaa-parent"][title_col:].startswith("first question")


def test_ls_empty_folder(tmp_path: Path, capsys: Any) -> None:
    assert run(capsys, "ls", str(tmp_path))[1].startswith("no sessions under")
    assert run_json(capsys, "ls", str(tmp_path)) == (0, [])


# -- default root -------------------------------------------------------------------------


def test_default_root_prefers_dsh_home(tmp_path: Path, monkeypatch: Any) -> None:
    home = tmp_path / "home"
    (home / ".dsh" / "sessions").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("DSH_HOME", raising=False)
    assert default_root() == home / ".dsh" / "sessions"
    dsh_home = tmp_path / "dsh"
    (dsh_home / "sessions").mkdir(parents=True)
    monkeypatch.setenv("DSH_HOME", str(dsh_home))
    assert default_root() == dsh_home / "sessions"


def test_no_default_root_points_to_the_demo(tmp_path: Path, monkeypatch: Any, capsys: Any) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "nope"))
    code, out, err = run(capsys, "ls")
    assert code == 1 and out == ""
    assert "turnline demo" in err and str(tmp_path / "nope" / "sessions") in err
    code, error = run_json(capsys, "ls")
    assert (code, error["error"]["code"]) == (1, "ROOT_NOT_FOUND")


def test_session_alone_uses_the_default_root(root: Path, monkeypatch: Any, capsys: Any) -> None:
    monkeypatch.setenv("DSH_HOME", str(root.parent))
    (root.parent / "sessions").symlink_to(root, target_is_directory=True)
    code, shown = run_json(capsys, "show", "bbbb")
    assert code == 0 and shown["session"]["id"] == "bbbb-child"


# -- show ---------------------------------------------------------------------------------


def test_show_json_shape(root: Path, capsys: Any) -> None:
    code, shown = run_json(capsys, "show", str(root), "aaaa")
    assert code == 0
    assert list(shown) == ["session", "turns", "seedLength"]
    assert list(shown["session"]) == SESSION_KEYS
    assert [list(t) for t in shown["turns"]] == [TURN_KEYS] * 3
    first, second, third = shown["turns"]
    # startSeq is the turn's first seq, its lead-in user message included (as `show`
    # prints it); turnStartSeq is the seq of its turn/start record.
    assert (first["startSeq"], first["endSeq"], first["reason"], first["forkable"]) == (
        0,
        4,
        "completed",
        True,
    )
    assert (first["turnStartSeq"], second["startSeq"], second["turnStartSeq"]) == (1, 5, 6)
    assert (first["steps"], first["tools"], first["user"]) == (1, ["bash"], "first question")
    assert (second["reason"], second["endSeq"]) == ("max-tokens", 9)
    assert (third["reason"], third["endSeq"], third["forkable"]) == ("open", None, False)
    assert shown["seedLength"] == 0


def test_show_json_has_the_full_problem_list(root: Path, capsys: Any) -> None:
    child = root / "--w-app--" / "bbbb-child" / "session.jsonl"
    data = child.read_bytes().replace(b"first question", b"FIRST question", 1)
    child.write_bytes(data)  # the seed no longer matches the parent's prefix
    _, shown = run_json(capsys, "show", str(root), "bbbb-child")
    assert [p["kind"] for p in shown["session"]["problems"]] == ["seed-mismatch"]
    assert shown["seedLength"] == 5


def test_show_text_marks_forkable_rows_and_the_seed(root: Path, capsys: Any) -> None:
    code, out, _ = run(capsys, "show", str(root), "bbbb-child")
    assert code == 0
    lines = out.splitlines()
    rows = [line for line in lines if re.match(r"^[◆ ]\s+\d+\s+\d+–", line)]
    assert len(rows) == 2 and all(row.startswith("◆") for row in rows)
    divider = lines.index("── forked from aaaa-parent at seq 4 ──")
    assert lines[divider - 1] == rows[0] and lines[divider + 1] == rows[1]
    _, out, _ = run(capsys, "show", str(root), "aaaa-parent")
    rows = [line for line in out.splitlines() if re.match(r"^[◆ ]\s+\d+\s+\d+–", line)]
    assert [row.startswith("◆") for row in rows] == [True, True, False]
    assert "open" in rows[2]


def test_show_a_log_path_alone_opens_that_file(root: Path, capsys: Any) -> None:
    path = root / "--w-app--" / "aaaa-parent" / "session.jsonl"
    code, shown = run_json(capsys, "show", str(path))
    assert code == 0 and shown["session"]["path"] == str(path)


def test_show_errors(root: Path, capsys: Any) -> None:
    code, error = run_json(capsys, "show", str(root), "zzz")
    assert (code, error["error"]["code"]) == (1, "SESSION_NOT_FOUND")
    write(root / "dup.jsonl", {**HEADER, "id": "aaaa-other"}, [])
    code, error = run_json(capsys, "show", str(root), "aaaa")
    assert (code, error["error"]["code"]) == (1, "AMBIGUOUS_SESSION")
    code, error = run_json(capsys, "show", str(root / "nope"), "x")
    assert (code, error["error"]["code"]) == (1, "ROOT_NOT_FOUND")
    (root / "file.txt").write_text("x")
    code, error = run_json(capsys, "show", str(root / "file.txt"), "x")
    assert (code, error["error"]["code"]) == (1, "ROOT_INVALID")
    code, out, err = run(capsys, "show", str(root), "zzz")
    assert (code, out) == (1, "")
    assert err.count("\n") == 1 and "zzz" in err


# -- fork ---------------------------------------------------------------------------------


def test_fork_json_and_the_parent_stays_identical(root: Path, capsys: Any) -> None:
    before = digest(root)
    code, forked = run_json(capsys, "fork", str(root), "aaaa", "--at", "4", "--id", "dddd-new")
    assert code == 0
    assert list(forked) == ["child", "parent", "boundary", "boundaryDefault", "root"]
    assert (forked["parent"], forked["boundary"]) == ("aaaa-parent", 4)
    child = forked["child"]
    assert list(child) == SESSION_KEYS
    assert (child["id"], child["parentSession"], child["seedLength"], child["events"]) == (
        "dddd-new",
        "aaaa-parent",
        5,
        6,  # the seed and the end-seed marker
    )
    assert child["path"] == str(root / "--w-app--" / "dddd-new" / "session.jsonl")
    after = digest(root)
    assert {k: after[k] for k in before} == before
    code, error = run_json(capsys, "fork", str(root), "aaaa", "--at", "9", "--id", "dddd-new")
    assert (code, error["error"]["code"]) == (1, "SESSION_ALREADY_EXISTS")
    assert digest(root) == after


@pytest.mark.parametrize(
    ("at", "hint"),
    [
        # issue 23: without --at the CLI now forks at the last turn/end (seq 9, see
        # tests/cli/test_issue23.py); the core's default (the last event) is refused
        # as before in tests/core.
        ("10", "nearest earlier turn/end is seq 9"),
        ("3", "nearest earlier turn/end is seq -"),
        ("-1", ">= 0"),
        ("1.5", "integer"),
        ("x", "integer"),
        ("12", "past the last event"),
    ],
)
def test_fork_invalid_boundaries(root: Path, capsys: Any, at: str | None, hint: str) -> None:
    before = digest(root)
    argv = ["fork", str(root), "aaaa-parent"] + (["--at", at] if at is not None else [])
    code, error = run_json(capsys, *argv)
    assert (code, error["error"]["code"]) == (1, "INVALID_BOUNDARY")
    message = error["error"]["message"]
    if at == "3":
        assert "no earlier turn/end" in message
    else:
        assert hint in message
    assert "aaaa-parent" in message and "last seq 11" in message
    assert digest(root) == before


def test_fork_text_and_default_uuid(root: Path, capsys: Any) -> None:
    code, out, err = run(capsys, "fork", str(root), "bbbb-child")
    assert code == 0 and err == ""
    first, second = out.splitlines()
    # issue 23: the line says the boundary was the default (it was "at seq 9 → ")
    assert first.startswith("forked bbbb-child at seq 9 (the last turn/end: --at not given) → ")
    child_id = first.rsplit(" ", 1)[1]
    assert Path(second.strip()) == root / "--w-app--" / child_id / "session.jsonl"
    assert Path(second.strip()).is_file()


def test_fork_unknown_source(root: Path, capsys: Any) -> None:
    code, error = run_json(capsys, "fork", str(root), "zzz")
    assert (code, error["error"]["code"]) == (1, "SESSION_NOT_FOUND")


# -- tree ---------------------------------------------------------------------------------


def test_tree_draws_the_forest(root: Path, capsys: Any) -> None:
    code, out, _ = run(capsys, "tree", str(root))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("aaaa-parent")
    assert lines[1].startswith("└── [seed 5] bbbb-child")
    assert lines[2] == "missing parent gone-1"
    assert lines[3].startswith("└── [subagent] cccc-orphan")


# -- safety --------------------------------------------------------------------------------


def test_log_text_cannot_drive_the_terminal(tmp_path: Path, capsys: Any) -> None:
    evil = "\x1b]0;pwned\x07\x1b[2J\u202eevil\x9b"
    write(
        tmp_path / "e.jsonl",
        {**HEADER, "id": f"id{evil}"},
        [
            rec(0, "session/title", title=f"title{evil}"),
            *turn(1, 1, f"ask{evil}")[:-1],
            rec(5, "tool/call", turn=1, step=1, callId="x", name=f"tool{evil}"),
            rec(6, "turn/end", turn=1, reason={"kind": f"odd{evil}"}),
        ],
    )
    outputs = [
        run(capsys, "ls", str(tmp_path)),
        run(capsys, "tree", str(tmp_path)),
        run(capsys, "show", str(tmp_path), "id"),
        run(capsys, "show", str(tmp_path), "nope\x1b[2J"),
    ]
    for _, out, err in outputs:
        for text in (out, err):
            assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text
            assert "\u202e" not in text
    assert "evil" in outputs[2][1] and "pwned" in outputs[2][1]  # shown, not obeyed


def test_json_output_survives_lone_surrogates(tmp_path: Path, capsys: Any) -> None:
    folder = tmp_path / "--w--" / "~D800x"  # a folder name decoding to a lone surrogate id
    folder.mkdir(parents=True)
    (folder / "session.jsonl").write_bytes(b"")
    code, entries = run_json(capsys, "ls", str(tmp_path))
    assert code == 0 and entries[0]["id"] == "\ud800x"
    assert run(capsys, "ls", str(tmp_path))[0] == 0


# -- open / demo / version / usage --------------------------------------------------------


def test_version(capsys: Any) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("turnline ")


def test_open_refuses_a_missing_root_before_loading_the_ui(tmp_path: Path, capsys: Any) -> None:
    code, out, err = run(capsys, str(tmp_path / "nope"))
    assert (code, out) == (1, "")
    assert "does not exist" in err
    code, _, err = run(capsys, "open", str(tmp_path / "nope"), "--poll")
    assert code == 1 and "does not exist" in err


def test_usage_errors_exit_2(capsys: Any) -> None:
    for argv in (
        ["show"],
        ["fork"],
        ["ls", "a", "b"],
        ["show", "a", "b", "c"],
        ["fork", "x", "--at"],
    ):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2
        assert "usage:" in capsys.readouterr().err


# -- real subprocesses ----------------------------------------------------------------------


def _cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "turnline.cli", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_subprocess_exit_codes_and_no_tracebacks(root: Path, tmp_path: Path) -> None:
    ok = _cli("ls", str(root), "--json")
    assert ok.returncode == 0 and len(json.loads(ok.stdout)) == 3
    bad = _cli("fork", str(root), "aaaa-parent", "--at", "5", "--json")
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["error"]["code"] == "INVALID_BOUNDARY"
    assert bad.stderr == ""
    text = _cli("show", str(tmp_path / "missing"), "x")
    assert text.returncode == 1 and text.stdout == ""
    assert len(text.stderr.splitlines()) == 1
    usage = _cli("fork")
    assert usage.returncode == 2
    for proc in (ok, bad, text, usage):
        assert "Traceback" not in proc.stderr


def test_subprocess_headless_commands_do_not_import_textual(root: Path) -> None:
    code = (
        "import sys; from turnline.cli import main; "
        f"main(['ls', {str(root)!r}]); main(['tree', {str(root)!r}]); "
        f"main(['show', {str(root)!r}, 'aaaa']); "
        "sys.stdout.flush(); "
        "print('TEXTUAL', any(m == 'textual' or m.startswith('textual.') for m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "TEXTUAL False"


def test_subprocess_broken_pipe_is_quiet(root: Path) -> None:
    for n in range(30):
        write(root / f"many-{n}.jsonl", {**HEADER, "id": f"many-{n}"}, turn(0, 1, "x" * 4000))
    proc = subprocess.Popen(
        [sys.executable, "-m", "turnline.cli", "ls", str(root), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)
    proc.stdout.close()  # the reader goes away, like `| head -c 10`
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err


GARBAGE: dict[str, bytes] = {
    "empty": b"",
    "binary": bytes(range(256)) * 4,
    "nul-line": b"\x00" * 64 + b"\n",
    "array": b"[1, 2, 3]\n",
    "header-only-torn": b'{"type":"session","id":"h',
    "header-list-data": b'{"type":"session","version":0,"delegationDepth":0,"id":"g1"}\n'
    b'{"type":"turn/start","seq":0,"time":"x","data":[1]}\n'
    b'{"type":"user/message","seq":1,"time":1,"data":"text"}\n'
    b'{"type":"turn/end","seq":2,"time":1,"data":{"reason":{"kind":["x"]}}}\n',
    "weird-seqs": b'{"type":"session","version":0,"delegationDepth":0,"id":"g2",'
    b'"seedLength":-4,"parentSession":7}\n'
    b'{"type":"turn/end","seq":-1,"time":1,"data":{}}\n'
    b'{"type":"turn/end","seq":99999999999999999999,"time":1,"data":{}}\n'
    b'{"type":"text-chunks","seq0":3,"time0":1,"data":{"dt":[1],"texts":["a"]}}\n'
    b'{"type":"turn/end","seq":4,"time":1,"data":{}}\n',
    "bad-utf8": b'{"type":"session","version":0,"delegationDepth":0,"id":"g3"}\n'
    b'{"type":"x","seq":0,"data":"\xff"}\n',
    "foreign": b'{"type":"session","version":9,"id":"g4","createdAt":-1}\n',
}


def test_garbage_logs_never_traceback(tmp_path: Path, capsys: Any) -> None:
    for name, data in GARBAGE.items():
        (tmp_path / f"{name}.jsonl").write_bytes(data)
    frame = zstandard.ZstdCompressor().compress(
        b'{"type":"session","version":0,"delegationDepth":0,"id":"z"}\n'
    )
    (tmp_path / "z-torn.jsonl.zstd").write_bytes(frame + frame[:5])
    (tmp_path / "z-junk.jsonl.zstd").write_bytes(b"\x28\xb5\x2f\xfd" + b"junk" * 10)
    code, entries = run_json(capsys, "ls", str(tmp_path))
    assert code == 0 and len(entries) >= 1
    assert run(capsys, "ls", str(tmp_path))[0] == 0
    assert run(capsys, "tree", str(tmp_path))[0] == 0
    for path in sorted(tmp_path.iterdir()):
        for argv in (["show", str(tmp_path), str(path)], ["fork", str(tmp_path), str(path)]):
            code, _, err = run(capsys, *argv)
            assert code in (0, 1), (argv, err)
            code, payload = run_json(capsys, *argv)
            assert code in (0, 1) and (code == 0) == ("error" not in payload), (argv, payload)


def test_a_lone_folder_argument_explains_itself(
    root: Path, tmp_path: Path, monkeypatch: Any, capsys: Any
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("DSH_HOME", raising=False)
    for command in ("show", "fork"):
        code, error = run_json(capsys, command, str(root))
        assert code == 1
        assert error["error"]["code"] == "NOT_A_SESSION"
        message = error["error"]["message"]
        assert "is a folder, not a session; to use it as ROOT, name a SESSION after it" in message
        assert ".dsh" not in message  # the missing default root is beside the point


@pytest.mark.parametrize("argv", [["ls", "--json"], ["search", "x", "--json"]])
def test_subprocess_ctrl_c_ends_quietly_by_the_signal(root: Path, argv: list[str]) -> None:
    """Ctrl-C anywhere in a command (here: at the work's start, in either door) prints
    no traceback; the process ends by SIGINT, as a shell expects (status 130)."""
    import signal

    command, *rest = argv
    code = (
        "import importlib, sys\n"
        "import turnline.cli.fast as fast\n"
        "full = importlib.import_module('turnline.cli.main')\n"
        "def interrupted(*_args, **_kw):\n"
        "    raise KeyboardInterrupt\n"
        "full.main = interrupted\n"
        "fast._answer = interrupted\n"
        f"sys.argv = ['turnline', {command!r}, {str(root)!r}, *{rest!r}]\n"
        "fast.console()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGINT
    assert proc.stderr == ""
    assert proc.stdout == ""
