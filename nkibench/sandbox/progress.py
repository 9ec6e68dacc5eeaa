"""A kernel child's progress, seen by its parent: the simulator beats (one byte on a pipe the
parent made, at most every PROGRESS_PERIOD_S) while it executes instructions, and the parent
lets a child that keeps beating run past its limit, up to a ceiling.

The beat is written in the process where the kernel runs, so a kernel can fake it: the parent
reads it as data (bytes arrived or not, never parsed), and the ceiling bounds what faking buys.
A kernel that hangs in Python or sleeps executes no instruction, so it does not beat.

Imports only the standard library: the child's side loads before its request is read.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass

__all__ = [
    "PROGRESS_FD_KEY",
    "PROGRESS_FD_VARIABLE",
    "PROGRESS_PERIOD_S",
    "PROGRESS_STALL_S",
    "Beat",
    "Deadline",
    "ProgressWatch",
]

PROGRESS_FD_VARIABLE = "ACCELOPT_PROGRESS_FD"
"""Names the write end of the progress pipe in the child's environment (the child's entry
moves it into the request, under PROGRESS_FD_KEY, before any phase runs)."""
PROGRESS_FD_KEY = "progress_fd"
PROGRESS_PERIOD_S = 0.25
"""The least time between two beats: a clock read per instruction, a write a few times a
second (a write per instruction would cost more than many instructions do)."""
PROGRESS_STALL_S = 10.0
"""How long a child past its limit may go without a beat: long enough for what a simulating
child does between instructions (reading a seed's inputs, saving outputs), short enough that
a kernel that starts hanging late still ends soon after its limit."""
READ_BYTES = 4096
"""What the parent drains per look: beats are single bytes, a few a second."""


class Beat:
    """The child's end: called on every instruction the simulator executes."""

    def __init__(self, fd: int) -> None:
        # never block the simulator on a parent that reads late: a beat dropped on a full
        # pipe says nothing the next one does not
        os.set_blocking(fd, False)
        self.fd = fd
        self.next_s = 0.0

    def __call__(self) -> None:
        now = time.monotonic()
        if now < self.next_s:
            return
        self.next_s = now + PROGRESS_PERIOD_S
        with contextlib.suppress(BlockingIOError, BrokenPipeError):
            os.write(self.fd, b".")


class ProgressWatch:
    """The parent's end: when the child last beat (None: never)."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self.fd = fd
        self.last_beat: float | None = None

    def look(self, now: float) -> float | None:
        """Drain what arrived (one read: a child writing without pause cannot hold the parent
        here) and return the time of the last beat."""
        with contextlib.suppress(BlockingIOError):
            if os.read(self.fd, READ_BYTES):
                self.last_beat = now
        return self.last_beat


@dataclass
class Deadline:
    """When a child is stopped: at `limit` (monotonic seconds), unless `watch` shows it beat in
    the last PROGRESS_STALL_S; then no later than `ceiling`."""

    limit: float
    ceiling: float
    watch: ProgressWatch | None = None

    def passed(self, now: float) -> bool:
        # looked at on every call, so a beat's time is when it arrived, not when it was read
        beat = self.watch.look(now) if self.watch is not None else None
        if now < self.limit:
            return False
        if now >= self.ceiling or beat is None:
            return True
        return now - beat > PROGRESS_STALL_S

    def wait_s(self, now: float, poll_s: float) -> float:
        """How long to wait for the child before looking again."""
        return min(poll_s, self.limit - now) if now < self.limit else poll_s
