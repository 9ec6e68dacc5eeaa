"""The child's side of its lifeline to the parent: the read end of a pipe whose only write end
the parent holds. When the parent dies, however it dies (SIGKILL included), the kernel closes
that write end, the read returns end-of-file, and the child ends itself and everything it
started. Unlike a parent-death signal this has no window: a child whose parent died before
it even started sees end-of-file at once.

Imports only the standard library: it runs first in the child, before anything heavy loads.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading

__all__ = ["LIFELINE_VARIABLE", "hold"]

LIFELINE_VARIABLE = "ACCELOPT_LIFELINE_FD"


def _end() -> None:
    # Inside the sandbox the child is the first process of its PID namespace after
    # bubblewrap's init, so its exit takes every other process there with it; without the
    # sandbox, its process group is the most it can reach.
    with contextlib.suppress(OSError):
        os.killpg(os.getpgrp(), signal.SIGKILL)
    os._exit(137)


def _watch(fd: int) -> None:
    try:
        while os.read(fd, 1):
            pass
    except OSError:
        pass
    _end()


def hold() -> None:
    """Start watching the lifeline named by the environment (a no-op without one)."""
    value = os.environ.pop(LIFELINE_VARIABLE, None)
    if value is None:
        return
    fd = int(value)
    threading.Thread(target=_watch, args=(fd,), name="lifeline", daemon=True).start()
