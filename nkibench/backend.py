"""The interface every backend implements, and nkisim's implementation.

The harness (nkibench.harness) owns the flow that is the same everywhere: the reference
child, the kernel child, the comparison child, the roofline. A backend says which child phase
runs kernels, what that child's environment and limits are, how the kernel's latency is
obtained once it is known to be correct, and what hardware and toolchain produced it.
"""

from __future__ import annotations

import platform
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from nkibench.cost import MODEL_VERSION
from nkibench.result import KernelResult
from nkibench.roofline import PEAKS, Peaks
from nkibench.sandbox import Limits
from nkibench.task import TaskSpec

if TYPE_CHECKING:
    from nkibench.harness import Session

__all__ = ["Backend", "NkisimBackend", "apply_estimate", "package_version"]


def package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


class Backend(Protocol):
    name: str
    dialect: str
    """The kernel language it runs: "nki" or "triton" (a task's `dialect`)."""
    kernel_phase: str
    """The child phase (nkibench.child.PHASES) that runs the kernel on every seed."""
    reference_phase: str
    """The child phase that makes inputs and expected outputs (NumPy or PyTorch)."""
    fresh_inputs: bool
    """Draw fresh seeds for every evaluation (unless the caller names seeds)."""

    def environment(self) -> dict[str, str]:
        """What the kernel child needs in its environment besides the sandbox's own."""
        ...

    def limits(self, task: TaskSpec, shapes: str, threads: int) -> Limits: ...

    def kernel_request(self, session: Session, profile: bool) -> dict[str, Any]:
        """Backend fields of the kernel phase's request."""
        ...

    def measure(self, session: Session, kernel: dict[str, Any]) -> None:
        """Fill the result's latency fields for a kernel that is correct."""
        ...

    def fingerprint(self, target: str) -> dict[str, str]: ...

    def peaks(self, target: str) -> Peaks | None:
        """The roofline's peaks (None: none known, so no % of peak)."""
        ...

    def resolve_target(self, requested: str) -> str:
        """The target results are labelled with: the requested one where the backend models
        several (nkisim), the hardware it runs on otherwise."""
        ...


def apply_estimate(result: KernelResult, estimate: dict[str, Any]) -> None:
    result.latency_ms = estimate["latency_ms"]
    result.latency_kind = "estimated"
    result.model_version = estimate["model_version"]
    result.bound_by = estimate["bound_by"]
    result.counters = estimate["counters"]
    result.engines = estimate["engines"]
    result.hot_lines = estimate["hot_lines"]
    result.schedule_seconds = estimate["schedule_seconds"]


class NkisimBackend:
    """nkisim interprets the kernel; the cost model estimates its latency from the trace."""

    name = "nkisim"
    dialect = "nki"
    kernel_phase = "kernel"
    reference_phase = "reference"
    fresh_inputs = False

    def __init__(self, *, trace_path: Path | None = None) -> None:
        self.trace_path = trace_path

    def environment(self) -> dict[str, str]:
        return {}

    def limits(self, task: TaskSpec, shapes: str, threads: int) -> Limits:
        return Limits(timeout_s=task.timeout_for(shapes), memory_mb=task.memory_mb, threads=threads)

    def kernel_request(self, session: Session, profile: bool) -> dict[str, Any]:
        return {
            "estimate": profile,
            "trace_path": str(self.trace_path) if self.trace_path else None,
        }

    def measure(self, session: Session, kernel: dict[str, Any]) -> None:
        apply_estimate(session.result, kernel["estimate"])

    def peaks(self, target: str) -> Peaks | None:
        return PEAKS[target]

    def resolve_target(self, requested: str) -> str:
        return requested

    def fingerprint(self, target: str) -> dict[str, str]:
        return {
            "backend": self.name,
            "target": target,
            "latency_kind": "estimated",
            "cost_model": MODEL_VERSION,
            "accelopt": package_version("accelopt"),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "ml_dtypes": package_version("ml_dtypes"),
            "machine": platform.machine(),
        }
