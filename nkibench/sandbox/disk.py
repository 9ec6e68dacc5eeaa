"""A job's disk quota: what its folders hold, measured by the parent while a child runs.

RLIMIT_FSIZE bounds one file, not the sum of many, and an unprivileged process has no
filesystem quota to set. So the parent walks the job's folders (the session's root, which only
it can see: nkibench.sandbox.folders) while each child runs and once it has ended, and a child
whose job holds more than its quota is killed with its group.

The tree is the child's: anything may be in it. The walk starts at a descriptor the parent
opened itself, opens nothing but directories (O_DIRECTORY, O_NOFOLLOW, relative to their
parent's descriptor: never a link, a FIFO or a device), stats without following links, and
counts what it finds as untrusted data: a tree that changes under it is measured again at the
next poll; one too deep or with too many entries to walk quickly is over its quota as well.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["DiskQuota", "Usage", "measure"]

MAX_ENTRIES = 100_000
"""Files and folders a job may hold: walking them costs the parent about a tenth of a second."""
MAX_DEPTH = 64
"""Folders nested deeper than this are refused (each level holds a descriptor during the walk)."""
WALK_SHARE = 10
"""A walk starts at most every WALK_SHARE times the last walk's duration (and at most once
per poll of the child): the parent's thread spends at most a tenth of its time walking."""
DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class Usage:
    bytes: int
    entries: int
    too_deep: bool = False

    @property
    def walked(self) -> bool:
        """Whether the whole tree was counted (a tree too large stops the walk)."""
        return self.entries <= MAX_ENTRIES and not self.too_deep


def measure(root_fd: int) -> Usage:
    """The blocks (bytes on disk) and entries under the folder open at `root_fd`, a hard link
    counted once; the walk stops past MAX_ENTRIES entries or MAX_DEPTH levels."""
    used = entries = 0
    seen: set[tuple[int, int]] = set()
    stack = [(os.dup(root_fd), 0)]
    try:
        while stack:
            fd, depth = stack.pop()
            subfolders: list[str] = []
            try:
                with os.scandir(fd) as listing:
                    for entry in listing:
                        entries += 1
                        if entries > MAX_ENTRIES:
                            return Usage(used, entries)
                        try:
                            info = entry.stat(follow_symlinks=False)
                        except OSError:
                            continue  # gone since it was listed
                        if info.st_nlink > 1 and not stat.S_ISDIR(info.st_mode):
                            if (info.st_dev, info.st_ino) in seen:
                                continue
                            seen.add((info.st_dev, info.st_ino))
                        used += info.st_blocks * 512
                        if stat.S_ISDIR(info.st_mode):
                            subfolders.append(entry.name)
            except OSError:
                pass  # removed or replaced while listed: measured again at the next walk
            if subfolders and depth + 1 > MAX_DEPTH:
                os.close(fd)
                return Usage(used, entries, too_deep=True)
            for name in subfolders:
                with contextlib.suppress(OSError):  # replaced by a link or a file meanwhile
                    stack.append((os.open(name, DIRECTORY_FLAGS, dir_fd=fd), depth + 1))
            os.close(fd)
    finally:
        for fd, _ in stack:
            os.close(fd)
    return Usage(used, entries)


@dataclass
class DiskQuota:
    """The quota of the folders under `root_fd` (held open by their owner), checked at a pace
    that keeps the walks' cost a small part of the parent's time."""

    root_fd: int
    limit_mb: int
    clock: Callable[[], float] = time.monotonic
    _due: float = field(default=0.0, init=False)
    last: Usage = field(default=Usage(0, 0), init=False)

    def exceeded(self, *, now: bool = False) -> bool:
        """Whether the folders hold more than the quota (or more than can be walked); unless
        `now`, False without a walk when the last one was too recent."""
        started = self.clock()
        if not now and started < self._due:
            return False
        self.last = measure(self.root_fd)
        self._due = started + WALK_SHARE * (self.clock() - started)
        return not self.last.walked or self.last.bytes > self.limit_mb * 1024 * 1024

    def describe(self) -> str:
        """What the last walk found over the quota, in words."""
        if self.last.too_deep:
            return f"folders nested deeper than {MAX_DEPTH} levels"
        if self.last.entries > MAX_ENTRIES:
            return f"more than {MAX_ENTRIES} files and folders"
        return f"more than {self.limit_mb} MB (the job's disk quota, [limits] disk_mb)"
