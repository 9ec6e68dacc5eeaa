"""A kernel's time limit follows the task's own measured cost (the reference's phase), with the
task's limit as the ceiling: a hanging kernel costs a minute, not the task's whole budget."""

from __future__ import annotations

import time

import pytest

from nkibench.backends.nkisim.backend import NkisimBackend
from nkibench.harness import KERNEL_FLOOR_S, check_kernel, kernel_limits
from nkibench.sandbox.process import Limits
from nkibench.task.spec import load_task
from tests.support import DATA


def test_the_kernel_limit_is_the_floor_or_ten_times_the_reference_under_the_ceiling() -> None:
    ceiling = Limits(timeout_s=1800.0)
    assert kernel_limits(ceiling, None).timeout_s == 1800.0  # nothing measured yet
    assert kernel_limits(ceiling, 1.0).timeout_s == KERNEL_FLOOR_S == 60.0
    assert kernel_limits(ceiling, 20.0).timeout_s == 200.0
    assert kernel_limits(Limits(timeout_s=30.0), 1.0).timeout_s == 30.0  # the task's ceiling
    compiling = Limits(timeout_s=2400.0, startup_s=600.0)  # neuron: compiling comes on top
    assert kernel_limits(compiling, 1.0).timeout_s == 660.0


@pytest.mark.slow
def test_a_hanging_kernel_is_a_timeout_within_a_minute_where_the_reference_takes_a_second() -> None:
    """(Once it held the worker for the full-shape default, 30 minutes.)"""
    task = load_task(DATA / "hang")
    assert task.timeout_for("full") == 1800.0
    started = time.monotonic()
    result = check_kernel(task, backend=NkisimBackend(), shapes="full")
    elapsed = time.monotonic() - started
    assert result.error_kind == "timeout"
    assert "the 60 s limit" in (result.message or "")
    assert elapsed < 60 + 15
