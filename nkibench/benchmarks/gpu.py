"""`accelopt bench gpu`: the GPU suite's baselines on this GPU, against PyTorch eager and the
roofline of the device's measured ceilings, in passes run back to back (their difference is
the timer's spread). Every latency here is measured. With `breakdown`, each task's row also
says where its evaluation's wall time went (nkibench.breakdown)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from nkibench.backends.triton.backend import TritonBackend
from nkibench.benchmarks import UnknownSuiteTask
from nkibench.breakdown import recording
from nkibench.harness import fresh_seeds, profile_kernel
from nkibench.suites import GPU_LARGE_SUITE, GPU_SUITE
from nkibench.task.spec import TaskSpec, load_task

__all__ = ["gpu_suite", "run_gpu_benchmark", "run_gpu_stream"]


GPU_SUITES = {"gpu": GPU_SUITE, "large": GPU_LARGE_SUITE}
"""`accelopt bench gpu --suite`: the 14 operator families, or the three large-input tasks."""


def gpu_suite(names: list[str] | None = None, suite: str = "gpu") -> list[TaskSpec]:
    folders = sorted(p for p in GPU_SUITES[suite].iterdir() if (p / "task.toml").is_file())
    tasks = [load_task(p) for p in folders]
    if names:
        unknown = set(names) - {t.name for t in tasks}
        if unknown:
            raise UnknownSuiteTask(
                f"no task of the {suite} suite named {', '.join(sorted(unknown))}"
            )
        tasks = [t for t in tasks if t.name in names]
    return tasks


def _row(
    backend: TritonBackend, task: TaskSpec, shapes: str, seeds: int, *, breakdown: bool
) -> dict[str, Any]:
    with recording() if breakdown else contextlib.nullcontext() as recorded:
        result = profile_kernel(task, backend=backend, shapes=shapes, seeds=fresh_seeds(seeds))
    row: dict[str, Any] = {
        "task": task.name,
        "dtype": task.dtype,
        "correct": result.correct,
        "error": f"{result.error_kind}: {result.message}" if result.error_kind else None,
        "latency_ms": result.latency_ms,
        "latency_kind": result.latency_kind,
        "rel_spread": result.latency_stats.get("rel_spread"),
        "pct_of_peak": result.pct_of_peak,
        "roofline_ms": result.roofline["time_ms"] if result.roofline else None,
        "bound": result.roofline["bound"] if result.roofline else None,
        "max_rel_l2": result.max_rel_l2,
        "counters": result.counters,
    }
    row["eager_ms"] = result.latency_stats.get("eager_p50")
    if recorded is not None:
        row["breakdown"] = recorded.to_json()
    return row


def run_gpu_benchmark(
    backend: TritonBackend,
    *,
    shapes: str = "full",
    passes: int = 2,
    names: list[str] | None = None,
    seeds: int = 1,
    progress: Callable[[str], None] | None = None,
    checkpoint: Callable[[dict[str, Any]], None] | None = None,
    breakdown: bool = False,
    suite: str = "gpu",
) -> dict[str, Any]:
    """`seeds` fresh seeds check each kernel before it is timed (`accelopt check` and the
    search use the task's count); `checkpoint` gets the result so far after every task;
    `breakdown` records where each task's time went (its children's own timings too); `suite`
    names the tasks' folder (GPU_SUITES)."""
    tasks = gpu_suite(names, suite)
    started = time.monotonic()
    runs: list[list[dict[str, Any]]] = []
    for number in range(passes):
        rows: list[dict[str, Any]] = []
        runs.append(rows)
        for task in tasks:
            rows.append(_row(backend, task, shapes, seeds, breakdown=breakdown))
            if progress:
                progress(f"pass {number + 1}: {task.name}: {rows[-1]['latency_ms']}")
            if checkpoint:
                checkpoint(_summary(backend, shapes, runs, tasks, started))
    return _summary(backend, shapes, runs, tasks, started)


def _summary(
    backend: TritonBackend,
    shapes: str,
    runs: list[list[dict[str, Any]]],
    tasks: list[TaskSpec],
    started: float,
) -> dict[str, Any]:
    spread = {}
    for index, task in enumerate(tasks):
        values = [run[index]["latency_ms"] for run in runs if index < len(run)]
        if len(values) > 1 and all(v is not None for v in values):
            spread[task.name] = (max(values) - min(values)) / min(values)
    return {
        "gpu": backend.host.gpu,
        "fingerprint": backend.fingerprint(backend.target),
        "ceilings": backend.ceilings.to_json() if backend.ceilings else None,
        "shapes": shapes,
        "passes": runs,
        "pass_spread": spread,
        "seconds": time.monotonic() - started,
    }


STREAM_MARK = "# accelopt bench gpu --stream: variant {number}"
"""Appended to a suite kernel's source to make the stream's variant `number`: the same kernel
as a different candidate (nothing is cached across candidates, so each costs what a new idea
of a search costs: its children, its compile, its checks and timing)."""


def run_gpu_stream(
    backend: TritonBackend,
    count: int,
    *,
    shapes: str = "full",
    names: list[str] | None = None,
    seeds: int = 1,
    progress: Callable[[str], None] | None = None,
    suite: str = "gpu",
) -> dict[str, Any]:
    """Evaluate `count` candidates as a search does, one after another on one backend (its
    warm processes and the baselines' times shared): first each task's own kernel, profiled
    once as a search's baseline (timed apart: a search pays it once, before hundreds of
    candidates), then variants of the suite's kernels, task by task in turn, each profiled
    afresh. Returns each candidate's wall and work floor (kernel and reference time,
    nkibench.breakdown) and the rates per hour both give."""
    tasks = gpu_suite(names, suite)[: max(count, 1)]

    def profiled(task: TaskSpec, source: str | None) -> dict[str, Any]:
        began = time.monotonic()
        with recording() as recorded:
            result = profile_kernel(
                task, backend=backend, kernel_source=source, shapes=shapes, seeds=fresh_seeds(seeds)
            )
        return {
            "task": task.name,
            "correct": result.correct,
            "error": f"{result.error_kind}: {result.message}" if result.error_kind else None,
            "latency_ms": result.latency_ms,
            "latency_kind": result.latency_kind,
            "wall_s": time.monotonic() - began,
            "floor_s": recorded.to_json()["floor_s"],
        }

    began = time.monotonic()
    baselines = []
    for task in tasks:
        baselines.append(profiled(task, None))
        if progress:
            progress(f"baseline {task.name}: {baselines[-1]['wall_s']:.1f} s")
    baselines_s = time.monotonic() - began
    started = time.monotonic()
    rows: list[dict[str, Any]] = []
    for number in range(count):
        task = tasks[number % len(tasks)]
        source = f"{task.kernel_source.rstrip()}\n\n{STREAM_MARK.format(number=number)}\n"
        rows.append(profiled(task, source))
        if progress:
            progress(f"candidate {number + 1}/{count}: {task.name}: {rows[-1]['wall_s']:.1f} s")
    seconds = time.monotonic() - started
    floor = sum(row["floor_s"] for row in rows)
    return {
        "gpu": backend.host.gpu,
        "fingerprint": backend.fingerprint(backend.target),
        "shapes": shapes,
        "baselines": baselines,
        "baselines_s": baselines_s,
        "candidates": rows,
        "seconds": seconds,
        "per_hour": 3600.0 * len(rows) / seconds if seconds > 0 else None,
        "floor_s": floor,
        "per_hour_at_floor": 3600.0 * len(rows) / floor if floor > 0 else None,
    }
