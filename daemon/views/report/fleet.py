"""The fleet's busy time per device, from the job queue (the `jobs` table): where each job
ran and for how long. The queue is mutable and pruned after a week, so this is the fleet as it
is now, never as of a past position; the report says so."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from store.schema import jobs

__all__ = ["busy_by_device"]


def busy_by_device(engine: Engine) -> list[dict[str, Any]]:
    """Per device that ran jobs: how many, and the seconds they ran."""
    busy: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    query = sa.select(jobs.c.worker, jobs.c.started_at, jobs.c.finished_at).where(
        jobs.c.state == "done", jobs.c.started_at.is_not(None), jobs.c.finished_at.is_not(None)
    )
    with engine.connect() as connection:
        for worker, started, finished in connection.execute(query):
            busy[worker] += (finished - started).total_seconds()
            count[worker] += 1
    return [
        {"device": device, "jobs": count[device], "busy_s": round(busy[device], 2)}
        for device in sorted(busy)
    ]
