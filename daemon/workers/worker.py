"""Device workers and the profiler the daemon's searches use.

A worker owns one device (a CPU core for nkisim, a NeuronCore for neuron) and runs one job
at a time from the queue. A search asks for a profile by submitting a job (its id is the
profile's job id, so a resumed search finds the job, or its result, again) and waits for it.
When the daemon drains, a running kernel process gets SIGTERM, then SIGKILL, and its job goes
back to pending: nothing about it is recorded, and the next start runs it again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from agents.search import Interrupted
from nkibench.backend import Backend
from nkibench.errors import TaskError
from nkibench.harness import profile_kernel
from nkibench.result import KernelResult
from nkibench.sandbox.process import Cancelled
from nkibench.task.spec import TaskSpec, load_task
from store.jobs.base import Job, JobCancelled, JobQueue, queue_name

__all__ = ["QueuedProfiler", "Worker", "WorkerPart", "given_up", "profile_job"]

log = structlog.get_logger("accelopt.worker")
IDLE_WAIT_S = 5.0
HALT_POLL_S = 1.0
"""How often a paused worker looks whether it may serve again."""


class Worker(threading.Thread):
    """Serves the queue on one device until the daemon stops.

    An error out of the queue or the backend (StoreBusy, BackendUnavailable) ends the thread,
    its job back to pending: it is logged and kept in `failure`, and whoever supervises the
    workers decides whether to start another.
    """

    def __init__(
        self,
        name: str,
        queue: JobQueue,
        make_backend: Callable[[], Backend],
        *,
        workdir: Path,
        stop: threading.Event,
        halt: threading.Event | None = None,
        jobs: int = 1,
    ) -> None:
        """`halt`, set while the worker must take no new job (its state disk under the
        floor, say), and whenever `stop` is: a running job goes on, and once `halt` is clear
        again the worker serves again. Without one, `stop` alone halts. `jobs`: how many
        workers of this process run jobs at once (each job gets its share of the host's
        memory)."""
        super().__init__(name=name, daemon=True)
        self.queue = queue
        self.make_backend = make_backend
        self.workdir = workdir
        self.stop = stop
        self.halt = halt or stop
        self.jobs = jobs
        self.failure: Exception | None = None

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                self.queue.serve(self.name, self._profile, stop=self.halt, idle_s=IDLE_WAIT_S)
                while self.halt.is_set() and not self.stop.wait(HALT_POLL_S):
                    pass  # paused: wait for the halt to lift, or the stop
        except Exception as e:
            self.failure = e
            log.exception("worker stopped by an error", worker=self.name)

    def _profile(self, job: Job) -> dict[str, Any]:
        return profile_job(
            job,
            self.make_backend,
            worker=self.name,
            workdir=self.workdir,
            stop=self.stop,
            jobs=self.jobs,
        )


def profile_job(
    job: Job,
    make_backend: Callable[[], Backend],
    *,
    worker: str,
    workdir: Path,
    stop: threading.Event,
    task_dir: Callable[[Job], str] = lambda job: str(job.payload["task_dir"]),
    jobs: int = 1,
) -> dict[str, Any]:
    """A profile job's work on one device: its result (KernelResult as JSON), or JobCancelled
    when `stop` ended the kernel's run. `task_dir` finds the job's task folder on this host (a
    TaskError there is the job's `task` failure, as a broken folder is); `jobs` run at once
    on this host (nkibench.harness.share_of_host)."""
    payload: dict[str, Any] = job.payload
    bound = structlog.contextvars.bound_contextvars(job_id=job.job_id, task=job.task, worker=worker)
    with bound:
        log.info("profiling", attempt=job.attempts)
        try:
            task = load_task(task_dir(job))
            if payload.get("dialect", task.dialect) != task.dialect:
                task = task.with_kernel(payload["source"], payload["dialect"])
            result = profile_kernel(
                task,
                backend=make_backend(),
                kernel_source=payload["source"],
                shapes=payload["shapes"],
                seeds=tuple(payload["seeds"]) if payload.get("seeds") else None,
                target=payload["target"],
                workdir=workdir,
                jobs=jobs,
                cancel=stop,
                baseline_kernel_s=payload.get("baseline_kernel_s"),
            )
        except Cancelled as e:
            log.info("job released: the worker is stopping")
            raise JobCancelled(f"job {job.job_id}: the worker is stopping") from e
        except TaskError as e:
            result = KernelResult(
                job.task,
                payload["backend"],
                payload["target"],
                payload["shapes"],
                error_kind="task",
                message=e.message,
            )
        log.info(
            "profiled",
            correct=result.correct,
            latency_ms=result.latency_ms,
            latency_kind=result.latency_kind,
            error_kind=result.error_kind,
        )
        return result.to_json()


class WorkerPart:
    """A device's worker as a part the daemon's supervisor watches: restarting it starts a new
    worker thread on the same device."""

    def __init__(self, make: Callable[[], Worker]) -> None:
        self._make = make
        self.worker = make()
        self.name = self.worker.name
        self.worker.start()

    def alive(self) -> bool:
        return self.worker.is_alive()

    def failure(self) -> BaseException | None:
        return self.worker.failure

    def restart(self) -> None:
        """A new worker on the device, after what the dead one left running is pending again
        (a job whose release failed with the database would wait for ever otherwise)."""
        self.worker.queue.requeue_running(worker=self.name)
        self.worker = self._make()
        self.worker.start()

    def join(self, timeout: float) -> None:
        self.worker.join(timeout)


@dataclass
class QueuedProfiler:
    """The search's profiler in the daemon: a job on the queue of its backend and target,
    waited for."""

    queue: JobQueue
    backend_name: str
    target: str
    shapes: str
    priority: Callable[[str], float]
    should_stop: Callable[[], bool]
    seeds: tuple[int, ...] | None = None

    def profile(
        self,
        task: TaskSpec,
        source: str,
        *,
        job_id: str,
        baseline_kernel_s: float | None = None,
    ) -> KernelResult:
        """Raises TaskError, submitting nothing, for a task without the daemon's shape set:
        its job's `task` failure would be recorded for good (a baseline that fails, a
        promoted kernel demoted), while the task only waits for another `--shapes`."""
        task.overrides(self.shapes)
        self.queue.submit(
            job_id,
            queue=queue_name(self.backend_name, self.target),
            task=task.name,
            kind="profile",
            payload={
                "task_dir": str(task.path),  # this host's copy; a worker elsewhere makes its own
                "revision": task.content_hash,  # of the recorded files, in the log's blobs
                "source": source,
                "shapes": self.shapes,
                "seeds": list(self.seeds) if self.seeds else None,
                "target": self.target,
                "backend": self.backend_name,
                "dialect": task.dialect,  # a ported task's differs from its folder's
                "baseline_kernel_s": baseline_kernel_s,
            },
            priority=self.priority(task.name),
        )
        while True:
            job = self.queue.result(job_id, timeout=1.0)
            if job is not None and job.state == "failed":
                return given_up(job)
            if job is not None and job.result is not None:
                return KernelResult(**job.result)
            if self.should_stop():
                raise Interrupted(f"waiting for {job_id}: the daemon is stopping")


def given_up(job: Job) -> KernelResult:
    """A job the queue gave up as the search sees it: a kernel without a verdict, failed with
    kind `job_failed` (a candidate rejected, a search that goes on), never a crash."""
    payload = job.payload
    devices = sorted({run.worker for run in job.failed_runs})
    last = job.failed_runs[-1].error if job.failed_runs else "no failed run kept"
    return KernelResult(
        job.task,
        payload["backend"],
        payload["target"],
        payload["shapes"],
        error_kind="job_failed",
        message=f"job {job.job_id} failed on {len(job.failed_runs)} runs on "
        f"{', '.join(devices)}; the last: {last}",
    )
