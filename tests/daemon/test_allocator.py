"""The daemon caps glibc's malloc arenas: counted with malloc_stats in a real process whose
threads each allocate, with and without the cap."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from daemon.process.allocator import DAEMON_ARENAS, limit_arenas

PROGRAM = """
import ctypes, sys, threading
from daemon.process.allocator import limit_arenas
applied = limit_arenas() if sys.argv[1] == "cap" else None
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = (ctypes.c_size_t,)
held, ready, release = [], threading.Barrier(9), threading.Event()
def allocate():
    held.append(libc.malloc(4096))
    ready.wait()
    release.wait()
threads = [threading.Thread(target=allocate) for _ in range(8)]
for t in threads:
    t.start()
ready.wait()
libc.malloc_stats()
release.set()
for t in threads:
    t.join()
print(applied)
"""

glibc = pytest.mark.skipif(
    not hasattr(os, "confstr") or "glibc" not in (os.confstr("CS_GNU_LIBC_VERSION") or ""),
    reason="the arena cap is glibc's",
)


def arenas(mode: str, **env: str) -> tuple[int, str]:
    clean = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, mode],
        env=clean | env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    count = sum(1 for line in done.stderr.splitlines() if line.startswith("Arena "))
    return count, done.stdout.strip()


@glibc
def test_eight_allocating_threads_share_the_daemons_arenas() -> None:
    capped, applied = arenas("cap")
    assert applied == "True"
    assert 1 <= capped <= DAEMON_ARENAS
    uncapped, _ = arenas("none")
    assert uncapped > DAEMON_ARENAS


@glibc
def test_an_arena_limit_from_the_environment_is_left_alone() -> None:
    count, applied = arenas("cap", MALLOC_ARENA_MAX="4")
    assert applied == "False"
    assert DAEMON_ARENAS < count <= 4


def test_the_limit_is_not_set_where_the_environment_chose(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "8")
    assert limit_arenas() is False


TRIM = """
import ctypes
from daemon.process.allocator import resident_bytes, return_free_memory
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = (ctypes.c_size_t,)
libc.free.argtypes = (ctypes.c_void_p,)
libc.memset.argtypes = (ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t)
blocks = [libc.malloc(1024) for _ in range(100_000)]
for block in blocks:
    libc.memset(block, 1, 1024)  # resident
pin = libc.malloc(1024)  # above them: the heap's top cannot shrink past it
for block in blocks:
    libc.free(block)
held = resident_bytes()
returned = return_free_memory()
print(held, returned, resident_bytes())
"""


@glibc
def test_free_pages_inside_the_heap_are_returned() -> None:
    """100 MB freed below a live block stay resident until the daemon asks glibc to give them
    back: a trim that did nothing returns about 0."""
    done = subprocess.run(
        [sys.executable, "-c", TRIM], capture_output=True, text=True, timeout=60, check=True
    )
    held, returned, after = map(int, done.stdout.split())
    assert returned > 80e6, done.stdout
    assert after < held - 80e6
