"""An inode's generation: what tells a log from a new file that got its inode number.

A log rewritten by renaming a new file over it, or removed and written again at the same
path (a fork made again with the same `--id`), can get its old inode number back: ext4
hands out a freed number again at once (seen here after two rewrites). A cache that
knows a log by its device and inode and resumes it when it grew (the catalog, the kept
indexes of `core.indexcache`) would then take the new file's first part for the old
one's. The inode's *generation* (Linux's `FS_IOC_GETVERSION`; ext4, XFS and Btrfs keep
one) changes whenever a number is given to a new file.

Where it cannot be read (tmpfs, overlayfs, macOS, Windows), `generation` is None and the
caches compare what they compared before: tmpfs and APFS do not give a freed inode
number to the next file; overlayfs on ext4 can, and is the hole that remains.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

#: Machines whose ioctl numbers have the generic layout (`_IOR` below).
_GENERIC_IOCTL: Final = frozenset(
    {"x86_64", "amd64", "i386", "i686", "aarch64", "arm64", "armv7l", "riscv64", "s390x"}
)


def _getversion_request() -> int | None:
    """Linux's `FS_IOC_GETVERSION`, `_IOR('v', 1, long)`; None where it is not known."""
    if sys.platform != "linux":
        return None
    import platform
    import struct

    if platform.machine() not in _GENERIC_IOCTL:
        return None
    return (2 << 30) | (struct.calcsize("l") << 16) | (ord("v") << 8) | 1


_REQUEST: Final = _getversion_request()


def generation(fd: int) -> int | None:
    """The generation of the open file's inode; None where it cannot be read (another
    system, a file system that keeps none)."""
    if _REQUEST is None:
        return None
    import array
    import fcntl

    buf = array.array("l", [0])
    try:
        fcntl.ioctl(fd, _REQUEST, buf, True)
    except OSError:
        return None
    return int(buf[0])


def generation_of(path: str | os.PathLike[str]) -> int | None:
    """`generation` of the file at `path`; None if it cannot be opened or read."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return generation(fd)
    finally:
        os.close(fd)
