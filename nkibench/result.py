"""The one result schema of every backend: what `accelopt check` and `accelopt profile` print
and what a `ProfileRecorded` event carries."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypedDict

from nkibench.errors import ErrorKind

__all__ = ["GPU_RUN_COUNTERS", "KernelResult", "LatencyKind", "WorkloadOutcome", "kernel_counter"]

LatencyKind = Literal["estimated", "measured"]

GPU_RUN_COUNTERS = (
    "gpu_dram_read_bytes",
    "gpu_dram_write_bytes",
    "gpu_l2_hit_rate_pct",
    "gpu_sm_throughput_pct",
    "gpu_memory_throughput_pct",
    "gpu_registers_per_thread",
    "gpu_shared_bytes_per_block",
)
"""A GPU profile's counters over the kernels of one run, as `KernelResult.counters` names
them (nkibench.backends.triton.nsight.summarise): what the planner and `accelopt profile`
show."""


def kernel_counter(kernel: dict[str, float | str], name: str) -> float:
    """One counter of a kernel of `KernelResult.gpu_kernels`; 0.0 where it was not reported."""
    value = kernel.get(name, 0.0)
    return value if isinstance(value, float) else 0.0


class WorkloadOutcome(TypedDict):
    """One workload's part of a result over a task's workloads (nkibench.policy.workloads): a
    plain dict, so that a result read back from JSON (a job's row) is the same value."""

    name: str
    """Its shape set: `w<index>`."""
    uuid: str
    correct: bool
    latency_ms: float | None
    latency_kind: LatencyKind | None
    """"estimated" (a cost model) or "measured" (hardware), as the result's."""
    error_kind: str | None
    max_rel_l2: float | None
    pct_of_peak: float | None


@dataclass
class KernelResult:
    """The outcome of checking (and, when asked, timing) one kernel on one task."""

    task: str
    backend: str
    target: str
    shapes: str
    compiled: bool = False
    correct: bool = False
    error_kind: ErrorKind | None = None
    message: str = ""
    line: int | None = None
    max_rel_l2: float | None = None
    seeds: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    # --- performance (profile only) -------------------------------------------------------
    latency_ms: float | None = None
    latency_kind: LatencyKind | None = None
    """"estimated" (a cost model) or "measured" (hardware); never mixed up."""
    latency_stats: dict[str, float] = field(default_factory=dict)
    """Measured: mean/min/max/p50 in ms, runs, rel_spread. Estimated: empty."""
    model_version: str | None = None
    """The cost model that produced an estimated latency."""
    pct_of_peak: float | None = None
    """AccelOpt's metric: roofline time / latency, in percent."""
    roofline: dict[str, Any] | None = None
    bound_by: str | None = None
    """The engine that limits the kernel ("tensor", "vector", "scalar", "gpsimd", "dma"), or
    "dependencies" when no engine is busy half of the time."""
    counters: dict[str, float] = field(default_factory=dict)
    """Named as in neuron-profile's summary; `*_percent` are fractions in [0, 1] as there."""
    engines: dict[str, dict[str, float]] = field(default_factory=dict)
    hot_lines: list[dict[str, Any]] = field(default_factory=list)
    estimate: dict[str, Any] | None = None
    """On hardware: the nkisim estimate of the same kernel, so the model's error is known."""
    fingerprint: dict[str, str] = field(default_factory=dict)

    # --- where the time went (wall times of this machine, not kernel latencies) -----------
    kernel_seconds: float | None = None
    """The backend's wall time for the first seed's run (nkisim: interpretation)."""
    forward_seconds: float | None = None
    """NumPy reference forward() time on the same inputs."""
    schedule_seconds: float | None = None
    """The cost model's wall time."""
    instructions: int | None = None
    engine_counts: dict[str, int] = field(default_factory=dict)
    capacity: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0
    dialect: str | None = None
    """The kernel language it ran as (nkibench.dialects)."""
    autotuned: dict[str, list[str]] = field(default_factory=dict)
    """Triton: each autotuned kernel's configs, as the kernel's child reported them: on a GPU
    the config the autotuner chose (the measured run's when profiling), under the interpreter
    the configs the checked runs used in turn (nkibench.backends.triton.launches)."""

    gpu_kernels: list[dict[str, float | str]] = field(default_factory=list)
    """Triton on a GPU: each kernel one run launched, with its hardware counters as Nsight
    Compute reported them and what Triton's compiler reported of it
    (nkibench.backends.triton.nsight); empty where there are none."""
    counters_unavailable: str | None = None
    """Triton on a GPU: why the profile has no hardware counters (no ncu here, or its report
    could not be read); None where it has them, or the backend has counters of its own."""

    workloads: list[WorkloadOutcome] = field(default_factory=list)
    """A task with workloads profiled on `full`: each workload's outcome, in order, up to the
    first that failed; `latency_ms` is then the geometric mean of theirs."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
