"""Profiling on this host for the search: the nkibench backends in their sandboxed children."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nkibench.backend import Backend
from nkibench.harness import profile_kernel
from nkibench.result import KernelResult
from nkibench.task.spec import TaskSpec

__all__ = ["LocalProfiler"]


@dataclass
class LocalProfiler:
    """One kernel at a time, in this process (`optimize`; a daemon queues jobs instead)."""

    make_backend: Callable[[], Backend]
    backend_name: str
    target: str
    shapes: str
    seeds: tuple[int, ...] | None = None
    workdir: Path | None = None

    def profile(
        self,
        task: TaskSpec,
        source: str,
        *,
        job_id: str,
        baseline_kernel_s: float | None = None,
    ) -> KernelResult:
        return profile_kernel(
            task,
            backend=self.make_backend(),
            kernel_source=source,
            shapes=self.shapes,
            seeds=self.seeds,
            target=self.target,
            workdir=self.workdir,
            baseline_kernel_s=baseline_kernel_s,
        )
