# dialect: triton
# family: library fallback: torch.nn.functional and torch.matmul
# task: gpu/bmm_softmax
# expect: cheat
# message: run() computed with PyTorch: aten.bmm
# The static check leaves torch compute to the run-time guard, which refuses the first
# aten op that computes, wherever Python spelled it, in every checked run.
import torch


def run(lhs, rhs):
    return torch.nn.functional.softmax(torch.matmul(lhs, rhs), dim=-1)
