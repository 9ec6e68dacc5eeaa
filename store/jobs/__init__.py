"""The job queue: profiling work waiting for a device.

The port (`store.jobs.base`) is cut at what a queue such as procrastinate offers: submit a
job on a named queue, wait for its result, serve a device; list the jobs, count the devices
that serve them, and the upkeep a clock must run. Adapters: `store.jobs.memory` (in process,
for tests and tools), `store.jobs.sql` (a table in the event database, one host) and
`store.jobs.fleet` (that table, dispatched to many hosts by procrastinate, on PostgreSQL).
`open_queue` is the one place that picks the adapter of a database; everything else depends
on the port only (a fleet's worker host, `accelopt worker`, is the fleet's own).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.engine import Engine

from store.jobs.base import (
    GiveUp,
    Handler,
    Job,
    JobCancelled,
    JobListing,
    JobQueue,
    JobState,
    Maintenance,
    queue_name,
)

__all__ = [
    "GiveUp",
    "Handler",
    "Job",
    "JobCancelled",
    "JobListing",
    "JobQueue",
    "JobState",
    "Maintenance",
    "open_queue",
    "queue_name",
    "spans_hosts",
]


def spans_hosts(engine: Engine) -> bool:
    """Whether `open_queue(engine)` gives a queue that workers on other hosts serve: the
    fleet's, on PostgreSQL (SQLite has one host)."""
    return engine.dialect.name == "postgresql"


def open_queue(
    engine: Engine, *, queues: Sequence[str] = (), give_up: GiveUp | None = None
) -> JobQueue:
    """The job queue of the database behind `engine` (which stays the caller's to dispose of;
    `close` the queue): on PostgreSQL the fleet's, whose workers here take `queues` (empty:
    every queue); on SQLite one host's, whose workers take every job. `give_up`: when a job
    that keeps failing ends failed (None: the defaults)."""
    if spans_hosts(engine):
        # imported here: procrastinate is the fleet's alone, and a SQLite database needs none
        from store.jobs.fleet import FleetJobQueue  # noqa: PLC0415

        return FleetJobQueue(engine, queues=queues, give_up=give_up)
    from store.jobs.sql import SqlJobQueue  # noqa: PLC0415

    return SqlJobQueue(engine, give_up=give_up)
