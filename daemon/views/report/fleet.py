"""The fleet's busy time per device, from the job queue's listing: where each job ran and for
how long. The queue is mutable and pruned after a week, so this is the fleet as it is now,
never as of a past position; the report says so."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from sqlalchemy.engine import Engine

from store.jobs import Job, open_queue

__all__ = ["busy_by_device", "listed_jobs"]


def listed_jobs(engine: Engine) -> list[Job]:
    """The jobs of the database's queue, as its listing has them (no payloads, no results)."""
    queue = open_queue(engine)
    try:
        return [item.job for item in queue.listing()]
    finally:
        queue.close()


def busy_by_device(jobs: Iterable[Job]) -> list[dict[str, Any]]:
    """Per device that ran jobs to the end: how many, and the seconds they ran."""
    busy: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for job in jobs:
        worker, started, finished = job.worker, job.started_at, job.finished_at
        if job.state != "done" or worker is None or started is None or finished is None:
            continue
        busy[worker] += (finished - started).total_seconds()
        count[worker] += 1
    return [
        {"device": device, "jobs": count[device], "busy_s": round(busy[device], 2)}
        for device in sorted(busy)
    ]
