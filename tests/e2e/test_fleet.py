"""Many hosts on one real PostgreSQL server, every part a real process: `accelopt worker`s as
"hosts" (distinct host names, nkisim devices), a coordinating `accelopt daemon` without devices
of its own, the scripted LLM server. And the server restarted under two workers of the `sleep`
backend, this test their coordinator: they keep their devices and serve on. And a job that
fails on every device, by its backend raising or by its workers dying under it, ends `failed`."""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from daemon.workers.host import SLEEP_BACKEND
from daemon.workers.worker import QueuedProfiler
from events.catalog import (
    LLMCallCompleted,
    ProfileRecorded,
    SearchFinished,
    WorkerStarted,
    WorkerStopped,
)
from nkibench.result import KernelResult
from nkibench.suites import NKI_LEGACY_SUITE as SUITE
from nkibench.task.spec import load_task
from store.engine import make_engine
from store.jobs.base import FailedRun, GiveUp, Job
from store.jobs.claiming import WORKER_DIED
from store.jobs.fleet import FleetJobQueue, queue_name
from store.jobs.leases import lease_key, lease_space
from store.recorder import Recorder
from store.sql import SqlEventStore
from tests.support import agent_script
from tests.support.daemon_process import PROGRAM, DaemonProcess, WorkerProcess, wait_until
from tests.support.llm_server import running_llm
from tests.support.postgres import PostgresServer, restart_postgresql

pytestmark = pytest.mark.postgres

LIGHT = ("--shapes", "small", "--iterations", "1", "--beam", "1", "--plans", "1", "--samples", "1")
TASKS = 30


def jobs(daemon: DaemonProcess) -> list[dict[str, Any]]:
    listed = daemon.accelopt("jobs", "--json")
    assert listed.returncode == 0, listed.stderr
    found: list[dict[str, Any]] = json.loads(listed.stdout)["jobs"]
    return found


def overlapping_runs(listed: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """Pairs of jobs that ran on one device at the same time, by their recorded times."""
    spans: dict[str, list[tuple[datetime, datetime, str]]] = defaultdict(list)
    for job in listed:
        start, end = (_moment(job[k]) for k in ("started_at", "finished_at"))
        spans[job["worker"]].append((start, end, job["job_id"]))
    overlaps = []
    for device, runs in spans.items():
        runs.sort()
        for (_, end, first), (start, _, second) in itertools.pairwise(runs):
            if start < end:
                overlaps.append((device, first, second))
    return overlaps


def _moment(value: str | datetime) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


def _sleep_workers(tmp_path: Path, url: str) -> tuple[WorkerProcess, WorkerProcess]:
    """Hosts h1 and h2, one `sleep` device each, whose dead workers' jobs are recovered after
    3 s without a heartbeat."""
    fleet = {"ACCELOPT_FLEET_STALLED_S": "3"}
    first, second = (
        WorkerProcess(tmp_path / host, url, "--backend", "sleep", "--devices", "1",
                      "--host", host, env=fleet)
        for host in ("h1", "h2")
    )  # fmt: skip
    return first, second


def test_three_hosts_serve_thirty_tasks_each_job_once_each_device_one_job_at_a_time(
    tmp_path: Path, fresh_pg_url: Callable[[], str]
) -> None:
    url = fresh_pg_url()
    hosts = ("h1", "h2", "h3")
    workers = [
        WorkerProcess(tmp_path / host, url, "--backend", "nkisim", "--devices", "2", "--host", host)
        for host in hosts
    ]
    with running_llm(agent_script.answer) as llm:
        coordinator = DaemonProcess(
            tmp_path / "coordinator",
            *LIGHT,
            env={"ACCELOPT_DB": url, **agent_script.llm_env(llm.url)},
        )
        for n in range(TASKS):
            coordinator.drop(SUITE / "silu", f"silu_{n:02d}")
        try:
            for worker in workers:
                worker.start()
            coordinator.start()
            wait_until(
                lambda: len(coordinator.events(SearchFinished)) >= TASKS, 900, "thirty searches"
            )
        finally:
            if coordinator.alive():
                assert coordinator.stop() == 0
            assert [worker.stop() for worker in workers] == [0, 0, 0]

    finished = coordinator.events(SearchFinished)
    assert sorted(f.task for f in finished) == [f"silu_{n:02d}" for n in range(TASKS)]
    profiles = coordinator.events(ProfileRecorded)
    baselines = {p.task for p in profiles if p.purpose == "baseline"}
    assert baselines == {f"silu_{n:02d}" for n in range(TASKS)}
    searched = {p.task for p in profiles if p.purpose == "candidate"}
    assert searched == baselines  # each search profiled its candidates on the fleet too
    assert not [job for job, n in Counter(p.job_id for p in profiles).items() if n > 1]
    # no LLM call answered twice (an attempt that failed, timed out on a loaded host say, is
    # recorded under its call's id and asked again)
    calls = [c.call_id for c in coordinator.events(LLMCallCompleted) if c.error is None]
    assert len(calls) == len(set(calls))

    listed = jobs(coordinator)
    assert len(listed) == len(profiles)  # every recorded profile came from one job
    assert {job["status"] for job in listed} == {"done"}
    assert [job["job_id"] for job in listed if job["runs"] != 1] == []  # no job ran twice
    assert overlapping_runs(listed) == []
    devices = {job["worker"] for job in listed}
    assert {device.split("/")[0] for device in devices} == set(hosts)  # every host worked
    assert len(devices) == 6

    for worker, host in zip(workers, hosts, strict=True):  # each made its own task copies
        copies = {path.name for path in (worker.home / "revisions").glob("*/*")}
        assert copies == {job["task"] for job in listed if job["worker"].startswith(f"{host}/")}

    started = coordinator.events(WorkerStarted)
    assert sorted((w.host, tuple(w.devices)) for w in started) == [
        (host, (f"{host}/0", f"{host}/1")) for host in hosts
    ]
    assert {w.queue for w in started} == {"profile.nkisim.trn2"}
    assert sorted(w.host for w in coordinator.events(WorkerStopped)) == list(hosts)


SLOW_REFERENCE = '''"""The identity, on inputs that take seconds to make (a job long enough to
kill a worker in the middle of it)."""

import time

import numpy as np

M = 128
N = 64
REFERENCE_SLEEP_S = 12


def get_inputs():
    time.sleep(REFERENCE_SLEEP_S)
    return [np.random.normal(size=(M, N)).astype(np.float32)]


def forward(x):
    return x.copy()
'''


def test_a_worker_killed_in_the_middle_of_a_job_leaves_it_to_another(
    tmp_path: Path, fresh_pg_url: Callable[[], str]
) -> None:
    url = fresh_pg_url()
    fleet = {"ACCELOPT_FLEET_STALLED_S": "3"}  # a dead worker is noticed within seconds
    coordinator = DaemonProcess(tmp_path / "coordinator", env={"ACCELOPT_DB": url, **fleet})
    task = coordinator.watch / "slow"
    task.mkdir()
    (task / "reference.py").write_text(SLOW_REFERENCE)
    kernel = agent_script.KERNELS / "identity_copies.py"
    (task / "kernel.py").write_text(kernel.read_text())
    (task / "task.toml").write_text("[correctness]\nseeds = [0]\n")
    first = WorkerProcess(tmp_path / "h1", url, "--backend", "nkisim", "--devices", "1",
                          "--host", "h1", env=fleet)  # fmt: skip
    second = WorkerProcess(tmp_path / "h2", url, "--backend", "nkisim", "--devices", "1",
                           "--host", "h2", env=fleet)  # fmt: skip
    try:
        first.start()
        coordinator.start()

        def running_on_first() -> list[dict[str, Any]]:
            # the cheap look first; the listing (a CLI process) only once a child runs
            if not first.kernels():
                return []
            listed = jobs(coordinator)
            return listed if listed and listed[0]["status"] == "running" else []

        # killed at once: the reference sleeps 12 s (SLOW_REFERENCE), far longer than a look
        # takes on a loaded machine, so the job is still in its first phase when the worker dies
        (job,) = wait_until(running_on_first, 60, "the job's kernel process on the first worker")
        killed = time.monotonic()
        first.stop(signal.SIGKILL)
        assert job["worker"] == "h1/0"
        wait_until(lambda: not first.kernels(), 10, "the killed worker's kernel processes to end")
        second.start()  # only now: the job can only be the killed worker's, run again
        wait_until(lambda: coordinator.events(ProfileRecorded), 90, "the job's result")
        recovered_s = time.monotonic() - killed
    finally:
        if coordinator.alive():
            assert coordinator.stop() == 0
        for worker in (first, second):
            if worker.alive():
                worker.stop()
    (recorded,) = coordinator.events(ProfileRecorded)
    assert recorded.job_id == job["job_id"]
    assert recorded.correct
    (done,) = jobs(coordinator)
    assert (done["status"], done["worker"], done["runs"]) == ("done", "h2/0", 2)
    assert recovered_s < 60


def _sleep_jobs(
    queue: FleetJobQueue, prefix: str, count: int, ms: float, priority: float = 0.0
) -> list[str]:
    ids = [f"{prefix}-{n:02d}" for n in range(count)]
    for job_id in ids:
        queue.submit(
            job_id,
            queue=queue_name("sleep", "any"),
            task="sleep",
            kind="sleep",
            payload={"backend": "sleep", "target": "any", "ms": ms},
            priority=priority,
        )
    return ids


def test_a_postgresql_restart_under_two_workers_keeps_their_devices_one_job_each(
    tmp_path: Path, fresh_pg_url: Callable[[], str], postgres_server: PostgresServer
) -> None:
    """(Once the restart dropped every device lease silently, a second worker started on a
    device still served, and two jobs ran on it at once.) Jobs run through the restart; after
    it each worker holds its devices again, a third worker on one of them is refused, and jobs
    submitted afterwards are done by both; no device ever ran two jobs at once."""
    url = fresh_pg_url()
    fleet = {"ACCELOPT_FLEET_STALLED_S": "3"}  # heartbeats and lease checks every second
    hosts = ("h1", "h2")
    workers = [
        WorkerProcess(tmp_path / host, url, "--backend", "sleep", "--devices", "2",
                      "--host", host, env=fleet)
        for host in hosts
    ]  # fmt: skip
    engine = make_engine(url)
    coordinator = FleetJobQueue(engine)
    try:
        for worker in workers:
            worker.start()
        assert coordinator.leased_devices() == 4
        with postgres_server.alone():  # first: the jobs must not end while other tests do
            before = _sleep_jobs(coordinator, "before", 12, 1500)  # 4.5 s for 4 devices
            wait_until(lambda: coordinator.counts()["running"] == 4, 30, "every device busy")
            restart_postgresql()  # in the middle of 3 rounds of jobs
        wait_until(lambda: coordinator.leased_devices() == 4, 30, "the leases taken again")
        third = WorkerProcess(tmp_path / "h1-again", url, "--backend", "sleep", "--devices",
                              "1", "--host", "h1", env=fleet)  # fmt: skip
        refused = subprocess.run(
            [*PROGRAM, "worker", *third.args],
            env=third.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert refused.returncode == 8, refused.stderr
        assert "device h1/0 is served by another worker" in refused.stderr
        after = _sleep_jobs(coordinator, "after", 24, 200)
        for job_id in [*before, *after]:
            assert coordinator.result(job_id, 60) is not None, job_id
        assert all(worker.alive() for worker in workers)
        listed: list[dict[str, Any]] = [
            {"job_id": item.job.job_id, "worker": item.job.worker,
             "started_at": item.job.started_at, "finished_at": item.job.finished_at}
            for item in coordinator.listing()
        ]  # fmt: skip
    finally:
        stopped = [worker.stop() for worker in workers]
        coordinator.close()
        engine.dispose()
    assert stopped == [0, 0]
    assert len(listed) == 36
    assert overlapping_runs(listed) == []
    served_after = {job["worker"].split("/")[0] for job in listed if job["job_id"] in after}
    assert served_after == set(hosts)  # both kept serving
    for worker in workers:
        text = worker.log_text()
        assert '"event": "device leases unsure' in text  # the restart ended their sessions
        assert '"event": "device leases taken again' in text
        assert '"event": "device lost' not in text
        assert '"event": "device occupied' not in text  # its own jobs were never another's


def test_a_worker_whose_device_another_took_while_its_session_was_gone_says_so_and_stops(
    tmp_path: Path, fresh_pg_url: Callable[[], str]
) -> None:
    """Its lease session ends (as in a restart, to it alone); another session, already waiting
    for the device, gets it first. The worker's next check finds the device taken: it says so,
    and with no device left it stops with exit 8 and a `WorkerStopped` saying why."""
    url = fresh_pg_url()
    worker = WorkerProcess(tmp_path / "h1", url, "--backend", "sleep", "--devices", "1",
                           "--host", "h1", env={"ACCELOPT_FLEET_STALLED_S": "3"})  # fmt: skip
    engine = make_engine(url)
    newcomer = engine.connect()
    try:
        worker.start()
        newcomer.exec_driver_sql("SELECT set_config('application_name', 'the newcomer', false)")
        key = {"space": lease_space(newcomer), "key": lease_key("h1/0")}
        newcomer.commit()
        waiting = threading.Thread(
            target=newcomer.execute,
            args=(sa.text("SELECT pg_advisory_lock(:space, :key)"), key),
        )
        waiting.start()
        with engine.connect() as admin:
            wait_until(
                lambda: admin.execute(
                    sa.text(
                        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                        "AND NOT granted AND classid = :space AND objid = :key"
                    ),
                    key,
                ).scalar_one(),
                30,
                "the newcomer to wait for the device",
            )
            ended = admin.execute(
                sa.text(
                    "SELECT count(pg_terminate_backend(pid, 10000)) FROM pg_stat_activity "
                    "WHERE application_name LIKE :name"
                ),
                {"name": f"accelopt worker pid {worker.pid} on %"},
            ).scalar_one()
        assert ended == 1  # its lease session, and no other of its connections
        waiting.join(30)
        assert not waiting.is_alive()  # the newcomer holds h1/0
        assert worker.process is not None
        assert worker.process.wait(30) == 8
    finally:
        if worker.alive():
            worker.stop()
        newcomer.close()
        engine.dispose()
    log = worker.log_text()
    assert '"event": "device lost' in log
    assert '"holder": "the newcomer"' in log
    store = SqlEventStore.open(url)
    try:
        stopped = list(Recorder(store).of_type("worker:h1", WorkerStopped))
    finally:
        store.close()
    assert [s.reason for s in stopped] == [
        "other workers took every device of this one (h1/0) while its database session was gone"
    ]


def test_a_job_failing_on_every_device_ends_failed_and_its_waiting_search_is_told(
    tmp_path: Path, fresh_pg_url: Callable[[], str]
) -> None:
    """A search's profile job on the `sleep` backend's queue: that backend reads a payload's
    `ms`, which a profile job has none of, so it raises on every run, on any device (the
    infrastructure failing, no verdict on the kernel). The first run fails on h1; h1 then takes
    a long sleep job (ranked first), so the retries go to h2. After the default 3 failed runs
    on 2 devices, with both workers alive throughout (given up for its devices, not for lack
    of them), the job is `failed`, runs no more, and the search's profiler waiting on it gets a
    `job_failed` result naming both devices."""
    url = fresh_pg_url()
    first, second = _sleep_workers(tmp_path, url)
    engine = make_engine(url)
    queue = FleetJobQueue(engine)
    stop = threading.Event()
    profiler = QueuedProfiler(
        queue,
        backend_name=SLEEP_BACKEND,
        target="any",
        shapes="small",
        priority=lambda _task: 0.0,
        should_stop=stop.is_set,
    )
    task = load_task(SUITE / "silu")
    results: list[KernelResult] = []
    waiting = threading.Thread(
        target=lambda: results.append(profiler.profile(task, task.kernel_source, job_id="broken"))
    )

    def failed_runs() -> list[str]:
        job = queue.get("broken")
        return [run.worker for run in job.failed_runs] if job is not None else []

    try:
        first.start()
        waiting.start()
        assert wait_until(failed_runs, 30, "the first failed run") == ["h1/0"]
        (busy,) = _sleep_jobs(queue, "busy", 1, 120_000, priority=1.0)
        wait_until(
            lambda: (job := queue.get(busy)) is not None and job.worker == "h1/0", 30, "h1 busy"
        )
        second.start()
        waiting.join(60)
        assert not waiting.is_alive(), "the search's profiler is still waiting"
        both_alive = first.alive() and second.alive()
        given_up = queue.get("broken")
        with engine.connect() as connection:  # procrastinate's job ended too: no more runs
            carried = connection.execute(
                sa.text(
                    "SELECT status::text, attempts FROM procrastinate_jobs "
                    "WHERE queueing_lock = 'broken'"
                )
            ).all()
    finally:
        stop.set()
        waiting.join(10)
        stopped = [worker.stop() for worker in (first, second)]
        queue.close()
        engine.dispose()
    assert stopped == [0, 0]
    assert both_alive
    # its three runs; the last, which gave the job up, ended it quietly: no retry is left
    assert [tuple(row) for row in carried] == [("succeeded", 3)], carried
    assert given_up is not None
    assert given_up.state == "failed"
    devices = [run.worker for run in given_up.failed_runs]
    # h1 takes the long job before the first retry is due (2 s on) unless this host stalls
    # the test longer than that; either way the job ran on both devices before it was given up
    assert len(devices) == 3, devices
    assert devices[0] == "h1/0", devices
    assert set(devices) == {"h1/0", "h2/0"}, devices
    assert {run.error for run in given_up.failed_runs} == {"KeyError: 'ms'"}
    (result,) = results
    assert (result.error_kind, result.correct) == ("job_failed", False)
    expected = "job broken failed on 3 runs on h1/0, h2/0; the last: KeyError: 'ms'"
    assert expected in result.message, result.message


def test_a_job_whose_workers_are_killed_under_it_ends_failed_by_recovery(
    tmp_path: Path, fresh_pg_url: Callable[[], str]
) -> None:
    """`recover` (the coordinator's maintenance, called here as its clock would) counts a dead
    worker's running job as a failed run, `its worker died`, and queues it again; given up
    after 2 runs on 2 devices, the second death leaves it `failed` (procrastinate's job too),
    and its waiter gets it as failed."""
    url = fresh_pg_url()
    first, second = _sleep_workers(tmp_path, url)
    engine = make_engine(url)
    queue = FleetJobQueue(engine, stalled_s=3, give_up=GiveUp(runs=2, devices=2))
    (job_id,) = _sleep_jobs(queue, "long", 1, 120_000)

    def running_on(device: str) -> bool:
        job = queue.get(job_id)
        return job is not None and (job.state, job.worker) == ("running", device)

    def recovered(runs: int) -> Job | None:
        queue.recover()
        job = queue.get(job_id)
        return job if job is not None and len(job.failed_runs) == runs else None

    seen: list[Job] = []
    try:
        for worker, device in ((first, "h1/0"), (second, "h2/0")):
            worker.start()  # one at a time: the job can only be the killed worker's, again
            wait_until(partial(running_on, device), 30, f"the job on {device}")
            worker.stop(signal.SIGKILL)
            seen.append(wait_until(partial(recovered, len(seen) + 1), 30, f"{device}'s death"))
        told = queue.result(job_id, 0)
        with engine.connect() as connection:
            carried = connection.execute(
                sa.text("SELECT status::text FROM procrastinate_jobs WHERE queueing_lock = :job"),
                {"job": job_id},
            ).all()
    finally:
        for worker in (first, second):
            if worker.alive():
                worker.stop()
        queue.close()
        engine.dispose()
    requeued, given_up = seen
    assert requeued.state == "pending"  # the first death: queued again for another worker
    assert given_up.state == "failed"
    assert given_up.failed_runs == (FailedRun("h1/0", WORKER_DIED), FailedRun("h2/0", WORKER_DIED))
    assert [tuple(row) for row in carried] == [("failed",)]
    assert told is not None
    assert told.state == "failed"
