"""The job queue port: what every adapter (in-memory, SQL, procrastinate's fleet) promises.

It is cut at three capabilities, as a queue such as procrastinate offers them, so that a
search never knows where its profile runs: whoever needs work done *submits* a job and *waits
for its result*; a device's worker *serves* the queue. Submitting is idempotent by job id and a
finished job keeps its result, so a search that resumes after a crash finds the job, or its
result, again: finished work is never done twice. The contract tests in
tests/store/test_jobs_contract.py run against every adapter.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, get_args

import orjson

from events.codec import storage_json
from store.errors import InvalidPayload

__all__ = [
    "JOB_STATES",
    "Handler",
    "Job",
    "JobCancelled",
    "JobQueue",
    "JobState",
    "json_document",
]

JobState = Literal["pending", "running", "done"]
JOB_STATES: tuple[JobState, ...] = get_args(JobState)


class JobCancelled(Exception):
    """The work was not done; run it again later."""


@dataclass(frozen=True)
class Job:
    """One unit of device work and, once done, its result (a JSON document)."""

    job_id: str
    task: str
    kind: str
    payload: dict[str, Any]
    priority: float
    state: JobState
    worker: str | None
    attempts: int
    """How many times a worker has claimed it (a retry after a crash or a drain counts)."""
    result: dict[str, Any] | None
    created_at: datetime | None = None
    """When it was submitted."""
    started_at: datetime | None = None
    """When its last run started (None: never claimed)."""
    finished_at: datetime | None = None
    """When its result was recorded (None: not done)."""


Handler = Callable[[Job], dict[str, Any]]
"""Does a job's work and returns its result; raises JobCancelled when the work was not done."""


def json_document(value: dict[str, Any], what: str) -> dict[str, Any]:
    """A copy of `value` as every adapter would store it, so that the in-memory queue refuses
    what a database would (NaN, NUL) and hands back lists where a database hands back lists."""
    try:
        copied = orjson.loads(storage_json(value))
    except (TypeError, ValueError) as e:
        raise InvalidPayload(f"{what} cannot be stored: {e}") from e
    assert isinstance(copied, dict)
    return copied


class JobQueue(ABC):
    """Jobs that wait for a device, and their results."""

    # --- submit and wait for the result ----------------------------------------------------

    @abstractmethod
    def submit(
        self, job_id: str, *, task: str, kind: str, payload: dict[str, Any], priority: float
    ) -> None:
        """Queue a job as pending, unless a job with this id exists in any state (a no-op)."""

    @abstractmethod
    def result(self, job_id: str, timeout: float) -> Job | None:
        """The job once done (with its result), or None if it is not done within `timeout` s."""

    # --- serve a device --------------------------------------------------------------------

    @abstractmethod
    def serve(self, worker: str, handler: Handler, *, stop: threading.Event, idle_s: float) -> None:
        """Run the most urgent pending job (priority, then age, then id) on `worker`, one at a
        time, through `handler`, until `stop` is set; record what it returns as the result.

        JobCancelled from the handler puts the job back to pending; any other exception puts
        it back to pending too and propagates (the caller decides whether to serve again).
        When nothing is pending it sleeps until a submit or a release wakes it, `idle_s`
        passes, or `stop` is set.
        """

    # --- administration --------------------------------------------------------------------

    @abstractmethod
    def requeue_running(self, worker: str | None = None) -> int:
        """Put every running job back to pending (or only `worker`'s: a dead worker's, before
        another takes its place) and return how many (at start: a dead process's jobs)."""

    @abstractmethod
    def counts(self) -> dict[JobState, int]:
        """How many jobs are in each state, every state named (zero included)."""

    @abstractmethod
    def prune(self, older_than: timedelta) -> int:
        """Forget jobs finished more than `older_than` ago and return how many."""

    @abstractmethod
    def get(self, job_id: str) -> Job | None:
        """The job with this id in whatever state it is, or None if there is none."""

    def close(self) -> None:  # noqa: B027 - a hook: most queues open nothing of their own
        """Close what the queue opened itself (its caller's engine stays open)."""
