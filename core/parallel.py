"""The project's one process pool, and `split_map` over it.

Listing a root of ten thousand logs is CPU-bound Python (a header parse and a few
byte scans per log), so one interpreter uses one core. The work is spread over a
`concurrent.futures.ProcessPoolExecutor` that `start_pool` creates while the
process still has a single thread: on Linux its workers are forked at once, before
the pool's manager thread exists, and no fork happens after that (a fork copies
only the calling thread, and any lock another thread held stays locked in the
child). A process with threads (the running app) never starts the pool: it uses
the pool started before its first thread, or works serially.

Nothing here can change a result: a share whose task fails in any way (a worker
crashes, the pool breaks, a reply does not unpack) only costs time, because the
caller then computes it itself. Workers ignore SIGINT (Ctrl-C is the caller's) and
write nowhere (their stdout and stderr are /dev/null): they compute and reply.

A headless command with no pool running (`ls`, `usage`, `show`: one process, one
thread) does not start one for a `split_map` or for the big-log index's second half
(`task_runner`): it forks a child per share or task, which leaves its answer in a
memory file and exits (`ForkRunner`). That costs no pool (its imports,
its workers, the pickled tasks and replies: about a twentieth of a wide root's
`ls --json`, a fourteenth of the big log's `show --json`) and keeps the same rules:
a fork only while the process has one thread, a child that fails costs time only, a
child ignores Ctrl-C and writes nowhere. Apart from those children and the catalog's
fresh-state check (`fresh.FreshCheck`), the pool is the only way processes are made.
"""

from __future__ import annotations

import atexit
import contextlib
import marshal
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, NoReturn, TypeVar

if TYPE_CHECKING:  # the pool's modules load when a pool starts (`start_pool`)
    from concurrent.futures import Future, ProcessPoolExecutor

T = TypeVar("T")
R = TypeVar("R")


#: Below this many items per worker a task costs more than it saves.
MIN_SHARE: Final = 500
#: At most this many processes (the caller included) work on one call.
MAX_WORKERS: Final = 4


_pool: ProcessPoolExecutor | None = None
_pool_lock = threading.Lock()
#: True in a pool worker: it never starts a pool of its own.
_in_worker = False


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
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        try:
            pool = ProcessPoolExecutor(
                count, mp_context=multiprocessing.get_context(method), initializer=_quiet_worker
            )
            # With `fork`, the first submit launches every worker before the manager
            # thread starts: from here on no fork happens.
            pool.submit(int).result()
        except Exception:  # no processes here (OSError, a broken pool): work serially
            return None
        _pool = pool
        atexit.register(stop_pool)
        return pool


def process_pool() -> ProcessPoolExecutor | None:
    """The pool `start_pool` started, or None (work serially then)."""
    return _pool


def stop_pool() -> None:
    """Shut the pool down and wait for its workers (idle workers leave at once).

    A command that leaves with `os._exit` calls this first: no worker outlives it.
    """
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is not None:
        with contextlib.suppress(Exception):
            pool.shutdown(wait=True, cancel_futures=True)


def _quiet_worker() -> None:
    """A pool worker's start (and a forked child's): Ctrl-C belongs to the caller,
    and a worker never prints (in the app its output would land on the screen)."""
    global _in_worker, _pool
    _in_worker, _pool = True, None
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.close(devnull)


def usable_cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class ForkedTask:
    """One task run in a child forked for it (`task_runner` in a headless command):
    `result()` waits for the child and returns what the task returned (through a
    memory file: `_encoded_call`), or raises `ChildProcessError` if the child failed in any
    way; `cancel()` kills and reaps it. What a caller of a pool's `Future` uses."""

    def __init__(self, child: _Child) -> None:
        self._child = child

    def result(self) -> Any:
        try:
            reply = self._child.reply()
        finally:
            self._child.end()  # (interrupted while waiting: the child is killed)
        if reply is None:
            raise ChildProcessError("the forked task failed")
        if reply[:1] == b"m":
            return marshal.loads(memoryview(reply)[1:])
        import pickle

        return pickle.loads(memoryview(reply)[1:])

    def cancel(self) -> bool:
        self._child.end()
        return True


class ForkRunner:
    """`submit` forks a child for each task at once (see `task_runner`)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> ForkedTask:
        child = _fork_child(_encoded_call, fn, args)
        if child is None:
            raise ChildProcessError("no child could be forked")
        return ForkedTask(child)


def task_runner() -> ProcessPoolExecutor | ForkRunner | None:
    """Where to run one task beside this process's own work (the big-log index's
    second half): the running pool; else, in a headless command with one thread on
    Linux, a child forked for the task (`ForkRunner`: no pool to import and start);
    else a pool started now (`pool_for_work`), or None."""
    if _pool is None and _may_fork():
        return ForkRunner()
    return pool_for_work()


def pool_for_work() -> ProcessPoolExecutor | None:
    """The pool to use now: the running one, else one started here if this process
    has no other thread yet (a headless command), else None (work serially)."""
    pool = _pool
    if pool is None and not _in_worker and threading.active_count() == 1:
        pool = start_pool()
    return pool


def discard_broken(pool: ProcessPoolExecutor | ForkRunner) -> None:
    """Forget `pool` if a worker of it died (it takes no more tasks); a later
    `start_pool` in a single-threaded process starts a fresh one."""
    global _pool
    if isinstance(pool, ForkRunner) or not getattr(pool, "_broken", False):
        return
    with _pool_lock:
        if _pool is pool:
            _pool = None
    with contextlib.suppress(Exception):
        pool.shutdown(wait=False, cancel_futures=True)


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

    `func` and `pack` must be picklable (module-level functions, `functools.partial`
    of them) and must not depend on state that changes during the call. `pack` turns
    a result into plain values and `unpack(item, packed)` turns them back into an
    equal result. The caller computes the first share while the others are computed
    by `task_runner`'s pool or forked children; the result is the serial list
    comprehension's whatever they do.
    """
    n = len(items)
    want = workers if workers is not None else min(usable_cores(), MAX_WORKERS)
    count = max(1, min(want, n // max(min_share, 1)))
    runner = task_runner() if count > 1 else None
    if runner is None:
        return [func(item) for item in items]
    bounds = [n * k // count for k in range(count + 1)]
    futures: list[Future[list[object]] | ForkedTask | None] = []
    try:
        for k in range(1, count):
            try:
                futures.append(runner.submit(_share, func, pack, items[bounds[k] : bounds[k + 1]]))
            except Exception:  # a broken or stopped pool, no fork: computed here
                futures.append(None)
        results: list[R] = [func(item) for item in items[: bounds[1]]]
        for k, future in enumerate(futures, start=1):
            share = items[bounds[k] : bounds[k + 1]]
            got = _unpacked(future, share, unpack)
            results.extend(got if got is not None else [func(item) for item in share])
    finally:
        for future in futures:  # (after an exception here, Ctrl-C: a forked child is
            if future is not None:  # killed and reaped; a finished task is left as is)
                future.cancel()
    discard_broken(runner)
    return results


def _share(func: Callable[[T], R], pack: Callable[[R], object], items: Sequence[T]) -> list[object]:
    """One share of `split_map`, in a pool worker or a forked child."""
    return [pack(func(item)) for item in items]


def _unpacked(
    future: Future[list[object]] | ForkedTask | None,
    items: Sequence[T],
    unpack: Callable[[T, object], R],
) -> list[R] | None:
    """A share's results, or None if its task failed or its reply does not unpack."""
    if future is None:
        return None
    try:
        packed = future.result()
        if not isinstance(packed, list) or len(packed) != len(items):
            return None
        return [unpack(item, value) for item, value in zip(items, packed, strict=True)]
    except Exception:  # a crashed worker, a broken pool, a reply that does not unpack
        return None


def _may_fork() -> bool:
    """Whether `task_runner` may fork a child per task here: on Linux (memory files,
    and forking is safe there), outside a pool worker, in a process with one thread."""
    return (
        sys.platform == "linux"
        and hasattr(os, "memfd_create")
        and not _in_worker
        and threading.active_count() == 1
    )


def _encoded_call(fn: Callable[..., Any], args: tuple[Any, ...]) -> list[bytes]:
    """`fn(*args)` in a forked child, encoded for `ForkedTask.result`: marshalled when
    marshal takes it (plain values: a `split_map` share, three times faster both ways
    than pickle), else pickled; a tag byte says which."""
    value = fn(*args)
    try:
        return [b"m", marshal.dumps(value)]
    except ValueError:
        import pickle

        return [b"p", pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)]


class _Child:
    """A forked child (`_fork_child`) and the memory file it writes its reply into."""

    def __init__(self, pid: int, memo: int) -> None:
        self.pid = pid  # 0 once reaped
        self.memo = memo  # -1 once closed

    def reply(self) -> bytes | None:
        """What the child wrote, once it has exited (it is reaped here); None if it
        failed."""
        if not self.pid:
            return None
        _, status = os.waitpid(self.pid, 0)
        self.pid = 0
        if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
            return None
        try:
            with open(self.memo, "rb", closefd=False) as reply:
                reply.seek(0)  # (the child's writes moved the offset both share)
                return reply.read()
        except OSError:
            return None

    def end(self) -> None:
        """Kill and reap the child unless it was reaped (after an exception here, or
        for a task no longer wanted), and close its memory file."""
        if self.pid:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(self.pid, 0)
            self.pid = 0
        if self.memo >= 0:
            os.close(self.memo)
            self.memo = -1


def _fork_child(reply: Callable[..., list[bytes]], *args: Any) -> _Child | None:
    """Fork a child that writes the chunks `reply(*args)` into a memory file and
    leaves; None if it could not be made."""
    try:
        memo = os.memfd_create("turnline-task", os.MFD_CLOEXEC)
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(memo)
        return None
    if pid == 0:
        _run_child(reply, args, memo)
    return _Child(pid, memo)


def _run_child(reply: Callable[..., list[bytes]], args: tuple[Any, ...], memo: int) -> NoReturn:
    """In the forked child: its reply into the memory file, then leave at once (no
    cleanup of the parent's: its buffers, its atexit handlers)."""
    status = 1
    try:
        _quiet_worker()
        for chunk in reply(*args):
            data = memoryview(chunk)
            while data:
                data = data[os.write(memo, data) :]
        status = 0
    except BaseException:  # any failure: the parent does the work itself
        pass
    finally:
        os._exit(status)
