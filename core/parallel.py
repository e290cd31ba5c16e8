"""Spread a pure, per-item function over the machine's cores with `fork`.

Listing a root of ten thousand logs is CPU-bound Python (a header parse and a few
byte scans per log), so one interpreter uses one core. `split_map` forks children
that each compute a contiguous share of the items and send their results back
through a pipe, while the calling process computes the first share. Results cross
as plain values (`pack` in the child, `marshal`, `unpack` in the parent): pickling
ten thousand dataclasses would cost more than the work saved.

Nothing here can change a result: a child that fails in any way (cannot fork,
crashes, is killed, sends a short or unreadable reply) only costs time, because the
parent then computes that share itself. Children never touch the caller's state:
they run `func`, write one reply and leave with `os._exit` (no atexit handlers, no
flushing of buffers inherited from the parent).

`fork_child`, `write_all`, `child_reply` and `abandon` are the project's one way to
fork: `root.BackgroundScan` and the two-core index (`index._index_raw_split`,
`index._index_zstd_split`) use them too.
"""

from __future__ import annotations

import atexit
import contextlib
import marshal
import multiprocessing
import os
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Final, TypeVar

T = TypeVar("T")
R = TypeVar("R")


#: Below this many items per worker a fork costs more than it saves.
MIN_SHARE: Final = 500
#: At most this many processes (the caller included) work on one call.
MAX_WORKERS: Final = 4


_pool: ProcessPoolExecutor | None = None
_pool_lock = threading.Lock()


def start_pool(workers: int | None = None) -> ProcessPoolExecutor | None:
    """Start the project's one process pool now, while this process has a single thread.

    On Linux the workers are forked at once, before the pool's own manager thread
    exists (they inherit every module already imported, so a task starts in
    microseconds). Elsewhere (macOS, Windows) forking is not safe and the workers are
    spawned instead (each imports turnline first). Later calls return the same pool.

    Returns None, starting nothing, when fewer than two cores are usable, when `fork`
    would have to copy a process that already runs other threads, or when processes
    cannot be made here: callers then work serially.
    """
    global _pool
    with _pool_lock:
        if _pool is not None:
            return _pool
        count = workers if workers is not None else min(usable_cores(), MAX_WORKERS)
        if count < 2:
            return None
        method = "fork" if sys.platform == "linux" else "spawn"
        if method == "fork" and threading.active_count() > 1:
            return None  # a fork now would copy a process with other threads in it
        try:
            pool = ProcessPoolExecutor(count, mp_context=multiprocessing.get_context(method))
            # With `fork`, the first submit launches every worker before the manager
            # thread starts: from here on no fork happens.
            pool.submit(int).result()
        except (OSError, RuntimeError, ValueError):
            return None
        _pool = pool
        atexit.register(stop_pool)
        return pool


def process_pool() -> ProcessPoolExecutor | None:
    """The pool `start_pool` started, or None (work serially then)."""
    return _pool


def stop_pool() -> None:
    """Shut the pool down and wait for its workers (idle workers leave at once)."""
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is not None:
        with contextlib.suppress(Exception):
            pool.shutdown(wait=True, cancel_futures=True)


def usable_cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def split_map(
    func: Callable[[T], R],
    items: Sequence[T],
    *,
    pack: Callable[[R], object],
    unpack: Callable[[T, object], R],
    workers: int | None = None,
    min_share: int = MIN_SHARE,
) -> list[R]:
    """`[func(item) for item in items]`, computed on up to `workers` cores.

    `func` must not depend on state that changes during the call. `pack` turns a
    result into values `marshal` takes (None, bool, int, float, str, bytes, tuple,
    list, dict) and `unpack(item, packed)` turns them back into an equal result.
    The result is the serial list comprehension's whatever happens to the children.
    """
    n = len(items)
    want = workers if workers is not None else min(usable_cores(), MAX_WORKERS)
    count = max(1, min(want, n // max(min_share, 1)))
    if count == 1 or not hasattr(os, "fork"):
        return [func(item) for item in items]
    bounds = [n * k // count for k in range(count + 1)]
    children: list[tuple[int, int, int, int]] = []  # (pid, read fd, start, end)
    for k in range(1, count):
        child = _spawn(func, pack, items, bounds[k], bounds[k + 1])
        if child is not None:
            children.append(child)
    results: list[R] = [func(item) for item in items[: bounds[1]]]
    shares: dict[int, list[R]] = {}
    for pid, fd, start, end in children:
        packed = _collect(pid, fd, end - start)
        if packed is not None:
            try:
                shares[start] = [
                    unpack(item, v) for item, v in zip(items[start:end], packed, strict=True)
                ]
            except Exception:  # a reply that does not unpack: compute it here
                continue
    for k in range(1, count):
        start, end = bounds[k], bounds[k + 1]
        share = shares.get(start)
        results.extend(share if share is not None else [func(item) for item in items[start:end]])
    return results


def fork_child(work: Callable[[int], None], *, keep: Sequence[int] = ()) -> tuple[int, int] | None:
    """Fork a child that runs `work(write_fd)` and leaves; (pid, read fd) or None.

    The child closes the read end (and any fd in `keep`: read ends of earlier
    children that belong to the parent), runs `work`, and leaves with `os._exit`:
    status 0 if `work` returned, 1 if it raised. No atexit handlers run in it and no
    buffer inherited from the parent is flushed. Read its reply with `child_reply`.
    """
    if not hasattr(os, "fork"):
        return None
    try:
        read_fd, write_fd = os.pipe()
    except OSError:
        return None
    try:
        with warnings.catch_warnings():
            # Python 3.12+ warns about fork in a threaded process: the child here
            # only computes, writes to its pipe and `_exit`s, taking no shared lock.
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        return None
    if pid == 0:  # the child
        status = 1
        try:
            for fd in (read_fd, *keep):
                os.close(fd)
            work(write_fd)
            status = 0
        finally:
            os._exit(status)
    os.close(write_fd)
    return pid, read_fd


def write_all(fd: int, data: bytes) -> None:
    """Write all of `data` to `fd` (a pipe takes it in pieces)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def child_reply(pid: int, fd: int) -> bytes | None:
    """Everything a `fork_child` child wrote, if it ended well (status 0, something
    written); else None. Reads to the end, closes `fd` and reaps the child."""
    chunks: list[bytes] = []
    try:
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    except OSError:
        chunks = []
    finally:
        os.close(fd)
    return b"".join(chunks) if reaped(pid) and chunks else None


def abandon(pid: int, fd: int) -> None:
    """Stop a `fork_child` child whose reply is not wanted, and reap it."""
    with contextlib.suppress(OSError):
        os.kill(pid, 9)
    child_reply(pid, fd)


def reaped(pid: int) -> bool:
    """Wait for a child; True if it exited with status 0."""
    try:
        return os.waitpid(pid, 0)[1] == 0
    except ChildProcessError:
        return False


def _spawn(
    func: Callable[[T], R], pack: Callable[[R], object], items: Sequence[T], start: int, end: int
) -> tuple[int, int, int, int] | None:
    """Fork a child computing `items[start:end]`; (pid, read end, start, end) or None."""

    def work(fd: int) -> None:
        write_all(fd, marshal.dumps([pack(func(item)) for item in items[start:end]]))

    child = fork_child(work)
    return None if child is None else (*child, start, end)


def _collect(pid: int, fd: int, expected: int) -> list[object] | None:
    """A child's packed results, or None if it did not deliver all of them."""
    reply = child_reply(pid, fd)
    if reply is None:
        return None
    try:
        share = marshal.loads(reply)
    except (EOFError, ValueError, TypeError):
        return None
    if not isinstance(share, list) or len(share) != expected:
        return None
    return share
