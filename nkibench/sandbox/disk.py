"""A child's disk quota: what the folders it writes hold, measured while it runs and once it
has ended.

RLIMIT_FSIZE bounds one file, not the sum of many, and an unprivileged process has no
filesystem quota to set. So the folders a child writes (its own, and those it hands to later
children: the reference's inputs and expected outputs, a kernel's outputs) are measured while
it runs, and a child whose folders hold more than the quota is killed with its group. Folders
that earlier children wrote no longer change (their writers have ended), and the harness
releases each one once no later child reads it (nkibench.sandbox.folders), so a job holds a
few children's quotas at most. A quota over all of a job's folders instead would have to hold
every seed's and every re-verification's data at once: 4096 MB did not hold a full-size SiLU
(three seeds of 8192 x 14336) timed, then re-verified on fresh seeds, on an H200.

The folders are the children's: anything may be in them (links, FIFOs, trees deep enough to
exhaust a walker's descriptors), and the parent never opens a path inside a tree a child could
write. So the walk is not the parent's: `du` (coreutils) does it, in a sandbox of its own,
built like a kernel's (nkibench.sandbox.isolation: the children's user, no network, nothing
writable), that sees the child's folders read-only. The parent names only the folders it made
(nkibench.sandbox.folders) and reads back two numbers: du's totals of blocks and of inodes
(`-s -c`: a hard link counted once, links never followed). A meter that fails is not believed
to have measured anything: over its time limit, or having met entries it could not read,
while the child runs it is asked again at the next poll, and once the job's children have ended
(when nothing changes the tree any more) the folders count as over their quota.

A meter costs about 10 ms (two bubblewrap starts); the pace keeps it a small part of the
parent's time.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nkibench.sandbox.isolation import Isolation, Mounts, Tmpfs

__all__ = ["DiskQuota", "Usage", "measure"]

MAX_ENTRIES = 100_000
"""Files and folders a job may hold: each is an inode of the daemon's state disk."""
METER_TIMEOUT_S = 10.0
"""A tree du cannot walk in this long is over its quota (as many entries as MAX_ENTRIES take
well under a second)."""
WALK_SHARE = 10
"""A walk starts at most every WALK_SHARE times the last walk's duration (and at most once per
poll of the child): the parent's thread spends at most a tenth of its time waiting on meters."""
METER_TMPFS = Tmpfs(1024 * 1024, 1024 * 1024)
OUTPUT_LIMIT = 4096
"""du prints one line per folder and a total; a longer answer is not du's."""


@dataclass(frozen=True)
class Usage:
    bytes: int
    entries: int
    complete: bool = True
    """Whether du read every entry (it skips what it cannot read, and says so in its status)."""
    timed_out: bool = False

    @property
    def over_limits(self) -> bool:
        return self.timed_out or self.entries > MAX_ENTRIES


def _du_total(
    argv: Sequence[str], folders: Sequence[Path], isolation: Isolation
) -> tuple[int, bool] | None:
    """du's total over `folders` with the options `argv`, and whether du read every entry; None
    when its answer is not one. Raises subprocess.TimeoutExpired past METER_TIMEOUT_S."""
    du = shutil.which("du") or "/usr/bin/du"
    command = isolation.command(
        [du, "-s", "-c", *argv, "--", *map(str, folders)],
        workdir=Path("/"),
        writable=[],
        read_only=folders,
        mounts=Mounts(),
        tmpfs=METER_TMPFS,
    )
    done = subprocess.run(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # an error per unreadable entry: the status says enough
        timeout=METER_TIMEOUT_S,
        check=False,
    )
    lines = done.stdout[:OUTPUT_LIMIT].decode("ascii", "replace").splitlines()
    total, _, label = lines[-1].partition("\t") if lines else ("", "", "")
    if label != "total" or not total.isdigit():
        return None
    return int(total), done.returncode == 0


def measure(folders: Sequence[Path], isolation: Isolation) -> Usage:
    """What `folders` hold together: bytes on disk (blocks) and entries, as du counts them in
    its sandbox. A count that du could not finish (unreadable entries) is marked incomplete,
    its partial totals kept: a partial total over the quota is over the quota."""
    if not folders:
        return Usage(0, 0)
    try:
        used = _du_total(["-B1"], folders, isolation)
        entries = _du_total(["--inodes"], folders, isolation)
    except subprocess.TimeoutExpired:
        return Usage(0, 0, complete=False, timed_out=True)
    if used is None or entries is None:
        return Usage(0, 0, complete=False)
    return Usage(used[0], entries[0], complete=used[1] and entries[1])


@dataclass
class DiskQuota:
    """The quota of `folders` together (a running child's), checked at a pace that keeps the
    meters' cost a small part of the parent's time."""

    folders: Sequence[Path]
    isolation: Isolation
    limit_mb: int
    clock: Callable[[], float] = time.monotonic
    _due: float = field(default=0.0, init=False)
    last: Usage = field(default=Usage(0, 0), init=False)

    def exceeded(self, *, now: bool = False) -> bool:
        """Whether the folders hold more than the quota (or more than can be measured); unless
        `now`, False without a walk when the last one was too recent. `now` is the final word,
        once the job's children have ended: a meter that could not read everything then counts
        as over; before, it is asked again at the next poll (a child's own files come and go)."""
        started = self.clock()
        if not now and started < self._due:
            return False
        self.last = measure(self.folders, self.isolation)
        self._due = started + WALK_SHARE * (self.clock() - started)
        over = self.last.over_limits or self.last.bytes > self.limit_mb * 1024 * 1024
        return over or (now and not self.last.complete)

    def describe(self) -> str:
        """What the last walk found over the quota, in words."""
        if self.last.timed_out:
            return f"more than can be measured within {METER_TIMEOUT_S:.0f} s"
        if self.last.entries > MAX_ENTRIES:
            return f"more than {MAX_ENTRIES} files and folders"
        if self.last.bytes > self.limit_mb * 1024 * 1024:
            return f"more than {self.limit_mb} MB (a child's disk quota, [limits] disk_mb)"
        return "entries that the quota's meter could not read (a folder's permissions taken away)"
