"""Profiling on this host for the search: the nkibench backends in their sandboxed children."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nkibench.backend import Backend, NkisimBackend
from nkibench.harness import profile_kernel
from nkibench.result import KernelResult
from nkibench.task import TaskSpec

__all__ = ["LocalProfiler"]


@dataclass
class LocalProfiler:
    """One kernel at a time (a daemon runs one per device)."""

    make_backend: Callable[[], Backend] = NkisimBackend
    target: str = "trn1"
    shapes: str = "small"
    seeds: tuple[int, ...] | None = None
    workdir: Path | None = None

    @property
    def backend_name(self) -> str:
        return self.make_backend().name

    def profile(self, task: TaskSpec, source: str, *, job_id: str) -> KernelResult:
        return profile_kernel(
            task,
            backend=self.make_backend(),
            kernel_source=source,
            shapes=self.shapes,
            seeds=self.seeds,
            target=self.target,
            workdir=self.workdir,
        )
