# dialect: triton
# family: library fallback: torch compute in run()
# task: gpu/silu
# expect: cheat
# message: run() computed with PyTorch: aten.sigmoid
# The static check leaves torch compute to the run-time guard, which refuses the first
# aten op that computes, wherever Python spelled it, in every checked run.
# Correct, and fast (PyTorch's own kernel), and no Triton at all.
import torch


def run(x):
    return x * torch.sigmoid(x)
