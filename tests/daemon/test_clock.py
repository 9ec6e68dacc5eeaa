"""The clock without a daemon: the schedule it builds (which jobs, at which intervals, with
which defaults; the fleet's job on PostgreSQL only), what its jobs do when run (snapshots and
their pruning, the WAL checkpoint, a job's database trouble reported to the health), and the
clock part's heartbeat."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from apscheduler.schedulers.background import BackgroundScheduler

from daemon.coordinator.clock import CLOCK_HEARTBEAT_S, Clock, ClockPart
from daemon.coordinator.health import StoreHealth
from daemon.coordinator.options import DaemonOptions
from daemon.coordinator.portfolio import PortfolioProjection
from daemon.revisions import materialize, record_revision
from events.catalog import KernelSourceChanged
from nkibench.suites import NKI_LEGACY_SUITE
from nkibench.task.files import read_task_files
from nkibench.task.spec import load_task
from store.engine import sqlite_path
from store.errors import StoreError
from store.jobs.base import JobQueue
from store.jobs.fleet import FleetJobQueue, queue_name, recover_every
from store.jobs.sql import SqlJobQueue
from store.projections.library import LibraryProjection
from store.projections.runner import ProjectionRunner
from store.recorder import Recorder
from store.sql import SqlEventStore
from tests.support import PARSE_ISOLATION
from tests.support.factories import source_changed

INTERVALS = {"rescan_s": 11.0, "reverify_s": 22.0, "snapshot_s": 33.0, "checkpoint_s": 44.0}


class Clocks:
    """Builds clocks over a store and a queue; the schedulers they build are shut down at the
    end."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.health = StoreHealth(patience_s=60.0)
        self.schedulers: list[BackgroundScheduler] = []

    def __call__(
        self, store: SqlEventStore, queue: JobQueue | None = None, **options: Any
    ) -> Clock:
        library = ProjectionRunner(store, LibraryProjection())
        return Clock(
            DaemonOptions(watch=self.tmp_path / "kernels", **{**INTERVALS, **options}),
            store=store,
            recorder=Recorder(store, correlation_id="test"),
            queue=queue or SqlJobQueue(store.engine),
            runners=[library, ProjectionRunner(store, PortfolioProjection())],
            library=library,
            folding=threading.Lock(),
            health=self.health,
            profiler=lambda _stop, _seeds: None,  # type: ignore[arg-type,return-value]
            revisions=self.tmp_path / "revisions",
            stopping=threading.Event(),
            on_demotion=lambda: None,
            isolation=PARSE_ISOLATION,
        )

    def schedule(
        self, clock: Clock, rescan: Callable[[], Any] = lambda: None
    ) -> BackgroundScheduler:
        scheduler = clock.schedule(rescan)
        self.schedulers.append(scheduler)
        return scheduler


@pytest.fixture
def clocks(tmp_path: Path) -> Iterator[Clocks]:
    made = Clocks(tmp_path)
    yield made
    for scheduler in made.schedulers:
        if scheduler.running:
            scheduler.shutdown(wait=False)


@pytest.fixture
def store(
    fresh_sqlite_url: Callable[[], str], open_stores: Callable[[str], SqlEventStore]
) -> SqlEventStore:
    return open_stores(fresh_sqlite_url())


def intervals(scheduler: BackgroundScheduler) -> dict[str, float]:
    return {job.id: job.trigger.interval.total_seconds() for job in scheduler.get_jobs()}


def record_revisions(store: SqlEventStore, count: int, start: int = 0) -> None:
    recorder = Recorder(store, correlation_id="test")
    for i in range(start, start + count):
        recorder.record("task:silu", source_changed("silu", f"{i:064x}"), key=f"silu|{i}")


def test_the_schedule_holds_each_job_at_its_interval(clocks: Clocks, store: SqlEventStore) -> None:
    scheduler = clocks.schedule(clocks(store))
    assert intervals(scheduler) == {
        "rescan": 11.0,
        "reverify": 22.0,
        "snapshots": 33.0,
        "checkpoint_wal": 44.0,
    }  # no fleet job on SQLite
    assert not scheduler.running  # the daemon starts it
    scheduler.start(paused=True)  # the job defaults are applied when it starts
    for job in scheduler.get_jobs():
        assert (job.coalesce, job.max_instances, job.misfire_grace_time) == (True, 1, 60)


@pytest.mark.postgres
def test_on_postgresql_the_jobs_of_dead_workers_are_recovered_on_the_clock(
    clocks: Clocks, fresh_pg_url: Callable[[], str], open_stores: Callable[[str], SqlEventStore]
) -> None:
    store = open_stores(fresh_pg_url())
    queue = FleetJobQueue(store.engine, queues=[queue_name("nkisim", "trn2")], stalled_s=12.0)
    try:
        scheduler = clocks.schedule(clocks(store, queue))
        assert intervals(scheduler)["recover_jobs"] == recover_every(12.0) == 4.0
        assert set(intervals(scheduler)) == {
            "rescan",
            "reverify",
            "snapshots",
            "checkpoint_wal",
            "recover_jobs",
        }
    finally:
        queue.close()


def failing_now(clocks: Clocks) -> bool:
    """The health's state read anew (a plain attribute read would stay narrowed by the
    assertion before the job ran)."""
    return clocks.health.failing


def test_a_job_runs_its_callable_and_reports_database_trouble(
    clocks: Clocks, store: SqlEventStore
) -> None:
    calls: list[str] = []
    failing: list[BaseException] = []

    def rescan() -> None:
        calls.append("rescan")
        if failing:
            raise failing[0]

    scheduler = clocks.schedule(clocks(store), rescan)
    job = scheduler.get_job("rescan")
    job.func()
    assert calls == ["rescan"]
    assert not clocks.health.failing

    failing.append(StoreError("accelopt.db: rescan failed (injected)"))
    job.func()  # the database's trouble is the health's, not the scheduler's
    assert calls == ["rescan", "rescan"]
    assert failing_now(clocks)
    assert clocks.health.last == "accelopt.db: rescan failed (injected)"

    failing[0] = RuntimeError("a bug")
    with pytest.raises(RuntimeError, match="a bug"):  # any other error is APScheduler's to log
        job.func()


def test_the_snapshot_job_saves_the_projections_and_keeps_the_newest(
    clocks: Clocks, store: SqlEventStore
) -> None:
    clock = clocks(store, snapshots_kept=2)
    snapshots = clocks.schedule(clock).get_job("snapshots")
    names = [(r.projection.name, r.projection.version) for r in clock.runners]
    for round_ in range(3):
        record_revisions(store, 2, start=2 * round_)
        with clock.folding:
            for runner in clock.runners:
                runner.catch_up()
        snapshots.func()
        for name, version in names:
            saved = store.latest_snapshot(name, version, at_most=store.head())
            assert saved is not None
            assert saved.position == store.head()
    for name, version in names:  # the oldest of three was dropped
        assert store.prune_snapshots(name, version, keep=2) == 0
        assert store.prune_snapshots(name, version, keep=1) == 1


def test_the_snapshot_job_drops_finished_jobs_past_their_retention(
    clocks: Clocks, store: SqlEventStore
) -> None:
    now = [datetime(2026, 11, 27, tzinfo=UTC)]
    queue = SqlJobQueue(store.engine, clock=lambda: now[0])

    def finish(job_id: str) -> None:
        queue.submit(
            job_id, queue="nkisim:trn1", task="silu", kind="profile", payload={}, priority=0
        )
        job = queue._claim("w")
        assert job is not None
        assert job.job_id == job_id
        queue._complete(job_id, "w", {"ok": True})

    finish("old")
    now[0] += timedelta(hours=1)
    finish("recent")
    queue.submit(
        "waiting", queue="nkisim:trn1", task="silu", kind="profile", payload={}, priority=0
    )
    clock = clocks(store, queue, jobs_kept_s=1800.0)
    clocks.schedule(clock).get_job("snapshots").func()
    assert queue.get("old") is None  # finished an hour ago, kept for half of one
    assert queue.get("recent") is not None
    assert queue.get("waiting") is not None


def test_the_snapshot_job_removes_the_unused_copies_of_old_revisions(
    clocks: Clocks, store: SqlEventStore, tmp_path: Path
) -> None:
    """A copy of a revision no longer current goes once unused for `revisions_kept_s`; the
    current revision's stays however old, one used lately stays, and one removed is rebuilt
    from the log when asked for. The copies' last use is set, not waited for."""
    folder = tmp_path / "kernels" / "silu"
    shutil.copytree(NKI_LEGACY_SUITE / "silu", folder)
    recorder = Recorder(store, correlation_id="test")
    for edit in range(3):
        (folder / "kernel.py").write_text((folder / "kernel.py").read_text() + f"# {edit}\n")
        record_revision(recorder, load_task(folder), read_task_files(folder), previous=str(edit))
    old, recent, current = recorder.of_type("task:silu", KernelSourceChanged)
    clock = clocks(store, revisions_kept_s=7 * 86400.0)
    clock._library.catch_up()
    now = time.time()
    for revision, days_unused in ((old, 8), (recent, 6), (current, 30)):
        copy = materialize(store, revision, clock.revisions).path.parent
        os.utime(copy, (now - days_unused * 86400,) * 2)

    clocks.schedule(clock).get_job("snapshots").func()
    kept = {p.name for p in clock.revisions.iterdir()}
    assert kept == {recent.content_hash, current.content_hash}

    rebuilt = materialize(store, old, clock.revisions)
    assert rebuilt.content_hash == old.content_hash
    again = materialize(store, recent, clock.revisions)  # a use: it is recent again
    assert again.path.parent.stat().st_mtime > now - 60


def test_the_checkpoint_job_empties_the_wal(clocks: Clocks, store: SqlEventStore) -> None:
    record_revisions(store, 20)
    path = sqlite_path(store.engine.url)
    assert path is not None
    wal = path.with_name(path.name + "-wal")
    assert wal.stat().st_size > 0
    clocks.schedule(clocks(store)).get_job("checkpoint_wal").func()
    assert wal.stat().st_size == 0


def test_the_reverify_job_reads_the_promotions_under_the_folding_lock(
    clocks: Clocks, store: SqlEventStore
) -> None:
    clock = clocks(store)
    assert clock._promoted() == []
    clock.folding.acquire()
    read = threading.Thread(target=clock._promoted)
    read.start()
    read.join(0.2)
    assert read.is_alive()  # it waits for the main loop's fold
    clock.folding.release()
    read.join(5)
    assert not read.is_alive()


def test_the_clock_part_is_alive_while_its_heartbeat_runs() -> None:
    scheduler = BackgroundScheduler(timezone="UTC")
    part = ClockPart(scheduler)
    heartbeat = scheduler.get_job("heartbeat")
    assert heartbeat.trigger.interval == timedelta(seconds=CLOCK_HEARTBEAT_S)
    assert part.name == "clock"
    assert part.alive()
    part.beat = time.monotonic() - 10 * CLOCK_HEARTBEAT_S - 1  # ten beats missed
    assert not part.alive()
    heartbeat.func()
    assert part.alive()
    assert part.failure() is None
    with pytest.raises(AssertionError, match="not restarted"):
        part.restart()
