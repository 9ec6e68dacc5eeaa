"""`accelopt daemon`: one process that watches a kernel directory and keeps optimizing.

Parts: the watcher (hints, debounce, revisions), one worker per device (profiles from the job
queue), one thread per running search (the agents), the clock (APScheduler: rescans,
re-verification, snapshots, checkpoints), and the main loop, which alone talks to systemd
(READY, STATUS, WATCHDOG, STOPPING), keeps the projections (library, memory, portfolio) caught
up with the log, starts the searches the portfolio chooses, keeps the library folder in step
with the library's promotions, and supervises the other parts (coordinator.supervisor): a part
that dies is restarted or the daemon stops with a non-zero exit, never left dead.

`Daemon.open` builds every collaborator (the database lock first: one daemon per database,
coordinator.lock); `Daemon.run` runs until SIGTERM or SIGINT, which drain: no new work; searches
stop at their next step; running kernel processes get SIGTERM, then SIGKILL, and their jobs go
back to the queue; the last events are written; exit 0. After a SIGKILL nothing needs repair:
the next start resumes every search from the log and reruns only jobs that had not finished.
A database in trouble is waited out for a while (coordinator.health), then the daemon stops with
exit status 1 and a one-line reason.
"""

from __future__ import annotations

import contextlib
import gc
import os
import platform
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog
from apscheduler.schedulers.background import BackgroundScheduler
from rich.live import Live
from sqlalchemy.engine import Engine

from agents.config import SearchConfig
from agents.ledger import Ledger
from agents.llm import LLMClient
from agents.memory import MemoryProjection
from agents.port import Porter
from agents.search import IDLE, Interrupted, Search
from daemon.backends import open_for_command
from daemon.coordinator import startup
from daemon.coordinator.health import StoreHealth
from daemon.coordinator.library import sync_library
from daemon.coordinator.lock import AnotherDaemon, DaemonLock
from daemon.coordinator.portfolio import PortfolioProjection, PortfolioView, choose
from daemon.coordinator.reverify import Reverifier
from daemon.coordinator.status import status_line, status_table
from daemon.coordinator.supervisor import Supervisor
from daemon.coordinator.watcher import ObserverKind, TaskWatcher
from daemon.process.allocator import resident_bytes, return_free_memory
from daemon.process.notify import Notifier
from daemon.process.signals import stop_on_signals
from daemon.revisions import materialize
from daemon.secrets import scrubber_for
from daemon.settings import Settings
from daemon.workers.worker import QueuedProfiler, Worker, WorkerPart
from events.catalog import DaemonStarted, DaemonStopped, KernelSourceChanged
from nkibench.backend import Backend, OpenedBackend
from nkibench.backends import backend_info
from nkibench.backends.open import open_backend
from nkibench.dialects import NKI, needs_port
from nkibench.errors import TaskError
from nkibench.policy.provenance import package_version
from nkibench.sandbox.isolation import Isolation
from nkibench.task.spec import TaskSpec
from store.engine import make_engine, sqlite_path
from store.errors import StoreError
from store.jobs import open_queue, queue_name, spans_hosts
from store.jobs.base import JobQueue
from store.migrate import upgrade
from store.projections.library import LibraryProjection, LibraryState, Promotion
from store.projections.runner import ProjectionRunner
from store.recorder import Recorder
from store.sql import SqlEventStore

if TYPE_CHECKING:
    from daemon.views.web.server import WebServer

__all__ = ["Daemon", "DaemonOptions"]

log = structlog.get_logger("accelopt.daemon")
KEY_HINT = (
    "ACCELOPT_LLM_API_KEY stays readable in /proc/<pid>/environ for the daemon's whole life: "
    "put the key in a file named by ACCELOPT_LLM_API_KEY_FILE, or in the systemd credential "
    "llm_api_key (LoadCredential=)"
)
DRAIN_LIMIT_S = 30.0
"""How long a stopping daemon waits for its searches and workers before it writes its last events
and exits (the systemd unit's TimeoutStopSec leaves room for it)."""
CLOCK_HEARTBEAT_S = 5.0
"""The clock proves it runs with a job this often; silent for ten of them, it is dead."""


@dataclass
class DaemonOptions:
    watch: Path
    backend: str = "nkisim"
    devices: list[str] | None = None
    """This host's devices the daemon serves itself (nkisim: CPU workers; neuron: NeuronCores).
    None: device 0 on SQLite; none on PostgreSQL, where `accelopt worker`s run the jobs."""
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
    snapshots_kept: int = 24
    """Per projection, the newest snapshots kept (replays "as of" older positions start from
    the newest snapshot before them, or from the start of the log)."""
    jobs_kept_s: float = 7 * 86400
    """How long a finished job's result is kept (a search resuming after a stop takes it
    instead of profiling again; one stopped longer profiles again)."""
    checkpoint_s: float = 600.0
    tick_s: float = 1.0
    """The main loop's pace when nothing wakes it (new folders and finished searches do)."""
    status_s: float = 10.0
    unsafe_sandbox: bool = False
    """Run kernels without bubblewrap where it cannot run (said loudly) instead of refusing."""
    store_patience_s: float = 300.0
    """How long a failing database is waited out before the daemon stops (exit 1)."""
    max_resident_mb: float | None = 2048.0
    """The daemon's own resident memory (its kernels' processes apart) past which it drains and
    exits with RECYCLE_EXIT, for its supervisor to start a fresh one that resumes from the log:
    memory a long-lived CPython process once held is not always given back. None: no ceiling."""
    standby: bool = False
    """Wait for the daemon holding the (PostgreSQL) database to go, then take over."""
    cooldown_s: float = 60.0
    """How long a task whose search crashed waits before the next."""
    http: tuple[str, int] | None = None
    """Where to serve the live pages (checked by daemon.views.web.server.parse_bind), or nowhere."""


RECYCLE_EXIT = 9
"""The exit status of a daemon that stopped to give its memory back (systemd's
Restart=on-failure starts the next one)."""


@dataclass
class _Running:
    thread: threading.Thread
    stop: threading.Event
    revision: str


class _ClockPart:
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


class Daemon:
    def __init__(
        self,
        settings: Settings,
        options: DaemonOptions,
        *,
        store: SqlEventStore,
        recorder: Recorder,
        queue: JobQueue,
        llm: LLMClient | None,
        opened: OpenedBackend,
        isolation: Isolation,
        lock: DaemonLock,
    ) -> None:
        """The daemon over collaborators already built (Daemon.open builds them)."""
        self.settings = settings
        self.options = options
        self.store = store
        self.queue = queue
        self.llm = llm
        self.opened = opened
        self.isolation = isolation
        self.lock = lock
        self.state_dir = settings.state_dir()
        self.recorder = recorder
        self.stopping = threading.Event()
        self.wake = threading.Event()
        self.notifier = Notifier()
        self.health = StoreHealth(patience_s=options.store_patience_s)
        self.supervisor = Supervisor(stopping=self.stopping, on_store_failure=self.health.failed)
        self.folding = threading.Lock()
        """Held while the projections fold, and by clock jobs while they read them: the main
        loop alone folds, so it reads them without."""
        self._library = ProjectionRunner(store, LibraryProjection())
        self._portfolio = ProjectionRunner(store, PortfolioProjection())
        self.runners: list[ProjectionRunner[Any]] = [
            self._library,
            ProjectionRunner(store, MemoryProjection()),
            self._portfolio,
        ]
        self.synced: dict[str, int] = {}
        """Task → the log position of its library kernel, as the library folder was synced."""
        self.weights: dict[str, float] = {}
        self.running: dict[str, _Running] = {}
        self.failures: dict[str, float] = {}
        """Task → when a search of it last crashed (it waits `cooldown_s` before the next)."""
        self.position = 0
        self.reason = "stopped"
        self.exit_code = 0
        self.database_file = _file_identity(store.engine)

    @classmethod
    def open(cls, settings: Settings, database_url: str, options: DaemonOptions) -> Daemon:
        """Take the database (one daemon per database), migrate it, and build every part. A
        --shapes value no task has is refused first, before anything is recorded."""
        startup.check_shapes(options.shapes, options.watch)
        if options.standby:
            lock = DaemonLock.acquire_as_standby(database_url)
        else:
            lock = DaemonLock.acquire(database_url)
        try:
            engine = make_engine(database_url)
            try:
                upgrade(engine)
            finally:
                engine.dispose()
            store = SqlEventStore.open(database_url, scrubber=scrubber_for(settings, database_url))
            isolation = settings.isolation(allow_unsafe=options.unsafe_sandbox)
            if not isolation.contained:
                log.warning("NO OS SANDBOX: kernels run unconfined", sandbox=isolation.describe())
            recorder = Recorder(store, correlation_id=f"daemon:{platform.node()}:{os.getpid()}")
            llm = None
            if settings.agents_enabled:
                if settings.llm.api_key[1] == "environment":
                    log.warning("the LLM API key is in the environment", hint=KEY_HINT)
                llm = LLMClient(
                    settings.llm_config(),
                    recorder,
                    Ledger.from_store(store),
                    settings.budget(),
                )
            else:
                log.warning("agents idle", detail=IDLE)
            opened = _open_backend(options, store, isolation, settings)
            queue = open_queue(store.engine, queues=[queue_name(opened.name, opened.target)])
            requeued = queue.requeue_running()
            if requeued:
                log.info("jobs requeued after an unclean stop", jobs=requeued)
        except BaseException:
            lock.release()
            raise
        return cls(
            settings,
            options,
            store=store,
            recorder=recorder,
            queue=queue,
            llm=llm,
            opened=opened,
            isolation=isolation,
            lock=lock,
        )

    # --- the main loop's duties ---------------------------------------------------------

    @property
    def library(self) -> LibraryState:
        return self._library.state

    @property
    def view(self) -> PortfolioView:
        return self._portfolio.state

    def stop(self, reason: str, exit_code: int = 0) -> None:
        if not self.stopping.is_set():
            self.reason, self.exit_code = reason, exit_code
        self.stopping.set()
        self.wake.set()

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

    def _start_searches(self, ended: list[str]) -> None:
        """Start what the portfolio chooses; `ended` are searches whose threads had ended
        before the last fold (so their last events are in the view)."""
        for name in ended:
            del self.running[name]
        if ended:
            # A finished search's objects form cycles (its steps point back at it), which
            # only a full collection frees; in a heap this size those come rarely, and what
            # waits for them scatters the allocator's pages. What the collection freed stays
            # resident until glibc is asked to return it.
            gc.collect()
            returned = return_free_memory()
            if returned:
                log.debug("free memory returned", mb=round(returned / 1e6, 1))
        now = time.monotonic()
        cooling = frozenset(
            t for t, at in self.failures.items() if now - at < self.options.cooldown_s
        )
        for task in choose(
            self.view,
            running=set(self.running),
            cooling=cooling,
            slots=self.options.max_searches or self._devices() + 1,
            now=datetime.now(UTC),
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

    def _devices(self) -> int:
        """The devices the searches' jobs can run on: this daemon's, or the fleet's leased
        ones (workers that come and go change it)."""
        devices = self.queue.devices()
        return devices if devices is not None else len(self.opened.devices)

    def _search(self, revision: KernelSourceChanged, stop: threading.Event) -> None:
        with structlog.contextvars.bound_contextvars(task=revision.task):
            try:
                task = materialize(self.store, revision, self.state_dir / "revisions")
                self.weights[task.name] = task.weight
                if needs_port(task.dialect, self.opened.target, self.dialects):
                    task = self._ported(task)
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
            except Exception as e:
                self.failures[revision.task] = time.monotonic()
                log.exception("search failed; it is retried", in_s=self.options.cooldown_s)
                self.health.report(e, f"the search of {revision.task}")
            finally:
                self.wake.set()

    @property
    def dialects(self) -> tuple[str, ...]:
        return tuple(sorted(self.opened.dialects))

    def _ported(self, task: TaskSpec) -> TaskSpec:
        """A legacy-NKI task moved to current NKI (verified by nkisim on every seed) before its
        search, where this daemon's backend and target run only current NKI."""
        if self.llm is None:
            raise TaskError(f"{task.path}: a legacy NKI task needs a port, and the agents are off")
        reason = f"the {self.opened.name} backend on {self.opened.target} runs only current NKI"
        log.info("porting a legacy NKI task before optimizing it", reason=reason)
        verifier = open_backend("nkisim", target=self.opened.target, isolation=self.isolation)
        porter = Porter(
            llm=self.llm,
            recorder=self.recorder,
            backend=verifier.first(),
            target=self.opened.target,
            shapes=self.options.shapes,
            say=log.info,
        )
        outcome = porter.run(task, reason)
        if outcome.source is None:
            raise TaskError(f"{task.path}: {outcome.message}")
        return task.with_kernel(outcome.source, NKI.name)

    def _profiler(
        self, stop: threading.Event, seeds: tuple[int, ...] | None = None
    ) -> QueuedProfiler:
        return QueuedProfiler(
            self.queue,
            backend_name=self.opened.name,
            target=self.opened.target,
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

    def status(self) -> str:
        return status_line(
            self.view,
            searching=self.running,
            jobs=dict(self.queue.counts()),
            agents=self.llm is not None,
            position=self.position,
            isolation=self.isolation,
        )

    # --- the clock ---------------------------------------------------------------------

    def _promoted(self) -> list[tuple[Promotion, KernelSourceChanged]]:
        with self.folding:  # the promotions of the current revisions, as folded so far
            return [
                (p, self.library.revisions[task].source_changed())
                for task, p in self.library.promoted().items()
            ]

    def _snapshots(self) -> None:
        """Snapshot the projections, and drop what a daemon of weeks would otherwise pile up:
        old snapshots and old finished jobs."""
        with self.folding:  # as of the main loop's last fold
            for runner in self.runners:
                runner.snapshot()
        dropped = sum(
            self.store.prune_snapshots(
                r.projection.name, r.projection.version, keep=self.options.snapshots_kept
            )
            for r in self.runners
        )
        pruned = self.queue.prune(timedelta(seconds=self.options.jobs_kept_s))
        if dropped or pruned:
            log.info("pruned", snapshots=dropped, finished_jobs=pruned)

    def _checkpoint_wal(self) -> None:
        if self.store.engine.dialect.name == "sqlite":
            with self.store.engine.connect() as connection:
                connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")

    def _clock(self, watcher: TaskWatcher) -> BackgroundScheduler:
        scheduler = BackgroundScheduler(
            timezone="UTC",
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 60},
        )
        o = self.options
        reverify = Reverifier(
            recorder=self.recorder,
            promoted=self._promoted,
            profiler=lambda seeds: self._profiler(threading.Event(), seeds),
            revisions=self.state_dir / "revisions",
            every_s=o.reverify_s,
            stopping=self.stopping,
            on_demotion=self.wake.set,
        )
        jobs: list[tuple[str, Callable[[], Any], float]] = [
            ("rescan", watcher.rescan, o.rescan_s),
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

    def _fleet_jobs(self) -> list[tuple[str, Callable[[], Any], float]]:
        """The queue's own upkeep (the fleet's: the jobs of dead workers go back to it)."""
        return self.queue.maintenance()

    def _clock_job(self, name: str, function: Callable[[], None]) -> None:
        try:
            function()
        except StoreError as e:  # the database's trouble: the main loop waits it out
            self.health.failed(e, f"the clock's {name}")

    # --- lifecycle ---------------------------------------------------------------------

    def _worker(self, name: str, factory: Callable[[], Backend]) -> Worker:
        workdir = self.state_dir / "work"
        if self.queue.spans_hosts:
            name = f"{platform.node()}/{name}"  # a device's name is fleet-wide
        return Worker(name, self.queue, factory, workdir=workdir, stop=self.stopping)

    def _record_lifecycle(self, event: DaemonStarted | DaemonStopped, what: str) -> None:
        host = platform.node()
        self.recorder.record(
            f"daemon:{host}", event, key=f"{what}|{host}|{os.getpid()}|{time.time_ns()}"
        )

    def run(self) -> int:
        """Serve until asked to stop; the exit status (0; 1 when a part or the database
        failed for good; 8 when another daemon took the database; RECYCLE_EXIT past the
        memory ceiling)."""
        with stop_on_signals(self.stop):
            try:
                return self._serve()
            finally:
                self.lock.release()

    def _started(self) -> None:
        """The work folder swept, the projections caught up, the start recorded."""
        work = self.state_dir / "work"
        work.mkdir(parents=True, exist_ok=True)
        self.work_lock = startup.sweep_work(work)  # killed jobs' folders (SIGKILL leaks them)
        self._fold_new_events()
        self._record_lifecycle(
            DaemonStarted(
                host=platform.node(),
                pid=os.getpid(),
                version=package_version("accelopt"),
                watch_dir=str(self.options.watch.resolve()),
                backend=self.opened.name,
                sandbox=self.isolation.describe(),
            ),
            "started",
        )

    def _serve(self) -> int:
        self._started()
        watcher = TaskWatcher(
            self.options.watch,
            self.recorder,
            observer=self.options.observer,
            on_change=lambda _task: self.wake.set(),
            on_failure=self.health.report,
            dialects=self.dialects,
            library=self.library,  # each folder's last record, and who holds each name
            shapes=self.options.shapes,  # a task without the daemon's shape set is invalid here
            target=self.opened.target,  # and so is one whose dialect does not run there,
            ports=self.llm is not None,  # unless it is legacy NKI the agents can port
        )
        watcher.start()
        self.supervisor.watch(watcher)
        workers = [
            WorkerPart(partial(self._worker, name, factory))
            for name, factory in self.opened.devices
        ]
        for part in workers:
            self.supervisor.watch(part)
        library = self.state_dir / "library"
        sync_library(self.library, library, self.store.get_text)
        web = self._web()
        clock = self._clock(watcher)
        self.supervisor.watch(_ClockPart(clock), restartable=False)
        clock.start()
        self.notifier.ready(self.status())
        log.info(
            "ready",
            watch=str(self.options.watch),
            observer=watcher.observer_name,
            backend=self.opened.name,
            target=self.opened.target,
            workers=len(workers),
            database=self.store.describe(),
            lock=self.lock.description,
            sandbox=self.isolation.describe(),
        )
        live = Live(self._table(), refresh_per_second=1) if sys.stdout.isatty() else None
        if live is not None:
            live.start()
        last_status = 0.0
        tick = self.options.tick_s
        if self.notifier.watchdog_interval_s is not None:
            tick = min(tick, self.notifier.watchdog_interval_s)
        while not self.stopping.is_set():
            self.notifier.watchdog()
            wait = tick
            try:
                self._tick(library)
                self.health.recovered()
            except StoreError as e:
                wait = self.health.failed(e, "the main loop")
            except AnotherDaemon as e:  # it took the database while ours was away
                self.stop(e.message, exit_code=e.exit_code)
            ending = self._ending()
            if ending is not None:
                self.stop(*ending)
            elif time.monotonic() - last_status >= self.options.status_s:
                last_status = time.monotonic()
                with contextlib.suppress(StoreError):
                    self.notifier.status(self.status())
            if live is not None:
                live.update(self._table())
            self.wake.wait(wait)
            self.wake.clear()
        if live is not None:
            live.stop()
        self._drain(clock, watcher, workers, web)
        self._last_sync(library)
        return self.exit_code

    def _web(self) -> WebServer | None:
        if self.options.http is None:
            return None
        from daemon.views.web.server import WebServer  # noqa: PLC0415 - the web extra, only here

        host, port = self.options.http
        server = WebServer(self.store, host, port, self.settings.http_token)
        server.start()
        return server

    def _last_sync(self, library: Path) -> None:
        """The library folder follows the log on each tick; a stop must not leave it behind
        what the searches it drained recorded (a failing database leaves it as the last tick
        wrote it)."""
        with contextlib.suppress(StoreError):
            if self._fold_new_events():
                sync_library(self.library, library, self.store.get_text)

    def _ending(self) -> tuple[str, int] | None:
        """Why the daemon must stop now, with its exit status: a part failed for good (1), or
        its memory passed the ceiling (RECYCLE_EXIT)."""
        failed = self.supervisor.check() or self.health.exhausted()
        if failed is not None:
            log.error("stopping: a part failed for good", reason=failed)
            return failed, 1
        over = self._over_memory_ceiling()
        if over is not None:
            log.warning("stopping to give memory back", reason=over)
            return over, RECYCLE_EXIT
        return None

    def _over_memory_ceiling(self) -> str | None:
        ceiling = self.options.max_resident_mb
        if ceiling is None:
            return None
        resident = resident_bytes()
        if resident is None or resident / 1e6 <= ceiling:
            return None
        return (
            f"resident memory {resident / 1e6:.0f} MB is over the ceiling of {ceiling:g} MB "
            f"(exit {RECYCLE_EXIT}: a fresh daemon resumes from the log)"
        )

    def _tick(self, library: Path) -> None:
        self._check_database_file()
        self.lock.check()
        ended = [name for name, r in self.running.items() if not r.thread.is_alive()]
        # idle: one cheap query per tick
        if self.store.head() != self.position and self._fold_new_events():
            sync_library(self.library, library, self.store.get_text)
        if self.health.failing:
            self.store.probe_write()  # reads may work while writes do not (full, read-only)
        self._start_searches(ended)

    def _table(self) -> Any:
        return status_table(self.view, title=self.status(), searching=self.running)

    def _check_database_file(self) -> None:
        """A SQLite file removed or replaced under the daemon: what it holds is saved back to
        its path (the open connection still reads the removed file), and the daemon stops."""
        if self.database_file is None or self.stopping.is_set():
            return
        path, identity = self.database_file
        try:
            stat = path.stat()
            found = f"now device {stat.st_dev} inode {stat.st_ino}"
            if (stat.st_dev, stat.st_ino) == identity:
                return
        except OSError as e:
            found = str(e)
        log.error("the database file is gone", path=str(path), opened=identity, found=found)
        saved = _rescue(self.store.engine, path)
        self.database_file = None
        self.stop(
            f"the database file {path} was removed or replaced while the daemon ran; "
            + (f"the log was saved back to {saved}" if saved else "the log could not be saved"),
            exit_code=1,
        )

    def _drain(
        self,
        clock: BackgroundScheduler,
        watcher: TaskWatcher,
        workers: list[WorkerPart],
        web: WebServer | None,
    ) -> None:
        self.notifier.stopping(f"stopping ({self.reason}): draining")
        log.info("stopping", reason=self.reason)
        watcher.stop()
        if web is not None:
            web.stop()
        clock.shutdown(wait=False)
        deadline = time.monotonic() + DRAIN_LIMIT_S
        for running in self.running.values():
            running.thread.join(timeout=max(0.1, deadline - time.monotonic()))
        for part in workers:
            part.join(timeout=max(0.1, deadline - time.monotonic()))
        try:
            with self.folding:
                for runner in self.runners:
                    runner.catch_up()
            self._record_lifecycle(
                DaemonStopped(host=platform.node(), pid=os.getpid(), reason=self.reason),
                "stopped",
            )
        except StoreError as e:
            log.error("the last events could not be written", error=e.message)
        self.queue.close()
        self.store.close()
        log.info("stopped", reason=self.reason, exit_code=self.exit_code)


def _open_backend(
    options: DaemonOptions, store: SqlEventStore, isolation: Isolation, settings: Settings
) -> OpenedBackend:
    """The backend on the devices this daemon serves itself. A coordinator of workers serves
    none: it needs only the target its jobs are for and the dialects they run."""
    fleet = spans_hosts(store.engine)
    devices = options.devices if options.devices is not None else ([] if fleet else ["0"])
    if not devices and options.target is not None:
        info = backend_info(options.backend)
        return OpenedBackend(options.backend, options.target, frozenset(info.dialects))
    opened = open_for_command(
        options.backend,
        devices or ["0"],
        options.target,
        store,
        isolation=isolation,
        settings=settings,
        require_device=bool(devices),
    )
    return opened if devices else replace(opened, devices=[])


def _file_identity(engine: Engine) -> tuple[Path, tuple[int, int]] | None:
    path = sqlite_path(engine.url)
    if path is None:
        return None
    stat = path.stat()
    return path, (stat.st_dev, stat.st_ino)


def _rescue(engine: Engine, path: Path) -> Path | None:
    """Copy the log the engine still has open into `path` (or beside it if something new is
    there), with SQLite's backup API; where it went, or None if it could not be saved."""
    target = path if not path.exists() else path.with_name(f"{path.name}.rescued-{os.getpid()}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with engine.connect() as connection:
            source = connection.connection.driver_connection
            assert isinstance(source, sqlite3.Connection)
            with contextlib.closing(sqlite3.connect(target)) as copy:
                source.backup(copy)
    except (OSError, sqlite3.Error, AssertionError) as e:
        log.error("the removed database could not be saved", error=str(e))
        return None
    return target
