# dialect: triton
# family: library fallback: torch compute no name shows (operators only)
# task: gpu/silu
# expect: cheat
# message: run() computed with PyTorch: aten.neg
# gpu_expect: cheat
# gpu_message: run() computed with PyTorch: aten.neg
# exp(-x) as e ** -x: no torch function and no tensor method is named, so the static check
# has nothing to see; the guard in the kernel's child sees the aten ops PyTorch runs.
import math

import torch


def run(x):
    return x / (1.0 + math.e ** (-x))
