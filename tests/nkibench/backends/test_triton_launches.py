"""The launch counter and the autotuner's hooks as the kernel's child installs them on a GPU
(nkibench.backends.triton.launches), with a stand-in for Triton's CUDA driver: no GPU is
needed to see what is counted and what is trusted. It runs in a child Python of its own, since
installing patches Triton's classes for the whole process. (Under the interpreter the same
counter is exercised end to end by test_triton_backend.py and the adversarial corpus.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("triton")

SCRIPT = r"""
import torch
from triton.runtime.autotuner import Autotuner, Config
from triton.runtime.driver import driver

from nkibench.backends.triton.launches import counting, install_launch_counting
from nkibench.backends.triton.torch_guard import TorchCompute, TorchComputeGuard


class Launcher:
    def __init__(self, fails=False):
        self.fails = fails

    def __call__(self, grid_x, grid_y, grid_z, stream, *rest):
        if self.fails:
            raise RuntimeError("launch failed")
        return None


class Driver:
    launcher_cls = Launcher

    def clear_cache(self, cache):
        cache.zero_()


driver.set_active(Driver())
install_launch_counting(interpreting=False)

with counting() as run:
    Launcher()(4, 1, 1, None)
    Launcher()(2, 3, 1, None)
    Launcher()(0, 1, 1, None)  # no program: not a launch
    try:
        Launcher(fails=True)(8, 1, 1, None)  # a launch that fails counts nothing
    except RuntimeError:
        pass
assert run.launches == 2, run.launches
Launcher()(4, 1, 1, None)  # outside a checked run: counted nowhere
assert run.launches == 2

# the benchmarker's L2 flush is the harness's op; anything else zeroed in run() is not, and a
# refusal caught inside run() still stands when the guard closes
with TorchComputeGuard():
    driver.active.clear_cache(torch.empty(16, dtype=torch.int32))
try:
    with TorchComputeGuard():
        try:
            torch.empty(4).zero_()
            raise SystemExit("zero_ passed the guard")
        except TorchCompute:
            pass
    raise SystemExit("a refusal caught inside the guard did not stand")
except TorchCompute as e:
    assert "aten.zero_" in e.message, e.message


class Poser:
    # a kernel's object posing as a tensor in reset_to_zero: its zero_ is its own code
    def zero_(self):
        torch.ones(2) * 2


def kernel(x, out, n, BLOCK):
    pass


class Jitted:  # what @triton.jit would hand the autotuner
    def __init__(self):
        self.fn = kernel
        self.arg_names = ["x", "out", "n", "BLOCK"]


tuner = Autotuner(
    Jitted(),
    ["x", "out", "n", "BLOCK"],
    [Config({"BLOCK": 64})],
    key=["n"],
    reset_to_zero=["out"],
    restore_value=None,
)
with TorchComputeGuard():
    tuner.pre_hook({"out": torch.empty(8), "x": None}, reset_only=True)  # trusted: plain tensor
try:
    with TorchComputeGuard():
        tuner.pre_hook({"out": Poser(), "x": None}, reset_only=True)
    raise SystemExit("a posing object's compute passed the guard")
except TorchCompute as e:
    assert "aten.mul" in e.message, e.message
print("ok")
"""


def test_gpu_launches_are_counted_at_the_launcher_and_only_the_harness_is_trusted() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok"), done.stdout
