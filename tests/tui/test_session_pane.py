"""The sessions pane at any size, its order by activity, its subtree totals; the
timeline's tokens column in the app (issues 10 and 11)."""

from __future__ import annotations

import re
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets._footer import FooterKey
from turnline.core.logfile import Encoding
from turnline.core.model import SessionEvent, SessionHeader
from turnline.core.root import SessionRoot
from turnline.core.usage import compact_tokens, root_usage
from turnline.core.writer import append_events
from turnline.tui import TurnlineApp
from turnline.tui.widgets import SessionTree, TurnTimeline
from turnline.tui.widgets._session_tree import compact_cost

from .conftest import (
    CWD,
    T0,
    Family,
    copy_fixture_scenarios,
    turn,
    user_prices,
    wait_for,
    write_session,
)

LONG_TITLE = (
    "Rework the incremental parser so that every grammar rule reports its source span "
    "and the error recovery keeps going after a missing brace"
)


async def ready(pilot: Pilot[Any]) -> TurnlineApp:
    app = pilot.app
    assert isinstance(app, TurnlineApp)
    await wait_for(pilot, lambda: app.snapshot is not None and app.view is not None)
    await pilot.pause()
    return app


def tree_lines(tree: SessionTree) -> list[str]:
    return [tree.render_line(y).text for y in range(tree.size.height)]


def label_of(tree: SessionTree, path: Path) -> str:
    node = tree.node_of(path)
    assert node is not None
    return str(node.label)


def write_long_titled(root: Path) -> Path:
    events = [
        SessionEvent("session/title", 0, T0, {"title": LONG_TITLE}),
        *turn(1, 1, "Start with the lexer", "Done."),
    ]
    return write_session(
        root, SessionHeader(id="ffff6666-long", created_at=T0 + 9, cwd=CWD), events
    )


async def test_labels_use_the_panes_width(family: Family) -> None:
    """At 240 columns a title is not cut at 35 characters; `]` widens the pane and the
    titles follow, `[` narrows it."""
    long = write_long_titled(family.root)
    async with TurnlineApp(family.root, tz=UTC).run_test(size=(240, 50)) as pilot:
        app = await ready(pilot)
        tree = app.session_tree
        await wait_for(pilot, lambda: tree.node_of(long) is not None)
        pane = tree.scrollable_content_region.width
        assert pane > 80
        label = label_of(tree, long)
        title = label.split(" ffff6666")[0]
        assert len(title) > 60, label  # the old labels stopped at 34 characters
        assert label.endswith(" ffff6666 1t")
        before = tree.size.width
        await pilot.press("right_square_bracket")
        await pilot.pause(0.2)
        assert tree.size.width > before
        wider = label_of(tree, long)
        assert len(wider) > len(label) and wider.endswith(" ffff6666 1t"), wider
        await pilot.press("left_square_bracket", "left_square_bracket")
        await pilot.pause(0.2)
        assert tree.size.width < before
        assert len(label_of(tree, long)) < len(label)


async def test_at_80x24_counts_are_whole_and_help_stays_in_the_footer(family: Family) -> None:
    write_long_titled(family.root)
    async with TurnlineApp(family.root, tz=UTC).run_test(size=(80, 24)) as pilot:
        app = await ready(pilot)
        tree = app.session_tree
        snapshot = app.snapshot
        assert snapshot is not None
        lines = tree_lines(tree)
        for summary in snapshot.summaries.values():
            shown = [line for line in lines if summary.id[:4] in line or "Rework" in line]
            assert shown, summary.id
        # every session row ends with its whole turn count (`4t`, never `4`)
        rows = [
            line for line in lines if line.strip() and not line.lstrip("│├└ ").startswith("▼ /")
        ]
        counts = [re.search(r" \d+t\s*$", line) for line in rows if "/home/dev" not in line]
        assert counts and all(counts), lines
        # the timeline shows the user text, not only the columns before it
        app.timeline.focus()
        await pilot.pause()
        timeline_text = [app.timeline.render_line(y).text for y in range(3)]
        assert "user" in timeline_text[0].split()
        assert "Refactor the" in timeline_text[1] or "Start with" in timeline_text[1]
        # with the detail focused (its Enter binding joins the footer) Help stays in view
        app.timeline.move_cursor(row=0)  # turn 1: two tool calls, so Unfold all applies
        await wait_for(pilot, lambda: bool(app.detail.query(".heading, .hint")))
        app.session_tree.focus()
        seen = set()
        for _ in range(3):
            await pilot.press("tab")

            def footer_drawn() -> bool:
                """the footer to show its keys"""
                keys = list(app.screen.query(FooterKey))
                return bool(keys) and all(k.region.width > 0 for k in keys)

            await wait_for(pilot, footer_drawn)
            keys = {k.key: k for k in app.screen.query(FooterKey)}
            seen.update(keys)
            assert "question_mark" in keys, app.focused
            assert keys["question_mark"].region.right <= 80
        assert "enter" in seen  # the detail pane's Unfold all was in the footer too


async def test_cwds_are_cut_in_the_middle(tmp_path: Path) -> None:
    root = tmp_path / "root"
    base = "/var/folders/2g/b32ct0qn1d7f2lqx9m0000gn/T/acp-snap-cwd-"
    for i, tail in enumerate(("MABAjO", "KBQJbW")):
        write_session(
            root,
            SessionHeader(id=f"{i}aaa1111-x", created_at=T0 + i, cwd=base + tail),
            turn(0, 1, f"task {tail}", "ok"),
        )
    async with TurnlineApp(root, tz=UTC).run_test(size=(80, 24)) as pilot:
        app = await ready(pilot)
        lines = tree_lines(app.session_tree)
        projects = [line for line in lines if "▼ /" in line]
        assert len(projects) == 2
        assert any("…" in p and "acp-snap-cwd-MABAjO" in p for p in projects), projects
        assert any("…" in p and "acp-snap-cwd-KBQJbW" in p for p in projects), projects


async def test_activity_order_keeps_children_under_parents(family: Family) -> None:
    """`a`: newest activity first (projects, roots and siblings by the newest activity
    in their subtree); children stay under their parents; `a` again: lineage order."""
    async with TurnlineApp(family.root, tz=UTC).run_test(size=(120, 36)) as pilot:
        app = await ready(pilot)
        tree = app.session_tree
        lineage = [family.parent, family.child, family.subagent, family.live, family.other]
        assert tree.shown_paths == lineage
        assert "by lineage" in str(tree.border_title)
        await pilot.press("a")
        await pilot.pause()
        assert tree.sort == "activity" and "by activity" in str(tree.border_title)
        # other (minute 60) > live (55); parent's subtree: child (40) > subagent (7)
        assert tree.shown_paths == [
            family.other,
            family.live,
            family.parent,
            family.child,
            family.subagent,
        ]
        child = tree.node_of(family.child)
        assert child is not None and child.parent is tree.node_of(family.parent)
        # a live append moves a session up
        seq = 7 + 1  # the subagent's log: one turn of 7 events
        late = turn(seq, 2, "One more name", "Tokenizer.", minute=90)
        append_events(family.subagent, late, Encoding.RAW)
        await wait_for(pilot, lambda: tree.shown_paths[:2] == [family.parent, family.subagent])
        assert tree.shown_paths == [
            family.parent,
            family.subagent,
            family.child,
            family.other,
            family.live,
        ]
        await pilot.press("a")
        await pilot.pause()
        assert tree.shown_paths == lineage


def usage_events(seq: int, number: int, tokens: int, minute: int) -> list[SessionEvent]:
    """A turn whose one step reports `tokens` input tokens (and 1 output token)."""
    base = T0 + minute * 60_000
    usage = {"inputTokens": tokens, "outputTokens": 1}
    message = {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}
    rows = [
        ("turn/start", {"turn": number}),
        ("step/start", {"turn": number, "step": 1}),
        (
            "assistant/chunk",
            {"turn": number, "step": 1, "chunk": {"type": "usage", "usage": usage}},
        ),
        ("assistant/message", {"turn": number, "step": 1, "message": message, "usage": usage}),
        ("turn/end", {"turn": number, "reason": {"kind": "completed"}}),
    ]
    return [SessionEvent(t, seq + i, base + i, d) for i, (t, d) in enumerate(rows)]


async def test_subtree_totals_equal_root_usage_and_follow_appends(
    tmp_path: Path, fixtures_root: Path
) -> None:
    """`t` shows each session's subtree total: the numbers `root_usage` gives, folded
    in a worker; an append updates them (and the timeline's tokens column) live."""
    root = copy_fixture_scenarios(fixtures_root, tmp_path / "root", ["jsonrpc", "python-sdk"])
    expected = {
        Path(s.path): s.subtree.total_tokens for s in root_usage(SessionRoot(root)).sessions
    }
    assert sum(1 for v in expected.values() if v) >= 3
    async with TurnlineApp(root, tz=UTC).run_test(size=(200, 50)) as pilot:
        app = await ready(pilot)
        tree = app.session_tree
        await pilot.press("t")
        await wait_for(pilot, lambda: all(tree.subtree_total(p) is not None for p in expected))
        assert "Σ" in str(tree.border_title)
        for path, tokens in expected.items():
            total = tree.subtree_total(path)
            assert total is not None and total.total_tokens == tokens, path
            assert label_of(tree, path).endswith(f"Σ{compact_tokens(tokens)} tok"), path
        # a parent's total includes its children's own spend
        snapshot = app.snapshot
        assert snapshot is not None
        parents = set(snapshot.lineage.parent_of.values())
        assert parents
        for child, parent in snapshot.lineage.parent_of.items():
            assert expected[parent] >= expected[child]

        # live: a turn with 5,000 tokens appended to the open session
        view = app.view
        assert view is not None
        path = view.path
        seq = view.next_seq
        turns_before = len(view.turns)
        append_events(path, usage_events(seq, 99, 5_000, 600), Encoding.RAW)

        def grew() -> bool:
            """the total and the timeline to take the new turn"""
            total = tree.subtree_total(path)
            return total is not None and total.total_tokens == expected[path] + 5_001

        await wait_for(pilot, grew)
        assert label_of(tree, path).endswith(f"Σ{compact_tokens(expected[path] + 5_001)} tok")
        timeline = app.query_one(TurnTimeline)
        await wait_for(pilot, lambda: len(timeline.turn_views) == turns_before + 1)
        assert timeline.turn_views[-1].tokens == 5_001
        assert "5.0k" in " ".join(c.plain for c in timeline.get_row_at(timeline.row_count - 1))
        ancestors = []
        node = tree.node_of(path)
        while node is not None and node.data is not None and node.data.kind == "session":
            ancestors.append(node.data.path)
            node = node.parent
        for ancestor in ancestors[1:]:
            assert ancestor is not None
            total = tree.subtree_total(ancestor)
            assert total is not None and total.total_tokens == expected[ancestor] + 5_001
        await pilot.press("t")
        await pilot.pause()
        assert "Σ" not in label_of(tree, path)


async def test_subtree_totals_show_cost_when_priced(
    tmp_path: Path, fixtures_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a price table that prices every sample of a subtree, its label shows the
    cost (`usage`'s own `cost`), else the tokens."""
    from turnline.core.prices import load_prices

    user_prices(
        tmp_path,
        monkeypatch,
        "[deepseek-official.deepseek-v4-flash]\n"
        "input = 0.5\noutput = 2.0\ncacheRead = 0.1\ncacheWrite = 0.5\n",
    )
    prices = load_prices()
    assert prices is not None
    root = copy_fixture_scenarios(fixtures_root, tmp_path / "root", ["jsonrpc"])
    subtree = {Path(s.path): s.subtree for s in root_usage(SessionRoot(root)).sessions}
    costs = {p: t.cost(prices) for p, t in subtree.items()}
    assert any(c for c in costs.values())
    async with TurnlineApp(root, tz=UTC).run_test(size=(200, 50)) as pilot:
        app = await ready(pilot)
        tree = app.session_tree
        await pilot.press("t")
        await wait_for(pilot, lambda: all(tree.subtree_total(p) is not None for p in subtree))
        await pilot.pause()
        for path, totals in subtree.items():
            cost = costs[path]
            shown = (
                f"{cost:.2f}" if cost is not None else f"{compact_tokens(totals.total_tokens)} tok"
            )
            assert label_of(tree, path).endswith(f"Σ{shown}"), (path, label_of(tree, path))


def test_compact_cost() -> None:
    """Issue 23: a subtree's cost always has two decimals (the price table's unit)."""
    assert compact_cost(0.00213) == "0.00"
    assert compact_cost(0) == "0.00"
    assert compact_cost(1.372) == "1.37"
    assert compact_cost(21054.2) == "21054.20"


async def test_a_big_logs_tokens_column_fills_in_after_its_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A big indexed log (every log is one here) opens with a blank tokens column;
    a worker then reads its usage and every row shows its tokens; a turn appended
    later gets its own from the live fold."""
    import turnline.core.index as index_module

    monkeypatch.setattr(index_module, "INDEX_THRESHOLD", 1)
    events: list[SessionEvent] = []
    for number in range(1, 6):
        events += usage_events(len(events), number, 1000 * number, number)
    path = write_session(tmp_path, SessionHeader("big", T0, cwd=CWD), events)
    async with TurnlineApp(tmp_path, tz=UTC).run_test(size=(200, 50)) as pilot:
        app = await ready(pilot)
        timeline = app.query_one(TurnTimeline)
        await wait_for(pilot, lambda: len(timeline.turn_views) == 5)
        view = app.view
        assert view is not None and view.loaded.index is not None
        expected = [1000 * n + 1 for n in range(1, 6)]
        await wait_for(pilot, lambda: [v.tokens for v in timeline.turn_views] == expected)
        cells = " ".join(c.plain for c in timeline.get_row_at(timeline.row_count - 1))
        assert "5.0k" in cells
        append_events(path, usage_events(len(events), 6, 7_000, 60), Encoding.RAW)
        await wait_for(pilot, lambda: [v.tokens for v in timeline.turn_views][-1:] == [7_001])
