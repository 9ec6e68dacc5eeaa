"""Serving and waiting for queues whose workers claim jobs one by one from their own storage.

The in-memory and SQL adapters differ only in where a job lives; how a worker serves (claim,
run the handler, record the result, put the job back or count a failed run) and how a
submitter waits are the same, so they live here once and each adapter supplies `_claim`,
`_complete`, `_release` and `_fail`. A
queue with its own worker loop (procrastinate) implements the port directly instead.

Wake-ups cross threads, not processes: a submit, release or result here wakes this process's
workers and waiters at once, while work that another process submits or finishes is seen at
the next look (`idle_s` for a worker, `POLL_S` for a waiter).
"""

from __future__ import annotations

import threading
import time
from abc import abstractmethod
from typing import Any, ClassVar

from store.jobs.base import (
    FINISHED,
    FailedRun,
    GiveUp,
    Handler,
    Job,
    JobCancelled,
    JobQueue,
    JobState,
)

__all__ = ["WORKER_DIED", "ClaimingQueue", "run_error"]

WORKER_DIED = "its worker died while running it"
"""Why a run failed that a dead worker left running (its process, or its host, gone)."""


def run_error(error: BaseException) -> str:
    """Why a run failed, as a failed run keeps it."""
    return f"{type(error).__name__}: {error}"


class ClaimingQueue(JobQueue):
    """The template: `serve` and `result` over three storage steps."""

    POLL_S: ClassVar[float] = 1.0
    """A waiter looks again at least this often, for results that another process recorded."""
    STOP_SLICE_S: ClassVar[float] = 0.1
    """An idle worker notices `stop` at most this late (an Event cannot wake a Condition)."""

    def __init__(self, give_up: GiveUp | None) -> None:
        self.give_up = give_up or GiveUp()
        """When a job whose runs keep failing ends failed (None: the defaults)."""
        self._changed = threading.Condition()
        self._generation = 0
        """Counts changes here, so that a change between a look and a sleep is never missed."""

    # --- the storage steps each adapter supplies -------------------------------------------

    @abstractmethod
    def _claim(self, worker: str) -> Job | None:
        """Atomically mark the most urgent pending job running on `worker` and return it as
        claimed (attempts counted), or None if nothing is pending."""

    @abstractmethod
    def _complete(self, job_id: str, worker: str, result: dict[str, Any]) -> None:
        """Record `result` and mark the job done, unless it is finished already (an outcome
        that a waiter may have seen never changes: a late result of a job given up included)."""

    @abstractmethod
    def _release(self, job_id: str, worker: str) -> None:
        """Put the job back to pending if it is still running on `worker`."""

    @abstractmethod
    def _fail(self, job_id: str, run: FailedRun) -> JobState | None:
        """If the job is still running on `run.worker`: count the failed run, and put the job
        back to pending, or to failed once `give_up` is reached with the devices serving the
        queue now (`devices()`; one host: None, its `give_up` was told its devices); the state
        it is left in (None: it was not running there any more)."""

    # --- the port --------------------------------------------------------------------------

    def serve(self, worker: str, handler: Handler, *, stop: threading.Event, idle_s: float) -> None:
        while not stop.is_set():
            seen = self._seen()
            job = self._claim(worker)
            if job is None:
                self._wait_for_change(seen, idle_s, stop)
            else:
                self._run(worker, job, handler)

    def result(self, job_id: str, timeout: float) -> Job | None:
        deadline = time.monotonic() + timeout
        while True:
            seen = self._seen()
            job = self.get(job_id)
            if job is not None and job.state in FINISHED:
                return job
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self._wait_for_change(seen, min(left, self.POLL_S))

    # --- the loop's parts ------------------------------------------------------------------

    def _run(self, worker: str, job: Job, handler: Handler) -> None:
        """One job, never left running: whatever happens, it ends done, failed or pending
        again. Only the handler's error is the job's failed run: one in recording its result
        is the database's, and the job's work is done again when it is back."""
        try:
            result = handler(job)
        except JobCancelled:
            self._release(job.job_id, worker)
            return
        except BaseException as e:
            self._fail(job.job_id, FailedRun(worker, run_error(e)))
            raise
        try:
            self._complete(job.job_id, worker, result)
        except BaseException:
            self._release(job.job_id, worker)
            raise

    def _seen(self) -> int:
        with self._changed:
            return self._generation

    def _wait_for_change(
        self, seen: int, timeout: float, stop: threading.Event | None = None
    ) -> None:
        """Until jobs change here after `seen`, `stop` is set, or `timeout` seconds pass."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._generation == seen and not (stop is not None and stop.is_set()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._changed.wait(left if stop is None else min(left, self.STOP_SLICE_S))

    def _wake(self) -> None:
        """Tell this process's idle workers and waiters that jobs changed."""
        with self._changed:
            self._generation += 1
            self._changed.notify_all()
