"""The C allocator's settings for a process that lives for weeks.

glibc gives every thread that allocates its own arena (up to eight per core), and each arena
keeps the memory it once held: a daemon whose worker, search, LLM and clock threads come and
go ends up with many partly used heaps, and its resident memory climbs although Python's own
objects do not (`accelopt bench soak` showed it: about 44 MB an hour with the default, 31 with
two arenas). Two arenas serve a daemon whose threads mostly wait on subprocesses, sockets and
the database. `MALLOC_ARENA_MAX` in the environment still wins, as glibc documents it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

__all__ = ["DAEMON_ARENAS", "limit_arenas"]

DAEMON_ARENAS = 2
_M_ARENA_MAX = -8
"""mallopt's parameter number for the arena limit (malloc.h)."""


def limit_arenas(arenas: int = DAEMON_ARENAS) -> bool:
    """Cap glibc's malloc arenas, before the daemon starts its threads; False where the C
    library is not glibc, or the environment already chose (MALLOC_ARENA_MAX)."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    libc = ctypes.CDLL(name)
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None or not hasattr(libc, "gnu_get_libc_version"):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_ARENA_MAX, arenas))
