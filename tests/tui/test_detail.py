"""The detail pane: the fork verdict from the core, bounded fields, readable tool calls,
usage lines, plurals, Enter that (un)folds without jumping, the log's path and the
turn's usage in the header, and the find inside the turn (Ctrl+F, n / N, Escape)."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from rich.syntax import Syntax
from rich.text import Text
from textual.widgets import Collapsible, Input, Static
from turnline.core.content import FIELD_LIMIT
from turnline.core.logfile import LogReader
from turnline.core.model import SessionEvent, SessionHeader
from turnline.tui import TurnlineApp
from turnline.tui.widgets import TurnDetail
from turnline.tui.widgets._turn_detail import CURRENT_STYLE, MATCH_STYLE, middle_cut

from .conftest import (
    CWD,
    T0,
    copy_fixture_scenarios,
    turn,
    user_prices,
    wait_for,
    write_session,
)

SIZE = (120, 36)
MB = 1024 * 1024


async def open_turn(pilot: Any, app: TurnlineApp, path: Path, row: int) -> TurnDetail:
    """Open `path`, put the timeline cursor on `row`, and wait for its detail."""
    await wait_for(pilot, lambda: app.snapshot is not None)
    app.open_session(path)

    def loaded() -> bool:
        """the session's timeline"""
        return app.view is not None and app.view.path == path and app._wanted is None

    await wait_for(pilot, loaded)
    app.timeline.focus()
    app.timeline.move_cursor(row=row)
    detail = app.detail

    def shown() -> bool:
        """the turn's detail"""
        verdict = detail._verdict
        return verdict is not None and verdict.index == row

    await wait_for(pilot, shown)
    await pilot.pause()
    return detail


def contents(detail: TurnDetail) -> list[Any]:
    """What each Static of the pane was given (Text, Syntax, Content)."""
    return [widget.content for widget in detail.query(Static)]


def plain(detail: TurnDetail) -> str:
    out = []
    for content in contents(detail):
        if isinstance(content, Syntax):
            out.append(content.code)
        else:
            out.append(str(getattr(content, "plain", content)))
    return "\n".join(out)


def footer_actions(app: TurnlineApp) -> dict[str, str]:
    """The actions the footer offers now, by description."""
    return {
        binding.description: binding.action
        for (_, binding, enabled, _) in app.active_bindings.values()
        if enabled and binding.show
    }


async def test_a_row_past_a_seq_gap_is_not_called_a_fork_point(
    fixtures_root: Path, tmp_path: Path
) -> None:
    root = copy_fixture_scenarios(
        fixtures_root, tmp_path / "root", ["acp-snapshot-suite/suite_authored-error"]
    )
    path = root / "acp-snapshot-suite/suite_authored-error/session.jsonl"
    app = TurnlineApp(root, tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        detail = await open_turn(pilot, app, path, 0)
        heading = plain(detail)
        assert detail._verdict is not None and not detail._verdict.forkable
        assert "fork point: f forks here" not in heading
        assert "✖ not a fork point:" in heading
        # The same words `f` refuses with: the fork rule's own message.
        assert detail._verdict.refusal is not None
        assert detail._verdict.refusal[:40] in heading


def huge_root(root: Path) -> tuple[Path, Path]:
    """A session whose turn 1 holds a 10 MB assistant message and a 10 MB tool result,
    and whose turn 2 holds a 10 MB user message (in the timeline's user column too) and
    a folded 40 MB tool result."""
    big = "a" * (10 * MB)
    events = turn(0, 1, "make it big", big, tools=[("read", {"path": "x"}, "r" * (10 * MB))])
    events += turn(
        len(events), 2, "u" * (10 * MB), "done", tools=[("read", {"path": "y"}, "z" * (40 * MB))]
    )
    path = write_session(root, SessionHeader(id="huge", created_at=T0, cwd=CWD), events)
    small = write_session(
        root, SessionHeader(id="small", created_at=T0 + 1, cwd=CWD), turn(0, 1, "hi", "hello")
    )
    return path, small


def held_chars(detail: TurnDetail) -> int:
    return sum(len(text) for text in plain(detail).split("\n"))


async def test_huge_fields_are_drawn_as_a_bounded_prefix_and_keys_still_answer(
    tmp_path: Path,
) -> None:
    path, _ = huge_root(tmp_path / "root")
    app = TurnlineApp(tmp_path / "root", tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        detail = await open_turn(pilot, app, path, 0)
        # Two 10 MB fields: the pane holds a bounded prefix of each, and says the rest.
        assert held_chars(detail) < 3 * FIELD_LIMIT + 10_000
        text = plain(detail)
        assert "… 9.9 MB more (v: raw events, o: open in pager)" in text
        detail.focus()
        await pilot.press("enter")  # unfold the 10 MB result
        await pilot.pause()
        assert not any(fold.collapsed for fold in detail.query(Collapsible))
        assert held_chars(detail) < 3 * FIELD_LIMIT + 10_000
        # The raw view is bounded too.
        await pilot.press("v")
        await wait_for(pilot, lambda: bool(detail.query(".raw")))
        assert held_chars(detail) < 4 * FIELD_LIMIT + 10_000
        assert "MB more" in plain(detail)
        await pilot.press("v")
        # Turn 2: a folded 40 MB result, highlighted.
        app.timeline.focus()
        await pilot.press("down")
        await wait_for(pilot, lambda: detail._verdict is not None and detail._verdict.index == 1)
        await pilot.pause()
        assert held_chars(detail) < 2 * FIELD_LIMIT + 10_000
        assert "… 39.9 MB more" in plain(detail)
        # A key is answered: the help opens and closes.
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: app.screen is not app.screen_stack[0])
        await pilot.press("escape")
        assert app.is_running


def readable_events() -> list[SessionEvent]:
    events = turn(
        0,
        1,
        "fix it",
        "fixed",
        tools=[
            ("bash", {"command": "cd web && \\\n  grep -rn 'a[b]' src/\necho done"}, "ok"),
            (
                "edit",
                {"file_path": "settings.txt", "old_string": "blue\n", "new_string": "green\n"},
                "ok",
            ),
        ],
    )
    end = events.pop()
    events.append(
        SessionEvent(
            "assistant/message",
            end.seq,
            end.time,
            {
                "turn": 1,
                "step": 1,
                "message": {
                    "role": "assistant",
                    "content": [],
                    "source": {"provider": "deepseek", "model": "deepseek-chat"},
                },
                "usage": {"inputTokens": 1200, "outputTokens": 34, "cacheReadTokens": 1000},
            },
        )
    )
    events.append(SessionEvent(end.type, end.seq + 1, end.time, end.data))
    return events


async def test_tool_calls_read_as_code_and_diffs_with_usage_and_plurals(tmp_path: Path) -> None:
    path = write_session(
        tmp_path / "root", SessionHeader(id="readable", created_at=T0, cwd=CWD), readable_events()
    )
    app = TurnlineApp(tmp_path / "root", tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        detail = await open_turn(pilot, app, path, 0)
        syntaxes = [c for c in contents(detail) if isinstance(c, Syntax)]
        commands = [
            s.code for s in syntaxes if s.lexer is not None and "bash" in str(s.lexer.name).lower()
        ]
        # Real newlines, the command as typed (not escaped JSON), brackets literal.
        assert commands == ["cd web && \\\n  grep -rn 'a[b]' src/\necho done"]
        diffs = [
            s.code for s in syntaxes if s.lexer is not None and "diff" in str(s.lexer.name).lower()
        ]
        assert len(diffs) == 1
        assert "-blue" in diffs[0] and "+green" in diffs[0] and "settings.txt" in diffs[0]
        titles = [str(c.title) for c in detail.query(Collapsible)]
        assert "⚒ edit(settings.txt) ✓" in titles
        text = plain(detail)
        assert "1 step ·" in text and "1 steps" not in text
        usage = [c for c in contents(detail) if isinstance(c, Text) and c.plain.startswith("Σ")]
        assert [u.plain for u in usage] == [
            "Σ step 1 · deepseek/deepseek-chat · 1,200 in · 34 out · cache 1,000 read · 0 write"
        ]


async def test_unfold_all_keeps_the_header_on_top_and_the_footer_says_what_enter_does(
    tmp_path: Path,
) -> None:
    long_user = "\n".join(f"line {i}" for i in range(60))
    events = turn(
        0,
        1,
        long_user,
        "ok",
        tools=[("read", {"path": "x"}, "\n".join("r" * 20 for _ in range(80)))],
    )
    path = write_session(
        tmp_path / "root", SessionHeader(id="folds", created_at=T0, cwd=CWD), events
    )
    app = TurnlineApp(tmp_path / "root", tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        detail = await open_turn(pilot, app, path, 0)
        detail.focus()
        await pilot.pause()
        assert footer_actions(app).get("Unfold all") == "unfold_all"
        assert "Fold all" not in footer_actions(app)
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert not any(fold.collapsed for fold in detail.query(Collapsible))
        assert detail.scroll_y == 0  # the turn header stays on top
        assert "Unfold all" not in footer_actions(app)
        assert footer_actions(app).get("Fold all") == "fold_all"
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert all(fold.collapsed for fold in detail.query(Collapsible))
        assert detail.scroll_y == 0
        # Raw view: Enter does nothing there, so the footer does not offer it.
        await pilot.press("v")
        await pilot.pause()
        assert "Unfold all" not in footer_actions(app) and "Fold all" not in footer_actions(app)


# -- issue 10: the log's path in the header ---------------------------------------------


def heading(detail: TurnDetail) -> str:
    """The turn header's text."""
    content = detail.query_one(".heading", Static).content
    assert isinstance(content, Text)
    return content.plain


def test_middle_cut_keeps_the_start_and_the_end() -> None:
    path = "/var/folders/2g/abcdefghijklmnop/T/acp-snapshot-suite/suite_authored-error/x.jsonl"
    cut = middle_cut(path, 40)
    assert len(cut) == 40 and "…" in cut
    assert cut.startswith("/var/folders/") and cut.endswith("/x.jsonl")
    assert middle_cut("/short/path", 40) == "/short/path"


async def test_the_header_shows_the_log_path_literally_cut_in_the_middle_and_y_copies_it(
    tmp_path: Path,
) -> None:
    # A project folder (the encoded cwd) too long for the pane, with markup-like text.
    cwd = "/var/folders/2g/[bold]" + "very-long-folder-name-" * 5 + "/T/acp-snapshot"
    root = tmp_path / "root"
    header = SessionHeader(id="pathy", created_at=T0, cwd=cwd)
    path = write_session(root, header, turn(0, 1, "hi", "yo"))
    app = TurnlineApp(root, tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        detail = await open_turn(pilot, app, path, 0)
        log_line = next(ln for ln in heading(detail).split("\n") if ln.startswith("log "))
        shown = log_line.removeprefix("log ")
        relative = str(path.relative_to(root.resolve()))  # shown under the root's folder
        assert len(relative) > detail.scrollable_content_region.width  # it had to be cut
        assert "…" in shown and len(shown) < len(relative)
        start, end = shown.split("…")
        assert relative.startswith(start) and relative.endswith(end)
        assert start.startswith("--var-folders-2g-")
        assert end.endswith("pathy/session.jsonl")  # the distinguishing part stays
        detail.focus()
        await pilot.press("y")
        assert app.clipboard == str(path)  # the whole path


async def test_a_single_log_shows_its_whole_path_as_literal_text(tmp_path: Path) -> None:
    folder = tmp_path / "[bold red]logs"
    header = SessionHeader(id="solo", created_at=T0, cwd=CWD)
    path = write_session(folder, header, turn(0, 1, "hi", "yo")).resolve()
    app = TurnlineApp(path, tz=UTC)
    async with app.run_test(size=(240, 40)) as pilot:
        detail = await open_turn(pilot, app, path, 0)
        assert f"log {path}" in heading(detail).split("\n")  # markup stays text


# -- issue 11: the turn's usage in the header -------------------------------------------

BUCKETS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens")


def config_model(config: Any) -> str | None:
    if not isinstance(config, dict):
        return None
    provider, model = config.get("provider"), config.get("model")
    if isinstance(provider, str) and isinstance(model, str):
        return f"{provider}/{model}"
    return model if isinstance(model, str) else None


def independent_turn_usage(
    events: list[SessionEvent], first_seq: int, last_seq: int | None
) -> dict[str, list[int]]:
    """The issue's rule, written again here: per model [in, out, cacheRead, cacheWrite,
    reasoning, calls] over the turn's samples, a later sample for the same (turn, step)
    replacing the earlier one unless an `llm/retry-started` for it came between (dsh's
    usage projection: the retried attempt adds); a chunk sample takes the latest
    request/header's model."""
    model = "unknown"
    samples: dict[tuple[Any, Any, int], tuple[str, list[int]]] = {}
    attempts: dict[tuple[Any, Any], int] = {}
    for event in events:
        if last_seq is not None and event.seq > last_seq:
            break
        data = event.data if isinstance(event.data, dict) else {}
        if event.type == "request/header":
            header = data.get("header")
            found = config_model(header.get("config") if isinstance(header, dict) else None)
            model = found or model
        if event.seq < first_seq:
            continue
        if event.type == "llm/retry-started":
            key = (data.get("turn"), data.get("step"))
            attempts[key] = attempts.get(key, 0) + 1
            continue
        usage, sample_model = None, model
        if event.type == "assistant/chunk":
            chunk = data.get("chunk")
            if isinstance(chunk, dict) and chunk.get("type") == "usage":
                usage = chunk.get("usage")
        elif event.type == "assistant/message" and data.get("usage"):
            usage = data["usage"]
            message = data.get("message")
            source = message.get("source") if isinstance(message, dict) else None
            sample_model = config_model(source) or model
        if isinstance(usage, dict):
            row = [int(usage.get(k) or 0) for k in BUCKETS]
            key = (data.get("turn"), data.get("step"))
            samples[(*key, attempts.get(key, 0))] = (sample_model, row)
    out: dict[str, list[int]] = {}
    for sample_model, row in samples.values():
        mine = out.setdefault(sample_model, [0] * 6)
        for i, n in enumerate(row):
            mine[i] += n
        mine[5] += 1
    return out


def bucket_words(row: list[int]) -> str:
    text = f"{row[0]:,} in · {row[1]:,} out"
    if row[4]:
        text += f" ({row[4]:,} reasoning)"
    if row[2] or row[3]:
        text += f" · cache {row[2]:,} read · {row[3]:,} write"
    calls = f"{row[5]} call" + ("" if row[5] == 1 else "s")
    return text + f" · {calls}"


def usage_text(expected: dict[str, list[int]]) -> list[str]:
    """The header lines the expected usage reads as."""
    if len(expected) == 1:
        ((model, row),) = expected.items()
        return [f"Σ turn · {model} · {bucket_words(row)}"]
    total = [sum(row[i] for row in expected.values()) for i in range(6)]
    lines = [f"Σ turn · {bucket_words(total)}"]
    return lines + [f"  {m} · {bucket_words(row)}" for m, row in sorted(expected.items())]


USAGE_FIXTURES = (
    "jsonrpc/bash-tool",
    "web/cordis-tool-round",
    "acp/empty-response-retry",
    "python-sdk/python-sdk-single-exe_advanced",
)


async def test_the_header_shows_the_turns_usage_by_bucket_and_model_as_an_independent_fold(
    fixtures_root: Path, tmp_path: Path
) -> None:
    root = copy_fixture_scenarios(fixtures_root, tmp_path / "root", USAGE_FIXTURES)
    logs = sorted(root.rglob("*.jsonl"))
    app = TurnlineApp(root, tz=UTC)
    checked = 0
    async with app.run_test(size=(200, 50)) as pilot:
        for log in logs:
            events = LogReader(log).read().events
            await wait_for(pilot, lambda: app.snapshot is not None)
            app.open_session(log.resolve())
            await wait_for(
                pilot,
                lambda log=log: (
                    app.view is not None and app.view.path == log.resolve() and app._wanted is None
                ),
            )
            view = app.view
            assert view is not None
            for index, turn_view in enumerate(view.turns):
                detail = await open_turn(pilot, app, log.resolve(), index)
                text = heading(detail)
                turn_ = turn_view.turn
                expected = independent_turn_usage(events, turn_.first_seq, turn_.end_seq)
                if not expected:
                    assert "Σ turn: no usage recorded" in text
                    continue
                lines = text.split("\n")
                for expected_line in usage_text(expected):
                    assert expected_line in lines
                checked += 1
    assert checked >= 5  # the fixtures do have usage


def two_model_events() -> list[SessionEvent]:
    """Turn 1 configures model A; turn 2 has no header of its own: a chunk sample that
    no message replaced (a failed call, model A from turn 1's header) and a message of
    model B that replaced its own early chunk sample."""
    events = turn(0, 1, "one", "first")
    events.insert(
        1,
        SessionEvent(
            "request/header", 1, T0, {"header": {"config": {"provider": "p", "model": "a"}}}
        ),
    )
    events = [SessionEvent(e.type, i, e.time, e.data) for i, e in enumerate(events)]
    second = turn(len(events), 2, "two", "second")
    end = second.pop()
    seq = end.seq

    def add(etype: str, data: Any) -> None:
        nonlocal seq
        second.append(SessionEvent(etype, seq, end.time, data))
        seq += 1

    usage = {"inputTokens": 10, "outputTokens": 5, "reasoningTokens": 2}
    add("assistant/chunk", {"turn": 2, "step": 1, "chunk": {"type": "usage", "usage": usage}})
    early = {"inputTokens": 1, "outputTokens": 1}
    add("assistant/chunk", {"turn": 2, "step": 2, "chunk": {"type": "usage", "usage": early}})
    final = {"inputTokens": 300, "outputTokens": 40, "cacheReadTokens": 7, "cacheWriteTokens": 3}
    add(
        "assistant/message",
        {
            "turn": 2,
            "step": 2,
            "message": {
                "role": "assistant",
                "content": [],
                "source": {"provider": "q", "model": "b"},
            },
            "usage": final,
        },
    )
    add(end.type, end.data)
    return events + second


async def test_the_turns_usage_covers_models_replaced_samples_and_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_prices(
        tmp_path,
        monkeypatch,
        "[p.a]\ninput = 1.0\noutput = 2.0\ncacheRead = 0.5\ncacheWrite = 1.5\n"
        "[q.b]\ninput = 10.0\noutput = 20.0\ncacheRead = 5.0\ncacheWrite = 15.0\n",
    )
    events = two_model_events()
    path = write_session(
        tmp_path / "root", SessionHeader(id="models", created_at=T0, cwd=CWD), events
    )
    app = TurnlineApp(tmp_path / "root", tz=UTC)
    async with app.run_test(size=(200, 50)) as pilot:
        detail = await open_turn(pilot, app, path, 1)
        view = app.view
        assert view is not None
        turn_ = view.turns[1].turn
        expected = independent_turn_usage(events, turn_.first_seq, turn_.end_seq)
        assert expected == {"p/a": [10, 5, 0, 0, 2, 1], "q/b": [300, 40, 7, 3, 0, 1]}
        cost_a = (10 * 1.0 + 5 * 2.0) / 1e6
        cost_b = (300 * 10.0 + 40 * 20.0 + 7 * 5.0 + 3 * 15.0) / 1e6
        lines = heading(detail).split("\n")
        assert (
            f"Σ turn · {bucket_words([310, 45, 7, 3, 2, 2])} · cost {cost_a + cost_b:.4f}" in lines
        )
        assert f"  p/a · {bucket_words(expected['p/a'])} · cost {cost_a:.4f}" in lines
        assert f"  q/b · {bucket_words(expected['q/b'])} · cost {cost_b:.4f}" in lines


# -- issue 12: find in the turn ---------------------------------------------------------


def spans_of(static: Static) -> list[tuple[str, str]]:
    """The highlighted pieces of a Static's Text: (text, style)."""
    content = static.content
    assert isinstance(content, Text)
    return [
        (content.plain[span.start : span.end], str(span.style))
        for span in content.spans
        if str(span.style) in (MATCH_STYLE, CURRENT_STYLE)
    ]


def find_status(detail: TurnDetail) -> str:
    content = detail.query_one("#find-status", Static).content
    assert isinstance(content, Text)
    return content.plain


async def test_ctrl_f_finds_in_the_turn_any_case_chinese_too_and_escape_clears(
    tmp_path: Path,
) -> None:
    events = turn(
        0,
        1,
        "我们在这里分叉吧。Fork here, then FORK again",
        "好的，分叉完成。fork done",
        tools=[("read", {"path": "notes.md"}, "\n".join(["x"] * 40) + "\n分叉 in a long result")],
    )
    path = write_session(
        tmp_path / "root", SessionHeader(id="findme", created_at=T0, cwd=CWD), events
    )
    app = TurnlineApp(tmp_path / "root", tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        detail = await open_turn(pilot, app, path, 0)
        detail.focus()
        await pilot.press("ctrl+f")
        box = detail.query_one("#find-input", Input)
        assert box.has_focus
        for key in "fork":
            await pilot.press(key)
        await pilot.pause()
        # Case-insensitive: Fork, FORK and fork.
        assert [m for m in detail.matches] and len(detail.matches) == 3
        assert "match 1/3" in find_status(detail)
        await pilot.press("enter")  # back to the pane: n / N move
        assert detail.has_focus
        await pilot.press("n")
        assert "match 2/3" in find_status(detail)
        user = detail._fields[detail.matches[0].field].static
        assert spans_of(user) == [("Fork", MATCH_STYLE), ("FORK", CURRENT_STYLE)]
        await pilot.press("N", "N")
        assert "match 3/3" in find_status(detail)  # wraps around
        # Chinese text, and a match inside a folded tool result.
        await pilot.press("ctrl+f")
        box.value = "分叉"
        await pilot.pause()
        assert len(detail.matches) == 3
        assert "match 1/3" in find_status(detail)
        await pilot.press("enter", "n")  # the tool call comes before the assistant's text
        assert detail.current == 1
        current = detail.matches[1]
        field = detail._fields[current.field]
        assert field.fold is not None and not field.fold.collapsed  # unfolded to show it
        await pilot.pause(0.3)
        assert spans_of(field.static) == [("分叉", CURRENT_STYLE)]
        # Scrolled into view: the match's line (the result's 41st) is inside the pane.
        assert detail.scroll_y > 0
        match_y = field.static.region.y + 40
        pane = detail.scrollable_content_region
        assert pane.y <= match_y < pane.bottom
        # Escape clears every highlight and closes the box.
        await pilot.press("escape")
        assert detail.finder is None and detail.matches == []
        assert spans_of(user) == [] and not box.display
        assert not detail.query_one("#find-bar").display


async def test_find_says_when_a_field_was_cut_and_matches_only_the_shown_prefix(
    tmp_path: Path,
) -> None:
    # "needle" once in the shown 64 KB, once far past it.
    big = "needle " + "a" * (FIELD_LIMIT + 100) + " needle"
    path = write_session(
        tmp_path / "root",
        SessionHeader(id="bigfind", created_at=T0, cwd=CWD),
        turn(0, 1, "hi", big),
    )
    app = TurnlineApp(tmp_path / "root", tz=UTC)
    async with app.run_test(size=SIZE) as pilot:
        detail = await open_turn(pilot, app, path, 0)
        detail.find("needle")
        await pilot.pause()
        assert len(detail.matches) == 1
        status = find_status(detail)
        assert "match 1/1" in status
        assert "only the first 64 KB of a field is searched" in status
        # the "… N more" note is not log text: it is never matched
        detail.find("more")
        await pilot.pause()
        assert detail.matches == [] and "no match in this turn" in find_status(detail)


async def test_a_malformed_price_table_is_named_in_the_header_and_tokens_still_show(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_prices(tmp_path, monkeypatch, "[p.a]\ninput = 'cheap'\n")
    path = write_session(
        tmp_path / "root", SessionHeader(id="badprices", created_at=T0, cwd=CWD), two_model_events()
    )
    app = TurnlineApp(tmp_path / "root", tz=UTC)
    async with app.run_test(size=(200, 50)) as pilot:
        detail = await open_turn(pilot, app, path, 1)
        text = heading(detail)
        assert "prices.toml" in text and "line 2" in text
        assert f"Σ turn · {bucket_words([310, 45, 7, 3, 2, 2])}" in text.split("\n")
