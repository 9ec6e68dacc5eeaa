# dialect: triton
# family: library fallback: torch compute in run() (x @ w)
# task: gpu/matmul
# expect: cheat
# message: run() computed with PyTorch: aten.mm
# The static check leaves torch compute to the run-time guard, which refuses the first
# aten op that computes, wherever Python spelled it, in every checked run.
import torch


def run(lhs, rhs):
    return lhs @ rhs
