"""A child started ahead of its work (parent side). A child that must start cold (a profiler
starts it: nkibench.backends.triton.nsight) pays for its sandbox, its interpreter and its
imports, seconds on a GPU host, before its work can begin. Started ahead, it pays them while
the evaluation's other children run: it applies its limits, imports its phase's modules and
waits (nkibench.sandbox.process.Gate), and no task or kernel code runs in it until `begin`
hands it its request.

The child lives in a thread of its own, which runs it to the end as any child runs (its timeout
counting from `begin`). Whoever starts one ends it (`end`): a child not begun is killed
unstarted, one still running is stopped, and `end` returns once it is gone, so that its folders
can go after it.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Protocol

from nkibench.sandbox.process import CANCEL_POLL_S, Gate
from nkibench.sandbox.stopwatch import REQUEST_KEY

__all__ = ["Ahead", "WaitRecorder"]

Run = Callable[[Gate, threading.Event], dict[str, Any]]
"""Runs the child to its end: it starts it with the gate, and stops it once the event is set."""


class WaitRecorder(Protocol):
    """Where the wait for a child started ahead is counted (nkibench.breakdown.Breakdown)."""

    def add_waited(self, phase: str, waited_s: float, result: dict[str, Any]) -> None: ...


class Ahead:
    """One child started ahead of its work, and the folders it writes."""

    def __init__(
        self,
        phase: str,
        run: Run,
        writes: Sequence[Path],
        cancel: threading.Event | None = None,
        recorder: WaitRecorder | None = None,
    ) -> None:
        self.phase = phase
        self.writes = tuple(writes)
        self._cancel = cancel
        """The caller's own cancel flag (a daemon that drains): it stops the child too."""
        self._recorder = recorder
        """Counts the wait for the result, and asks the child for its own account of its time
        (`accelopt bench gpu --breakdown`)."""
        self._gate = Gate()
        self._stop = threading.Event()
        self._future: Future[dict[str, Any]] = Future()
        # a fresh context: the breakdown being recorded (a context variable) is the caller's,
        # which counts what it waits for this child (`result`), not the child's whole life
        # (nkibench.harness.run_phase records none for a child started ahead either way)
        self._thread = threading.Thread(
            target=contextvars.Context().run,
            args=(self._main, run),
            name=f"ahead-{phase}",
            daemon=True,
        )
        self._thread.start()

    def _main(self, run: Run) -> None:
        try:
            self._future.set_result(run(self._gate, self._stop))
        except BaseException as e:  # handed to whoever waits for the result
            self._future.set_exception(e)

    def begin(self, request: dict[str, Any]) -> None:
        """Hand the child the rest of its request: its work begins now."""
        if self._recorder is not None:  # its own account of its time, for the breakdown
            request = {**request, REQUEST_KEY: True}
        self._gate.open(request)

    def result(self) -> dict[str, Any]:
        """The child's result once it has ended (raises what running it raised: Cancelled for
        one ended before it was begun). The wait, the part of its life that the evaluation did
        not spend on other children, is what the recorder counts for it."""
        if not self._gate.opened and not self._future.done():  # it would wait forever
            raise RuntimeError(f"the {self.phase} child started ahead was never begun")
        waiting = time.perf_counter()
        answer: dict[str, Any] = {}
        try:
            while True:
                try:
                    answer = self._future.result(timeout=CANCEL_POLL_S)
                    return answer
                except TimeoutError:
                    if self._cancel is not None and self._cancel.is_set():
                        self._stop.set()  # the child ends, and Cancelled comes back
        finally:
            if self._recorder is not None:
                self._recorder.add_waited(self.phase, time.perf_counter() - waiting, answer)

    def end(self) -> None:
        """Stop the child, begun or not, and return once it is gone."""
        self._gate.shut()
        self._stop.set()
        self._thread.join()
