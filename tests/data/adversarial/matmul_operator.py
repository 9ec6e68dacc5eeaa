# dialect: triton
# family: library fallback: torch compute in run() (x @ w)
# task: gpu/matmul
# expect: rejected
# message: `@` is a PyTorch matmul outside a @triton.jit kernel
import torch


def run(lhs, rhs):
    return lhs @ rhs
