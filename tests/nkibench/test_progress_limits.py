"""A kernel's adaptive time limit follows the backend's own measure of the kernel's cost, never
the reference's NumPy time: the baseline's kernel time once it is known, and before that
nkisim's progress (instructions executing), which carries a slow but live simulation past the
floor while a hang still ends there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from nkibench.backends.nkisim.backend import NkisimBackend
from nkibench.harness import (
    BASELINE_FACTOR,
    PROGRESS_CEILING_FACTOR,
    check_kernel,
    kernel_limits,
)
from nkibench.nkisim.machine import Config
from nkibench.nkisim.runtime import execute
from nkibench.sandbox.loader import load_kernel
from nkibench.sandbox.process import Limits
from nkibench.task.spec import TaskSpec, load_task

FLOOR_S = 6.0
"""The tests' floor: the production 60 s scaled down, so a slow kernel runs past it within
seconds. Not less: a child must show progress within it, and on a 2-core host running a dozen
other processes (make test's four workers and their daemons) a 2 s floor was once passed
without an instruction executed, and the kernel that makes progress was killed."""
SLOW_WORK_S = 4 * FLOOR_S
"""The CPU seconds of the slow kernel's two runs (a seed's and the order check's) together:
4x the floor, so that it passes the floor by far, even where its CPU seconds come out a
little fewer than measured (the measure is taken in this process, while other workers run)."""
START_UP_S = 8.0
"""What a check spends outside the kernel's limit: the static check's child, the reference's
and the comparison's, each a sandboxed Python that imports NumPy."""

REFERENCE = """
import numpy as np


def get_inputs():
    return [np.random.normal(size=(128, 8192)).astype(np.float32)]


def forward(x):
    return x
"""
SLOW_KERNEL = """
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for _ in nl.sequential_range({repeats}):
        nl.store(out, value=nl.load(x))
    return out
"""
HANG_KERNEL = """
import neuronxcc.nki as nki


@nki.jit
def kernel(x):
    n = 0
    while n >= 0:
        n += 1
    return x
"""


def _task(folder: Path, kernel: str) -> TaskSpec:
    folder.mkdir()
    (folder / "reference.py").write_text(REFERENCE)
    (folder / "kernel.py").write_text(kernel)
    return load_task(folder)


@pytest.fixture(scope="module")
def repeats_per_second(shadow_modules: None) -> float:
    """How many of the slow kernel's load-store pairs nkisim runs per CPU second on this host.
    A fixed count took 17 s on one 2-core host and 6 s on another; a rate by the wall clock
    was measured 4x low while the other workers were busy and the check then ran idle. CPU
    time does not shrink when the host is busy, and a busy host only stretches a child's wall
    time past its CPU time: the kernel's wall time is at least what the rate predicts."""
    repeats = 2000
    kernel = load_kernel(SLOW_KERNEL.format(repeats=repeats), "slow.py", "kernel", "nki-legacy")
    x = np.random.default_rng(0).normal(size=(128, 8192)).astype(np.float32)
    started = time.process_time()
    execute(kernel, [x], Config(kernel_file="slow.py"))
    return repeats / (time.process_time() - started)


def slow_task(folder: Path, repeats_per_second: float, work_s: float = SLOW_WORK_S) -> TaskSpec:
    """A kernel whose two runs take `work_s` CPU seconds together at the measured rate."""
    repeats = max(1, round(repeats_per_second * work_s / 2))
    return _task(folder, SLOW_KERNEL.format(repeats=repeats))


def _check(task: TaskSpec, baseline_kernel_s: float | None = None) -> tuple[float, str, str]:
    """The check's wall time, error kind and message under the tests' floor (no task limit)."""
    started = time.monotonic()
    result = check_kernel(
        task,
        backend=NkisimBackend(),
        shapes="full",
        seeds=(1,),
        limits=Limits(timeout_s=600.0, kernel_floor_s=FLOOR_S),  # a ceiling of 30 x the floor
        baseline_kernel_s=baseline_kernel_s,
    )
    return time.monotonic() - started, result.error_kind or "", result.message or ""


def test_the_limit_follows_the_baseline_then_progress_then_the_reference() -> None:
    task_limit = Limits(timeout_s=7200.0)
    by_baseline = kernel_limits(task_limit, reference_s=1.0, baseline_kernel_s=10.0, kernel_runs=2)
    assert by_baseline.timeout_s == BASELINE_FACTOR * 2 * 10.0 == 200.0
    assert by_baseline.progress_until_s is None  # a candidate's room is the baseline's multiple
    fast = kernel_limits(task_limit, reference_s=1.0, baseline_kernel_s=0.01, reports_progress=True)
    assert fast.timeout_s == 60.0  # the floor
    assert fast.progress_until_s is None
    compiling = Limits(timeout_s=7200.0, startup_s=600.0)
    assert kernel_limits(compiling, reference_s=None, baseline_kernel_s=10.0).timeout_s == 700.0
    capped = kernel_limits(Limits(timeout_s=90.0), reference_s=None, baseline_kernel_s=10.0)
    assert capped.timeout_s == 90.0  # never above the task's limit
    fixed = Limits(timeout_s=3600.0, adaptive=False)
    assert kernel_limits(fixed, reference_s=1.0, baseline_kernel_s=10.0) == fixed

    # no baseline yet: the floor, extended while the simulator makes progress
    simulated = kernel_limits(task_limit, reference_s=100.0, reports_progress=True)
    assert simulated.timeout_s == 60.0  # the reference's 100 s says nothing of the kernel's
    assert simulated.progress_until_s == PROGRESS_CEILING_FACTOR * 60.0 == 1800.0
    short = kernel_limits(Limits(timeout_s=120.0, kernel_floor_s=FLOOR_S), reference_s=None)
    assert short.timeout_s == 120.0  # nothing measured, no progress: the task's limit
    scaled = kernel_limits(
        Limits(timeout_s=120.0, kernel_floor_s=FLOOR_S), reference_s=1.0, reports_progress=True
    )
    assert scaled.timeout_s == FLOOR_S
    assert PROGRESS_CEILING_FACTOR * FLOOR_S > 120.0
    assert scaled.progress_until_s == 120.0  # the ceiling, capped by the task's limit
    # no baseline and no progress measure (Triton, Neuron): the reference is all there is
    assert kernel_limits(task_limit, reference_s=20.0).timeout_s == 200.0


def test_a_kernel_child_that_also_times_the_kernel_gets_room_for_its_timed_runs() -> None:
    """A triton profile times the kernel in its kernel child (timed_runs more runs): both
    yardsticks scale with the runs, the floor and the task's limit still hold."""
    task_limit = Limits(timeout_s=7200.0)
    checked = kernel_limits(task_limit, reference_s=1.0, baseline_kernel_s=10.0, kernel_runs=4)
    timed = kernel_limits(
        task_limit, reference_s=1.0, baseline_kernel_s=10.0, kernel_runs=4, timed_runs=45
    )
    assert (checked.timeout_s, timed.timeout_s) == (400.0, BASELINE_FACTOR * 49 * 10.0)
    by_reference = kernel_limits(task_limit, reference_s=20.0, kernel_runs=4, timed_runs=4)
    assert by_reference.timeout_s == 2 * 200.0  # the reference's time per run, twice the runs
    fast = kernel_limits(task_limit, reference_s=0.1, baseline_kernel_s=0.01, timed_runs=45)
    assert fast.timeout_s == 60.0  # the floor: a fast kernel's timing is a second or so
    capped = kernel_limits(
        Limits(timeout_s=900.0), reference_s=None, baseline_kernel_s=10.0, timed_runs=45
    )
    assert capped.timeout_s == 900.0  # never above the task's limit


def test_a_slow_kernel_that_makes_progress_runs_past_the_floor(
    tmp_path: Path, repeats_per_second: float
) -> None:
    """(A legitimate current-NKI conv1d of many small instructions was killed at 60 s.)"""
    elapsed, kind, message = _check(slow_task(tmp_path / "slow", repeats_per_second))
    assert (kind, message) == ("", "")
    assert elapsed > 2 * FLOOR_S  # it ran well past the floor


def test_a_hang_without_progress_is_a_timeout_at_the_floor(tmp_path: Path) -> None:
    elapsed, kind, message = _check(_task(tmp_path / "hang", HANG_KERNEL))
    assert kind == "timeout"
    assert f"the {FLOOR_S:g} s limit making no progress" in message
    assert elapsed < FLOOR_S + START_UP_S


def test_a_candidate_gets_the_baseline_derived_limit(
    tmp_path: Path, repeats_per_second: float
) -> None:
    """A slow kernel (40 s of work) as a candidate of a task whose baseline ran 0.5 s: 10 x
    0.5 s x its two runs (one seed, and the order check) is 10 s, above the floor, and its
    progress buys no more."""
    task = slow_task(tmp_path / "slow", repeats_per_second, work_s=40.0)
    elapsed, kind, message = _check(task, baseline_kernel_s=0.5)
    assert kind == "timeout"
    assert "ran past the 10 s limit and was killed" in message
    assert 10.0 < elapsed < 10.0 + START_UP_S


def test_the_cpu_limit_lets_a_child_run_to_its_progress_ceiling() -> None:
    """The CPU-time limit follows the longest the child may run: a child past its floor while
    it beats was killed by RLIMIT_CPU (status 137) at the floor's CPU seconds."""
    limits = asdict(Limits(timeout_s=2.0, progress_until_s=60.0))
    code = (
        "import json, resource, sys\n"
        "from nkibench.sandbox.process import apply_limits\n"
        "apply_limits(json.loads(sys.argv[1]))\n"
        "print(resource.getrlimit(resource.RLIMIT_CPU)[0])\n"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code, json.dumps(limits)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert int(shown.stdout) >= 60 * (os.cpu_count() or 1)
