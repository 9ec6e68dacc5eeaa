"""The daemon's device worker and queued profiler on the in-memory queue, the kernel run faked:
what a drain, a task error and a broken backend do to a job, and how a search gets results."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest

from agents.search import Interrupted
from daemon.revisions import record_revision
from daemon.workers.host import RevisionCopies
from daemon.workers.worker import QueuedProfiler, Worker
from nkibench.backend import Backend
from nkibench.errors import BackendUnavailable, TaskError
from nkibench.result import KernelResult
from nkibench.sandbox.process import Cancelled
from nkibench.suites import NKI_LEGACY_SUITE
from nkibench.task.files import read_task_files
from nkibench.task.spec import TaskSpec, load_task
from store.engine import make_engine
from store.jobs.base import Job, JobQueue
from store.jobs.memory import Call, MemoryJobQueue
from store.jobs.sql import SqlJobQueue
from store.recorder import Recorder
from store.sql import SqlEventStore

WAIT_S = 30.0
QUEUE = "profile.nkisim.trn1"
"""The queue of the profiler's backend and target (store.jobs.base.queue_name)."""
BACKEND = cast(Backend, object())  # never called: profile_kernel is faked


@pytest.fixture
def task() -> TaskSpec:
    return load_task(NKI_LEGACY_SUITE / "silu")


def profiler(queue: JobQueue, stop: threading.Event | None = None) -> QueuedProfiler:
    return QueuedProfiler(
        queue,
        backend_name="nkisim",
        target="trn1",
        shapes="small",
        priority=lambda _task: 1.0,
        should_stop=lambda: stop is not None and stop.is_set(),
    )


def worker(
    queue: MemoryJobQueue,
    tmp_path: Path,
    stop: threading.Event,
    make_backend: Callable[[], Backend] = lambda: BACKEND,
) -> Worker:
    return Worker("w0", queue, make_backend, workdir=tmp_path, stop=stop)


def test_a_profile_is_a_job_served_by_a_worker(
    task: TaskSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict[str, Any]] = []

    def profile_kernel(spec: TaskSpec, **kwargs: Any) -> KernelResult:
        calls.append({"task": spec.name, **kwargs})
        return KernelResult(spec.name, "nkisim", "trn1", "small", True, True, latency_ms=2.0)

    monkeypatch.setattr("daemon.workers.worker.profile_kernel", profile_kernel)
    queue, stop = MemoryJobQueue(), threading.Event()
    thread = worker(queue, tmp_path, stop)
    thread.start()
    try:
        result = profiler(queue).profile(
            task, "source", job_id="profile|silu|1", baseline_kernel_s=2.5
        )
    finally:
        stop.set()
        thread.join(WAIT_S)
    assert not thread.is_alive()
    assert (result.correct, result.latency_ms) == (True, 2.0)
    assert calls[0]["baseline_kernel_s"] == 2.5  # the candidate's time limit follows it
    job = queue.get("profile|silu|1")
    assert job is not None
    assert job.queue == QUEUE  # routed by the backend and target, not by the payload
    assert calls[0]["kernel_source"] == "source"
    assert calls[0]["cancel"] is stop  # a drain reaches the kernel's process
    assert thread.failure is None


def test_a_resumed_search_gets_a_finished_result_again_without_a_second_run(
    task: TaskSpec,
) -> None:
    queue, stop = MemoryJobQueue(), threading.Event()
    done = KernelResult("silu", "nkisim", "trn1", "small", True, True, latency_ms=3.0)

    def run_once(_job: Job) -> dict[str, Any]:
        stop.set()  # the daemon is killed after this profile
        return done.to_json()

    queue.submit(
        "profile|silu|1", queue=QUEUE, task="silu", kind="profile", payload={}, priority=0.0
    )
    queue.serve("w0", run_once, stop=stop, idle_s=WAIT_S)
    queue.calls.clear()
    result = profiler(queue).profile(task, "source", job_id="profile|silu|1")
    assert result == done
    assert [c.operation for c in queue.calls] == ["submit"]  # nothing claimed, nothing ran


def test_a_drain_cancels_the_kernel_and_its_job_goes_back_to_pending(
    task: TaskSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stop = threading.Event()

    def profile_kernel(spec: TaskSpec, **kwargs: Any) -> KernelResult:
        stop.set()  # SIGTERM arrives while the kernel runs
        raise Cancelled("the daemon is stopping")

    monkeypatch.setattr("daemon.workers.worker.profile_kernel", profile_kernel)
    queue = MemoryJobQueue()
    thread = worker(queue, tmp_path, stop)
    thread.start()
    with pytest.raises(Interrupted, match="the daemon is stopping"):
        profiler(queue, stop).profile(task, "source", job_id="profile|silu|1")
    thread.join(WAIT_S)
    assert not thread.is_alive()
    assert thread.failure is None
    job = queue.get("profile|silu|1")
    assert job is not None
    assert (job.state, job.attempts, job.result) == ("pending", 1, None)
    assert Call("release", {"job_id": "profile|silu|1", "worker": "w0"}) in queue.calls


def test_a_task_error_is_a_result_not_a_failure(
    task: TaskSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def profile_kernel(spec: TaskSpec, **kwargs: Any) -> KernelResult:
        raise TaskError("reference.py: get_inputs is missing")

    monkeypatch.setattr("daemon.workers.worker.profile_kernel", profile_kernel)
    queue, stop = MemoryJobQueue(), threading.Event()
    thread = worker(queue, tmp_path, stop)
    thread.start()
    try:
        result = profiler(queue).profile(task, "source", job_id="profile|silu|1")
    finally:
        stop.set()
        thread.join(WAIT_S)
    assert (result.error_kind, result.message) == ("task", "reference.py: get_inputs is missing")
    assert (result.backend, result.target, result.shapes) == ("nkisim", "trn1", "small")
    assert thread.failure is None


def test_a_broken_backend_ends_the_worker_and_leaves_its_job_pending(
    task: TaskSpec, tmp_path: Path
) -> None:
    def make_backend() -> Backend:
        raise BackendUnavailable("neuron: neuronx-cc is not installed")

    queue, stop = MemoryJobQueue(), threading.Event()
    payload = {
        "task_dir": str(task.path),
        "source": "source",
        "shapes": "small",
        "seeds": None,
        "target": "trn1",
        "backend": "neuron",
    }
    queue.submit(
        "profile|silu|1", queue=QUEUE, task="silu", kind="profile", payload=payload, priority=0.0
    )
    thread = worker(queue, tmp_path, stop, make_backend=make_backend)
    thread.start()
    thread.join(WAIT_S)
    assert not thread.is_alive()  # ended by the error, stop was never set
    assert isinstance(thread.failure, BackendUnavailable)
    assert queue.counts() == {"pending": 1, "running": 0, "done": 0, "failed": 0}


def test_a_task_without_the_daemons_shape_set_submits_no_job(task: TaskSpec) -> None:
    """Its job's `task` failure would be recorded for good: a baseline failing, or a
    promoted kernel demoted at re-verification, for what is only the daemon's option."""
    queue = MemoryJobQueue()
    tiny = QueuedProfiler(
        queue,
        backend_name="nkisim",
        target="trn1",
        shapes="tiny",
        priority=lambda _task: 1.0,
        should_stop=lambda: False,
    )
    with pytest.raises(TaskError, match="no shape set 'tiny'"):
        tiny.profile(task, task.kernel_source, job_id="j1")
    assert sum(queue.counts().values()) == 0


def test_a_halted_worker_takes_no_new_job_and_serves_again_once_the_halt_lifts(
    task: TaskSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(The daemon halts its workers while its state disk is under the floor.)"""
    served: list[str] = []

    def profile_kernel(spec: TaskSpec, **_kwargs: Any) -> KernelResult:
        served.append(spec.name)
        return KernelResult(spec.name, "nkisim", "trn1", "small", True, True, latency_ms=2.0)

    monkeypatch.setattr("daemon.workers.worker.profile_kernel", profile_kernel)
    monkeypatch.setattr("daemon.workers.worker.HALT_POLL_S", 0.05)
    queue, stop, halt = MemoryJobQueue(), threading.Event(), threading.Event()
    halt.set()
    thread = Worker("w0", queue, lambda: BACKEND, workdir=tmp_path, stop=stop, halt=halt)
    thread.start()
    try:
        submitted = threading.Thread(
            target=profiler(queue).profile, args=(task, "source"), kwargs={"job_id": "j1"}
        )
        submitted.start()
        assert queue.result("j1", timeout=1.0) is None  # halted: the job waits
        assert served == []
        halt.clear()
        done = queue.result("j1", timeout=WAIT_S)
        assert done is not None
        assert served == ["silu"]
        submitted.join(WAIT_S)
    finally:
        stop.set()
        halt.set()  # as the daemon does: a stop halts
        thread.join(WAIT_S)
    assert not thread.is_alive()
    assert thread.failure is None


def test_a_job_whose_backend_breaks_on_every_device_is_given_up_as_a_job_failed_result(
    task: TaskSpec, tmp_path: Path, fresh_sqlite_url: Callable[[], str]
) -> None:
    def make_backend() -> Backend:
        raise BackendUnavailable("neuron: the device is gone")

    engine = make_engine(fresh_sqlite_url())
    try:
        queue = SqlJobQueue(engine)  # a real SQLite file; GiveUp's defaults: 3 runs, 2 devices
        profiled: list[KernelResult] = []
        waiter = threading.Thread(
            target=lambda: profiled.append(
                profiler(queue).profile(task, "source", job_id="profile|silu|1")
            )
        )
        waiter.start()
        for device in ("w0", "w1", "w0"):  # each worker ends at the error, as the daemon's do
            stop = threading.Event()
            thread = Worker(device, queue, make_backend, workdir=tmp_path, stop=stop)
            thread.start()
            thread.join(WAIT_S)
            assert isinstance(thread.failure, BackendUnavailable)
        waiter.join(WAIT_S)
        assert not waiter.is_alive()  # the search's wait ended: no crash, no hang
        assert queue.counts() == {"pending": 0, "running": 0, "done": 0, "failed": 1}
        (result,) = profiled
        assert (result.correct, result.error_kind) == (False, "job_failed")
        assert "3 runs on w0, w1" in result.message
        assert "BackendUnavailable: neuron: the device is gone" in result.message
    finally:
        engine.dispose()


def test_a_hosts_copies_of_revisions_are_pruned_by_last_use_and_rebuilt_when_asked(
    tmp_path: Path,
    fresh_sqlite_url: Callable[[], str],
    open_stores: Callable[[str], SqlEventStore],
) -> None:
    """A worker's copy unused for `kept_s` goes when a new revision is copied; one used lately
    stays (each job's use counts), and a removed one is rebuilt for the job that names it. The
    copies' last use is set, not waited for."""
    store = open_stores(fresh_sqlite_url())
    folder = tmp_path / "kernels" / "silu"
    shutil.copytree(NKI_LEGACY_SUITE / "silu", folder)
    recorder = Recorder(store, correlation_id="test")
    hashes = []
    for edit in range(3):
        (folder / "kernel.py").write_text((folder / "kernel.py").read_text() + f"# {edit}\n")
        task = load_task(folder)
        record_revision(recorder, task, read_task_files(folder), previous=str(edit))
        hashes.append(task.content_hash)
    old, used, new = hashes
    copies = RevisionCopies(store, tmp_path / "revisions", kept_s=7 * 86400.0)
    now = time.time()
    for revision in (old, used):
        made = Path(copies.folder("silu", revision))
        os.utime(made.parent, (now - 8 * 86400,) * 2)
    copies.folder("silu", used)  # a job of it now

    copies.folder("silu", new)
    assert {p.name for p in (tmp_path / "revisions").iterdir()} == {used, new}
    rebuilt = load_task(copies.folder("silu", old))
    assert rebuilt.content_hash == old
