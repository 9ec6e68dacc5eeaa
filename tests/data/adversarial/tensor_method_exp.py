# dialect: triton
# family: library fallback: tensor methods (.exp())
# task: gpu/silu
# expect: rejected
# message: `.exp` computes with PyTorch outside a @triton.jit kernel
import torch


def run(x):
    return x / (1.0 + (-x).exp())
