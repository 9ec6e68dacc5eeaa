"""`accelopt daemon`: one process that watches a kernel directory and keeps optimizing.

Threads: the watcher (hints, debounce, revisions), one worker per device (profiles from the
job queue), one thread per running search (the agents), the clock (APScheduler: rescans,
re-verification, snapshots, checkpoints), and the main loop, which alone talks to systemd
(READY, STATUS, WATCHDOG, STOPPING), keeps the projections (library, memory, portfolio) caught
up with the log, starts the searches the portfolio chooses and keeps the library folder in step
with the library's promotions.

SIGTERM or SIGINT drains: no new work; searches stop at their next step; running kernel
processes get SIGTERM, then SIGKILL, and their jobs go back to the queue; the last events
are written; exit 0. After a SIGKILL nothing needs repair: the next start resumes every
search from the log and reruns only jobs that had not finished.
"""

from __future__ import annotations

import os
import platform
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog
from apscheduler.schedulers.background import BackgroundScheduler
from rich.live import Live
from rich.table import Table

from agents.config import SearchConfig
from agents.ledger import Ledger
from agents.llm import LLMClient
from agents.memory import MemoryProjection
from agents.search import IDLE, Interrupted, Search
from agents.search.ids import demotion_key, reverify_job_id
from daemon import startup
from daemon.backends import open_for_command
from daemon.library import sync_library
from daemon.notify import Notifier
from daemon.portfolio import PortfolioProjection, PortfolioView, choose
from daemon.revisions import materialize
from daemon.secrets import scrubber_for
from daemon.settings import Settings
from daemon.watcher import ObserverKind, TaskWatcher
from daemon.workers import QueuedProfiler, Worker
from events.catalog import (
    DaemonStarted,
    DaemonStopped,
    KernelDemoted,
    KernelSourceChanged,
)
from nkibench.backends import backend_info
from nkibench.policy.provenance import package_version
from nkibench.task.spec import TaskSpec
from store.engine import make_engine
from store.jobs.sql import SqlJobQueue
from store.migrate import upgrade
from store.projections.library import LibraryProjection, LibraryState
from store.projections.runner import ProjectionRunner
from store.recorder import Recorder
from store.sql import SqlEventStore

__all__ = ["Daemon", "DaemonOptions"]

log = structlog.get_logger("accelopt.daemon")


@dataclass
class DaemonOptions:
    watch: Path
    backend: str = "nkisim"
    devices: list[str] = field(default_factory=lambda: ["0"])
    """nkisim: one worker per entry (CPU cores); neuron: the NeuronCores to use."""
    target: str | None = None
    shapes: str = "full"
    observer: ObserverKind = "auto"
    search: SearchConfig = field(default_factory=SearchConfig)
    max_searches: int | None = None
    """Searches at once (default: one more than the workers, so devices never wait)."""
    rest_s: float = 6 * 3600
    """How long a plateaued task rests before another search."""
    rescan_s: float = 60.0
    reverify_s: float = 24 * 3600
    snapshot_s: float = 3600.0
    checkpoint_s: float = 600.0
    tick_s: float = 1.0
    """The main loop's pace when nothing wakes it (new folders and finished searches do)."""
    status_s: float = 10.0
    unsafe_sandbox: bool = False
    """Run kernels without bubblewrap where it cannot run (said loudly) instead of refusing."""


@dataclass
class _Running:
    thread: threading.Thread
    stop: threading.Event
    revision: str


class Daemon:
    def __init__(self, settings: Settings, database_url: str, options: DaemonOptions) -> None:
        self.settings = settings
        self.database_url = database_url
        self.options = options
        self.state_dir = settings.state_dir()
        self.stopping = threading.Event()
        self.wake = threading.Event()
        self.notifier = Notifier()
        self.folding = threading.Lock()
        """Held while the projections fold, and by clock jobs while they read them: the main
        loop alone folds, so it reads them without."""
        self.synced: dict[str, int] = {}
        """Task → the log position of its library kernel, as the library folder was synced."""
        self.weights: dict[str, float] = {}
        self.running: dict[str, _Running] = {}
        self.failures: dict[str, float] = {}
        """Task → when a search of it last crashed (it waits a minute before the next)."""
        self.position = 0
        self.reason = "stopped"

    # --- wiring ------------------------------------------------------------------------

    def _signals(self) -> None:
        def stop(number: int, _frame: Any) -> None:
            self.reason = signal.Signals(number).name
            self.stopping.set()
            self.wake.set()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)

    # --- the main loop's duties ---------------------------------------------------------

    @property
    def library(self) -> LibraryState:
        return self._library.state

    @property
    def view(self) -> PortfolioView:
        return self._portfolio.state

    def _fold_new_events(self) -> bool:
        """Bring every projection to the log's head and stop searches of a revision that is
        no longer current; True if the library's promotions changed."""
        head = self.store.head()
        with self.folding:
            for runner in self.runners:
                runner.catch_up(until=head)
        self.position = head
        for name, running in self.running.items():
            current = self.library.revisions.get(name)
            if current is not None and current.content_hash != running.revision:
                running.stop.set()  # a search of an older revision is moot
        promoted = {task: p.position for task, p in self.library.promoted().items()}
        changed = promoted != self.synced
        self.synced = promoted
        return changed

    def _start_searches(self) -> None:
        for name, running in list(self.running.items()):
            if not running.thread.is_alive():
                del self.running[name]
        slots = self.options.max_searches or len(self.workers) + 1
        now = datetime.now(UTC)
        ready = {t for t, at in self.failures.items() if time.monotonic() - at < 60.0}
        for task in choose(
            self.view,
            running=set(self.running) | ready,
            slots=slots + len(ready & set(self.running)),
            now=now,
            rest_s=self.options.rest_s,
            agents=self.llm is not None,
            weights=self.weights,
        ):
            current = self.library.revisions.get(task)
            if current is None:
                continue
            revision = current.source_changed()
            stop = threading.Event()
            thread = threading.Thread(
                target=self._search, args=(revision, stop), name=f"search:{task}", daemon=True
            )
            self.running[task] = _Running(thread, stop, revision.content_hash)
            thread.start()

    def _search(self, revision: KernelSourceChanged, stop: threading.Event) -> None:
        with structlog.contextvars.bound_contextvars(task=revision.task):
            try:
                task = materialize(self.store, revision, self.state_dir / "revisions")
                self.weights[task.name] = task.weight
                search = Search(
                    task=task,
                    recorder=self.recorder,
                    llm=self.llm,
                    profiler=self._profiler(stop),
                    config=self.options.search,
                    log=log.info,
                    should_stop=lambda: stop.is_set() or self.stopping.is_set(),
                )
                outcome = search.run()
                log.info(
                    "search finished",
                    search=outcome.search_id,
                    reason=outcome.reason,
                    detail=outcome.detail,
                    speedup=outcome.speedup,
                    latency_kind=outcome.latency_kind,
                )
            except Interrupted as e:
                log.info("search stopped", detail=str(e))
            except Exception:
                self.failures[revision.task] = time.monotonic()
                log.exception("search failed; it is retried in a minute")
            finally:
                self.wake.set()

    def _profiler(self, stop: threading.Event, seeds: tuple[int, ...] | None = None) -> Any:
        return QueuedProfiler(
            self.queue,
            backend_name=self.backend_name,
            target=self.target,
            shapes=self.options.shapes,
            priority=self._priority,
            should_stop=lambda: stop.is_set() or self.stopping.is_set(),
            seeds=seeds,
        )

    def _priority(self, task: str) -> float:
        """Device slots go first to tasks with the most headroom to peak, by weight."""
        view = self.view.tasks.get(task)
        headroom = 1.0 - min((view.pct_of_peak or 0.0) if view else 0.0, 100.0) / 100.0
        return headroom * self.weights.get(task, 1.0)

    def status_table(self) -> Table:
        """The live view on a terminal: one row per task."""
        table = Table(title=self.status(), title_justify="left", expand=False)
        for column in ("task", "state", "baseline ms", "best speedup", "% of peak", "searches"):
            table.add_column(column, justify="left" if column in ("task", "state") else "right")
        for name, view in sorted(self.view.tasks.items()):
            if view.removed:
                continue
            state = (
                "invalid"
                if view.invalid
                else "searching"
                if name in self.running
                else view.last_reason or "waiting"
            )
            table.add_row(
                name,
                state,
                f"{view.baseline_ms:.4g}" if view.baseline_ms else "-",
                f"{view.last_speedup:.2f}x" if view.last_reason else "-",
                f"{view.pct_of_peak:.1f}" if view.pct_of_peak is not None else "-",
                str(view.searches),
            )
        return table

    def status(self) -> str:
        tasks = [v for v in self.view.tasks.values() if not v.removed]
        invalid = sum(1 for v in tasks if v.invalid)
        jobs = self.queue.counts()
        agents = "agents on" if self.llm is not None else "agents idle (no LLM endpoint)"
        return (
            f"{len(tasks)} tasks ({invalid} invalid), {len(self.running)} searching, "
            f"jobs {jobs.get('pending', 0)} pending / {jobs.get('running', 0)} running, "
            f"{agents}, log at {self.position}"
        )

    # --- the clock ---------------------------------------------------------------------

    def _reverify(self) -> None:
        """Profile every promoted kernel again on fresh inputs; demote what now fails."""
        epoch = int(time.time() // max(self.options.reverify_s, 1))
        seeds = tuple(epoch % 100_000 * 10 + i for i in range(REVERIFY_SEEDS))
        with self.folding:  # the promotions of the current revisions, as folded so far
            promoted = [
                (e, self.library.revisions[task].source_changed())
                for task, e in self.library.promoted().items()
            ]
        for e, revision in promoted:
            if self.stopping.is_set():
                return
            task = e.task
            spec: TaskSpec = materialize(self.store, revision, self.state_dir / "revisions")
            job_id = reverify_job_id(task, e.candidate_id, epoch)
            try:
                result = self._profiler(threading.Event(), seeds).profile(
                    spec, self.store.get_text(e.kernel_hash), job_id=job_id
                )
            except Interrupted:
                return
            if result.correct:
                continue
            self.recorder.record(
                f"task:{task}",
                KernelDemoted(
                    task=task,
                    candidate_id=e.candidate_id,
                    backend=e.backend,
                    target=e.target,
                    reason=f"re-verification on seeds {list(seeds)}: {result.error_kind}: "
                    f"{result.message}",
                ),
                key=demotion_key(job_id),
            )
            log.warning("promoted kernel demoted", task=task, candidate=e.candidate_id)
            self.wake.set()

    def _snapshots(self) -> None:
        with self.folding:  # as of the main loop's last fold
            for runner in self.runners:
                runner.snapshot()

    def _checkpoint_wal(self) -> None:
        if self.store.engine.dialect.name == "sqlite":
            with self.store.engine.connect() as connection:
                connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")

    def _clock(self) -> BackgroundScheduler:
        scheduler = BackgroundScheduler(
            timezone="UTC",
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 60},
        )
        o = self.options
        for function, seconds in (
            (self.watcher.rescan, o.rescan_s),
            (self._reverify, o.reverify_s),
            (self._snapshots, o.snapshot_s),
            (self._checkpoint_wal, o.checkpoint_s),
        ):
            scheduler.add_job(function, "interval", seconds=seconds, id=function.__name__)
        return scheduler

    # --- lifecycle ---------------------------------------------------------------------

    def _open(self) -> None:
        engine = make_engine(self.database_url)
        try:
            upgrade(engine)
        finally:
            engine.dispose()
        self.store = SqlEventStore.open(
            self.database_url, scrubber=scrubber_for(self.settings, self.database_url)
        )
        self.isolation = self.settings.isolation(allow_unsafe=self.options.unsafe_sandbox)
        if not self.isolation.contained:
            log.warning("NO OS SANDBOX: kernels run unconfined", sandbox=self.isolation.describe())
        host = platform.node()
        self.recorder = Recorder(self.store, correlation_id=f"daemon:{host}:{os.getpid()}")
        self.queue = SqlJobQueue(self.store.engine)
        requeued = self.queue.requeue_running()
        if requeued:
            log.info("jobs requeued after an unclean stop", jobs=requeued)
        self.llm = None
        if self.settings.agents_enabled:
            if self.settings.llm.api_key[1] == "environment":
                log.warning("the LLM API key is in the environment", hint=KEY_HINT)
            self.llm = LLMClient(
                self.settings.llm_config(),
                self.recorder,
                Ledger.from_store(self.store),
                self.settings.budget(),
            )
        else:
            log.warning("agents idle", detail=IDLE)
        self._library = ProjectionRunner(self.store, LibraryProjection())
        self._portfolio = ProjectionRunner(self.store, PortfolioProjection())
        self.runners: list[ProjectionRunner[Any]] = [
            self._library,
            ProjectionRunner(self.store, MemoryProjection()),
            self._portfolio,
        ]
        self._fold_new_events()

    def run(self) -> int:
        self._signals()
        startup.check_shapes(self.options.shapes, self.options.watch)  # hostile-input: exit 2
        self._open()
        opened = open_for_command(
            self.options.backend,
            self.options.devices,
            self.options.target,
            self.store,
            isolation=self.isolation,
        )
        self.backend_name, self.target = opened.name, opened.target
        workdir = self.state_dir / "work"
        workdir.mkdir(parents=True, exist_ok=True)
        self.work_lock = startup.sweep_work(workdir)  # hostile-input: killed jobs' folders
        self.workers = [
            Worker(name, self.queue, factory, workdir=workdir, stop=self.stopping)
            for name, factory in opened.devices
        ]
        host = platform.node()
        self.recorder.record(
            f"daemon:{host}",
            DaemonStarted(
                host=host,
                pid=os.getpid(),
                version=package_version("accelopt"),
                watch_dir=str(self.options.watch.resolve()),
                backend=self.backend_name,
            ),
            key=f"started|{host}|{os.getpid()}|{time.time_ns()}",
        )
        self.watcher = TaskWatcher(
            self.options.watch,
            self.recorder,
            observer=self.options.observer,
            on_change=lambda _task: self.wake.set(),
            dialects=backend_info(self.backend_name).dialects,
            library=self.library,  # hostile-input: each folder's last record, name owners
            shapes=self.options.shapes,  # hostile-input: a task without it is invalid here
        )
        self.watcher.start()
        for worker in self.workers:
            worker.start()
        library = self.state_dir / "library"
        sync_library(self.library, library, self.store.get_text)
        clock = self._clock()
        clock.start()
        self.notifier.ready(self.status())
        log.info(
            "ready",
            watch=str(self.options.watch),
            observer=self.watcher.observer_name,
            backend=self.backend_name,
            target=self.target,
            workers=len(self.workers),
            database=self.store.describe(),
        )
        live = Live(self.status_table(), refresh_per_second=1) if sys.stdout.isatty() else None
        if live is not None:
            live.start()
        last_status = 0.0
        tick = self.options.tick_s
        if self.notifier.watchdog_interval_s is not None:
            tick = min(tick, self.notifier.watchdog_interval_s)
        while not self.stopping.is_set():
            self.notifier.watchdog()
            # idle: one cheap query per tick
            if self.store.head() != self.position and self._fold_new_events():
                sync_library(self.library, library, self.store.get_text)
            self._start_searches()
            if time.monotonic() - last_status >= self.options.status_s:
                last_status = time.monotonic()
                self.notifier.status(self.status())
            if live is not None:
                live.update(self.status_table())
            self.wake.wait(tick)
            self.wake.clear()
        if live is not None:
            live.stop()
        self._drain(clock)
        return 0

    def _drain(self, clock: BackgroundScheduler) -> None:
        self.notifier.stopping(f"stopping ({self.reason}): draining")
        log.info("stopping", reason=self.reason)
        self.watcher.stop()
        clock.shutdown(wait=False)
        deadline = time.monotonic() + 30.0
        for thread in [r.thread for r in self.running.values()] + list(self.workers):
            thread.join(timeout=max(0.1, deadline - time.monotonic()))
        with self.folding:
            for runner in self.runners:
                runner.catch_up()
        host = platform.node()
        self.recorder.record(
            f"daemon:{host}",
            DaemonStopped(host=host, pid=os.getpid(), reason=self.reason),
            key=f"stopped|{host}|{os.getpid()}|{time.time_ns()}",
        )
        self.store.close()
        log.info("stopped", reason=self.reason)


KEY_HINT = (
    "ACCELOPT_LLM_API_KEY stays readable in /proc/<pid>/environ for the daemon's whole life: "
    "put the key in a file named by ACCELOPT_LLM_API_KEY_FILE, or in the systemd credential "
    "llm_api_key (LoadCredential=)"
)
REVERIFY_SEEDS = 5
"""Fresh inputs per re-verification, as many as AccelOpt's correctness seeds."""
