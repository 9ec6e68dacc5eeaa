# dialect: triton
# family: library fallback: tensor methods (.exp())
# task: gpu/silu
# expect: cheat
# message: run() computed with PyTorch: aten.neg
# The static check leaves torch compute to the run-time guard, which refuses the first
# aten op that computes, wherever Python spelled it, in every checked run.
import torch


def run(x):
    return x / (1.0 + (-x).exp())
