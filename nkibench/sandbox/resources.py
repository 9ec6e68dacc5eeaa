"""A job's share of the host's memory, and how that share is split inside the sandbox.

A child's memory is more than its address space: what it writes to the sandbox's /tmp and
/dev/shm (tmpfs, pages of memory that RLIMIT_AS does not count) is memory too. So a job's
`memory_mb` is split: TMPFS_DIVISOR-th of it for the two tmpfs (/dev/shm a quarter of that,
/tmp the rest), the remainder for the address space. Code that wants temporary files gets them
in its working folder (TMPDIR points there, on disk, under its disk quota), so the tmpfs
only serve code that names /tmp or /dev/shm itself.

A job's `memory_mb` is also capped: HOST_MEMORY_FRACTION of the host's memory, shared by the
jobs that run at once (one per device the process serves).

Imported by the child before its limits apply: the standard library only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "HOST_MEMORY_FRACTION",
    "MemorySplit",
    "host_memory_mb",
    "memory_cap_mb",
    "split_memory",
]

TMPFS_DIVISOR = 8
"""The tmpfs take an eighth of memory_mb: enough for code that names /tmp for scratch files
(128 MiB of a 1 GiB job, 1 GiB of the default 8 GiB), while the address space, which numpy
and the interpreter need, keeps seven eighths."""
SHM_DIVISOR = 4
"""/dev/shm takes a quarter of the tmpfs' share: POSIX shared memory (semaphores, a runtime's
small buffers) needs little; Docker's default is 64 MiB."""
UNLIMITED_TMPFS_MB = 1024
"""The tmpfs' share of a child without an address-space limit (a GPU's or a NeuronCore's:
their runtimes map far more than they use): what a default 8 GiB job's tmpfs get."""
HOST_MEMORY_FRACTION = 0.75
"""The part of the host's memory the jobs share: the rest is for the daemon (its database, its
projections), the kernel's page cache and a device runtime's pinned host memory. An address
space counts more than a process touches, so jobs at their caps still leave that quarter."""
CGROUP_MEMORY_MAX = Path("/sys/fs/cgroup/memory.max")
"""A container's (or a systemd unit's MemoryMax=) memory limit, cgroup v2; "max" when none."""


@dataclass(frozen=True)
class MemorySplit:
    address_space_mb: int | None
    """RLIMIT_AS; None where the backend sets none."""
    tmp_mb: int
    shm_mb: int


def split_memory(memory_mb: int | None) -> MemorySplit:
    """How a job's `memory_mb` is shared between the sandbox's tmpfs and its address space."""
    tmpfs = UNLIMITED_TMPFS_MB if memory_mb is None else memory_mb // TMPFS_DIVISOR
    shm = tmpfs // SHM_DIVISOR
    address_space = None if memory_mb is None else memory_mb - tmpfs
    return MemorySplit(address_space, tmpfs - shm, shm)


def memory_cap_mb(host_mb: int, jobs: int) -> int:
    """The most memory one of `jobs` concurrent jobs may have on a host of `host_mb`."""
    return int(host_mb * HOST_MEMORY_FRACTION) // max(1, jobs)


def host_memory_mb() -> int:
    """This host's memory in MiB: the physical memory, or the cgroup's limit where lower."""
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        limit = CGROUP_MEMORY_MAX.read_text().strip()
    except OSError:
        limit = "max"
    bounded = int(limit) if limit.isdigit() else physical
    return min(physical, bounded) // (1024 * 1024)
