"""Fixtures of the tests that need a CUDA GPU (a plugin of tests/conftest.py): the GPU asked of
a sandboxed child, skipping where there is none (as in CI), and turns at the GPU for xdist's
workers. A GPU module takes them with
`pytestmark = pytest.mark.usefixtures("cuda_gpu", "gpu_turn")`."""

from __future__ import annotations

import fcntl
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon.settings import Settings
from nkibench.backends.triton.backend import TritonHost, probe_host
from nkibench.sandbox.isolation import Isolation

__all__ = ["cuda_gpu", "gpu_turn", "isolation"]


@pytest.fixture(scope="module")
def isolation() -> Isolation:
    """The sandbox the settings ask for: bubblewrap, or ACCELOPT_SANDBOX=none on a GPU host
    where something else is the boundary (the device machine runs in gVisor)."""
    return Settings.load().isolation()


@pytest.fixture(scope="module")
def cuda_gpu(isolation: Isolation) -> TritonHost:
    """This host's GPU, asked of a sandboxed child when the first test runs (never at
    collection); without one, every test here is skipped."""
    pytest.importorskip("torch")
    host = probe_host(isolation=isolation)
    if host.gpu is None:
        pytest.skip("needs a CUDA GPU")
    return host


@pytest.fixture
def gpu_turn(request: pytest.FixtureRequest) -> Iterator[None]:
    """xdist's workers share the one GPU: a test that compares timings (`gpu_alone`) holds it
    alone, the others share it. On an H200 under `-n 4`, the side-stream test's honest run
    read 3.07 ms while a neighbour's kernels ran, against 2.48 ms for the same work alone.
    A waiting `gpu_alone` test holds the turnstile, so that no newly started test gets in
    ahead of it (a reader-preferring lock could keep it waiting until every other test ran)."""
    alone = request.node.get_closest_marker("gpu_alone") is not None
    folder = Path(tempfile.gettempdir())
    with (
        open(folder / "accelopt-gpu-tests.turnstile", "a") as turnstile,
        open(folder / "accelopt-gpu-tests.lock", "a") as lock,
    ):
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        if alone:
            fcntl.flock(lock, fcntl.LOCK_EX)
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        else:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
            fcntl.flock(lock, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
