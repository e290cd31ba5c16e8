"""Compare two sessions of one lineage forest from the point where they split.

The split point (`diverged_at`) comes from the lineage alone, never from comparing text:

- siblings: their `seedLength` (the smaller one, if they forked at different turns);
- a parent and its descendant: the smallest `seedLength` on the way down from the
  parent (a fork keeps at most its seed of its parent, so a grandchild forked inside
  its parent's seed shares only its own);
- cousins: the `seedLength` where the first of them left the common line.

It is a seq of the ancestor's log as the root shows it. A child seeded from an older
generation of its parent (a V0 child of a parent dsh migrated to V5) counts its seed in
that generation's seqs: `SessionRoot.parent_cut` places it after the same turn of the
generation shown, and each side counts from the split in its own seqs (`child_cut`).

Rows pair each side's k-th turn after the split, by position.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any

import msgspec

from .content import TokenUsage, ToolCall, TurnError, turn_blocks
from .root import LoadedSession, SessionRoot
from .summary import SessionSummary
from .timeline import Turn
from .usage import UsageFold

#: dsh's file tools and the argument that names the file.
FILE_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "read": ("file_path",),
    "write": ("file_path",),
    "edit": ("file_path",),
    "read_image": ("file_path",),
    "lsp": ("file_path",),
    "str_replace_editor": ("path",),
}


class CompareError(Exception):
    """Two sessions that cannot be compared (no common ancestor, the same session, a
    split with no place in a parent's newest generation)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a comparison: its turns after the split and what they did."""

    summary: SessionSummary
    turns: tuple[Turn, ...]
    tokens: TokenUsage
    tool_calls: dict[str, int]
    errors: int
    wall_ms: int
    files: tuple[str, ...]
    loaded: LoadedSession | None = field(default=None, repr=False, compare=False)

    @property
    def last_reason(self) -> str | None:
        """The last turn's end reason, None without turns after the split."""
        return self.turns[-1].reason if self.turns else None

    def to_json_dict(self) -> dict[str, Any]:
        """The `diff --json` shape of a side."""
        return {
            "id": self.summary.id,
            "path": str(self.summary.path),
            "turns": len(self.turns),
            "lastReason": self.last_reason,
            "tokens": self.tokens.total,
            "toolCalls": dict(self.tool_calls),
            "errors": self.errors,
            "wallMs": self.wall_ms,
            "files": list(self.files),
        }


class Comparison(msgspec.Struct, frozen=True):
    """Two sides after their split.

    Attributes:
        ancestor: The nearest session both descend from (possibly one of them).
        diverged_at: The first seq the two do not share.
        shared_turns: Turns of the ancestor that ended before `diverged_at`.
        split_turn: The number of the ancestor's turn that `diverged_at` falls inside
            (a dsh fork cut inside an open turn: each side ends that turn its own way,
            and each side's turns start with it), else None.
    """

    ancestor: SessionSummary
    diverged_at: int
    left: Side
    right: Side
    shared_turns: int = 0
    split_turn: int | None = None

    @property
    def rows(self) -> list[tuple[Turn | None, Turn | None]]:
        """Each side's k-th turn after the split (None where a side has none)."""
        return list(zip_longest(self.left.turns, self.right.turns))

    def to_json_dict(self) -> dict[str, Any]:
        """The `diff --json` shape."""
        return {
            "ancestor": {"id": self.ancestor.id, "path": str(self.ancestor.path)},
            "divergedAt": self.diverged_at,
            "splitTurn": self.split_turn,
            "left": self.left.to_json_dict(),
            "right": self.right.to_json_dict(),
            "rows": [
                {"left": _row_turn(left), "right": _row_turn(right)} for left, right in self.rows
            ],
        }


def _row_turn(turn: Turn | None) -> dict[str, Any] | None:
    if turn is None:
        return None
    return {
        "turn": turn.number,
        "startSeq": turn.first_seq,
        "endSeq": turn.end_seq,
        "reason": turn.reason,
        "user": turn.user,
        "assistant": turn.assistant,
    }


def split_point(root: SessionRoot, a: Path, b: Path) -> tuple[Path, int]:
    """The nearest common ancestor's log and `divergedAt`, from the lineage.

    Raises:
        CompareError: NO_ANCESTOR (different trees, or a parent missing), SAME_SESSION,
            NO_SPLIT (a child seeded from an older generation of its parent, cut inside
            a turn there: no place in the generation shown).
    """
    if a == b:
        raise CompareError("SAME_SESSION", f"{a} is the same session on both sides")
    lineage = root.lineage()
    chain_a = [a, *lineage.ancestors(a)]
    chain_b = [b, *lineage.ancestors(b)]
    on_b = set(chain_b)
    common = next((p for p in chain_a if p in on_b), None)
    if common is None:
        missing = [p for p in (chain_a[-1], chain_b[-1]) if _parent_id(root, p) is not None]
        why = (
            "; the parent of " + ", ".join(str(p) for p in missing) + " is not under the root"
            if missing
            else ""
        )
        raise CompareError("NO_ANCESTOR", f"{a} and {b} share no ancestor{why}")
    cuts = [
        cut for cut in (_shared(root, chain_a, common), _shared(root, chain_b, common)) if cut >= 0
    ]
    return common, min(cuts)


def _shared(root: SessionRoot, chain: list[Path], common: Path) -> int:
    """How much of `common`'s log the first log of `chain` (its descendant) shares with
    it: a cut of `common`'s log (-1 when that log is `common` itself).

    Each fork down the chain keeps at most its seed of its parent, so the part shared
    is the smallest seed on the way, counted in each parent's log as the root shows it
    (`SessionRoot.parent_cut`: a child seeded from an older generation counts by turns).

    Raises:
        CompareError: NO_SPLIT, a cut with no counterpart in a parent's newest generation.
    """
    cut = -1
    for child in chain[: chain.index(common)]:
        summary = _summary(root, child)
        seed = summary.seed_length or 0
        mine = seed if cut < 0 else min(cut, seed)
        up = root.parent_cut(summary, mine)
        if up is None:
            raise CompareError(
                "NO_SPLIT",
                f"{child} was seeded from an older generation of its parent, and its cut "
                f"at seq {mine} is inside a turn there: it has no place in the newest one",
            )
        cut = up
    return cut


def _own_cut(root: SessionRoot, common: Path, path: Path, cut: int) -> int:
    """A cut of `common`'s log as the same cut of its descendant at `path` (the child
    under `common` first, down to `path`; `SessionRoot.child_cut`)."""
    chain = [path, *root.lineage().ancestors(path)]
    for child in reversed(chain[: chain.index(common)]):
        down = root.child_cut(_summary(root, child), cut)
        if down is None:
            raise CompareError(
                "NO_SPLIT",
                f"the split at seq {cut} of {common} has no place in {child}'s parent's "
                "generation it was seeded from",
            )
        cut = down
    return cut


def _summary(root: SessionRoot, path: Path) -> SessionSummary:
    return next(s for s in root.summaries() if s.path == path)


def _seed(root: SessionRoot, path: Path) -> int:
    return _summary(root, path).seed_length or 0


def _parent_id(root: SessionRoot, path: Path) -> str | None:
    return _summary(root, path).parent_session


def compare(root: SessionRoot, left: SessionSummary, right: SessionSummary) -> Comparison:
    """Compare two sessions of `root` (scanned) from their split.

    Raises:
        CompareError: see `split_point`.
    """
    common, diverged = split_point(root, left.path, right.path)
    ancestor = _summary(root, common)
    loaded = root.load(ancestor)
    timeline = loaded.timeline
    ends = [timeline.last_seq_of(k) for k in range(len(timeline.turns))]
    shared = sum(1 for end in ends if end is not None and end < diverged)
    split = loaded.timeline.split_at(diverged)
    # (each side counts the split in its own seqs: the same but where dsh renumbered)
    return Comparison(
        ancestor=ancestor,
        diverged_at=diverged,
        left=side(root, left, _own_cut(root, common, left.path, diverged)),
        right=side(root, right, _own_cut(root, common, right.path, diverged)),
        shared_turns=shared,
        split_turn=None if split is None else split.number,
    )


def side(root: SessionRoot, summary: SessionSummary, diverged: int) -> Side:
    """One session's turns from seq `diverged` on (a turn the split falls inside
    included: it ends on this side), with their totals.

    The tokens are `core.usage`'s fold (the rule `usage` and the usage screen count
    by) of the events from `diverged` on, taken as the side's own: a sample outside
    any turn (a headless log writes no turn/start) counts too. Tool calls, errors,
    files and time count from the split too: of a turn the split falls inside, only
    the calls made and the errors met from `diverged` on (a call made before the split
    is shared, whichever side its result landed on), timed from the last shared event.
    """
    loaded = root.load(summary)
    timeline = loaded.timeline
    turns = tuple(
        t
        for k, t in enumerate(timeline.turns)
        # (a turn left open when a later one started ends before it: `last_seq_of`)
        if (end := timeline.last_seq_of(k)) is None or end >= diverged
    )
    fold = UsageFold(diverged).feed(loaded.events_between(diverged, None))
    tools: Counter[str] = Counter()
    errors = 0
    wall = 0
    files: dict[str, None] = {}
    for turn in turns:
        started = turn.started
        split = turn.first_seq < diverged  # the turn the split falls inside
        if split:
            shared = loaded.events_between(diverged - 1, diverged - 1)
            started = shared[0].time if shared else started
        if started is not None and turn.ended is not None:
            span = turn.ended - started  # infinite or NaN for a log's `1e400`
            wall += max(0, int(span)) if math.isfinite(span) else 0
        for block in turn_blocks(loaded.events_between(turn.first_seq, turn.end_seq)):
            if split and isinstance(block, TurnError | ToolCall) and block.seq < diverged:
                continue
            if isinstance(block, TurnError):
                errors += 1
            elif isinstance(block, ToolCall):
                tools[block.name] += 1
                for name in touched_files(block):
                    files.setdefault(name, None)
    buckets = fold.own().buckets()
    return Side(
        summary=summary,
        turns=turns,
        tokens=TokenUsage(*buckets[:5]),
        tool_calls=dict(sorted(tools.items())),
        errors=errors,
        wall_ms=wall,
        files=tuple(files),
        loaded=loaded,
    )


def touched_files(call: ToolCall) -> list[str]:
    """Files a tool call names: a file tool's path argument and its result's diffs."""
    out: list[str] = []
    for key in FILE_ARGUMENTS.get(call.name, ()):
        value = call.argument(key)
        if isinstance(value, str) and value:
            out.append(value)
    diffs = call.result.meta.get("diffs") if call.result is not None else None
    if isinstance(diffs, list):
        for diff in diffs:
            path = diff.get("path") if isinstance(diff, dict) else None
            if isinstance(path, str) and path and path not in out:
                out.append(path)
    return out
