# dialect: triton
# family: library fallback: torch compute in run()
# task: gpu/silu
# expect: rejected
# message: `torch.sigmoid` is not an allocation, view or query
# Correct, and fast (PyTorch's own kernel), and no Triton at all.
import torch


def run(x):
    return x * torch.sigmoid(x)
