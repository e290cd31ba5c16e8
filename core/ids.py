"""Short session ids that tell sessions apart.

A UUID's first 8 characters are unique in practice, but real roots hold ids that are
not UUIDs (`{{sessionId}}` templates in 34 fixture logs, `sdk-snapshot-…`, repeated
digits) and ids that several logs claim. `unique_prefixes` lengthens a prefix until
it differs from every other id; `short_ids` adds, for an id that several logs share,
the part of the log's folder that tells them apart (`{{sessio@handshake`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import compress, pairwise
from pathlib import Path
from typing import Final

#: Characters a short id keeps at least (a UUID's first group).
SHORT_ID: Final = 8
#: Joins a shared id's prefix to the folder part that tells its logs apart.
WHERE: Final = "@"


def unique_prefixes(ids: Iterable[str], minimum: int = SHORT_ID) -> dict[str, str]:
    """The shortest prefix of each id, at least `minimum` characters, that no other
    (different) id starts with.

    An id that is itself a prefix of another one is kept whole: it cannot be made
    more unique. Repeated ids count once.

    Args:
        ids: Session ids (any order, repeats allowed).
        minimum: The fewest characters a prefix keeps (fewer only for a shorter id).

    Returns:
        id -> its prefix, for every distinct id.
    """
    distinct = set(ids)
    keep = max(minimum, 1)  # (a prefix has a character at least)
    out = {sid: sid[:keep] for sid in distinct}
    if len(set(out.values())) == len(out):
        # No two ids share a head: none can lengthen a prefix (ten thousand UUIDs:
        # a third of the time of the walk below, which this answer equals).
        return out
    ordered = sorted(distinct)
    # In sorted order the id sharing the longest prefix with this one is a neighbour.
    # Only neighbours with the same first `minimum` characters can lengthen a prefix
    # (for an id shorter than that, nothing can: its prefix is itself either way), so
    # every other id keeps its head, and the loop visits the few pairs that share one
    # (ten thousand UUIDs: 6 ms instead of 14).
    heads = [sid[:minimum] for sid in ordered]
    same = [a == b for a, b in pairwise(heads)]
    for k in compress(range(len(same)), same):
        a, b = ordered[k], ordered[k + 1]
        need = _common(a, b) + 1
        for sid in (a, b):
            if len(out[sid]) < need:
                out[sid] = sid[:need]
    return out


def _common(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def distinguishing_parts(paths: Sequence[Path]) -> dict[Path, str]:
    """For logs that claim one id, the shortest trailing part of each log's folder
    that differs between them.

    The folders' shared tail (e.g. the `<id>/` folder of dsh's `--project--/<id>/`
    layout) is dropped first; then each folder keeps as many of its last components
    as make it unique among the others (`handshake`, `web/handshake`).

    Args:
        paths: The log files (each with its folder).

    Returns:
        path -> the distinguishing part ("" for a log whose folder no part sets apart,
        e.g. two logs in one folder: their file names then differ).
    """
    folders = [p.parent.parts for p in paths]
    if len(paths) < 2:
        return {p: "" for p in paths}
    shared = 0
    shortest = min(len(f) for f in folders)
    while shared < shortest and len({f[len(f) - 1 - shared] for f in folders}) == 1:
        shared += 1
    heads = [f[: len(f) - shared] for f in folders]
    out: dict[Path, str] = {}
    for path, head in zip(paths, heads, strict=True):
        part = ""
        for take in range(1, len(head) + 1):
            tail = head[-take:]
            if sum(1 for other in heads if other[-take:] == tail) == 1:
                part = "/".join(tail)
                break
        else:
            part = path.name if sum(1 for p in paths if p.parent == path.parent) > 1 else ""
        out[path] = part
    return out


def short_ids(sessions: Iterable[tuple[str, Path]], minimum: int = SHORT_ID) -> dict[Path, str]:
    """A short id per log that no other log under the root shows.

    Args:
        sessions: (session id, log path) for every log shown.
        minimum: The fewest characters of the id kept.

    Returns:
        path -> `unique_prefixes`' prefix, followed for an id several logs claim by
        `@` and the folder part that tells them apart.
    """
    items = list(sessions)
    prefixes = unique_prefixes((sid for sid, _ in items), minimum)
    if len(prefixes) == len(items):  # no id claimed twice: each log shows its prefix
        return {path: prefixes[sid] for sid, path in items}
    by_id: dict[str, list[Path]] = {}
    for sid, path in items:
        by_id.setdefault(sid, []).append(path)
    out: dict[Path, str] = {}
    for sid, paths in by_id.items():
        out.update(_claimed(prefixes[sid], paths))
    return out


def short_ids_of(
    ids: Sequence[str], paths: Sequence[str], wanted: Iterable[int], minimum: int = SHORT_ID
) -> dict[int, str]:
    """`short_ids` of the logs at the indices `wanted` of `ids` and `paths` (their
    session ids and log paths, as strings), among all of them: from plain values, a
    `Path` made only for a log whose id another log claims too."""
    prefixes = unique_prefixes(ids, minimum)
    if len(prefixes) == len(ids):
        return {i: prefixes[ids[i]] for i in wanted}
    claims: dict[str, list[int]] = {}
    for i, sid in enumerate(ids):
        claims.setdefault(sid, []).append(i)
    out: dict[int, str] = {}
    for i in wanted:
        sid = ids[i]
        claimants = [Path(paths[k]) for k in claims[sid]]
        out[i] = _claimed(prefixes[sid], claimants)[Path(paths[i])]
    return out


def _claimed(prefix: str, paths: Sequence[Path]) -> dict[Path, str]:
    """The short ids of the logs that claim one id (`prefix`, its unique prefix): the
    prefix alone for one log; for several, `@` and the folder part that tells each
    apart (`distinguishing_parts`), where one does."""
    if len(paths) == 1:
        return {paths[0]: prefix}
    parts = distinguishing_parts(paths)
    return {path: f"{prefix}{WHERE}{parts[path]}" if parts[path] else prefix for path in paths}


def log_labels(sessions: Iterable[tuple[str, Path]], minimum: int = SHORT_ID) -> dict[Path, str]:
    """A label per log for tables that show whole ids (`turnline usage`): the id itself
    when one log claims it, else the tree's short id for it (`short_ids`: the prefix,
    `@` and the folder part that tells the logs apart, `{{sessio@acp/cancel`).

    Args:
        sessions: (session id, log path) for every log under the root.
        minimum: The fewest characters of the id a short id keeps.
    """
    items = list(sessions)
    claims: dict[str, int] = {}
    for sid, _ in items:
        claims[sid] = claims.get(sid, 0) + 1
    shorts = short_ids(items, minimum)
    return {path: sid if claims[sid] == 1 else shorts[path] for sid, path in items}
