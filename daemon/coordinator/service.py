"""`accelopt daemon`: one process that watches a kernel directory and keeps optimizing.

Parts: the watcher (hints, debounce, revisions), one worker per device (profiles from the job
queue), one thread per running search (the agents; started by coordinator.searches), the clock
(coordinator.clock, APScheduler: rescans, re-verification, snapshots, checkpoints), and the
main loop, which alone talks to systemd (READY, STATUS, WATCHDOG, STOPPING), keeps the
projections (library, memory, portfolio) caught up with the log, starts the searches the
portfolio chooses, keeps the library folder in step with the library's promotions, and
supervises the other parts (coordinator.supervisor): a part that dies is restarted or the
daemon stops with a non-zero exit, never left dead.

`Daemon.open` builds every collaborator (coordinator.opening; the database lock first: one daemon
per database, coordinator.lock); `Daemon.run` runs until SIGTERM or SIGINT, which drain: no new
work; searches stop at their next step; running kernel processes get SIGTERM, then SIGKILL, and
their jobs go back to the queue; the last events are written; exit 0. After a SIGKILL nothing needs
repair: the next start resumes every search from the log and reruns only jobs that had not finished.
A database in trouble is waited out for a while (coordinator.health), then the daemon stops with
exit status 1 and a one-line reason.
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import structlog
from apscheduler.schedulers.background import BackgroundScheduler
from rich.live import Live

from agents.llm import LLMClient
from daemon.coordinator import startup
from daemon.coordinator.clock import Clock, ClockPart
from daemon.coordinator.disk import DiskFloor, state_disk
from daemon.coordinator.health import StoreHealth
from daemon.coordinator.library import sync_library
from daemon.coordinator.lock import AnotherDaemon, DaemonLock
from daemon.coordinator.opening import open_parts
from daemon.coordinator.options import DaemonOptions
from daemon.coordinator.portfolio import PortfolioProjection
from daemon.coordinator.searches import SearchLauncher
from daemon.coordinator.status import status_line, status_table
from daemon.coordinator.supervisor import Supervisor
from daemon.coordinator.watcher import TaskWatcher
from daemon.process.allocator import resident_bytes
from daemon.process.notify import Notifier
from daemon.process.signals import stop_on_signals
from daemon.projections import make_projection
from daemon.settings import Settings
from daemon.workers.worker import Worker, WorkerPart
from events.catalog import DaemonStarted, DaemonStopped
from nkibench.backend import Backend, OpenedBackend
from nkibench.policy.provenance import package_version
from nkibench.sandbox.isolation import Isolation
from store import sqlite
from store.errors import StoreError
from store.jobs.base import JobQueue
from store.projections.library import LibraryProjection, LibraryState
from store.projections.runner import ProjectionRunner
from store.recorder import Recorder
from store.sql import SqlEventStore

if TYPE_CHECKING:
    from daemon.flashinfer.trace_folder import TraceFolder
    from daemon.views.web.server import WebServer

__all__ = ["Daemon", "DaemonOptions"]

log = structlog.get_logger("accelopt.daemon")
DRAIN_LIMIT_S = 30.0
"""How long a stopping daemon waits for its searches and workers before it writes its last events
and exits (the systemd unit's TimeoutStopSec leaves room for it)."""
SAVE_EVERY_S = 10.0
"""How long the projections' folded state may stay unsaved (ProjectionRunner): a crash folds
those events again from the log, and a clean stop saves them."""
RECYCLE_EXIT = 9
"""The exit status of a daemon that stopped to give its memory back (systemd's
Restart=on-failure starts the next one)."""


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
        trace_folder: TraceFolder | None = None,
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
        self.trace_folder = trace_folder
        """Where promotions are also kept in FlashInfer's Trace Apply layout, or nowhere."""
        self.state_dir = settings.state_dir()
        self.recorder = recorder
        self.stopping = threading.Event()
        self.halt = threading.Event()
        """Set while the workers take no new job: the daemon stopping, or its state disk
        under the floor (`floor`)."""
        self.wake = threading.Event()
        self.notifier = Notifier()
        self.health = StoreHealth(patience_s=options.store_patience_s)
        self.supervisor = Supervisor(stopping=self.stopping, on_store_failure=self.health.failed)
        self.folding = threading.Lock()
        """Held while the projections fold, and by clock jobs while they read them: the main
        loop alone folds, so it reads them without."""
        self._library = ProjectionRunner(store, LibraryProjection(), save_every_s=SAVE_EVERY_S)
        self._portfolio = ProjectionRunner(store, PortfolioProjection(), save_every_s=SAVE_EVERY_S)
        memory = make_projection("memory", settings)  # as the CLI reads it
        self.runners: list[ProjectionRunner[Any]] = [
            self._library,
            ProjectionRunner(store, memory, save_every_s=SAVE_EVERY_S),
            self._portfolio,
        ]
        self.synced: dict[str, int] = {}
        """Task → the log position of its library kernel, as the library folder was synced."""
        revisions = self.state_dir / "revisions"
        self.searches = SearchLauncher(
            options,
            store=store,
            recorder=recorder,
            queue=queue,
            llm=llm,
            opened=opened,
            isolation=isolation,
            health=self.health,
            view=lambda: self._portfolio.state,
            revisions=revisions,
            stopping=self.stopping,
            wake=self.wake,
        )
        self.clock = Clock(
            options,
            store=store,
            recorder=recorder,
            queue=queue,
            runners=self.runners,
            library=self._library,
            folding=self.folding,
            health=self.health,
            profiler=self.searches.profiler,
            revisions=revisions,
            stopping=self.stopping,
            on_demotion=self.wake.set,
            isolation=isolation,
        )
        self.work_lock: IO[bytes] | None = None
        """The work folder's lock, held for the daemon's life once it starts (None: another
        daemon holds it, or not started yet)."""
        self.position = 0
        self.reason = "stopped"
        self.exit_code = 0
        self.database_file = sqlite.file_identity(store.engine)
        self.floor = DiskFloor(
            self.state_dir, settings.min_free_mb, halt=self.halt, stopping=self.stopping
        )

    @classmethod
    def open(cls, settings: Settings, database_url: str, options: DaemonOptions) -> Daemon:
        """Take the database (one daemon per database), migrate it, and build every part
        (daemon.coordinator.opening). A --shapes value no task has is refused first, before
        anything is recorded."""
        startup.check_shapes(options.shapes, options.watch)
        return cls(settings, options, **vars(open_parts(settings, database_url, options)))

    # --- the main loop's duties ---------------------------------------------------------

    @property
    def library(self) -> LibraryState:
        return self._library.state

    def stop(self, reason: str, exit_code: int = 0) -> None:
        if not self.stopping.is_set():
            self.reason, self.exit_code = reason, exit_code
        self.stopping.set()
        self.halt.set()
        self.wake.set()

    def _fold_new_events(self) -> bool:
        """Bring every projection to the log's head and stop searches of a revision that is
        no longer current; True if the library's promotions changed."""
        head = self.store.head()
        with self.folding:
            for runner in self.runners:
                runner.catch_up(until=head)
        self.position = head
        self.searches.stop_outdated(self.library)
        promoted = {task: p.position for task, p in self.library.promoted().items()}
        changed = promoted != self.synced
        self.synced = promoted
        return changed

    def status(self) -> str:
        return status_line(
            self._portfolio.state,
            searching=self.searches.running,
            jobs=dict(self.queue.counts()),
            agents=self.llm is not None,
            position=self.position,
            isolation=self.isolation,
            paused=self.floor.low.describe() if self.floor.low is not None else None,
        )

    # --- lifecycle ---------------------------------------------------------------------

    def _worker(self, name: str, factory: Callable[[], Backend]) -> Worker:
        workdir = self.state_dir / "work"
        if self.queue.spans_hosts:
            name = f"{platform.node()}/{name}"  # a device's name is fleet-wide
        return Worker(
            name,
            self.queue,
            factory,
            workdir=workdir,
            stop=self.stopping,
            halt=self.halt,
            jobs=len(self.opened.devices),  # one job per device at a time
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
        _record_lifecycle(
            self.recorder,
            DaemonStarted(
                host=platform.node(),
                pid=os.getpid(),
                version=package_version("accelopt"),
                watch_dir=str(self.options.watch.resolve()),
                backend=self.opened.name,
                sandbox=self.isolation.describe(),
                target=self.opened.target,
                shapes=self.options.shapes,
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
            dialects=self.searches.dialects,
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
        self._sync_library(library)
        web = _web(self.options.http, self.store, self.settings)
        clock = self.clock.schedule(watcher.rescan)
        self.supervisor.watch(ClockPart(clock), restartable=False)
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
        screen = _Screen(
            lambda: status_table(
                self._portfolio.state, title=self.status(), searching=self.searches.running
            )
        )
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
            screen.update()
            self.wake.wait(wait)
            self.wake.clear()
        screen.stop()
        self._drain(clock, watcher, workers, web)
        self._last_sync(library)
        return self.exit_code

    def _sync_library(self, library: Path) -> None:
        """The library folder, and the Trace Apply folder where there is one, in step with
        the library's promotions."""
        current = sync_library(self.library, library, self.store.get_text)
        if self.trace_folder is not None:
            self.trace_folder.sync(current, self.library, self.store)

    def _last_sync(self, library: Path) -> None:
        """The library folder follows the log on each tick; a stop must not leave it behind
        what the searches it drained recorded (a failing database leaves it as the last tick
        wrote it). The projections save what they folded last, its stop included."""
        with contextlib.suppress(StoreError):
            changed = self._fold_new_events()
            with self.folding:
                for runner in self.runners:
                    runner.flush()
            if changed:
                self._sync_library(library)

    def _ending(self) -> tuple[str, int] | None:
        """Why the daemon must stop now, with its exit status: a part failed for good (1), or
        its memory passed the ceiling (RECYCLE_EXIT)."""
        failed = self.supervisor.check() or self.health.exhausted()
        if failed is not None:
            log.error("stopping: a part failed for good", reason=failed)
            return failed, 1
        over = _over_memory_ceiling(self.options.max_resident_mb)
        if over is not None:
            log.warning("stopping to give memory back", reason=over)
            return over, RECYCLE_EXIT
        return None

    def _tick(self, library: Path) -> None:
        self._check_database_file()
        self.lock.check()
        self.floor.check()
        ended = self.searches.ended()
        # idle: one cheap query per tick
        if self.store.head() != self.position and self._fold_new_events():
            self._sync_library(library)
        if self.health.failing:
            self.store.probe_write()  # reads may work while writes do not (full, read-only)
        self.searches.start(self._portfolio.state, self.library, ended)

    def _check_database_file(self) -> None:
        """A SQLite file removed or replaced under the daemon: what it holds is saved back to
        its path (the open connection still reads the removed file), and the daemon stops."""
        if self.database_file is None or self.stopping.is_set():
            return
        found = sqlite.replaced(self.database_file)
        if found is None:
            return
        path, identity = self.database_file
        log.error("the database file is gone", path=str(path), opened=identity, found=found)
        saved = sqlite.rescue(self.store.engine, path)
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
        self.searches.join(deadline)
        for part in workers:
            part.join(timeout=max(0.1, deadline - time.monotonic()))
        try:
            with self.folding:
                for runner in self.runners:
                    runner.catch_up()
            _record_lifecycle(
                self.recorder,
                DaemonStopped(host=platform.node(), pid=os.getpid(), reason=self.reason),
                "stopped",
            )
        except StoreError as e:
            log.error("the last events could not be written", error=e.message)
        self.queue.close()
        self.store.close()
        log.info("stopped", reason=self.reason, exit_code=self.exit_code)


def _record_lifecycle(recorder: Recorder, event: DaemonStarted | DaemonStopped, what: str) -> None:
    host = platform.node()
    recorder.record(f"daemon:{host}", event, key=f"{what}|{host}|{os.getpid()}|{time.time_ns()}")


def _web(
    http: tuple[str, int] | None, store: SqlEventStore, settings: Settings
) -> WebServer | None:
    if http is None:
        return None
    from daemon.views.web.server import WebServer  # noqa: PLC0415 - the web extra, only here

    host, port = http
    disk = partial(state_disk, settings.state_dir(), settings.min_free_mb)
    server = WebServer(store, host, port, settings.http_token, state_disk=disk)
    server.start()
    return server


def _over_memory_ceiling(ceiling: float | None) -> str | None:
    if ceiling is None:
        return None
    resident = resident_bytes()
    if resident is None or resident / 1e6 <= ceiling:
        return None
    return (
        f"resident memory {resident / 1e6:.0f} MB is over the ceiling of {ceiling:g} MB "
        f"(exit {RECYCLE_EXIT}: a fresh daemon resumes from the log)"
    )


class _Screen:
    """The status table, live on a terminal (rich); nothing elsewhere."""

    def __init__(self, table: Callable[[], Any]) -> None:
        self.table = table
        self.live = Live(table(), refresh_per_second=1) if sys.stdout.isatty() else None
        if self.live is not None:
            self.live.start()

    def update(self) -> None:
        if self.live is not None:
            self.live.update(self.table())

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
