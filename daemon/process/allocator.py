"""The C allocator's settings for a process that lives for weeks.

glibc gives every thread that allocates its own arena (up to eight per core), and each arena
keeps the memory it once held: a daemon whose worker, search, LLM and clock threads come and
go ends up with many partly used heaps, and its resident memory climbs although Python's own
objects do not (`accelopt bench soak` showed it: about 44 MB an hour with the default, 31 with
two arenas). Two arenas serve a daemon whose threads mostly wait on subprocesses, sockets and
the database. `MALLOC_ARENA_MAX` in the environment still wins, as glibc documents it.

Freed memory inside a heap also stays resident until glibc is asked to give it back
(`malloc_trim`, which since glibc 2.8 returns free pages anywhere in a heap, not only at its
top): the daemon asks after each full collection, when a finished search's objects have just
been freed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from pathlib import Path

__all__ = ["DAEMON_ARENAS", "limit_arenas", "resident_bytes", "return_free_memory"]

DAEMON_ARENAS = 2
_M_ARENA_MAX = -8
"""mallopt's parameter number for the arena limit (malloc.h)."""


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    """The C library once per process, if it is glibc (find_library runs `ldconfig -p`, and
    the trim runs after every search)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    libc = ctypes.CDLL(name)
    return libc if hasattr(libc, "gnu_get_libc_version") else None


def limit_arenas(arenas: int = DAEMON_ARENAS) -> bool:
    """Cap glibc's malloc arenas, before the daemon starts its threads; False where the C
    library is not glibc, or the environment already chose (MALLOC_ARENA_MAX)."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    libc = _glibc()
    if libc is None:
        return False
    mallopt = libc.mallopt
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_ARENA_MAX, arenas))


def resident_bytes() -> int | None:
    """This process's resident memory (Linux: /proc/self/statm); None elsewhere."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


def return_free_memory() -> int | None:
    """Hand glibc's free heap pages back to the kernel; the resident bytes that went (0 or
    more: other threads allocate meanwhile), None where the C library is not glibc."""
    libc = _glibc()
    if libc is None:
        return None
    before = resident_bytes()
    libc.malloc_trim.argtypes = (ctypes.c_size_t,)
    libc.malloc_trim.restype = ctypes.c_int
    libc.malloc_trim(0)
    after = resident_bytes()
    return max(0, before - after) if before is not None and after is not None else 0
