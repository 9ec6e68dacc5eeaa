"""Many hosts on one real PostgreSQL server, every part a real process: `accelopt worker`s as
"hosts" (distinct host names, nkisim devices), a coordinating `accelopt daemon` without devices
of its own, the scripted LLM server."""

from __future__ import annotations

import itertools
import json
import signal
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from events.catalog import (
    LLMCallCompleted,
    ProfileRecorded,
    SearchFinished,
    WorkerStarted,
    WorkerStopped,
)
from nkibench.suites import NKI_LEGACY_SUITE as SUITE
from tests.support import agent_script
from tests.support.daemon_process import DaemonProcess, WorkerProcess, wait_until
from tests.support.llm_server import running_llm

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

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
        start, end = (datetime.fromisoformat(job[k]) for k in ("started_at", "finished_at"))
        spans[job["worker"]].append((start, end, job["job_id"]))
    overlaps = []
    for device, runs in spans.items():
        runs.sort()
        for (_, end, first), (start, _, second) in itertools.pairwise(runs):
            if start < end:
                overlaps.append((device, first, second))
    return overlaps


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
    calls = [c.call_id for c in coordinator.events(LLMCallCompleted)]
    assert len(calls) == len(set(calls))  # no LLM call recorded twice

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


def get_inputs():
    time.sleep(5)
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

        def running_on_first() -> list[int]:
            listed = jobs(coordinator)
            if not (listed and listed[0]["status"] == "running"):
                return []
            return first.kernels()

        wait_until(running_on_first, 60, "the job's kernel process on the first worker")
        (job,) = jobs(coordinator)
        assert job["worker"] == "h1/0"
        killed = time.monotonic()
        first.stop(signal.SIGKILL)
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
