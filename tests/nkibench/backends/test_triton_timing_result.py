"""A triton profile is timed in the kernel's own child (nkibench.backends.triton.phases), and
what that child measured is its data: the parent reads it bounded and typed once the outputs
compare correct, and a timing that is missing, malformed or a failure is a typed failure of
the profile, never an exception of the harness. (On a GPU, test_breakdown shows the profile's
children and tests/nkibench/backends/test_triton_gpu.py the timing itself.)"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from nkibench.backends.triton.backend import TIMED_RUNS, TritonBackend, TritonHost
from nkibench.backends.triton.timing import TimingPlan
from nkibench.errors import PhaseFailure
from nkibench.harness import TIMED_RUNS_FIELD
from nkibench.sandbox.results import LATENCY_STATS, MalformedResult, check_measured


def _backend(gpu: str | None) -> TritonBackend:
    return TritonBackend(host=TritonHost(gpu, {}), warm=False, nsight=False)


def _stats(p50: float = 0.5) -> dict[str, float]:
    return {key: p50 for key in LATENCY_STATS}


def _measured(**changes: Any) -> dict[str, Any]:
    return {
        "ok": True,
        "latency": _stats(),
        "synchronised_ms": 0.52,
        "launch_overhead_ms": 0.01,
        "launches": [1] * 10,
        "autotuned": {},
        **changes,
    }


def test_a_profile_on_a_gpu_asks_the_kernels_child_to_time_it_and_a_check_does_not() -> None:
    session = SimpleNamespace(ahead={})  # no counters child started ahead
    gpu = _backend("NVIDIA H200")
    assert gpu.kernel_request(session, profile=False) == {}
    asked = gpu.kernel_request(session, profile=True)
    assert asked == {"time": True, "eager": False, TIMED_RUNS_FIELD: TIMED_RUNS}
    gpu.with_eager = True  # the reference's eager timing: as many runs again
    assert gpu.kernel_request(session, True)[TIMED_RUNS_FIELD] == 2 * TIMED_RUNS
    interpreter = _backend(None)
    assert interpreter.kernel_request(session, profile=True) == {}


def test_the_timed_runs_the_limit_counts_cover_the_timers_plan() -> None:
    """Slower than the timer's blocks, a timing makes 3 warm-up runs, two blocks of min_runs,
    then sync_runs unguarded and sync_runs guarded: the kernel child's limit counts them."""
    plan = TimingPlan()
    assert 3 + 2 * plan.min_runs + 2 * plan.sync_runs <= TIMED_RUNS


@pytest.mark.parametrize(
    ("measured", "kind", "message"),
    [
        (None, "runtime", "the kernel's child handed back no timing"),
        ("fast", "runtime", "malformed timing: a timing without `ok`"),
        (_measured(latency={"p50": "0.1"}), "runtime", "latency: not the timer's statistics"),
        (_measured(latency=_stats(float("nan"))), "runtime", "not the timer's statistics"),
        (_measured(launches=[True]), "runtime", "malformed timing: launches"),
        (_measured(launches=[1] * 1001), "runtime", "malformed timing: launches"),
        (_measured(synchronised_ms=None), "runtime", "malformed timing: synchronised_ms"),
        (_measured(eager={"p50": 1.0}), "runtime", "eager: not the timer's statistics"),
        (_measured(autotuned={"k": "BLOCK=64"}), "runtime", "malformed timing: autotuned"),
        ({"ok": False, "kind": "verdict", "message": "x"}, "runtime", "unknown kind"),
        ({"ok": False, "kind": "cheat", "message": "a side stream"}, "cheat", "a side stream"),
        ({"ok": False, "kind": "runtime", "message": "IndexError", "line": 7}, "runtime", "Index"),
    ],
)
def test_what_the_kernels_child_measured_is_read_as_data(
    measured: Any, kind: str, message: str
) -> None:
    backend = _backend("NVIDIA H200")
    session = SimpleNamespace(result=SimpleNamespace())
    kernel = {"ok": True, "seeds": {}} if measured is None else {"measured": measured}
    with pytest.raises(PhaseFailure) as failure:
        backend.measure(session, kernel)
    assert (failure.value.kind, message in failure.value.message) == (kind, True)


def test_a_well_formed_timing_and_a_re_verification_pass_the_check() -> None:
    assert check_measured(_measured(eager=_stats(2.0)))["eager"]["p50"] == 2.0
    seeds = {"11": {"outputs": 1, "never_written": [0], "launches": 1}}
    fresh = {"latency": _stats(0.6), "seeds": seeds, "rotated_p50": 0.5}
    assert check_measured(_measured(fresh=fresh), [11])["fresh"]["latency"]["p50"] == 0.6
    with pytest.raises(MalformedResult, match="no re-verification"):
        check_measured(_measured(), [11])
    with pytest.raises(MalformedResult, match="seed 12"):
        check_measured(_measured(fresh=fresh), [12])
    broken = {**fresh, "seeds": {"11": {**seeds["11"], "launches": -1}}}
    with pytest.raises(MalformedResult, match="seed 11: launches"):
        check_measured(_measured(fresh=broken), [11])
