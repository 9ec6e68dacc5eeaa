"""`accelopt worker`: one host's devices serving the fleet's jobs, on PostgreSQL.

A worker announces itself (`WorkerStarted`: host, backend, target, devices, the queue it takes),
leases its devices fleet-wide, and runs one job per device at a time from the queue of its
backend and target (store.jobs.fleet), each on a device its pool hands out (daemon.workers.devices),
until SIGTERM or SIGINT: running kernels are stopped, their jobs go back to the queue for any
worker, and `WorkerStopped` is written. A worker killed outright leaves its jobs to the
coordinator's recovery (after the heartbeat timeout) and its kernel processes die with it
(their lifeline). Workers never migrate the database; the coordinator does. A job names its
task's revision, which the worker rebuilds on its own disk from the log's blobs, as the daemon
does: nothing of the coordinator's host (the kernel directory, its state directory) needs to be
reachable from a worker's. A database restart is waited out (for ACCELOPT_DAEMON_STORE_PATIENCE_S,
as the daemon does) and the device leases are taken again; a worker whose every device another
worker took meanwhile stops with exit status 8 (store.jobs.leases).

The `sleep` backend runs no kernel: each job sleeps for its payload's `ms`. It exists for
`accelopt bench fleet`, which measures the queue and the workers without kernels in the way.
"""

from __future__ import annotations

import os
import platform
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import structlog

from daemon.backends import open_for_command
from daemon.process.notify import Notifier
from daemon.process.signals import stop_on_signals
from daemon.revisions import materialize, prune_copies
from daemon.secrets import scrubber_for
from daemon.settings import Settings
from daemon.workers.devices import DevicePool
from daemon.workers.worker import profile_job
from events.catalog import KernelSourceChanged, WorkerStarted, WorkerStopped
from events.errors import AccelOptError
from nkibench.errors import TaskError
from nkibench.policy.provenance import package_version
from nkibench.task.spec import TaskSpec
from store.engine import normalize_url, sqlite_path
from store.jobs.base import Handler, Job, JobCancelled
from store.jobs.fleet import DevicesLost, FleetJobQueue, queue_name
from store.recorder import Recorder
from store.sql import SqlEventStore

__all__ = ["SLEEP_BACKEND", "WorkerNeedsPostgres", "WorkerOptions", "run_worker", "sleep_job"]

log = structlog.get_logger("accelopt.worker")

SLEEP_BACKEND = "sleep"
SLEEP_TARGET = "any"


class WorkerNeedsPostgres(AccelOptError):
    """A worker on a database only one host can reach."""

    exit_code: ClassVar[int] = 2


@dataclass
class WorkerOptions:
    backend: str
    devices: list[str]
    target: str | None = None
    host: str = field(default_factory=platform.node)
    """The host's name in the fleet: devices are `<host>/<device>`."""
    quarantine_after: int = 3
    quarantine_s: float = 300.0
    unsafe_sandbox: bool = False


def sleep_job(job: Job, *, stop: threading.Event) -> dict[str, Any]:
    """The sleep backend's job: its payload's `ms`, cut short (and released) by a stop."""
    milliseconds = float(job.payload["ms"])
    if stop.wait(milliseconds / 1000):
        raise JobCancelled(f"job {job.job_id}: the worker is stopping")
    return {"slept_ms": milliseconds}


def run_worker(settings: Settings, database_url: str, options: WorkerOptions) -> int:
    """Serve until SIGTERM or SIGINT; the exit status (0)."""
    if sqlite_path(normalize_url(database_url)) is not None:
        raise WorkerNeedsPostgres(
            "accelopt worker needs PostgreSQL: with SQLite the daemon runs its jobs itself "
            "(accelopt daemon --devices)"
        )
    store = SqlEventStore.open(database_url, scrubber=scrubber_for(settings, database_url))
    try:
        return _serve(settings, store, options)
    finally:
        store.close()


def _serve(settings: Settings, store: SqlEventStore, options: WorkerOptions) -> int:
    stop = threading.Event()
    workdir = settings.state_dir() / "work"
    workdir.mkdir(parents=True, exist_ok=True)
    handlers, target, sandbox = _handlers(settings, store, options, workdir, stop)
    names = [f"{options.host}/{device}" for device in options.devices]
    queue = FleetJobQueue(
        store.engine,
        queues=[queue_name(options.backend, target)],
        stalled_s=settings.fleet_stalled_s,
        patience_s=settings.daemon_store_patience_s,
        give_up=settings.give_up(None),
    )
    recorder = Recorder(store, correlation_id=f"worker:{options.host}:{os.getpid()}")
    pool = DevicePool(
        list(zip(names, handlers, strict=True)),
        recorder=recorder,
        stop=stop,
        quarantine_after=options.quarantine_after,
        quarantine_s=options.quarantine_s,
    )
    stream = f"worker:{options.host}"
    reason = "stopped"

    def stopping(why: str) -> None:
        nonlocal reason
        reason = why
        stop.set()

    def ready() -> None:
        recorder.record(
            stream,
            WorkerStarted(
                host=options.host,
                pid=os.getpid(),
                version=package_version("accelopt"),
                backend=options.backend,
                target=target,
                devices=names,
                queue=queue_name(options.backend, target),
                sandbox=sandbox,
            ),
            key=f"started|{options.host}|{os.getpid()}|{time.time_ns()}",
        )
        Notifier().ready(f"serving {len(names)} devices")
        log.info("ready", devices=names, queue=queue_name(options.backend, target))

    lost: DevicesLost | None = None
    with stop_on_signals(stopping):
        try:
            queue.serve_devices(names, pool.lease, stop=stop, ready=ready)
        except DevicesLost as e:  # it served until then: its stop is recorded like any other
            lost, reason = e, str(e)
        finally:
            queue.close()
    recorder.record(
        stream,
        WorkerStopped(host=options.host, pid=os.getpid(), reason=reason),
        key=f"stopped|{options.host}|{os.getpid()}|{time.time_ns()}",
    )
    log.info("stopped", reason=reason)
    if lost is not None:
        raise lost
    return 0


def _handlers(
    settings: Settings,
    store: SqlEventStore,
    options: WorkerOptions,
    workdir: Path,
    stop: threading.Event,
) -> tuple[list[Handler], str, str]:
    """One handler per device, the target they serve, and the sandbox they run kernels in."""
    if options.backend == SLEEP_BACKEND:
        handler: Handler = partial(sleep_job, stop=stop)
        return [handler] * len(options.devices), SLEEP_TARGET, "none: no kernel runs"
    isolation = settings.isolation(allow_unsafe=options.unsafe_sandbox)
    if not isolation.contained:
        log.warning("NO OS SANDBOX: kernels run unconfined", sandbox=isolation.describe())
    opened = open_for_command(
        options.backend,
        options.devices,
        options.target,
        store,
        isolation=isolation,
        settings=settings,
    )
    revisions = RevisionCopies(
        store, settings.state_dir() / "revisions", kept_s=settings.revisions_kept_days * 86400
    )
    handlers: list[Handler] = [
        _profiling(
            f"{options.host}/{device}", factory, workdir, stop, revisions, jobs=len(options.devices)
        )
        for device, (_, factory) in zip(options.devices, opened.devices, strict=True)
    ]
    return handlers, opened.target, isolation.describe()


class RevisionCopies:
    """This host's copies of the task revisions its jobs name, rebuilt from the log's blobs:
    a worker never reads a path of the coordinator's host. A new copy removes those unused for
    `kept_s` (daemon.revisions.prune_copies), as the daemon's clock does with its own."""

    def __init__(self, store: SqlEventStore, root: Path, *, kept_s: float) -> None:
        self.recorder = Recorder(store)
        self.root = root
        self.kept_s = kept_s
        self._made: dict[tuple[str, str], Path] = {}
        self._lock = threading.Lock()

    def folder(self, task: str, revision: str) -> str:
        with self._lock:
            made = self._made.get((task, revision))
            if made is not None and made.is_dir():
                os.utime(made.parent)  # a use: the pruning goes by the last one
                return str(made)
            made = self._materialize(task, revision).path
            self._made[(task, revision)] = made
            prune_copies(self.root, keep={revision}, unused_s=self.kept_s, now=time.time())
            self._made = {key: path for key, path in self._made.items() if path.is_dir()}
            return str(made)

    def _materialize(self, task: str, revision: str) -> TaskSpec:
        for recorded in self.recorder.of_type(f"task:{task}", KernelSourceChanged):
            if recorded.content_hash == revision:
                return materialize(self.recorder.store, recorded, self.root)
        raise TaskError(f"{task}: revision {revision[:12]} is not in the log")


def _profiling(
    worker: str,
    factory: Callable[[], Any],
    workdir: Path,
    stop: threading.Event,
    revisions: RevisionCopies,
    *,
    jobs: int,
) -> Handler:
    def task_dir(job: Job) -> str:
        return revisions.folder(job.task, job.payload["revision"])

    return partial(
        profile_job, make_backend=factory, worker=worker, workdir=workdir, stop=stop,
        task_dir=task_dir, jobs=jobs,
    )  # fmt: skip
