"""Where an outside agent's profile jobs run, chosen when `accelopt mcp` starts.

With a daemon holding the database (its lock: daemon.coordinator.lock), the jobs go on the
database's queue at `ACCELOPT_MCP_PRIORITY`, below the daemon's searches, and the daemon's
workers (or the fleet's) run them: the same queue, sandbox and devices as its own candidates.
Without one, this process serves its own devices (the kernel commands' `--backend`,
`--target`, `--devices`), through an in-process queue and the daemon's own worker code.
Either way each job's device time is charged to its client (budget.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar

from daemon.backends import open_for_command
from daemon.coordinator.lock import DaemonLock
from daemon.mcp.errors import Refusal
from daemon.settings import Settings
from daemon.workers.worker import QueuedProfiler, Worker
from events.catalog import DaemonStarted
from events.codec import decode
from events.errors import AccelOptError
from nkibench.backend import OpenedBackend
from nkibench.backends import DEFAULT_BACKEND
from nkibench.errors import BackendUnavailable
from nkibench.result import KernelResult
from nkibench.sandbox.isolation import Isolation
from nkibench.task.spec import TaskSpec
from store.jobs import open_queue
from store.jobs.base import JobQueue
from store.jobs.memory import MemoryJobQueue
from store.sql import SqlEventStore

__all__ = ["ChargedProfiler", "JobRoute", "RouteOptions", "revisions_root"]


DEFAULT_SHAPES = "full"
"""The daemon's default: an agent's latencies compare with the daemon's baselines."""


class DaemonDisagrees(AccelOptError):
    """`accelopt mcp` was given a backend, target or shape set other than the running daemon's:
    its jobs would wait on a queue nobody serves, or compare with baselines of other shapes."""

    exit_code: ClassVar[int] = 2


@dataclass(frozen=True)
class RouteOptions:
    """The kernel options of `accelopt mcp`, None where not given: a running daemon's own then
    (its queue is named after its backend and target, and its baselines were measured at its
    shapes), else the kernel commands' defaults."""

    backend: str | None
    target: str | None
    shapes: str | None
    devices: list[str]
    """This process's own devices, where no daemon runs the jobs."""

    def with_daemons(self, started: DaemonStarted | None, holder: str) -> RouteOptions:
        """These options where the daemon `started` (its latest start, held by `holder`) says
        nothing else; DaemonDisagrees naming the first option it runs otherwise."""
        if started is None:
            return self
        theirs = {"backend": started.backend, "target": started.target, "shapes": started.shapes}
        ours = {"backend": self.backend, "target": self.target, "shapes": self.shapes}
        for option, value in ours.items():
            if value is not None and theirs[option] is not None and value != theirs[option]:
                raise DaemonDisagrees(
                    f"--{option} {value}, but the daemon on this database runs --{option} "
                    f"{theirs[option]} ({holder}): its devices run the agents' jobs and its "
                    "baselines are theirs; start accelopt mcp with the daemon's options, or "
                    "none of them"
                )
        return replace(
            self,
            backend=self.backend or started.backend,
            target=self.target or started.target,
            shapes=self.shapes or started.shapes,
        )


@dataclass
class JobRoute:
    queue: JobQueue
    opened: OpenedBackend
    """The backend as this host opened it: the checks run on its first device."""
    shapes: str
    priority: float
    description: str
    stop: threading.Event
    workers: list[Worker] = field(default_factory=list)
    unavailable: str | None = None
    """Why no job can run here (no daemon, and this host lacks the backend's devices): the
    agents may read and check, not profile."""

    @classmethod
    def open(
        cls,
        settings: Settings,
        url: str,
        store: SqlEventStore,
        options: RouteOptions,
        *,
        isolation: Isolation,
    ) -> JobRoute:
        stop = threading.Event()
        holder = DaemonLock.holder(url)
        if holder is not None:
            options = options.with_daemons(latest_start(store), holder)
        name = options.backend or DEFAULT_BACKEND

        def backend(*, devices: bool) -> OpenedBackend:
            return open_for_command(
                name,
                options.devices,
                options.target,
                lambda: store,
                isolation=isolation,
                settings=settings,
                require_device=devices,
            )

        shapes, priority = options.shapes or DEFAULT_SHAPES, settings.mcp_priority
        if holder is not None:  # the daemon's devices run the jobs
            opened = backend(devices=False)
            queue = open_queue(store.engine)
            return cls(queue, opened, shapes, priority, f"the daemon's queue ({holder})", stop)
        try:
            opened = backend(devices=True)
        except BackendUnavailable as e:  # a GPU backend on a host without one: checks only
            opened = backend(devices=False)
            return cls(MemoryJobQueue(), opened, shapes, priority, "no device", stop, [], e.message)
        queue = MemoryJobQueue(give_up=settings.give_up(len(opened.devices)))
        workdir = settings.state_dir() / "mcp" / "work"
        workdir.mkdir(parents=True, exist_ok=True)
        workers = [
            Worker(name, queue, factory, workdir=workdir, stop=stop, jobs=len(opened.devices))
            for name, factory in opened.devices
        ]
        for worker in workers:
            worker.start()
        where = (
            f"this process's {len(workers)} {opened.name} device(s); no daemon holds the database"
        )
        return cls(queue, opened, shapes, priority, where, stop, workers)

    @property
    def backend_name(self) -> str:
        return self.opened.name

    @property
    def target(self) -> str:
        return self.opened.target

    def check_available(self) -> None:
        """Refusal `measurement` when no job can run here."""
        if self.unavailable is not None:
            raise Refusal("measurement", f"nothing can be profiled here: {self.unavailable}")

    @property
    def platform(self) -> str:
        return f"{self.backend_name}:{self.target}"

    def profiler(self, charge: Callable[[float], None]) -> ChargedProfiler:
        queued = QueuedProfiler(
            self.queue,
            backend_name=self.backend_name,
            target=self.target,
            shapes=self.shapes,
            priority=lambda _task: self.priority,
            should_stop=self.stop.is_set,
        )
        return ChargedProfiler(queued, charge)

    def close(self) -> None:
        self.stop.set()
        for worker in self.workers:
            worker.join(timeout=10)
        self.queue.close()


@dataclass
class ChargedProfiler:
    """A queued profiler whose jobs' device time goes to `charge` (seconds on the device, from
    the job's own start and end)."""

    queued: QueuedProfiler
    charge: Callable[[float], None]
    backend_name: str = field(init=False)
    target: str = field(init=False)
    shapes: str = field(init=False)

    def __post_init__(self) -> None:
        self.backend_name = self.queued.backend_name
        self.target, self.shapes = self.queued.target, self.queued.shapes

    def profile(
        self,
        task: TaskSpec,
        source: str,
        *,
        job_id: str,
        baseline_kernel_s: float | None = None,
    ) -> KernelResult:
        result = self.queued.profile(
            task, source, job_id=job_id, baseline_kernel_s=baseline_kernel_s
        )
        job = self.queued.queue.get(job_id)
        if job is not None and job.started_at is not None and job.finished_at is not None:
            self.charge((job.finished_at - job.started_at).total_seconds())
        return result


def latest_start(store: SqlEventStore) -> DaemonStarted | None:
    """The latest DaemonStarted in the log: the running daemon's, where one holds the lock."""
    last = None
    for stored in store.read_all(types=[DaemonStarted.type_name()]):  # one per start: few
        last = stored
    started = decode(last).event if last is not None else None
    return started if isinstance(started, DaemonStarted) else None


def revisions_root(settings: Settings) -> Path:
    """Where task revisions are rebuilt from the log: the daemon's own folder, so a daemon's
    worker on this host finds the revision an agent's job names."""
    return settings.state_dir() / "revisions"
