"""`accelopt bench fleet`: how busy the queue keeps a fleet's devices, without kernels.

W real `accelopt worker --backend sleep` processes, each a "host" of its share of D devices,
serve a fresh schema of the PostgreSQL database given; this process is the coordinator. Each
device-count step has two phases:
- dispatch: with every device idle, probe jobs are submitted one at a time, spaced out; the
  time from a job's row being written to its run starting (the workers' clocks are this
  host's clock) is the dispatch latency: insert, defer, NOTIFY, fetch, claim;
- saturated: T jobs of `job_ms` each are submitted at once. Device utilization is the time
  devices spent running jobs over the devices' time, inside the window in which the queue was
  never empty (the first run's start to the last run's start); the gap between a device's
  consecutive runs is the per-job overhead.
The coordinator's CPU share is this process's CPU time over the saturated phase's wall time
(it submits, and polls the counts as a search polls its results); the workers' is theirs, all
together, over the same phase (from /proc: Linux only). No device may run two jobs at once:
overlaps are counted and must be zero.
"""

from __future__ import annotations

import itertools
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from daemon.bench.daemon import cpu_seconds, quantile
from store.benchmark import scratch_database
from store.engine import make_engine, normalize_url
from store.jobs.base import Job, queue_name
from store.jobs.fleet import FleetJobQueue
from store.migrate import upgrade

__all__ = ["FLEET_TARGETS", "FleetBenchError", "run_fleet_benchmark"]

FLEET_TARGETS = {"utilization": (">=", 0.90)}
"""Issue 15: 64 devices with a saturated queue, on this 2-core machine."""
PROBES = 40
PROBE_SPACING_S = 0.1
READY_S = 60.0


class FleetBenchError(RuntimeError):
    """The fleet could not be started or did not finish its jobs."""


def run_fleet_benchmark(
    url: str,
    *,
    workers: int,
    device_counts: Sequence[int],
    tasks_per_device: int,
    job_ms: float,
) -> dict[str, Any]:
    if normalize_url(url).get_backend_name() != "postgresql":
        raise FleetBenchError("bench fleet needs PostgreSQL: --db postgresql://...")
    steps = []
    for devices in device_counts:
        with scratch_database(url) as scoped:
            steps.append(
                _step(
                    scoped,
                    workers=min(workers, devices),
                    devices=devices,
                    tasks=tasks_per_device * devices,
                    job_ms=job_ms,
                )
            )
    return {
        "workers": workers,
        "job_ms": job_ms,
        "tasks_per_device": tasks_per_device,
        "steps": steps,
        "latency_kind": "measured (sleep jobs: no kernel runs)",
    }


def _step(url: str, *, workers: int, devices: int, tasks: int, job_ms: float) -> dict[str, Any]:
    engine = make_engine(url)
    upgrade(engine)
    queue = FleetJobQueue(engine)
    shares = [devices // workers + (1 if i < devices % workers else 0) for i in range(workers)]
    with tempfile.TemporaryDirectory(prefix="accelopt-fleet-") as home:
        processes = [_worker(url, Path(home), i, share) for i, share in enumerate(shares)]
        try:
            _wait_for(lambda: queue.leased_devices() == devices, READY_S, "the workers' leases")
            probe = _dispatch(queue)
            before = _cpu_seconds(processes)
            saturated = _saturated(queue, tasks, job_ms)
            worker_cpu_s = _cpu_seconds(processes) - before
        finally:
            _stop(processes)
            queue.close()
            engine.dispose()
    saturated["workers_cpu_share"] = round(worker_cpu_s / saturated.pop("wall_s"), 3)
    return {"devices": devices, "workers": workers, "tasks": tasks, **probe, **saturated}


def _worker(url: str, home: Path, index: int, devices: int) -> subprocess.Popen[bytes]:
    argv = [
        sys.executable, "-m", "daemon", "worker", "--db", url, "--backend", "sleep",
        "--devices", str(devices), "--host", f"fleet-{index}", "--log-level", "warning",
    ]  # fmt: skip
    env = {**os.environ, "ACCELOPT_HOME": str(home / f"w{index}")}
    log = (home / f"w{index}.log").open("wb")
    return subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)


def _cpu_seconds(processes: list[subprocess.Popen[bytes]]) -> float:
    """The workers' CPU time so far, all together."""
    return sum(cpu_seconds(process.pid) for process in processes)


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM every worker and wait."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_for(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise FleetBenchError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _submit(queue: FleetJobQueue, job_id: str, job_ms: float) -> None:
    queue.submit(
        job_id,
        queue=queue_name("sleep", "any"),
        task="sleep",
        kind="sleep",
        payload={"backend": "sleep", "target": "any", "ms": job_ms},
        priority=0.0,
    )


def _dispatch(queue: FleetJobQueue) -> dict[str, Any]:
    """Queued → started on an idle fleet, one probe job at a time."""
    latencies = []
    for n in range(PROBES):
        _submit(queue, f"probe-{n}", 1.0)
        done = queue.result(f"probe-{n}", timeout=30)
        if done is None:
            raise FleetBenchError(f"probe job {n} did not finish in 30 s")
        assert done.started_at is not None
        assert done.created_at is not None
        latencies.append((done.started_at - done.created_at).total_seconds() * 1000)
        time.sleep(PROBE_SPACING_S)
    latencies.sort()
    return {
        "dispatch_p50_ms": round(statistics.median(latencies), 2),
        "dispatch_p99_ms": round(quantile(latencies, 0.99), 2),
    }


def _saturated(queue: FleetJobQueue, tasks: int, job_ms: float) -> dict[str, Any]:
    cpu = time.process_time()
    wall = time.monotonic()
    for n in range(tasks):
        _submit(queue, f"job-{n}", job_ms)
    submitted_s = time.monotonic() - wall
    deadline = time.monotonic() + 60 + 4 * tasks * job_ms / 1000
    while queue.counts()["done"] < tasks + PROBES:
        if time.monotonic() > deadline:
            raise FleetBenchError(f"the {tasks} jobs did not finish in time: {queue.counts()}")
        time.sleep(0.2)
    wall_s = time.monotonic() - wall
    cpu_s = time.process_time() - cpu
    runs = [item.job for item in queue.listing() if item.job.job_id.startswith("job-")]
    return {
        **_utilization(runs),
        "submit_per_s": round(tasks / submitted_s),
        "coordinator_cpu_share": round(cpu_s / wall_s, 3),
        "runs_more_than_once": sum(1 for job in runs if job.attempts != 1),
        "wall_s": wall_s,
    }


def _utilization(runs: list[Job]) -> dict[str, Any]:
    by_device: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for job in runs:
        assert job.started_at is not None
        assert job.finished_at is not None
        assert job.worker
        by_device[job.worker].append((job.started_at.timestamp(), job.finished_at.timestamp()))
    starts = [start for spans in by_device.values() for start, _ in spans]
    ends = [end for spans in by_device.values() for _, end in spans]
    window = (min(starts), max(starts))
    busy = sum(
        max(0.0, min(end, window[1]) - max(start, window[0]))
        for spans in by_device.values()
        for start, end in spans
    )
    gaps, overlaps = [], 0
    for spans in by_device.values():
        spans.sort()
        for (_, end), (start, _) in itertools.pairwise(spans):
            if start < end:
                overlaps += 1
            gaps.append((start - end) * 1000)
    gaps.sort()
    span = window[1] - window[0]
    makespan = max(ends) - min(starts)
    return {
        "utilization": round(busy / (len(by_device) * span), 4) if span > 0 else None,
        "utilization_makespan": round(
            sum(end - start for s in by_device.values() for start, end in s)
            / (len(by_device) * makespan),
            4,
        ),
        "gap_p50_ms": round(statistics.median(gaps), 2) if gaps else None,
        "gap_p99_ms": round(quantile(gaps, 0.99), 2) if gaps else None,
        "devices_used": len(by_device),
        "overlapping_runs": overlaps,
        "makespan_s": round(makespan, 2),
    }
