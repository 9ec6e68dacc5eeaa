"""A kernel's time limit follows the task's own measured cost, with the task's limit as the
ceiling: a hanging kernel costs a minute, not the task's whole budget (the baseline's kernel
time and nkisim's progress: tests/nkibench/test_progress_limits.py)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from nkibench.backends.nkisim.backend import NkisimBackend
from nkibench.harness import KERNEL_FLOOR_S, check_kernel, kernel_limits
from nkibench.sandbox.process import Limits
from nkibench.task.spec import load_task
from tests.support import DATA


def test_without_baseline_or_progress_the_limit_is_the_floor_or_ten_times_the_reference() -> None:
    ceiling = Limits(timeout_s=1800.0)
    assert kernel_limits(ceiling, reference_s=None).timeout_s == 1800.0  # nothing measured yet
    assert kernel_limits(ceiling, reference_s=1.0).timeout_s == KERNEL_FLOOR_S == 60.0
    assert kernel_limits(ceiling, reference_s=20.0).timeout_s == 200.0
    assert kernel_limits(Limits(timeout_s=30.0), reference_s=1.0).timeout_s == 30.0  # the task's
    compiling = Limits(timeout_s=2400.0, startup_s=600.0)  # neuron: compiling comes on top
    assert kernel_limits(compiling, reference_s=1.0).timeout_s == 660.0


def test_a_limit_the_task_sets_holds_as_written(tmp_path: Path) -> None:
    """(A legitimate current-NKI kernel of many small instructions was killed at 60 s although
    its task.toml said `timeout_s = 3600`: the limit was min(the task's, 10 x the reference's
    time), and an interpreter's time is no multiple of NumPy's.)"""
    written = Limits(timeout_s=3600.0, adaptive=False)
    assert kernel_limits(written, reference_s=1.0, reports_progress=True) == written
    cases = (
        ("timeout_s = 3600", {"full": True, "small": True}),
        ("timeout_s = { small = 900 }", {"full": False, "small": True}),
        ("memory_mb = 4096", {"full": False, "small": False}),
    )
    for n, (limits, declared) in enumerate(cases):
        folder = tmp_path / f"hang{n}"
        shutil.copytree(DATA / "hang", folder)
        with (folder / "task.toml").open("a") as toml:
            toml.write(f"\n[limits]\n{limits}\n")
        task = load_task(folder)
        for shapes, fixed in declared.items():
            child = kernel_limits(
                NkisimBackend().limits(task, shapes, 1), reference_s=1.0, reports_progress=True
            )
            if fixed:
                assert child.timeout_s == task.timeout_for(shapes) > KERNEL_FLOOR_S, limits
            else:
                assert child.timeout_s == KERNEL_FLOOR_S, limits  # the task's cost decides


@pytest.mark.slow
@pytest.mark.e2e
def test_a_hanging_kernel_is_a_timeout_within_a_minute_where_the_reference_takes_a_second() -> None:
    """(Once it held the worker for the full-shape default, 30 minutes.) The production floor
    end to end: a minute of one core spinning, an eighth of `make test`'s CPU on two cores, so
    it runs with the end-to-end tests (the same limit scaled down to 6 s:
    tests/nkibench/test_progress_limits.py)."""
    task = load_task(DATA / "hang")
    assert task.timeout_for("full") == 1800.0
    started = time.monotonic()
    result = check_kernel(task, backend=NkisimBackend(), shapes="full")
    elapsed = time.monotonic() - started
    assert result.error_kind == "timeout"
    assert "the 60 s limit" in (result.message or "")
    assert elapsed < 60 + 15
