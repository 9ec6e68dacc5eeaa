"""Shared by the triton backend's tests: the GPU suite, planted kernels, a backend."""

from __future__ import annotations

import pytest

from nkibench.backends.triton.backend import TritonBackend
from nkibench.suites import GPU_SUITE as SUITE_GPU
from tests.support import DATA

PLANTED = DATA / "triton_kernels"
SILU = SUITE_GPU / "silu"
GPU_TASKS = sorted(p.name for p in SUITE_GPU.iterdir() if (p / "task.toml").is_file())


@pytest.fixture(scope="session")
def triton_backend() -> TritonBackend:
    return TritonBackend()


def planted(name: str) -> str:
    return (PLANTED / f"{name}.py").read_text()
