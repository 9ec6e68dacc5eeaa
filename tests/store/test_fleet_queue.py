"""The fleet's queue on a real PostgreSQL server, beyond the port's contract (which it runs in
test_jobs_contract.py): procrastinate carries each job of the jobs table to a worker of the
queue it was submitted on (whatever its payload says), a device runs one job at a time
fleet-wide, a failed run is retried with its row pending meanwhile, a drained job goes to
another worker, `requeue_running` takes no live worker's job, and a job that lost its
procrastinate job is queued again by `recover` on its own queue. The device leases outlive their
session: ended (pg_terminate_backend, as a server restart ends it), a lease is taken again at
the next check or job; taken by another worker meanwhile, the device is served no more, and said
so; a device taken over in the middle of a job takes no job of its new holder until that one
ends."""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from structlog.testing import capture_logs

from store.engine import make_engine
from store.jobs.base import Handler, Job, JobCancelled
from store.jobs.fleet import DevicesLost, DeviceTaken, FleetJobQueue, queue_name, recover_every
from store.jobs.leases import lease_key, lease_space
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
        queue=queue_name("nkisim", target),
        task="silu",
        kind="profile",
        payload={"backend": "nkisim", "target": target},
        priority=priority,
    )


class Serving:
    """`serve_devices` on a thread of its own: entering the block waits until it serves (its
    leases taken), leaving it stops and joins it, and fails if it ended by an error other than
    `ends_by`."""

    def __init__(
        self,
        queue: FleetJobQueue,
        devices: list[str],
        handler: Handler,
        *,
        ends_by: type[BaseException] | None = None,
    ) -> None:
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.ends_by = ends_by
        self.error: BaseException | None = None
        free = list(devices)
        taken = threading.Condition()

        @contextlib.contextmanager
        def lease(usable: Callable[[str], bool]) -> Iterator[tuple[str, Handler]]:
            with taken:  # the first free usable device, asked again as the pool does
                while not (ready := [d for d in free if usable(d)]):
                    taken.wait(0.1)
                device = ready[0]
                free.remove(device)
            try:
                yield device, handler
            finally:
                with taken:
                    free.append(device)
                    taken.notify()

        self.thread = threading.Thread(target=self._serve, args=(queue, devices, lease))

    def _serve(self, queue: FleetJobQueue, devices: list[str], lease: Any) -> None:
        try:
            queue.serve_devices(devices, lease, stop=self.stop, ready=self.ready.set)
        except BaseException as e:
            self.error = e

    def __enter__(self) -> Serving:
        self.thread.start()
        deadline = time.monotonic() + WAIT_S
        while not self.ready.wait(0.05) and self.thread.is_alive():
            assert time.monotonic() < deadline, "serve_devices never leased its devices"
        assert self.ready.is_set(), f"serve_devices ended before it served: {self.error!r}"
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self.stop.set()
        self.thread.join(WAIT_S)
        assert not self.thread.is_alive(), "serve_devices did not end after stop"
        if kind is None and self.error is not None:
            assert self.ends_by is not None, f"serve_devices failed: {self.error!r}"
            assert isinstance(self.error, self.ends_by), f"serve_devices failed: {self.error!r}"


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


def _never(_usable: Any) -> Any:
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
        "orphan", queue=QUEUE, task="silu", kind="profile",
        payload={"backend": "nkisim", "target": "trn2"}, priority=0,
    )  # fmt: skip
    recovering = queues(clock=lambda: later)
    assert queues().recover() == 0  # too young: its submitter may be about to defer it
    assert recovering.recover() == 1
    assert recovering.recover() == 0  # queued now
    with Serving(queues(queues=[QUEUE]), ["h/0"], echo):
        assert recovering.result("orphan", WAIT_S) is not None


def test_a_job_goes_on_the_queue_it_is_submitted_on_whatever_its_payload_says(
    queues: Callable[..., FleetJobQueue],
) -> None:
    coordinator = queues()
    for job_id, queue in (("here", QUEUE), ("elsewhere", queue_name("nkisim", "trn3"))):
        coordinator.submit(
            job_id, queue=queue, task="silu", kind="profile",
            payload={"backend": "neuron", "target": "trn1"}, priority=0,
        )  # fmt: skip
    with Serving(queues(queues=[QUEUE]), ["h/0"], echo):
        assert coordinator.result("here", WAIT_S) is not None
        time.sleep(0.5)  # a worker of trn2 would have taken the other job by now
    elsewhere = coordinator.get("elsewhere")
    assert elsewhere is not None
    assert elsewhere.state == "pending"
    listed = {item.job.job_id: (item.job.queue, item.queue) for item in coordinator.listing()}
    assert listed == {"here": (QUEUE, QUEUE), "elsewhere": (queue_name("nkisim", "trn3"),) * 2}


def test_recover_queues_an_orphan_again_on_the_queue_it_was_submitted_on(
    queues: Callable[..., FleetJobQueue], engine: sa.Engine
) -> None:
    later = datetime.now(UTC) + timedelta(minutes=5)
    trn3 = queue_name("nkisim", "trn3")
    SqlJobQueue(engine).submit(  # the row alone, and nothing in its payload routes it
        "orphan", queue=trn3, task="silu", kind="profile", payload={}, priority=0
    )
    recovering = queues(clock=lambda: later)
    assert recovering.recover() == 1
    with Serving(queues(queues=[QUEUE]), ["h/0"], echo):
        time.sleep(0.5)  # a worker of trn2 would have taken it by now
        orphan = recovering.get("orphan")
        assert orphan is not None
        assert orphan.state == "pending"
    with Serving(queues(queues=[trn3]), ["h/1"], echo):
        done = recovering.result("orphan", WAIT_S)
    assert done is not None
    assert done.worker == "h/1"


def test_recover_takes_a_row_from_before_queues_to_its_last_procrastinate_jobs_queue(
    queues: Callable[..., FleetJobQueue], engine: sa.Engine
) -> None:
    """A row without a queue (written before they were kept) goes back on the queue of its
    last procrastinate job; one that never had a procrastinate job is left alone, said so."""
    later = datetime.now(UTC) + timedelta(minutes=5)
    submit(queues(), "gave-up")
    SqlJobQueue(engine).submit(
        "never-deferred", queue=QUEUE, task="silu", kind="profile", payload={}, priority=0
    )
    with engine.begin() as connection:
        connection.exec_driver_sql("UPDATE jobs SET queue = NULL")
        connection.exec_driver_sql("UPDATE procrastinate_jobs SET status = 'failed'")
    recovering = queues(clock=lambda: later)
    with capture_logs() as logs:
        assert recovering.recover() == 1
    (left,) = events(logs, "job without a queue left alone")
    assert left["job"] == "never-deferred"
    with Serving(queues(queues=[QUEUE]), ["h/0"], echo):
        assert recovering.result("gave-up", WAIT_S) is not None


def test_requeue_running_leaves_the_jobs_of_live_workers_running(
    queues: Callable[..., FleetJobQueue],
) -> None:
    """Only what `recover` finds abandoned goes back: a live worker's job is not taken from it
    (the one-host queues trust their caller instead: test_jobs_contract.py)."""
    coordinator = queues()
    device = Recording("a")
    with Serving(queues(queues=[QUEUE]), ["h/0"], device):
        submit(coordinator, "a")
        assert device.entered["a"].wait(WAIT_S)
        assert coordinator.requeue_running() == 0
        assert coordinator.requeue_running(worker="h/0") == 0
        running = coordinator.get("a")
        assert running is not None
        assert (running.state, running.worker) == ("running", "h/0")
        device.release["a"].set()
        done = coordinator.result("a", WAIT_S)
    assert done is not None
    assert done.attempts == 1


def test_a_failed_run_and_a_result_that_cannot_be_stored_leave_the_job_pending_for_its_retry(
    queues: Callable[..., FleetJobQueue],
) -> None:
    """The fleet retries a job itself (the one-host queues end `serve` instead:
    test_jobs_contract.py); meanwhile its row is pending, never left running."""
    coordinator = queues()
    runs: list[str] = []
    other_seen: dict[tuple[str, int], str] = {}

    def flaky(job: Job) -> dict[str, Any]:
        runs.append(job.job_id)
        run = runs.count(job.job_id)
        other = coordinator.get("unstorable" if job.job_id == "broken" else "broken")
        assert other is not None
        other_seen[job.job_id, run] = other.state
        if run == 1 and job.job_id == "broken":
            raise RuntimeError("the backend broke")
        if run == 1:
            return {"ms": float("inf")}  # no database stores it
        return echo(job)

    submit(coordinator, "broken", priority=1)
    submit(coordinator, "unstorable")
    with Serving(queues(queues=[QUEUE]), ["h/0"], flaky):
        for job_id in ("broken", "unstorable"):
            assert coordinator.result(job_id, WAIT_S) is not None
    assert runs == ["broken", "unstorable", "broken", "unstorable"]
    assert other_seen["unstorable", 1] == "pending"  # the broken run's job went back
    assert other_seen["broken", 2] == "pending"  # and so did the unstorable result's


def test_the_fleets_upkeep_is_recover_and_its_devices_are_the_leased_ones(
    queues: Callable[..., FleetJobQueue],
) -> None:
    coordinator = queues(stalled_s=6.0)
    ((name, function, every_s),) = coordinator.maintenance()
    assert (name, function, every_s) == ("recover_jobs", coordinator.recover, recover_every(6.0))
    assert coordinator.spans_hosts
    assert coordinator.devices() == 0
    with Serving(queues(queues=[QUEUE]), ["h/0", "h/1"], echo):
        assert coordinator.devices() == coordinator.leased_devices() == 2


# --- device leases across a lost session ----------------------------------------------------

NEVER_S = 1000.0
"""A lease check interval no test lives to see: the leases are checked only before a job."""


def wait_for(condition: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + WAIT_S
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return value


def lease_holders(engine: sa.Engine) -> set[int]:
    """The backends holding device leases of this database."""
    with engine.connect() as connection:
        pids = connection.execute(
            sa.text(
                "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted "
                "AND classid = :space AND objsubid = 2 AND database = (SELECT oid FROM "
                "pg_database WHERE datname = current_database())"
            ),
            {"space": lease_space(connection)},
        ).scalars()
        return set(pids)


def end_session(engine: sa.Engine, pid: int) -> None:
    """What a server restart does to a lease session, to it alone; returns once it is gone."""
    with engine.connect() as connection:
        ended = connection.execute(
            sa.text("SELECT pg_terminate_backend(:pid, 10000)"), {"pid": pid}
        ).scalar_one()
    assert ended, f"backend {pid} did not end"


def events(logs: Sequence[MutableMapping[str, Any]], text: str) -> list[MutableMapping[str, Any]]:
    return [entry for entry in logs if entry["event"].startswith(text)]


def test_a_lease_whose_session_ended_is_taken_again_at_the_next_check(
    queues: Callable[..., FleetJobQueue], engine: sa.Engine
) -> None:
    coordinator = queues()
    worker = queues(queues=[QUEUE], lease_check_s=0.2)
    with capture_logs() as logs, Serving(worker, ["h/0"], echo):
        (first,) = lease_holders(engine)
        end_session(engine, first)
        (again,) = wait_for(lambda: lease_holders(engine), "the lease taken again")
        assert again != first  # by a new session: the ended one is never used again
        with pytest.raises(DeviceTaken, match="device h/0 is served by another worker"):
            queues(queues=[QUEUE]).serve_devices(["h/0"], _never, stop=threading.Event())
        submit(coordinator, "a")
        done = coordinator.result("a", WAIT_S)
    assert done is not None
    assert done.worker == "h/0"
    (unsure,) = events(logs, "device leases unsure")
    assert unsure["devices"] == ["h/0"]
    (taken,) = events(logs, "device leases taken again")
    assert (taken["devices"], taken["lost"]) == (["h/0"], [])


def test_a_job_checks_its_devices_lease_before_it_starts_and_takes_it_again(
    queues: Callable[..., FleetJobQueue], engine: sa.Engine
) -> None:
    """No periodic check comes in time here: the job's own check takes the lease again."""
    coordinator = queues()
    with (
        capture_logs() as logs,
        Serving(queues(queues=[QUEUE], lease_check_s=NEVER_S), ["h/0"], echo),
    ):
        (first,) = lease_holders(engine)
        end_session(engine, first)
        assert lease_holders(engine) == set()  # nobody holds it until a job asks
        submit(coordinator, "a")
        done = coordinator.result("a", WAIT_S)
        (again,) = lease_holders(engine)
    assert done is not None
    assert done.worker == "h/0"
    assert again != first
    (lapsed,) = events(logs, "a job found its device's lease lapsed")
    assert (lapsed["job"], lapsed["device"]) == ("a", "h/0")
    assert events(logs, "device leases taken again")


def test_a_device_another_worker_took_meanwhile_is_served_no_more_and_said_so(
    queues: Callable[..., FleetJobQueue], engine: sa.Engine
) -> None:
    coordinator = queues()
    worker = queues(queues=[QUEUE], lease_check_s=0.2)
    other = engine.connect()  # another worker's lease session, waiting for h/0
    try:
        with capture_logs() as logs, Serving(worker, ["h/0", "h/1"], echo) as serving:
            (first,) = lease_holders(engine)  # one session, both devices
            other.exec_driver_sql(
                "SELECT set_config('application_name', 'the other worker', false)"
            )
            space = lease_space(other)
            other.commit()
            waiting = threading.Thread(
                target=other.execute,
                args=(sa.text("SELECT pg_advisory_lock(:space, :key)"),),
                kwargs={"parameters": {"space": space, "key": lease_key("h/0")}},
            )
            waiting.start()
            wait_for(lambda: _waiting_for_a_lease(engine), "the other session to wait for h/0")
            # The waiting session is granted h/0 as the first session ends, before this worker
            # can take it again on a new one: the other worker took it meanwhile.
            end_session(engine, first)
            waiting.join(WAIT_S)
            assert not waiting.is_alive()
            wait_for(lambda: events(logs, "device lost"), "the worker to say it lost h/0")
            for n in range(6):
                submit(coordinator, f"j{n}")
            ran = {coordinator.result(f"j{n}", WAIT_S).worker for n in range(6)}  # type: ignore[union-attr]
            assert serving.thread.is_alive()  # it serves the device it kept
            other.exec_driver_sql("SELECT pg_advisory_unlock_all()")
            other.commit()
            time.sleep(1.0)  # five checks: a lost device stays lost, even once free again
            assert len(lease_holders(engine)) == 1
    finally:
        other.close()
    assert ran == {"h/1"}
    (lost,) = events(logs, "device lost")
    assert (lost["device"], lost["holder"]) == ("h/0", "the other worker")
    (taken,) = events(logs, "device leases taken again")
    assert (taken["devices"], taken["lost"]) == (["h/1"], ["h/0"])


def _waiting_for_a_lease(engine: sa.Engine) -> bool:
    with engine.connect() as connection:
        waiting = connection.execute(
            sa.text(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
                "AND classid = :space AND objid = :key AND objsubid = 2"
            ),
            {"space": lease_space(connection), "key": lease_key("h/0")},
        ).scalar_one()
    return bool(waiting)


class Recording:
    """A device's handler that records its jobs and holds the ones named until released."""

    def __init__(self, *held: str) -> None:
        self.ran: list[str] = []
        self.entered = {job_id: threading.Event() for job_id in held}
        self.release = {job_id: threading.Event() for job_id in held}

    def __call__(self, job: Job) -> dict[str, Any]:
        self.ran.append(job.job_id)
        if job.job_id in self.entered:
            self.entered[job.job_id].set()
            assert self.release[job.job_id].wait(WAIT_S)
        return echo(job)


def test_a_device_taken_over_in_the_middle_of_a_job_runs_no_other_job_until_it_ends(
    queues: Callable[..., FleetJobQueue], engine: sa.Engine
) -> None:
    """The first worker's session ends while its job runs; a second worker takes the device.
    It starts nothing there until that job ended, and the first worker, at its next job, finds
    the device gone and stops."""
    coordinator = queues()
    first_device, second_device = Recording("long"), Recording("next")
    first = Serving(
        queues(queues=[QUEUE], lease_check_s=NEVER_S), ["h/0"], first_device, ends_by=DevicesLost
    )
    second = Serving(queues(queues=[QUEUE], lease_check_s=0.2), ["h/0"], second_device)
    with capture_logs() as logs, first:
        submit(coordinator, "long")
        assert first_device.entered["long"].wait(WAIT_S)
        (session,) = lease_holders(engine)
        end_session(engine, session)  # the first worker does not notice: it checks at a job
        with second:
            (taken,) = events(logs, "device occupied")  # said as it took the device
            assert (taken["device"], taken["job"]) == ("h/0", "long")
            submit(coordinator, "next")  # the second worker's: the first is busy
            time.sleep(1.0)  # five of its checks
            waiting = coordinator.get("next")
            assert waiting is not None
            assert waiting.state == "pending"  # fetched, but waiting for the device
            first_device.release["long"].set()
            assert second_device.entered["next"].wait(WAIT_S)
            submit(coordinator, "third")  # the first worker's: the second is busy
            first.thread.join(WAIT_S)
            assert isinstance(first.error, DevicesLost)  # it found h/0 gone, and stopped
            second_device.release["next"].set()
            assert coordinator.result("third", WAIT_S) is not None
    assert first_device.ran == ["long"]
    assert second_device.ran == ["next", "third"]
    (lost,) = events(logs, "device lost")
    assert lost["device"] == "h/0"
    assert events(logs, "device free again")
    rows = sorted((coordinator.get(j) for j in ("long", "next", "third")), key=_started)
    assert [row.job_id for row in rows] == ["long", "next", "third"]  # type: ignore[union-attr]
    for before, after in itertools.pairwise(rows):
        assert before.finished_at <= after.started_at  # type: ignore[union-attr, operator]


def _started(job: Job | None) -> datetime:
    assert job is not None
    assert job.started_at is not None
    return job.started_at
