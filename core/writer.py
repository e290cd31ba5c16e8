"""Durable, atomic, no-overwrite creation of new logs (and appends), per the format doc.

A new log is written whole to a temporary file in the target folder, fsynced,
published with `os.link` (which fails instead of overwriting), the folder is
fsynced, and the temporary name removed. A crash leaves either nothing under the
final name or the complete file; leftover temporaries start with `TEMP_PREFIX`
and discovery ignores them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import msgspec
import zstandard

from .codec import encode_records
from .logfile import RAW_SUFFIX, ZSTD_SUFFIX, Encoding
from .model import SessionEvent, SessionHeader

TEMP_PREFIX: Final = ".turnline-tmp-"
#: Events per zstd frame when a new log is written (one frame = one append batch).
ZSTD_BATCH: Final = 4096


class LogExistsError(FileExistsError):
    """The final name is taken: a same-id race was lost, nothing was overwritten."""


#: Test seam: called with a step name ("write", "fsync", "link", "dirsync") before
#: each durable step, so fault-injection tests can fail any one of them for real.
FaultHook = Callable[[str], None]


def _no_fault(step: str) -> None:
    return None


def log_name(encoding: Encoding) -> str:
    """The file name of a session log in the given encoding."""
    return "session" + (ZSTD_SUFFIX if encoding is Encoding.ZSTD else RAW_SUFFIX)


def encode_new_log(
    header: SessionHeader,
    events: Sequence[SessionEvent],
    encoding: Encoding,
    *,
    pack: bool = True,
) -> bytes:
    """The bytes of a whole new log in the given encoding; `pack` packs chunk runs
    (V0 and V1 only: from V2 on every row is one event, `formats.packed_rows`)."""
    if encoding is Encoding.RAW:
        return header.to_json_line() + b"".join(encode_records(events, pack=pack))
    cctx = zstandard.ZstdCompressor(level=3, write_checksum=True)
    frames = [cctx.compress(header.to_json_line())]
    for start in range(0, len(events), ZSTD_BATCH):
        body = b"".join(encode_records(events[start : start + ZSTD_BATCH], pack=pack))
        frames.append(cctx.compress(body))
    return b"".join(frames)


def fsync_dir(path: Path) -> None:
    """fsync a directory so a new name in it is durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class FileRange(msgspec.Struct, frozen=True):
    """Bytes `[start, end)` of an existing file, as a chunk of `write_new_file`.

    Copied in the kernel (`os.copy_file_range`, a reflink on filesystems that have
    them; else `os.sendfile`; else read and write), so a fork of a big raw log never
    holds the parent's bytes in memory. The source is only read.
    """

    path: Path
    start: int
    end: int


def _copy_range(fd: int, source: FileRange) -> int:
    """Append `source`'s bytes to `fd` (at its offset); the number of bytes copied.

    Raises:
        OSError: the source cannot be read or ends before `source.end`.
    """
    src = os.open(source.path, os.O_RDONLY)
    try:
        pos, end = source.start, source.end
        for copy in (_copy_file_range, _sendfile, _read_write):
            try:
                pos = copy(src, fd, pos, end)
            except _Unsupported:
                continue  # this kernel or filesystem cannot: try the next way
            break
        if pos < end:
            raise OSError(errno.EIO, f"{source.path} ends before byte {end}")
    finally:
        os.close(src)
    return end - source.start


class _Unsupported(Exception):
    """A way of copying that this kernel or filesystem refuses before copying a byte."""


def _kernel_copy(
    step: Callable[[int, int, int, int], int], src: int, dst: int, pos: int, end: int
) -> int:
    """Copy `[pos, end)` of src to dst with an in-kernel `step(src, dst, pos, count)`.

    Raises `_Unsupported` if the very first call says the filesystem cannot do it,
    so the caller can fall back to the next way of copying.
    """
    first = True
    while pos < end:
        try:
            n = step(src, dst, pos, min(end - pos, 1 << 30))
        except OSError as exc:
            if first and exc.errno in _NO_FAST_COPY:
                raise _Unsupported from exc
            raise
        first = False
        if n == 0:
            break
        pos += n
    return pos


def _copy_file_range(src: int, dst: int, pos: int, end: int) -> int:
    if not hasattr(os, "copy_file_range"):
        raise _Unsupported  # not Linux
    return _kernel_copy(lambda s, d, p, n: os.copy_file_range(s, d, n, p), src, dst, pos, end)


def _sendfile(src: int, dst: int, pos: int, end: int) -> int:
    if not hasattr(os, "sendfile"):
        raise _Unsupported
    return _kernel_copy(lambda s, d, p, n: os.sendfile(d, s, p, n), src, dst, pos, end)


def _read_write(src: int, dst: int, pos: int, end: int) -> int:
    while pos < end:
        data = os.pread(src, min(end - pos, 8 << 20), pos)
        if not data:
            break
        _write_all(dst, data)
        pos += len(data)
    return pos


def _write_all(fd: int, chunk: bytes) -> int:
    view = memoryview(chunk)
    while view:
        view = view[os.write(fd, view) :]
    return len(chunk)


#: errnos that mean "this way of copying is not available here", not "the copy failed".
_NO_FAST_COPY: Final = frozenset(
    (errno.ENOSYS, errno.EXDEV, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOTSOCK)
)


class _Signalled(BaseException):
    """SIGTERM or SIGHUP arrived while a new file was being written."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


#: Signals that, like SIGINT, unwind a write so its temporary is removed.
_UNWIND_SIGNALS: Final = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@contextlib.contextmanager
def _unwind_on_signals() -> Iterator[None]:
    """While writing, SIGTERM and SIGHUP unwind the write as SIGINT does.

    Python turns SIGINT into KeyboardInterrupt, so the temporary is removed on the way
    out; these two would kill the process with the temporary left. Here they raise,
    the writer cleans up, and then the signal is delivered again under the handler the
    process had (by default: the process dies of it, as it would have). Only the main
    thread can set handlers; elsewhere nothing changes.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: object) -> None:
        raise _Signalled(signum)

    try:
        for signum in _UNWIND_SIGNALS:
            old = signal.getsignal(signum)
            if old in (signal.SIG_IGN, None):
                continue  # the process ignores it (nohup): keep ignoring
            previous[signum] = old
            signal.signal(signum, handler)
        yield
    except _Signalled as exc:
        for signum, old in previous.items():
            signal.signal(signum, old)
        previous.clear()
        signal.raise_signal(exc.signum)
        raise InterruptedError(
            errno.EINTR, f"interrupted by signal {exc.signum}; nothing was written"
        ) from None
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def write_new_file(
    final: Path, chunks: Iterable[bytes | FileRange], *, fault: FaultHook = _no_fault
) -> int:
    """Atomically create `final` with the given content; never overwrite.

    SIGTERM and SIGHUP (in the main thread) remove the temporary like SIGINT does.

    Args:
        final: The new file's name.
        chunks: Its content: bytes, or byte ranges of existing files (`FileRange`).
        fault: Test seam called before each durable step.

    Returns:
        The number of bytes written.

    Raises:
        LogExistsError: `final` already exists (nothing was changed).
        OSError: any I/O failure; no partial file is left under `final`.
    """
    with _unwind_on_signals():
        return _write_new_file(final, chunks, fault)


def _write_new_file(final: Path, chunks: Iterable[bytes | FileRange], fault: FaultHook) -> int:
    """Atomically create `final` with the given content; never overwrite.

    Args:
        final: The new file's name.
        chunks: Its content: bytes, or byte ranges of existing files (`FileRange`).
        fault: Test seam called before each durable step.

    Returns:
        The number of bytes written.

    Raises:
        LogExistsError: `final` already exists (nothing was changed).
        OSError: any I/O failure; no partial file is left under `final`.
    """
    folder = final.parent
    created_folder = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    if final.exists():
        raise LogExistsError(f"{final} already exists")
    tmp = folder / f"{TEMP_PREFIX}{os.getpid()}-{os.urandom(6).hex()}"
    written = 0
    linked = False
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        try:
            fault("write")
            for chunk in chunks:
                if isinstance(chunk, FileRange):
                    written += _copy_range(fd, chunk)
                else:
                    written += _write_all(fd, chunk)
            fault("fsync")
            os.fsync(fd)
        finally:
            os.close(fd)
        fault("link")
        try:
            os.link(tmp, final)
        except FileExistsError as exc:
            raise LogExistsError(f"{final} already exists") from exc
        linked = True
        fault("dirsync")
        fsync_dir(folder)
    except BaseException as exc:
        if linked:
            # The name is ours (the link was exclusive) but not durable: take it back,
            # so a failure always means "nothing under the final name", as promised.
            with contextlib.suppress(OSError):
                os.unlink(final)
        if created_folder and not isinstance(exc, LogExistsError):
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            with contextlib.suppress(OSError):
                os.rmdir(folder)  # only if still empty: never removes anyone's file
        raise
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return written


def append_events(path: Path, events: Sequence[SessionEvent], encoding: Encoding) -> None:
    """Append events durably as one batch (one line each, or one zstd frame)."""
    body = b"".join(encode_records(events))
    if encoding is Encoding.ZSTD:
        body = zstandard.ZstdCompressor(level=3, write_checksum=True).compress(body)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        view = memoryview(body)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


#: A temporary this old is a leftover even if its pid is alive again (pid reuse):
#: no fork takes that long between creating its temporary and publishing it.
STALE_TEMP_SECONDS: Final = 6 * 3600.0


def cleanup_temporaries(folder: Path, *, now: float | None = None) -> list[Path]:
    """Remove leftover temporaries of dead writers in a folder; return what was removed.

    A temporary is removed when the pid in its name is not a live process, or when
    it is older than `STALE_TEMP_SECONDS` (its pid has since been reused); a live
    pid's young temporary (a fork in progress, in this process or another) is never
    touched.
    """
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    clock = time.time() if now is None else now
    for entry in entries:
        if not entry.name.startswith(TEMP_PREFIX):
            continue
        pid_text = entry.name[len(TEMP_PREFIX) :].split("-", 1)[0]
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue  # gone already
        if not stat.S_ISREG(info.st_mode):
            continue  # only ever our own regular files
        young = clock - info.st_mtime < STALE_TEMP_SECONDS
        if young and pid_text.isdigit() and _pid_alive(int(pid_text)):
            continue
        path = Path(entry.path)
        with contextlib.suppress(OSError):
            os.unlink(path)
            removed.append(path)
    return removed


def cleanup_root_temporaries(root: Path, *, now: float | None = None) -> list[Path]:
    """`cleanup_temporaries` in every folder of a dsh root (root, projects, sessions).

    The dsh layout is `root/<project>/<session>/`, so three levels are looked at, no
    deeper, and symlinked folders are not followed.
    """
    removed: list[Path] = []
    level = [root]
    for depth in range(3):
        below: list[Path] = []
        for folder in level:
            removed += cleanup_temporaries(folder, now=now)
            if depth == 2:
                continue
            try:
                with os.scandir(folder) as it:
                    below += [Path(e.path) for e in it if e.is_dir(follow_symlinks=False)]
            except OSError:
                continue
        level = below
    return removed


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:
        return True  # alive, another user's
    return True
