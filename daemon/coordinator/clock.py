"""The daemon's clock: APScheduler in the background, running the daemon's periodic jobs.

The jobs: the watcher's rescan, the re-verification of promoted kernels (coordinator.reverify),
snapshots of the projections with the pruning of old snapshots and old finished jobs, the
SQLite WAL checkpoint (store.sqlite), and the fleet's own jobs (on PostgreSQL, the jobs of
dead workers go back to the queue). A job that meets the database's trouble reports it to the
database's health, which the main loop waits out. `ClockPart` is the clock as a part the
supervisor watches: alive while its heartbeat job keeps running.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import structlog
from apscheduler.schedulers.background import BackgroundScheduler

from daemon.coordinator.health import StoreHealth
from daemon.coordinator.options import DaemonOptions
from daemon.coordinator.reverify import Reverifier
from daemon.revisions import prune_copies
from daemon.workers.worker import QueuedProfiler
from events.catalog import KernelSourceChanged
from nkibench.sandbox.isolation import Isolation
from store import sqlite
from store.errors import StoreError
from store.jobs.base import JobQueue
from store.projections.library import LibraryState, Promotion
from store.projections.runner import ProjectionRunner
from store.recorder import Recorder
from store.sql import SqlEventStore

__all__ = ["CLOCK_HEARTBEAT_S", "Clock", "ClockPart"]

log = structlog.get_logger("accelopt.daemon")
CLOCK_HEARTBEAT_S = 5.0
"""The clock proves it runs with a job this often; silent for ten of them, it is dead."""


class ClockPart:
    """The clock as a supervised part: alive while its heartbeat job keeps running."""

    name = "clock"

    def __init__(self, scheduler: BackgroundScheduler) -> None:
        self.scheduler = scheduler
        self.beat = time.monotonic()
        scheduler.add_job(self._heartbeat, "interval", seconds=CLOCK_HEARTBEAT_S, id="heartbeat")

    def _heartbeat(self) -> None:
        self.beat = time.monotonic()

    def alive(self) -> bool:
        return time.monotonic() - self.beat < 10 * CLOCK_HEARTBEAT_S

    def failure(self) -> BaseException | None:
        return None

    def restart(self) -> None:
        raise AssertionError("the clock is not restarted: the daemon stops")


class Clock:
    """The clock's jobs over the daemon's log, projections and queue, and the schedule that
    runs them."""

    def __init__(
        self,
        options: DaemonOptions,
        *,
        store: SqlEventStore,
        recorder: Recorder,
        queue: JobQueue,
        runners: list[ProjectionRunner[Any]],
        library: ProjectionRunner[LibraryState],
        folding: threading.Lock,
        health: StoreHealth,
        profiler: Callable[[threading.Event, tuple[int, ...] | None], QueuedProfiler],
        revisions: Path,
        stopping: threading.Event,
        on_demotion: Callable[[], None],
        isolation: Isolation,
    ) -> None:
        """`runners` are the projections the main loop folds (`library` among them) while it
        holds `folding`; `profiler(stop, seeds)` queues the re-verifications' jobs; `revisions`
        is where tasks are rebuilt from the log."""
        self.options = options
        self.store = store
        self.recorder = recorder
        self.queue = queue
        self.runners = runners
        self._library = library
        self.folding = folding
        self.health = health
        self.profiler = profiler
        self.revisions = revisions
        self.stopping = stopping
        self.on_demotion = on_demotion
        self.isolation = isolation

    def schedule(self, rescan: Callable[[], Any]) -> BackgroundScheduler:
        """Every job on its interval (not started); `rescan` is the watcher's."""
        scheduler = BackgroundScheduler(
            timezone="UTC",
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 60},
        )
        o = self.options
        reverify = Reverifier(
            recorder=self.recorder,
            promoted=self._promoted,
            profiler=lambda seeds: self.profiler(threading.Event(), seeds),
            revisions=self.revisions,
            every_s=o.reverify_s,
            stopping=self.stopping,
            on_demotion=self.on_demotion,
            isolation=self.isolation,
        )
        jobs: list[tuple[str, Callable[[], Any], float]] = [
            ("rescan", rescan, o.rescan_s),
            ("reverify", reverify, o.reverify_s),
            ("snapshots", self._snapshots, o.snapshot_s),
            ("checkpoint_wal", self._checkpoint_wal, o.checkpoint_s),
            *self._fleet_jobs(),
        ]
        for name, function, seconds in jobs:
            scheduler.add_job(
                partial(self._clock_job, name, function), "interval", seconds=seconds, id=name
            )
        return scheduler

    def _promoted(self) -> list[tuple[Promotion, KernelSourceChanged]]:
        with self.folding:  # the promotions of the current revisions, as folded so far
            library = self._library.state
            return [
                (p, library.revisions[task].source_changed())
                for task, p in library.promoted().items()
            ]

    def _snapshots(self) -> None:
        """Snapshot the projections, and drop what a daemon of weeks would otherwise pile up:
        old snapshots, old finished jobs and the unused copies of old revisions."""
        with self.folding:  # as of the main loop's last fold
            for runner in self.runners:
                runner.snapshot()
            current = {r.content_hash for r in self._library.state.revisions.values()}
        dropped = sum(
            self.store.prune_snapshots(
                r.projection.name, r.projection.version, keep=self.options.snapshots_kept
            )
            for r in self.runners
        )
        pruned = self.queue.prune(timedelta(seconds=self.options.jobs_kept_s))
        copies = prune_copies(
            self.revisions, keep=current, unused_s=self.options.revisions_kept_s, now=time.time()
        )
        if dropped or pruned or copies:
            log.info("pruned", snapshots=dropped, finished_jobs=pruned, revision_copies=copies)

    def _checkpoint_wal(self) -> None:
        sqlite.checkpoint_wal(self.store.engine)

    def _fleet_jobs(self) -> list[tuple[str, Callable[[], Any], float]]:
        """The queue's own upkeep (the fleet's: the jobs of dead workers go back to it)."""
        return self.queue.maintenance()

    def _clock_job(self, name: str, function: Callable[[], None]) -> None:
        try:
            function()
        except StoreError as e:  # the database's trouble: the main loop waits it out
            self.health.failed(e, f"the clock's {name}")
