"""Log text that reaches a command's plain output comes out inert: no escape sequence,
C1 control or bidi override, and no line break of its own; a time past the calendar
makes no traceback. (Cases a helper's fuzzing found in diff, usage and show.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from turnline.cli.main import main

#: What the log holds: OSC 52 (clipboard), CSI clear, a C1 CSI, a bidi override and a
#: line break, as JSON escapes.
HOSTILE = r"x\u001b]52;c;aGk=\u0007\u001b[2J\u009b31m\u202e\nINJECTED"
#: Anything that may drive a terminal, other than the layout's own newlines.
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _write(root: Path, sid: str, lines: list[str]) -> None:
    folder = root / "p" / sid
    folder.mkdir(parents=True)
    (folder / "session.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _inert(text: str) -> None:
    assert not UNSAFE.search(text), repr(text)
    assert "\nINJECTED" not in text  # the log's line break did not become one


def test_diff_shows_a_reason_kind_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head = '{"type":"session","version":0,"id":"%s","createdAt":1,"delegationDepth":0%s}'
    turn1 = [
        '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}',
        '{"type":"turn/end","seq":1,"time":3,"data":{"turn":1,"reason":{"kind":"completed"}}}',
    ]
    _write(tmp_path, "a", [head % ("a", ""), *turn1])
    child = ',"parentSession":"a","seedLength":2'
    hostile_end = (
        '{"type":"turn/end","seq":3,"time":5,"data":{"turn":2,"reason":{"kind":"@"}}}'
    ).replace("@", HOSTILE)
    turn2 = ['{"type":"turn/start","seq":2,"time":4,"data":{"turn":2}}', hostile_end]
    _write(tmp_path, "b", [head % ("b", child), *turn1, *turn2])
    code, out, _ = _run(capsys, "diff", str(tmp_path), "a", "b")
    assert code == 0 and "INJECTED" in out
    _inert(out)


def test_usage_names_unmetered_calls_inert(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(
        tmp_path,
        "s",
        [
            '{"type":"session","version":0,"id":"unm","createdAt":1,"delegationDepth":0}',
            '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}',
            '{"type":"@-llm-request","seq":1,"time":2,"data":{}}'.replace("@", HOSTILE),
            '{"type":"turn/end","seq":2,"time":3,"data":{"turn":1,"reason":{"kind":"completed"}}}',
        ],
    )
    for by in ("session", "model", "project", "day"):
        code, out, _ = _run(capsys, "usage", "--by", by, str(tmp_path))
        assert code == 0 and "without usage" in out, by
        _inert(out)


def test_show_names_a_string_version_inert(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(
        tmp_path,
        "s",
        [
            '{"type":"session","version":"@","id":"verstr","createdAt":1,"delegationDepth":0}'.replace(
                "@", HOSTILE
            ),
            '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}',
        ],
    )
    code, out, _ = _run(capsys, "show", str(tmp_path), "verstr")
    assert code == 0 and "format v" in out
    _inert(out)


@pytest.mark.parametrize("time", ["1e300", "100000000000000000000", "-100000000000000000000"])
def test_usage_by_day_names_a_time_past_the_calendar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], time: str
) -> None:
    _write(
        tmp_path,
        "s",
        [
            '{"type":"session","version":0,"id":"ovf","createdAt":1,"delegationDepth":0}',
            '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}',
            '{"type":"step/start","seq":1,"time":1,"data":{"turn":1,"step":1}}',
            (
                '{"type":"assistant/chunk","seq":2,"time":@,"data":{"turn":1,"step":1,'
                '"chunk":{"type":"usage","usage":{"inputTokens":5,"outputTokens":1}}}}'
            ).replace("@", time),
            '{"type":"step/end","seq":3,"time":3,"data":{"turn":1,"step":1}}',
            '{"type":"turn/end","seq":4,"time":3,"data":{"turn":1,"reason":{"kind":"completed"}}}',
        ],
    )
    code, out, err = _run(capsys, "usage", "--by", "day", str(tmp_path))
    assert code == 0, err
    assert "(no date)" in out


def test_an_argument_error_echoes_argv_inert(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["ls", "a", "b", "s1\x1b]52;c;aGk=\x07\x1b[31m\u202e/session.jsonl"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments" in err
    _inert(err.replace("\n", " "))
