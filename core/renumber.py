"""One place in two generations of a session: a cut of one as the same cut of the other.

dsh keeps an old generation beside the one it migrated a session to (`session.jsonl`
beside `session.v5.jsonl`), and a child that dsh never reopened keeps the seed it was
forked with, counted in its parent's generation of the child's own version. Migrations
renumber seqs (V1 → V2 folds streamed chunks into their message, V2 → V3 inserts system
messages, V3 → V4 closes interrupted turns), never turns: dsh's own rule is to "identify
turns by `data.turn` and by order, never by seq". So a cut between two turns (where a
V0–V3 fork cuts its parent) has one exact counterpart in every generation: after the
same turn. A cut inside a turn has none (only a V4+ fork cuts there, and V4 → V5 → V6
keep every seq).
"""

from __future__ import annotations

from pathlib import Path

from .formats import parent_generation
from .logfile import read_log
from .timeline import Timeline, build_timeline


def same_cut(source: Timeline, target: Timeline, cut: int) -> int | None:
    """`cut` (the events of `source` before seq `cut`) as the same cut of `target`: after
    the same turn, or before the first. None when there is none: the cut is inside a
    turn, or `target` does not hold that turn (another number at that place, or open).

    A cut after the events that follow a turn's end (log-only events before the next
    turn) lands right after that turn's end in `target`: the turns on each side of it
    are the same either way. A turn left open when a later one started (a crash) ends
    before that one (`Timeline.last_seq_of`): dsh's migration closes it there.
    """
    if source.split_at(cut) is not None:
        return None
    ends = [source.last_seq_of(k) for k in range(len(source.turns))]
    done = sum(1 for end in ends if end is not None and end < cut)
    if done == 0:
        if cut == 0 or not target.turns:
            return 0 if cut == 0 else None
        return target.turns[0].first_seq
    if done > len(target.turns):
        return None
    mine, theirs = source.turns[done - 1], target.turns[done - 1]
    end = target.last_seq_of(done - 1)
    if mine.number != theirs.number or end is None:
        return None
    return end + 1


def seed_in(parent_log: Path, child_log: Path, child_version: int | None, seed: int) -> int | None:
    """A child's seed, counted in its parent's generation of the child's version
    (`formats.parent_generation`), as a cut of the parent's log `parent_log`: the seed
    itself when that is the generation, else the same cut by turns of the child's own
    log (whose seed is that prefix in the child's seqs, whether the parent keeps that
    generation or not); None when it has none."""
    if parent_generation(parent_log, child_version) == parent_log:
        return seed
    return same_cut(generation_timeline(child_log), generation_timeline(parent_log), seed)


def generation_timeline(path: Path) -> Timeline:
    """The timeline of an older generation, which no root lists: read whole, or from
    its index (kept between runs) when it is big enough to be indexed."""
    from .index import worth_indexing

    if worth_indexing(path):
        from .indexcache import cached_index

        return cached_index(path).timeline
    contents = read_log(path)
    seed = contents.header.seed_length if contents.header is not None else None
    return build_timeline(contents.events, seed or 0)
