"""The report's fleet section: each device's busy time, from the job queue's listing of the
database (one host's queue on SQLite, the fleet's on PostgreSQL), whatever its jobs carry."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from daemon.views.report.fleet import busy_by_device, listed_jobs
from store.engine import make_engine
from store.jobs.base import Job, queue_name
from store.jobs.sql import SqlJobQueue

START = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def job(job_id: str, worker: str | None, seconds: float | None, state: str = "done") -> Job:
    finished = START + timedelta(seconds=seconds) if seconds is not None else None
    return Job(
        job_id, "silu", "profile", {}, 0.0, state, worker, 1, None,  # type: ignore[arg-type]
        created_at=START, started_at=START, finished_at=finished,
    )  # fmt: skip


def test_busy_time_counts_the_finished_runs_of_each_device() -> None:
    jobs = [
        job("a", "h2/0", 1.5),
        job("b", "h1/0", 2.0),
        job("c", "h2/0", 0.25),
        job("running", "h1/0", None, state="running"),
        job("pending", None, None, state="pending"),
    ]
    assert busy_by_device(jobs) == [
        {"device": "h1/0", "jobs": 1, "busy_s": 2.0},
        {"device": "h2/0", "jobs": 2, "busy_s": 1.75},
    ]
    assert busy_by_device([]) == []


def test_the_jobs_come_from_the_databases_queue(db_url: Callable[[], str]) -> None:
    engine = make_engine(db_url())
    try:
        queue = SqlJobQueue(engine)
        for job_id in ("a", "b"):
            queue.submit(
                job_id, queue=queue_name("nkisim", "trn2"), task="silu", kind="profile",
                payload={"source": "k"}, priority=0.0,
            )  # fmt: skip
        stop = threading.Event()

        def one_and_stop(served: Job) -> dict[str, Any]:
            stop.set()
            return {"ok": True}

        queue.serve("h/0", one_and_stop, stop=stop, idle_s=0.1)
        listed = {j.job_id: j for j in listed_jobs(engine)}
    finally:
        engine.dispose()
    assert set(listed) == {"a", "b"}
    assert (listed["a"].state, listed["a"].worker, listed["b"].state) == ("done", "h/0", "pending")
    assert listed["a"].payload == {}  # a listing carries no documents
    (device,) = busy_by_device(listed.values())
    assert (device["device"], device["jobs"]) == ("h/0", 1)
