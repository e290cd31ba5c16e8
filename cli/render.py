"""Text output of the CLI: aligned, human-friendly, and safe.

Every string that comes from a log (ids, titles, user text, tool names, problem
messages that quote a log) passes through `turnline.core.textsafe` here, so a log
can never drive the terminal. These functions only build lines; `main` prints them.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from turnline.core.formats import history_text, seed_seqs_note
from turnline.core.lineage import Lineage, LineageNode
from turnline.core.model import LogProblem
from turnline.core.summary import SessionSummary
from turnline.core.textsafe import ELLIPSIS, one_line
from turnline.core.timeline import Turn
from turnline.core.units import duration as duration  # re-exported
from turnline.core.units import plural as plural  # re-exported
from turnline.core.usage import compact_tokens
from turnline.core.usage import format_cost as _cost
from turnline.core.view import SessionView

#: Width an id is cut to in tables (a UUID keeps its first two groups).
SHORT_ID: Final = 14
#: Marks a row that is a valid fork boundary (it ends with a `turn/end`).
FORKABLE_MARK: Final = "◆"


def short_id(session_id: str) -> str:
    """An id cut to `SHORT_ID` characters, made safe; still a usable prefix when cut."""
    return one_line(session_id, SHORT_ID)


def _table(rows: Sequence[Sequence[str]], right: Iterable[int] = ()) -> list[str]:
    """Align columns by terminal cells (a CJK character takes two); the last column is
    left ragged so long titles need no padding."""
    if not rows:
        return []
    right_cols = set(right)
    widths = [max(cells(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        parts = []
        for i, cell in enumerate(row):
            pad = " " * (widths[i] - cells(cell))
            if i == len(row) - 1:
                parts.append(cell)
            elif i in right_cols:
                parts.append(pad + cell)
            else:
                parts.append(cell + pad)
        lines.append("  ".join(parts).rstrip())
    return lines


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def session_flags(summary: SessionSummary, problems: Sequence[LogProblem]) -> str:
    """The flags column of `ls`: broken, open-turn, subagent/fork, zstd, problems."""
    flags: list[str] = []
    if summary.header is None:
        flags.append("unreadable")
    if summary.open_turn:
        flags.append("open-turn")
    if summary.origin == "subagent":
        flags.append("subagent")
    elif summary.parent_session is not None:
        flags.append("fork")
    if problems:
        flags.append(_plural(len(problems), "problem"))
    return ",".join(flags) or "-"


#: `ls` columns left out on a narrow terminal, first to go first (ID and TITLE stay).
LS_OPTIONAL: Final = ("EVENTS", "CREATED", "FLAGS", "TURNS", "LAST")
#: The fewest cells `ls` cuts a title to before it leaves out a column.
TITLE_MIN: Final = 20
#: The cells a title gets when the output is not fitted to a terminal.
TITLE_MAX: Final = 100


def local_time(ms: int | None) -> str:
    """Epoch ms as local `YYYY-MM-DD HH:MM`; `-` for none (0 or None) or for a time a
    calendar cannot hold (a log's `1e300`)."""
    if not ms:
        return "-"
    try:
        return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, OSError, ValueError):
        return "-"


def cells(text: str) -> int:
    """Terminal cells `text` takes: wide (CJK) characters two, combining marks none."""
    if text.isascii():
        return len(text)
    total = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        total += 2 if unicodedata.east_asian_width(char) in "WF" else 1
    return total


def fit(text: str, limit: int) -> str:
    """`text` cut to at most `limit` cells, ending with `…` when cut."""
    if cells(text) <= limit:
        return text
    out: list[str] = []
    used = 0
    for char in text:
        width = cells(char)
        if used + width > limit - 1:
            break
        out.append(char)
        used += width
    return "".join(out) + ELLIPSIS if limit > 0 else ""


def ls_lines(
    entries: Sequence[tuple[SessionSummary, Sequence[LogProblem]]], width: int | None
) -> list[str]:
    """The `ls` table: one row per session, in the order given.

    Ids are never cut. With a terminal `width`, the title is cut to fit it, and when
    even a `TITLE_MIN`-cell title does not fit, columns are left out in the order of
    `LS_OPTIONAL`; with None (not a terminal) every column is shown and titles are cut
    at `TITLE_MAX` cells.
    """
    columns: dict[str, list[str]] = {
        "ID": [one_line(s.id) for s, _ in entries],
        "TURNS": [str(s.turns) for s, _ in entries],
        "EVENTS": [str(s.events) for s, _ in entries],
        "CREATED": [local_time(s.created_at) for s, _ in entries],
        "LAST": [local_time(s.last_activity) for s, _ in entries],
        "FLAGS": [session_flags(s, problems) for s, problems in entries],
    }
    shown = list(columns)
    # Each column's cells and the gap after it.
    span = {name: max([len(name), *map(cells, values)]) + 2 for name, values in columns.items()}

    def used() -> int:  # cells of the shown columns and their gaps before the title
        return sum(span[name] for name in shown)

    if width is None:
        title_width = TITLE_MAX
    else:
        for name in LS_OPTIONAL:
            if width - used() >= TITLE_MIN:
                break
            shown.remove(name)
        title_width = max(width - used(), TITLE_MIN)
    titles = [fit(one_line(s.title or ""), title_width) or "(untitled)" for s, _ in entries]
    rows = [[*shown, "TITLE"]]
    rows += [[*(columns[name][i] for name in shown), titles[i]] for i in range(len(entries))]
    right = [i for i, name in enumerate(shown) if name in ("TURNS", "EVENTS")]
    return _table(rows, right=right)


def _tools(tools: Sequence[str]) -> str:
    """Tool names in first-call order, repeats counted: `bash×2, read`."""
    counts: dict[str, int] = {}
    for name in tools:
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(one_line(name, 24) + (f"×{n}" if n > 1 else "") for name, n in counts.items())


def _seqs(turn: Turn) -> str:
    end = "…" if turn.end_seq is None else str(turn.end_seq)
    return f"{turn.first_seq}–{end}"


def _reason(turn: Turn) -> str:
    reason = one_line(turn.reason, 20)  # a kind the log names: untrusted like the rest
    if turn.detail:
        return f"{reason} ({one_line(turn.detail, 24)})"
    return reason


def problem_line(problem: LogProblem) -> str:
    """One problem as `! kind at seq N: message`, made safe."""
    where = f" at seq {problem.seq}" if problem.seq is not None else ""
    return f"! {problem.kind}{where}: {one_line(problem.message, 300)}"


def show_lines(view: SessionView, width: int) -> list[str]:
    """The `show` view: a header block, the problems, then one row per turn.

    A `◆` marks rows that end with a `turn/end` (fork there with `--at <end seq>`);
    a divider follows the last turn that ended within the inherited seed, and says
    so when the seed ends inside the next turn (a dsh fork cut inside an open turn).
    """
    summary = view.summary
    header = summary.header
    lines = [f"session {one_line(summary.id)}"]
    if summary.title:
        lines.append(f"title   {one_line(summary.title, max(width - 8, 20))}")
    lines.append(f"path    {one_line(str(summary.path))}")
    facts = [
        _plural(summary.events, "event"),
        _plural(len(view.turns), "turn"),
        str(summary.encoding),
    ]
    if header is not None:
        facts.append(f"format v{one_line(str(header.version or 0), 20)}")
    if header is not None and header.cwd is not None:
        facts.append(f"cwd {one_line(header.cwd, 60)}")
    lines.append("        " + " · ".join(facts))
    older = history_text(summary.path)
    if older is not None:
        lines.append(f"also    {one_line(older)}")
    seed = view.seed_length
    parent = summary.parent_session
    # Which log the seed's seqs are of, when not the parent's as shown (a V0 child of a
    # parent dsh migrated counts its seed in V0's seqs).
    of = (
        ""
        if view.parent_path is None or summary.header is None
        else seed_seqs_note(view.parent_path, summary.header.version)  # (canonical names)
    )
    if parent is not None:
        how = f"seed {summary.seed_length}{of}" if summary.seed_length is not None else "no seed"
        origin = f", {one_line(summary.origin)}" if summary.origin else ""
        found = "" if view.parent_path is not None else ", not under this root"
        lines.append(f"parent  {one_line(parent)} ({how}{origin}{found})")
    for problem in view.problems:
        lines.append(problem_line(problem))
    turns = [tv.turn for tv in view.turns]
    if not turns:
        lines.append("(no turns)")
        return lines
    rows: list[list[str]] = [["", "TURN", "SEQS", "REASON", "STEPS", "TOOLS", "USER"]]
    divider_after: int | None = -1 if seed else None
    for index, turn in enumerate(turns):
        if seed and view.turns[index].inherited:
            divider_after = index
        rows.append(
            [
                FORKABLE_MARK if view.turns[index].forkable else " ",
                str(turn.number),
                _seqs(turn),
                _reason(turn),
                str(turn.steps),
                _tools(turn.tools) or "-",
                "",
            ]
        )
    fixed = [max(len(r[i]) for r in rows) for i in range(6)]
    user_width = max(width - sum(fixed) - 2 * 6, 20)
    for row, turn in zip(rows[1:], turns, strict=True):
        row[6] = one_line(turn.user, user_width)
    table = _table(rows, right=(1, 4))
    divider = None
    if parent is not None and divider_after is not None:
        split = view.timeline.split_at(seed)
        inside = f", inside turn {split.number}" if split is not None else ""
        divider = f"── forked from {one_line(parent)} at seq {seed - 1}{of}{inside} ──"
    lines.append(table[0])
    if divider is not None and divider_after == -1:
        lines.append(divider)
    for index, line in enumerate(table[1:]):
        lines.append(line)
        if divider is not None and index == divider_after:
            lines.append(divider)
    lines.append(f"{FORKABLE_MARK} forkable: turnline fork … --at <last seq of the row>")
    return lines


def _version(summary: SessionSummary) -> int:
    """A log's format version as its seqs go (V1 counts as V0, as no header does)."""
    version = summary.header.version if summary.header is not None else None
    return 0 if version is None or version == 1 else version


def _edge_label(node: LineageNode, parent: LineageNode | None = None) -> str:
    parts = []
    if node.seed_length is not None:
        # Which log the seed's seqs are of, when not the parent's as listed (only a
        # child of another version than its parent's log can differ: no folder read).
        of = ""
        if parent is not None and _version(node.summary) != _version(parent.summary):
            header = node.summary.header
            version = header.version if header is not None else None
            of = seed_seqs_note(parent.summary.path, version)
        parts.append(f"seed {node.seed_length}{of}")
    if node.origin is not None:
        parts.append(one_line(node.origin, 16))
    return " · ".join(parts) or "fresh"


def _node_text(node: LineageNode, root: Path, duplicated: set[str]) -> str:
    summary = node.summary
    text = f"{short_id(summary.id)}  {one_line(summary.title or '(untitled)', 60)}"
    text += f"  ({_plural(summary.events, 'event')})"
    if summary.id in duplicated:
        # The id alone does not say which log this is: name the file.
        try:
            where = summary.path.relative_to(root)
        except ValueError:
            where = summary.path
        text += f"  [{one_line(str(where))}]"
    return text


def tree_lines(lineage: Lineage, root: Path) -> list[str]:
    """The lineage forest drawn with box characters; edges say `seed N` or `subagent`.

    Iterative on purpose: lineage chains can be deeper than Python's recursion limit.
    """
    ids: dict[str, int] = {}
    stack: list[LineageNode] = [*lineage.roots]
    for group in lineage.missing:
        stack.extend(group.children)
    while stack:
        node = stack.pop()
        ids[node.summary.id] = ids.get(node.summary.id, 0) + 1
        stack.extend(node.children)
    duplicated = {sid for sid, n in ids.items() if n > 1}
    lines: list[str] = []

    def draw(tops: Sequence[LineageNode], prefix: str, first_edge: bool) -> None:
        # (node, prefix for its own line, prefix for its children, its parent to draw
        # an edge label to, or None: a top of the forest, no edge)
        work: list[tuple[LineageNode, str, str, LineageNode | None]] = []
        for i, node in reversed(list(enumerate(tops))):
            last = i == len(tops) - 1
            if first_edge:
                work.append(
                    (
                        node,
                        prefix + ("└── " if last else "├── "),
                        prefix + ("    " if last else "│   "),
                        node,  # (an orphan: its label without a parent to compare)
                    )
                )
            else:
                work.append((node, prefix, prefix, None))
        while work:
            node, own, below, parent = work.pop()
            edge = None if parent is None or parent is node else parent
            label = f"[{_edge_label(node, edge)}] " if parent is not None else ""
            lines.append(f"{own}{label}{_node_text(node, root, duplicated)}")
            kids = node.children
            for i in range(len(kids) - 1, -1, -1):
                last = i == len(kids) - 1
                work.append(
                    (
                        kids[i],
                        below + ("└── " if last else "├── "),
                        below + ("    " if last else "│   "),
                        node,
                    )
                )

    draw(lineage.roots, "", False)
    for group in lineage.missing:
        lines.append(f"missing parent {one_line(group.parent_id)}")
        draw(group.children, "", True)
    return lines


def usage_lines(rows: Sequence[tuple[str, Any]], totals: Any, prices: Any, by: str) -> list[str]:
    """`turnline usage`: one row per session/model/project/day (`UsageTotals`), then a
    totals line. Sessions and projects are sorted by spend (cost when priced, else
    billed tokens), days newest first. A model's or a day's row holds only its usage
    samples, so those groupings have no turns or tools columns."""

    def spend(item: tuple[str, Any]) -> tuple[float, int]:
        cost = item[1].cost(prices)
        return (cost if cost is not None else -1.0, item[1].total_tokens)

    whole = by in ("session", "project")  # rows that are whole sessions: turns, tools
    header = [by, "input", "output", "cache-r", "cache-w", "calls"]
    header += ["turns", "tools", "cost"] if whole else ["cost"]
    table = [header]
    if by == "day":
        ordered = sorted(rows, key=lambda item: item[0], reverse=True)  # ISO dates
    else:
        ordered = sorted(rows, key=spend, reverse=True)
    for label, u in [*ordered, ("total", totals)]:
        b = u.buckets()
        row = [
            one_line(label, 60),
            compact_tokens(b[0]),
            compact_tokens(b[1]),
            compact_tokens(b[2]),
            compact_tokens(b[3]),
            f"{b[5]:,}",
        ]
        if whole:
            row += [f"{u.turns:,}", f"{u.tool_calls:,}"]
        table.append([*row, _cost(u.cost(prices))])
    # The label goes last in `_table` (left ragged): move it there.
    lines = _table([row[1:] + row[:1] for row in table], right=range(len(header) - 1))
    unmetered = sum(totals.unmetered.values())
    if unmetered:
        kinds = ", ".join(f"{one_line(k, 60)} {n}" for k, n in sorted(totals.unmetered.items()))
        lines.append(f"warning: {_plural(unmetered, 'LLM call')} without usage ({kinds})")
    return lines
