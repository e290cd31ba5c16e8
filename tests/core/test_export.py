"""Export: Markdown and HTML snapshots (own-only, hostile text) and atomic writing."""

from __future__ import annotations

import os
from html.parser import HTMLParser
from pathlib import Path

import orjson
import pytest
from markdown_it import MarkdownIt
from syrupy.assertion import SnapshotAssertion
from turnline.core.export import ExportError, export, turn_markdown, write_export
from turnline.core.root import SessionRoot

from .rich_logs import forked_pair


def _stable(text: str, root: Path) -> str:
    return text.replace(str(root), "<root>")


@pytest.fixture
def root(tmp_path: Path) -> SessionRoot:
    return forked_pair(tmp_path)


@pytest.mark.parametrize("fmt", ["md", "html"])
@pytest.mark.parametrize("own_only", [False, True])
def test_export_snapshot(
    root: SessionRoot, tmp_path: Path, fmt: str, own_only: bool, snapshot: SnapshotAssertion
) -> None:
    text = export(root.load(root.resolve("left")), fmt, own_only=own_only)
    assert _stable(text, tmp_path) == snapshot


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_hostile_text_stays_text(root: SessionRoot, fmt: str) -> None:
    text = export(root.load(root.resolve("left")), fmt)
    assert "\x1b" not in text and "\x07" not in text
    if fmt == "html":
        assert "<script>" not in text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
        assert "http" not in text.replace('http-equiv="Content-Security-Policy"', "")
        assert "<details><summary>Reasoning</summary>" in text
    else:
        assert "[bold red]x[/] <script>" in text  # Markdown: literal, but no escapes
        # The fence around a result holding ``` is longer than any run inside it.
        assert "````\nedited" in text


def test_own_only_replaces_inherited_turns(root: SessionRoot) -> None:
    loaded = root.load(root.resolve("left"))
    full = export(loaded, "md")
    own = export(loaded, "md", own_only=True)
    assert "## Turn 1" in full and "## Turn 1" not in own
    assert "*forked from parent-1 at turn 1 (seq 7)*" in own
    assert "## Turn 2" in own


def test_results_are_truncated_with_a_note(root: SessionRoot) -> None:
    text = export(root.load(root.resolve("left")), "md")
    assert "truncated: " in text and "y" * 2500 not in text


def test_turn_markdown(root: SessionRoot) -> None:
    loaded = root.load(root.resolve("right"))
    text = turn_markdown(loaded, loaded.timeline.turns[-1])
    assert text.startswith("# ") and "turn 3" in text and "answer 3: right work" in text


def _entries(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


def test_write_is_atomic_and_never_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "out" / "s.md"
    target.parent.mkdir()
    write_export(target, "one\n")
    assert target.read_text() == "one\n"
    with pytest.raises(ExportError) as info:
        write_export(target, "two\n")
    assert info.value.code == "EXISTS"
    assert target.read_text() == "one\n"
    write_export(target, "three\n", replace=True)
    assert target.read_text() == "three\n"
    assert _entries(target.parent) == ["s.md"]  # no temporary left


def test_a_failed_write_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "s.html"

    def fail(step: str) -> None:
        raise OSError(28, "No space left on device")

    with pytest.raises(ExportError) as info:
        write_export(target, "x", _fault=fail)
    assert info.value.code == "WRITE_FAILED"
    assert "No space left" in info.value.message
    assert _entries(tmp_path) == []


def test_a_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ExportError) as info:
        write_export(tmp_path / "nope" / "s.md", "x")
    assert "no folder" in info.value.message


def test_every_fixture_exports(fixtures_root: Path) -> None:
    """All real logs export to md and html; no escape byte survives, no raw `<script`."""
    root = SessionRoot(fixtures_root)
    summaries = root.scan()
    assert len(summaries) >= 100
    for summary in summaries:
        loaded = root.load(summary)
        for fmt in ("md", "html"):
            text = export(loaded, fmt, own_only=summary.parent_session is not None)
            assert "\x1b" not in text
            if fmt == "html":
                assert "<script" not in text.lower()


_HOSTILE = "<img src=x onerror=alert(1)><script>alert(2)</script>"
_NAME = f"bash`{_HOSTILE}`"
_ALLOWED_TAGS = {"h1", "h2", "ul", "li", "code", "pre", "p", "strong", "em", "details", "summary"}


def _hostile_log(path: Path, reply: str) -> Path:
    """One turn whose every field a log controls holds HTML, backticks or a fence."""
    user = {"content": [{"type": "text", "text": f"U {_HOSTILE}"}], "role": "user", "id": "u1"}
    message = {
        "role": "assistant",
        "id": "a1",
        "content": [
            {"type": "text", "text": reply},
            {"type": "tool-call", "id": "c1", "name": _NAME, "arguments": "{}"},
        ],
        "source": {"kind": "model", "provider": "p", "model": f"m`{_HOSTILE}`"},
    }
    result = {"type": "tool-result", "toolCallId": "c1", "content": "out", "isError": False}
    error = {"kind": "error", "error": {"message": f"E {_HOSTILE}", "code": "X"}}
    rows = [
        {"type": "session", "version": 0, "id": f"s`{_HOSTILE}`", "createdAt": 1, "cwd": "/w`x`"},
        {"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}},
        {"type": "user/message", "seq": 1, "time": 2, "data": user},
        {"type": "session/title", "seq": 2, "time": 3, "data": {"title": f"# T {_HOSTILE}"}},
        {"type": "assistant/message", "seq": 3, "time": 4, "data": {"message": message}},
        {"type": "tool/call", "seq": 4, "time": 5, "data": {"callId": "c1", "name": _NAME}},
        {
            "type": "tool/result",
            "seq": 5,
            "time": 6,
            "data": {"message": {"role": "user", "content": [result]}},
        },
        {"type": "turn/end", "seq": 6, "time": 7, "data": {"turn": 1, "reason": error}},
    ]
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return path


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))


@pytest.mark.parametrize("reply", [f"A {_HOSTILE}", "Code:\n\n```python\nprint(1)\n(cut off)"])
def test_a_markdown_export_renders_every_field_as_text(tmp_path: Path, reply: str) -> None:
    """Rendered by a CommonMark renderer, a Markdown export holds no tag or attribute
    from the log (no raw HTML, no field leaving its code span), and an unclosed fence
    in a reply does not swallow what follows it."""
    _hostile_log(tmp_path / "p" / "s" / "session.jsonl", reply)
    root = SessionRoot(tmp_path)
    loaded = root.load(root.summaries()[0])
    rendered = MarkdownIt("commonmark").render(export(loaded, "md"))
    tags = _Tags()
    tags.feed(rendered)
    assert {tag for tag, _attrs in tags.tags} <= _ALLOWED_TAGS, rendered
    assert all(attrs in ([], [("class", "language-json")]) for _tag, attrs in tags.tags)
    assert [tag for tag, _attrs in tags.tags].count("h1") == 1  # the title's `#` is text
    assert "<p><strong>Tool call</strong> <code>bash`" in rendered
    assert "<pre><code>out\n</code></pre>" in rendered  # the result in its own block
