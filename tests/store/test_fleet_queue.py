"""The fleet's queue on a real PostgreSQL server: procrastinate carries each job of the jobs
table to a worker of its backend and target, a device runs one job at a time fleet-wide, a
failed run is retried, a drained job goes to another worker, and a job that lost its
procrastinate job is queued again by `recover`."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from store.engine import make_engine
from store.jobs.base import Handler, Job, JobCancelled
from store.jobs.fleet import DeviceTaken, FleetJobQueue, queue_name
from store.jobs.sql import SqlJobQueue

pytestmark = pytest.mark.postgres

WAIT_S = 30.0
QUEUE = queue_name("nkisim", "trn2")


@pytest.fixture
def engine(fresh_pg_url: Callable[[], str]) -> Iterator[sa.Engine]:
    engine = make_engine(fresh_pg_url())
    yield engine
    engine.dispose()


@pytest.fixture
def queues(engine: sa.Engine) -> Iterator[Callable[..., FleetJobQueue]]:
    opened: list[FleetJobQueue] = []

    def make(**options: Any) -> FleetJobQueue:
        opened.append(FleetJobQueue(engine, **options))
        return opened[-1]

    yield make
    for queue in opened:
        queue.close()


def submit(queue: SqlJobQueue, job_id: str, *, target: str = "trn2", priority: float = 0) -> None:
    queue.submit(
        job_id,
        task="silu",
        kind="profile",
        payload={"backend": "nkisim", "target": target},
        priority=priority,
    )


class Serving:
    """`serve_devices` on a thread of its own; leaving the block stops and joins it."""

    def __init__(
        self, queue: FleetJobQueue, devices: list[str], handler: Handler, *, slots: int = 0
    ) -> None:
        self.stop = threading.Event()
        self.error: BaseException | None = None
        free = list(devices)
        taken = threading.Condition()

        @contextlib.contextmanager
        def lease() -> Iterator[tuple[str, Handler]]:
            with taken:
                taken.wait_for(lambda: bool(free))
                device = free.pop(0)
            try:
                yield device, handler
            finally:
                with taken:
                    free.append(device)
                    taken.notify()

        self.thread = threading.Thread(target=self._serve, args=(queue, devices, lease))

    def _serve(self, queue: FleetJobQueue, devices: list[str], lease: Any) -> None:
        try:
            queue.serve_devices(devices, lease, stop=self.stop)
        except BaseException as e:
            self.error = e

    def __enter__(self) -> Serving:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(WAIT_S)
        assert not self.thread.is_alive(), "serve_devices did not end after stop"


def echo(job: Job) -> dict[str, Any]:
    return {"job": job.job_id, "worker": job.worker}


def test_jobs_run_on_the_queue_of_their_backend_and_target_in_priority_order(
    queues: Callable[..., FleetJobQueue],
) -> None:
    coordinator = queues()
    ran: list[str] = []

    def record(job: Job) -> dict[str, Any]:
        ran.append(job.job_id)
        return echo(job)

    for n, priority in enumerate((1.0, 3.0, 2.0)):
        submit(coordinator, f"j{n}", priority=priority)
    submit(coordinator, "other", target="trn3")
    with Serving(queues(queues=[QUEUE]), ["h/0"], record):
        assert coordinator.result("j0", WAIT_S) is not None
        time.sleep(0.5)  # a worker of trn2 would have taken the trn3 job by now
    assert ran == ["j1", "j2", "j0"]
    other = coordinator.get("other")
    assert other is not None
    assert other.state == "pending"
    done = coordinator.get("j1")
    assert done is not None
    assert done.result == {"job": "j1", "worker": "h/0"}
    assert done.attempts == 1
    assert done.started_at is not None
    assert done.finished_at is not None
    assert done.started_at <= done.finished_at


def test_a_job_is_submitted_and_recorded_once(queues: Callable[..., FleetJobQueue]) -> None:
    coordinator = queues()
    submit(coordinator, "a")
    with Serving(queues(queues=[QUEUE]), ["h/0"], echo):
        assert coordinator.result("a", WAIT_S) is not None
    submit(coordinator, "a")  # done: not again
    (listed,) = coordinator.listing()
    assert (listed.status, listed.runs, listed.queue) == ("done", 1, QUEUE)
    with coordinator.engine.connect() as connection:
        deferred = connection.exec_driver_sql("SELECT count(*) FROM procrastinate_jobs").scalar()
    assert deferred == 1


def test_each_device_runs_one_job_at_a_time_and_the_devices_run_together(
    queues: Callable[..., FleetJobQueue],
) -> None:
    coordinator = queues()
    lock = threading.Lock()
    running: dict[str, int] = {}
    peak = {"together": 0, "per_device": 0}

    def slow(job: Job) -> dict[str, Any]:
        assert job.worker is not None
        with lock:
            running[job.worker] = running.get(job.worker, 0) + 1
            peak["per_device"] = max(peak["per_device"], running[job.worker])
            peak["together"] = max(peak["together"], sum(running.values()))
        time.sleep(0.2)
        with lock:
            running[job.worker] -= 1
        return echo(job)

    for n in range(8):
        submit(coordinator, f"j{n}")
    with Serving(queues(queues=[QUEUE]), ["h/0", "h/1"], slow):
        for n in range(8):
            assert coordinator.result(f"j{n}", WAIT_S) is not None
    assert peak == {"together": 2, "per_device": 1}
    workers = {coordinator.get(f"j{n}").worker for n in range(8)}  # type: ignore[union-attr]
    assert workers == {"h/0", "h/1"}


def test_a_device_served_elsewhere_is_refused(
    queues: Callable[..., FleetJobQueue], fresh_pg_url: Callable[[], str]
) -> None:
    elsewhere = make_engine(fresh_pg_url())  # another database's fleet on the same server
    first = queues(queues=[QUEUE])
    with Serving(first, ["h/0"], echo) as serving:
        deadline = time.monotonic() + WAIT_S
        while first.leased_devices() != 1:
            assert time.monotonic() < deadline, "the first worker never leased its device"
            time.sleep(0.05)
        with pytest.raises(DeviceTaken, match="device h/0 is served by another worker"):
            queues(queues=[QUEUE]).serve_devices(["h/0"], _never, stop=threading.Event())
        assert serving.thread.is_alive()
        try:
            assert FleetJobQueue(elsewhere).leased_devices() == 0  # leases count per database
        finally:
            elsewhere.dispose()
    assert first.leased_devices() == 0  # stopping gave the lease back


def _never() -> Any:
    raise AssertionError("a refused worker leases no device")


def test_a_failed_run_is_retried_and_one_result_is_kept(
    queues: Callable[..., FleetJobQueue],
) -> None:
    coordinator = queues()
    runs: list[int] = []

    def flaky(job: Job) -> dict[str, Any]:
        runs.append(job.attempts)
        if len(runs) == 1:
            raise RuntimeError("the backend broke")
        return echo(job)

    submit(coordinator, "a")
    with Serving(queues(queues=[QUEUE]), ["h/0"], flaky):
        done = coordinator.result("a", WAIT_S)
    assert done is not None
    assert runs == [1, 2]  # retried after its backoff (2 s), on the same row
    (listed,) = coordinator.listing()
    assert (listed.status, listed.runs) == ("done", 2)


def test_a_drained_job_goes_back_and_another_worker_runs_it(
    queues: Callable[..., FleetJobQueue],
) -> None:
    coordinator = queues()
    entered = threading.Event()
    first_stop: list[threading.Event] = []

    def draining(job: Job) -> dict[str, Any]:
        entered.set()
        assert first_stop[0].wait(WAIT_S)
        raise JobCancelled("the worker is stopping")

    submit(coordinator, "a")
    first = Serving(queues(queues=[QUEUE]), ["h1/0"], draining)
    first_stop.append(first.stop)
    with first:
        assert entered.wait(WAIT_S)
    pending = coordinator.get("a")
    assert pending is not None
    assert pending.state == "pending"
    with Serving(queues(queues=[QUEUE]), ["h2/0"], echo):
        done = coordinator.result("a", WAIT_S)
    assert done is not None
    assert done.worker == "h2/0"


def test_recover_queues_a_job_that_lost_its_procrastinate_job(
    queues: Callable[..., FleetJobQueue], engine: sa.Engine
) -> None:
    later = datetime.now(UTC) + timedelta(minutes=5)
    SqlJobQueue(engine).submit(  # the row alone: a coordinator that died before the defer
        "orphan", task="silu", kind="profile", payload={"backend": "nkisim", "target": "trn2"},
        priority=0,
    )  # fmt: skip
    recovering = queues(clock=lambda: later)
    assert queues().recover() == 0  # too young: its submitter may be about to defer it
    assert recovering.recover() == 1
    assert recovering.recover() == 0  # queued now
    with Serving(queues(queues=[QUEUE]), ["h/0"], echo):
        assert recovering.result("orphan", WAIT_S) is not None
