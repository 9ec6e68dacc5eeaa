"""The JobQueue contract, run against every adapter: memory, SQLite file, PostgreSQL, and the
fleet's (procrastinate, on PostgreSQL).

Then what holds on one host only (memory, SQLite, PostgreSQL without the fleet), where the
port lets the fleet differ (store.jobs.base): the smallest id first among jobs submitted at the
same instant, a handler's error ending `serve`, `requeue_running` trusting its caller (the
fleet's side of each is in test_fleet_queue.py). Then what only the SQL adapter has: separate
queue objects on one database (as separate processes would be), driver errors, which must
arrive as StoreBusy or StoreError, and `open_queue`'s choice of adapter.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any

import pytest
import sqlalchemy as sa

from store.engine import make_engine
from store.errors import InvalidPayload, StoreBusy, StoreError
from store.jobs import open_queue, spans_hosts
from store.jobs.base import Handler, Job, JobCancelled, JobQueue, queue_name
from store.jobs.fleet import FleetJobQueue
from store.jobs.memory import Call, MemoryJobQueue
from store.jobs.sql import SqlJobQueue

WAIT_S = 30.0
"""The most any wait in these tests may take; reached only when the queue is broken."""
QUEUE = queue_name("nkisim", "trn2")
"""The queue every job here is submitted on, and the one the fleet's workers here take."""
ONE_HOST = pytest.mark.parametrize(
    "queue",
    ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
    indirect=True,
)
"""What holds on one host only: the fleet differs there by design (store.jobs.base)."""


class ManualClock:
    """The queue's clock, moved by the test: creation order and ages without sleeping."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def open_engines() -> Iterator[Callable[[str], sa.Engine]]:
    engines: list[sa.Engine] = []

    def open_engine(url: str) -> sa.Engine:
        engines.append(make_engine(url))
        return engines[-1]

    yield open_engine
    for engine in engines:
        engine.dispose()


@pytest.fixture(
    params=[
        "memory",
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("fleet", marks=pytest.mark.postgres),
    ]
)
def queue(
    request: pytest.FixtureRequest,
    clock: ManualClock,
    open_engines: Callable[[str], sa.Engine],
) -> Iterator[JobQueue]:
    """Every adapter of the JobQueue port, fresh, on the test's clock (the fleet's workers
    take QUEUE)."""
    opened: JobQueue
    if request.param == "memory":
        opened = MemoryJobQueue(clock=clock)
    elif request.param == "sqlite":
        opened = SqlJobQueue(
            open_engines(request.getfixturevalue("fresh_sqlite_url")()), clock=clock
        )
    else:
        engine = open_engines(request.getfixturevalue("fresh_pg_url")())
        if request.param == "fleet":
            opened = FleetJobQueue(engine, queues=[QUEUE], clock=clock)
        else:
            opened = SqlJobQueue(engine, clock=clock)
    yield opened
    opened.close()


def submit(queue: JobQueue, job_id: str, priority: float = 0.0, **payload: Any) -> None:
    queue.submit(
        job_id, queue=QUEUE, task="silu", kind="profile", payload=payload, priority=priority
    )


def echo(job: Job) -> dict[str, Any]:
    return {"job": job.job_id, "worker": job.worker, "seeds": [1, 2], "stats": {"ms": 1.5}}


def serve_until(queue: JobQueue, count: int, handler: Handler = echo) -> list[str]:
    """Serve on this thread until `count` jobs were handled; the ids in the order run."""
    stop = threading.Event()
    handled: list[str] = []

    def counted(job: Job) -> dict[str, Any]:
        handled.append(job.job_id)
        if len(handled) == count:
            stop.set()
        return handler(job)

    queue.serve("w0", counted, stop=stop, idle_s=WAIT_S)
    return handled


class Server:
    """`queue.serve` on a thread of its own; leaving the block stops it and joins it."""

    def __init__(
        self, queue: JobQueue, handler: Handler = echo, *, worker: str = "w0", idle_s: float = 60.0
    ) -> None:
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(
            target=self._serve, args=(queue, worker, handler, idle_s), name=worker
        )

    def _serve(self, queue: JobQueue, worker: str, handler: Handler, idle_s: float) -> None:
        try:
            queue.serve(worker, handler, stop=self.stop, idle_s=idle_s)
        except BaseException as e:  # raised again on the test's thread, in __exit__
            self.error = e

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop.set()
        self.thread.join(timeout=WAIT_S)
        assert not self.thread.is_alive(), "serve did not end after stop was set"
        if self.error is not None and kind is None:
            raise self.error


class Blocking:
    """A handler that holds its job until the test lets it go, then does what it is told."""

    def __init__(self, then: Callable[[Job], dict[str, Any]] = echo) -> None:
        self.entered = threading.Event()
        self.go = threading.Event()
        self.then = then

    def __call__(self, job: Job) -> dict[str, Any]:
        self.entered.set()
        assert self.go.wait(WAIT_S), "the test never let the job go"
        return self.then(job)

    def held(self) -> None:
        assert self.entered.wait(WAIT_S), "no worker took the job"


def cancel(job: Job) -> dict[str, Any]:
    raise JobCancelled(job.job_id)


# --- submit --------------------------------------------------------------------------------


def test_a_submitted_job_is_pending_until_served(queue: JobQueue, clock: ManualClock) -> None:
    assert queue.get("a") is None
    submit(queue, "a", 2.5, source="k", seeds=[1, 2])
    assert queue.get("a") == Job(
        job_id="a",
        task="silu",
        kind="profile",
        payload={"source": "k", "seeds": [1, 2]},
        priority=2.5,
        state="pending",
        worker=None,
        attempts=0,
        result=None,
        created_at=clock.now,
        queue=QUEUE,
    )


def test_submit_is_idempotent_by_job_id_in_every_state(queue: JobQueue) -> None:
    submit(queue, "a", 1.0, version=1)
    queue.submit("a", queue="elsewhere", task="silu", kind="profile", payload={}, priority=9.0)
    job = queue.get("a")
    assert job is not None
    assert (job.payload, job.priority, job.queue) == ({"version": 1}, 1.0, QUEUE)
    assert queue.counts() == {"pending": 1, "running": 0, "done": 0, "failed": 0}

    held = Blocking()
    with Server(queue, held):
        held.held()
        submit(queue, "a", 1.0, version=3)  # while running
        assert queue.counts() == {"pending": 0, "running": 1, "done": 0, "failed": 0}
        held.go.set()
        assert queue.result("a", WAIT_S) is not None
    finished = queue.get("a")
    submit(queue, "a", 1.0, version=4)  # once done: the result stays, nothing runs again
    assert queue.get("a") == finished
    assert finished is not None
    assert finished.state == "done"
    assert finished.payload == {"version": 1}
    assert queue.counts() == {"pending": 0, "running": 0, "done": 1, "failed": 0}


def test_payloads_no_database_could_store_are_refused(queue: JobQueue) -> None:
    with pytest.raises(InvalidPayload, match="payload of job 'a'"):
        submit(queue, "a", ms=float("nan"))
    assert queue.get("a") is None


# --- serve ---------------------------------------------------------------------------------


def test_the_highest_priority_runs_first_then_the_oldest(
    queue: JobQueue, clock: ManualClock
) -> None:
    submit(queue, "b-oldest", 1.0)
    submit(queue, "low", 0.0)
    clock.advance(seconds=1)
    submit(queue, "a-newer", 1.0)  # its id comes first: its age decides
    clock.advance(seconds=1)
    submit(queue, "urgent", 5.0)
    submit(queue, "below-zero", -1.0)
    order = serve_until(queue, 5)
    assert order == ["urgent", "b-oldest", "a-newer", "low", "below-zero"]
    assert queue.counts() == {"pending": 0, "running": 0, "done": 5, "failed": 0}


@ONE_HOST
def test_the_most_urgent_job_runs_first(queue: JobQueue, clock: ManualClock) -> None:
    """Priority first, then creation order, then the job id."""
    submit(queue, "b-oldest", 1.0)
    submit(queue, "low", 0.0)
    clock.advance(seconds=1)
    submit(queue, "c-newer", 1.0)
    submit(queue, "a-newer", 1.0)  # created with c-newer: the id decides
    clock.advance(seconds=1)
    submit(queue, "urgent", 5.0)
    submit(queue, "below-zero", -1.0)
    order = serve_until(queue, 6)
    assert order == ["urgent", "b-oldest", "a-newer", "c-newer", "low", "below-zero"]
    assert queue.counts() == {"pending": 0, "running": 0, "done": 6, "failed": 0}


def test_the_handler_sees_its_job_claimed_and_its_result_is_kept(queue: JobQueue) -> None:
    submit(queue, "a", source="k")
    seen: list[Job] = []

    def handler(job: Job) -> dict[str, Any]:
        seen.append(job)
        return echo(job)

    serve_until(queue, 1, handler)
    assert seen[0].state == "running"
    assert seen[0].worker == "w0"
    assert seen[0].attempts == 1
    assert seen[0].payload == {"source": "k"}
    done = queue.get("a")
    assert done is not None
    assert done.state == "done"
    assert done.result == {"job": "a", "worker": "w0", "seeds": [1, 2], "stats": {"ms": 1.5}}


def test_result_returns_the_finished_job(queue: JobQueue) -> None:
    submit(queue, "a")
    with Server(queue):
        job = queue.result("a", WAIT_S)
    assert job is not None
    assert job.state == "done"
    assert job.attempts == 1
    assert job.result == {"job": "a", "worker": "w0", "seeds": [1, 2], "stats": {"ms": 1.5}}


def test_result_is_none_after_the_timeout(queue: JobQueue) -> None:
    submit(queue, "a")
    started = time.monotonic()
    assert queue.result("a", 0.3) is None
    assert queue.result("unknown", 0.0) is None
    took = time.monotonic() - started
    assert 0.3 <= took < 5.0
    job = queue.get("a")
    assert job is not None
    assert job.state == "pending"


def test_a_submit_wakes_an_idle_worker(queue: JobQueue) -> None:
    with Server(queue, idle_s=WAIT_S * 10):
        submit(queue, "first")
        assert queue.result("first", WAIT_S) is not None  # the worker is now idle, or nearly
        submit(queue, "second")
        assert queue.result("second", WAIT_S) is not None


def test_workers_run_one_job_at_a_time_and_never_the_same_job(queue: JobQueue) -> None:
    workers, jobs = 4, 40
    ids = [f"job-{n:02}" for n in range(jobs)]
    for job_id in ids:
        submit(queue, job_id)
    lock = threading.Lock()
    handled: list[tuple[str, str]] = []
    active: Counter[str] = Counter()
    most_at_once: Counter[str] = Counter()
    together = threading.Barrier(workers, timeout=WAIT_S)
    first_jobs: list[str] = []

    def handler(job: Job) -> dict[str, Any]:
        assert job.worker is not None
        with lock:
            first = all(worker != job.worker for worker, _ in handled)
            handled.append((job.worker, job.job_id))
            active[job.worker] += 1
            most_at_once[job.worker] = max(most_at_once[job.worker], active[job.worker])
            if first:
                first_jobs.append(job.job_id)
        if first:
            together.wait()  # every worker holds a job at once: they really overlap
        with lock:
            active[job.worker] -= 1
        return echo(job)

    with ExitStack() as servers:
        for n in range(workers):
            servers.enter_context(Server(queue, handler, worker=f"w{n}"))
        finished = [queue.result(job_id, WAIT_S) for job_id in ids]
    assert all(job is not None and job.state == "done" for job in finished)
    assert sorted(job_id for _, job_id in handled) == ids  # each job exactly once
    assert len(set(first_jobs)) == workers  # the jobs held at once were different jobs
    assert set(most_at_once) == {f"w{n}" for n in range(workers)}
    assert set(most_at_once.values()) == {1}
    assert {job.worker for job in finished if job is not None} == set(most_at_once)


def test_a_cancelled_job_goes_back_to_pending_and_runs_again(queue: JobQueue) -> None:
    submit(queue, "a")
    stop = threading.Event()

    def drained(job: Job) -> dict[str, Any]:
        stop.set()  # the daemon drains while the job runs
        raise JobCancelled("stopping")

    queue.serve("w0", drained, stop=stop, idle_s=WAIT_S)
    job = queue.get("a")
    assert job is not None
    assert (job.state, job.worker, job.attempts, job.result) == ("pending", None, 1, None)
    serve_until(queue, 1)
    again = queue.get("a")
    assert again is not None
    assert (again.state, again.attempts) == ("done", 2)


@ONE_HOST
def test_a_failing_handler_leaves_no_job_running_and_its_error_propagates(
    queue: JobQueue,
) -> None:
    submit(queue, "a", 1.0)
    submit(queue, "b", 0.0)

    def broken(job: Job) -> dict[str, Any]:
        raise RuntimeError(f"backend broke on {job.job_id}")

    with pytest.raises(RuntimeError, match="backend broke on a"):
        queue.serve("w0", broken, stop=threading.Event(), idle_s=WAIT_S)
    assert queue.counts() == {"pending": 2, "running": 0, "done": 0, "failed": 0}
    a, b = queue.get("a"), queue.get("b")
    assert a is not None
    assert b is not None
    assert (a.state, a.worker, a.attempts) == ("pending", None, 1)
    assert b.attempts == 0  # serve stopped at the error, it did not go on


@ONE_HOST
def test_a_result_that_cannot_be_stored_leaves_the_job_pending(queue: JobQueue) -> None:
    submit(queue, "a")
    with pytest.raises(InvalidPayload, match="result of job 'a'"):
        queue.serve("w0", lambda job: {"ms": float("inf")}, stop=threading.Event(), idle_s=1.0)
    assert queue.counts() == {"pending": 1, "running": 0, "done": 0, "failed": 0}


def test_stop_ends_an_idle_serve_promptly(queue: JobQueue) -> None:
    server = Server(queue, idle_s=WAIT_S * 10)
    with server:
        submit(queue, "a")
        assert queue.result("a", WAIT_S) is not None  # serving, then idle
        started = time.monotonic()
        server.stop.set()
        server.thread.join(timeout=WAIT_S)
        took = time.monotonic() - started
    assert took < 2.0


def test_stop_ends_serve_after_the_job_in_hand(queue: JobQueue) -> None:
    submit(queue, "a", 1.0)
    submit(queue, "b", 0.0)
    held = Blocking()
    with Server(queue, held) as server:
        held.held()
        server.stop.set()
        held.go.set()
        server.thread.join(timeout=WAIT_S)
    a, b = queue.get("a"), queue.get("b")
    assert a is not None
    assert b is not None
    assert a.state == "done"
    assert (b.state, b.attempts) == ("pending", 0)


# --- administration ------------------------------------------------------------------------


def test_counts_name_every_state(queue: JobQueue) -> None:
    assert queue.counts() == {"pending": 0, "running": 0, "done": 0, "failed": 0}
    submit(queue, "done", 2.0)
    serve_until(queue, 1)
    submit(queue, "running", 1.0)
    submit(queue, "pending", 0.0)
    held = Blocking(then=cancel)
    with Server(queue, held) as server:
        held.held()
        assert queue.counts() == {"pending": 1, "running": 1, "done": 1, "failed": 0}
        server.stop.set()
        held.go.set()
    assert queue.counts() == {"pending": 2, "running": 0, "done": 1, "failed": 0}


@ONE_HOST
def test_requeue_running_puts_running_jobs_back(queue: JobQueue) -> None:
    submit(queue, "a", 1.0)
    submit(queue, "b", 0.0)
    assert queue.requeue_running() == 0
    held = Blocking(then=cancel)
    with Server(queue, held) as server:
        held.held()
        assert queue.requeue_running() == 1  # as if the process running it had died
        a = queue.get("a")
        assert a is not None
        assert (a.state, a.worker, a.attempts) == ("pending", None, 1)
        assert queue.counts() == {"pending": 2, "running": 0, "done": 0, "failed": 0}
        server.stop.set()
        held.go.set()
    assert queue.counts() == {"pending": 2, "running": 0, "done": 0, "failed": 0}


def test_prune_forgets_only_jobs_finished_long_enough_ago(
    queue: JobQueue, clock: ManualClock
) -> None:
    submit(queue, "old", 2.0)
    submit(queue, "recent", 1.0)
    submit(queue, "waiting", 0.0)
    serve_until(queue, 1)
    clock.advance(hours=2)
    serve_until(queue, 1)
    assert queue.prune(timedelta(hours=1)) == 1
    assert queue.get("old") is None
    assert queue.get("recent") is not None
    clock.advance(hours=2)
    assert queue.prune(timedelta(hours=1)) == 1
    assert queue.get("recent") is None
    waiting = queue.get("waiting")  # as old as any, but never finished
    assert waiting is not None
    assert waiting.state == "pending"
    assert queue.counts() == {"pending": 1, "running": 0, "done": 0, "failed": 0}


def test_the_listing_shows_every_job_newest_first_without_its_documents(
    queue: JobQueue, clock: ManualClock
) -> None:
    assert queue.listing() == []
    submit(queue, "old", 1.0, source="k")
    serve_until(queue, 1)
    clock.advance(seconds=1)
    submit(queue, "b", 2.0, source="k")
    submit(queue, "a", 0.0, source="k")  # at the same instant as b: by id
    held = Blocking()
    with Server(queue, held) as server:
        held.held()  # b runs
        listed = queue.listing()
        server.stop.set()
        held.go.set()
    assert [(i.job.job_id, i.job.state, i.status) for i in listed] == [
        ("a", "pending", "queued"),
        ("b", "running", "running"),
        ("old", "done", "done"),
    ]
    assert (listed[0].runs, listed[2].runs) == (0, 1)
    assert listed[1].job.worker == "w0"
    old = queue.get("old")
    assert old is not None
    assert old.result is not None
    assert listed[2].job == replace(old, payload={}, result=None)  # the rest is the job's
    assert [i.job.job_id for i in queue.listing()] == ["a", "b", "old"]


def test_devices_are_the_callers_own_or_those_serving_the_queue_now(queue: JobQueue) -> None:
    """None where the caller knows its devices (one host); else those that serve, fleet-wide."""
    idle = queue.devices()
    assert (idle is not None) == queue.spans_hosts
    assert idle in (None, 0)
    with Server(queue):
        submit(queue, "a")
        assert queue.result("a", WAIT_S) is not None  # served: its device is taken
        assert queue.devices() == (None if idle is None else 1)
    assert queue.devices() == idle


def test_maintenance_is_named_periodic_and_changes_nothing_on_a_healthy_queue(
    queue: JobQueue,
) -> None:
    submit(queue, "done", 1.0)
    serve_until(queue, 1)
    submit(queue, "waiting", 0.0)
    upkeep = queue.maintenance()
    assert len({name for name, _, _ in upkeep}) == len(upkeep)
    for name, function, every_s in upkeep:
        assert name
        assert every_s > 0
        function()
    assert queue.counts() == {"pending": 1, "running": 0, "done": 1, "failed": 0}
    assert serve_until(queue, 1) == ["waiting"]
    waiting = queue.get("waiting")
    assert waiting is not None
    assert (waiting.state, waiting.attempts) == ("done", 1)  # queued once, run once


# --- the in-memory adapter's own part ------------------------------------------------------


def test_the_memory_queue_records_its_calls_and_resets() -> None:
    queue = MemoryJobQueue()
    submit(queue, "a")
    stop = threading.Event()

    def drained(job: Job) -> dict[str, Any]:
        stop.set()
        raise JobCancelled("stopping")

    queue.serve("w0", drained, stop=stop, idle_s=WAIT_S)
    assert [call.operation for call in queue.calls] == ["submit", "claim", "release"]
    assert queue.calls[-1] == Call("release", {"job_id": "a", "worker": "w0"})
    queue.reset()
    assert queue.calls == []
    assert queue.get("a") is None
    assert queue.counts() == {"pending": 0, "running": 0, "done": 0, "failed": 0}


# --- the SQL adapter's own part ------------------------------------------------------------


def test_queues_of_separate_processes_never_get_the_same_job(
    db_url: Callable[[], str], open_engines: Callable[[str], sa.Engine]
) -> None:
    """Each worker with its own queue and engine, as `accelopt worker` processes would be:
    only the database keeps them apart."""
    url = db_url()
    queues = [SqlJobQueue(open_engines(url)) for _ in range(4)]
    ids = [f"job-{n:02}" for n in range(40)]
    for n, job_id in enumerate(ids):
        submit(queues[n % 4], job_id)
    handled: list[str] = []
    lock = threading.Lock()

    def handler(job: Job) -> dict[str, Any]:
        with lock:
            handled.append(job.job_id)
        return echo(job)

    # Another process's submit wakes no one here: the workers look again every 50 ms.
    with ExitStack() as servers:
        for n, q in enumerate(queues):
            servers.enter_context(Server(q, handler, worker=f"w{n}", idle_s=0.05))
        finished = [queues[0].result(job_id, WAIT_S) for job_id in ids]
    assert all(job is not None and job.state == "done" for job in finished)
    assert sorted(handled) == ids


def test_a_writer_holding_sqlite_too_long_gives_store_busy(
    fresh_sqlite_url: Callable[[], str],
    open_engines: Callable[[str], sa.Engine],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("store.engine.SQLITE_BUSY_TIMEOUT_MS", 200)
    url = fresh_sqlite_url()
    queue = SqlJobQueue(open_engines(url))
    submit(queue, "a")
    holder = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another process's writer, mid-transaction
        with pytest.raises(StoreBusy, match=r"\.db: submit job 'b': another writer held") as info:
            submit(queue, "b")
        assert isinstance(info.value.__cause__, sa.exc.OperationalError)
        with pytest.raises(StoreBusy, match="claim a job for worker 'w0'"):
            queue.serve("w0", echo, stop=threading.Event(), idle_s=WAIT_S)
        holder.execute("ROLLBACK")
    finally:
        holder.close()
    assert queue.counts() == {"pending": 1, "running": 0, "done": 0, "failed": 0}
    serve_until(queue, 1)
    assert queue.counts() == {"pending": 0, "running": 0, "done": 1, "failed": 0}


def test_driver_errors_become_store_errors_naming_the_database(
    db_url: Callable[[], str], open_engines: Callable[[str], sa.Engine]
) -> None:
    engine = open_engines(db_url())
    queue = SqlJobQueue(engine)
    with engine.begin() as connection:
        connection.exec_driver_sql("DROP TABLE jobs")  # damage from outside accelopt
    where = re.escape(queue.describe())
    with pytest.raises(StoreError, match=f"^{where}: read job 'a' failed: ") as info:
        queue.get("a")
    assert isinstance(info.value.__cause__, sa.exc.DBAPIError)
    with pytest.raises(StoreError, match=f"^{where}: submit job 'a' failed: "):
        submit(queue, "a")
    with pytest.raises(StoreError, match=f"^{where}: count the jobs failed: "):
        queue.counts()
    with pytest.raises(StoreError, match=f"^{where}: claim a job for worker 'w0' failed: "):
        queue.serve("w0", echo, stop=threading.Event(), idle_s=WAIT_S)
    with pytest.raises(StoreError, match=f"^{where}: list the jobs failed: "):
        queue.listing()


def test_open_queue_picks_the_adapter_of_the_database(
    db_url: Callable[[], str], open_engines: Callable[[str], sa.Engine]
) -> None:
    """The fleet's on PostgreSQL (its workers take the queues given), one host's on SQLite."""
    engine = open_engines(db_url())
    queue = open_queue(engine, queues=[QUEUE])
    try:
        fleet = engine.dialect.name == "postgresql"
        assert type(queue) is (FleetJobQueue if fleet else SqlJobQueue)
        assert queue.spans_hosts == spans_hosts(engine) == fleet
        if isinstance(queue, FleetJobQueue):
            assert queue.queues == [QUEUE]
        submit(queue, "a")
        with Server(queue):
            assert queue.result("a", WAIT_S) is not None
    finally:
        queue.close()


def fail_once_on(queue: JobQueue, worker: str) -> None:
    """One run of the pending job on `worker`, failed by the infrastructure (a backend that
    broke: the handler raises)."""

    def broken(job: Job) -> dict[str, Any]:
        raise RuntimeError(f"device {worker} lost")

    with pytest.raises(RuntimeError, match="lost"):
        queue.serve(worker, broken, stop=threading.Event(), idle_s=WAIT_S)


@ONE_HOST
def test_a_job_failing_every_run_on_two_devices_ends_failed_and_its_waiter_gets_it(
    queue: JobQueue,
) -> None:
    submit(queue, "a")
    for worker in ("w0", "w1"):
        fail_once_on(queue, worker)
    assert queue.counts() == {"pending": 1, "running": 0, "done": 0, "failed": 0}
    fail_once_on(queue, "w0")  # the third run (GiveUp's default), the second device seen
    assert queue.counts() == {"pending": 0, "running": 0, "done": 0, "failed": 1}
    failed = queue.result("a", WAIT_S)
    assert failed is not None
    assert (failed.state, failed.result, failed.attempts) == ("failed", None, 3)
    assert [run.worker for run in failed.failed_runs] == ["w0", "w1", "w0"]
    assert failed.failed_runs[-1].error == "RuntimeError: device w0 lost"
    submit(queue, "b")  # newer: a pending "a" would run first
    assert serve_until(queue, 1) == ["b"]  # terminal: no worker runs "a" again
    assert {e.job.job_id: e.status for e in queue.listing()} == {"a": "failed", "b": "done"}


@ONE_HOST
def test_failed_runs_on_one_device_alone_wait_for_a_second(queue: JobQueue) -> None:
    submit(queue, "a")
    for _run in range(4):
        fail_once_on(queue, "w0")
    job = queue.get("a")
    assert job is not None
    assert (job.state, len(job.failed_runs)) == ("pending", 4)


@ONE_HOST
def test_a_job_that_fails_once_and_then_succeeds_is_done(queue: JobQueue) -> None:
    submit(queue, "a")
    fail_once_on(queue, "w0")
    assert serve_until(queue, 1) == ["a"]
    job = queue.get("a")
    assert job is not None
    assert (job.state, [r.worker for r in job.failed_runs]) == ("done", ["w0"])
    assert job.result is not None


@ONE_HOST
def test_a_worker_that_died_under_a_job_counts_as_a_failed_run(queue: JobQueue) -> None:
    submit(queue, "a")
    fail_once_on(queue, "w0")
    fail_once_on(queue, "w1")
    started, finish = threading.Event(), threading.Event()

    def held(job: Job) -> dict[str, Any]:
        started.set()
        assert finish.wait(WAIT_S)
        return {"late": True}

    with Server(queue, held, worker="w1"):
        assert started.wait(WAIT_S)
        assert queue.requeue_running(worker="w1") == 1  # as if w1's process were gone
        finish.set()  # its late result must not turn the failed job done
    job = queue.get("a")
    assert job is not None
    assert (job.state, job.result) == ("failed", None)
    assert job.failed_runs[-1].error == "its worker died while running it"


@ONE_HOST
def test_a_dead_process_s_jobs_go_back_without_a_failed_run(queue: JobQueue) -> None:
    """At start (no worker named), the jobs a killed daemon was running go back as they were:
    its death says nothing of them (killed ten times, it must end like an uninterrupted run)."""
    submit(queue, "a")
    fail_once_on(queue, "w0")
    fail_once_on(queue, "w1")  # one more failed run and it is given up
    held = Blocking(then=cancel)
    with Server(queue, held, worker="w1") as server:
        held.held()
        assert queue.requeue_running() == 1  # as if the whole process were gone
        server.stop.set()
        held.go.set()
    job = queue.get("a")
    assert job is not None
    assert (job.state, len(job.failed_runs)) == ("pending", 2)
