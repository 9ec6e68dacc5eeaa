"""procrastinate's worker across a database restart.

procrastinate's worker calls the database from its fetch loop, its heartbeat and its listener,
and a call that meets the server away raises. A fetch's error ends the worker (and with it an
`accelopt worker`); the heartbeat's and the listener's end only their own task, silently: the
worker then serves on without a heartbeat (the coordinator takes it for dead and hands its
running jobs to others) or without LISTEN (waking every 5 s instead of at each job). Here those
calls, and the two that record a job's end, wait the server out: a call failing for a
connection's sake (psycopg's OperationalError: refused, terminated by an administrator, the
server starting or shutting down, a pool with no live connection) is tried again every
`RETRY_S` for at most `patience_s`, after which its error goes on as before.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

import psycopg
import structlog
from procrastinate import jobs as procrastinate_jobs
from procrastinate.exceptions import ConnectorException
from procrastinate.manager import JobManager, NotificationCallback

__all__ = ["PatientJobManager", "server_away"]

log = structlog.get_logger("accelopt.fleet")

RETRY_S = 0.5
LISTEN_QUIET_S = 60.0
"""The listener says it lost its notifications at most this often."""
T = TypeVar("T")


def server_away(error: BaseException) -> bool:
    """Did a procrastinate call fail because the connection did (not the statement)?"""
    return isinstance(error, ConnectorException) and isinstance(
        error.__cause__, psycopg.OperationalError
    )


class PatientJobManager(JobManager):
    """The job manager of a worker's procrastinate app (`app.job_manager`)."""

    def __init__(self, manager: JobManager, *, patience_s: float) -> None:
        super().__init__(connector=manager.connector)
        self.patience_s = patience_s

    async def _patiently(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        deadline = time.monotonic() + self.patience_s
        waited = False
        while True:
            try:
                result = await call()
            except ConnectorException as e:
                if not server_away(e) or time.monotonic() > deadline:
                    raise
                if not waited:
                    waited = True
                    log.warning("database away; waiting for it", call=what, error=str(e.__cause__))
                await asyncio.sleep(RETRY_S)
                continue
            if waited:
                log.info("database back", call=what)
            return result

    async def fetch_job(
        self, queues: Iterable[str] | None, worker_id: int
    ) -> procrastinate_jobs.Job | None:
        fetch = super().fetch_job
        return await self._patiently("fetch a job", lambda: fetch(queues, worker_id))

    async def update_heartbeat(self, worker_id: int) -> None:
        beat = super().update_heartbeat
        await self._patiently("heartbeat", lambda: beat(worker_id))

    async def finish_job(
        self, job: procrastinate_jobs.Job, status: procrastinate_jobs.Status, delete_job: bool
    ) -> None:
        finish = super().finish_job
        await self._patiently("finish a job", lambda: finish(job, status, delete_job))

    async def retry_job(
        self,
        job: procrastinate_jobs.Job,
        retry_at: datetime.datetime | None = None,
        priority: int | None = None,
        queue: str | None = None,
        lock: str | None = None,
    ) -> None:
        retry = super().retry_job
        await self._patiently("retry a job", lambda: retry(job, retry_at, priority, queue, lock))

    async def listen_for_jobs(
        self, *, on_notification: NotificationCallback, queues: Iterable[str] | None = None
    ) -> None:
        """procrastinate listens again by itself when a live connection breaks, but not when
        the new connection fails (the server still away): that error ends the listener, so
        it is waited out here, however long (the fetch loop's patience is the worker's)."""
        listen = super().listen_for_jobs
        quiet_until = 0.0
        while True:
            try:
                await listen(on_notification=on_notification, queues=queues)
                return  # it could not start listening: procrastinate's own way of giving up
            except ConnectorException as e:
                if not server_away(e):
                    raise
                if time.monotonic() >= quiet_until:  # once an outage, not every try
                    quiet_until = time.monotonic() + LISTEN_QUIET_S
                    log.warning("job notifications lost; listening again", error=str(e.__cause__))
                await asyncio.sleep(RETRY_S)
