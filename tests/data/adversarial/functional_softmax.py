# dialect: triton
# family: library fallback: torch.nn.functional and torch.matmul
# task: gpu/bmm_softmax
# expect: rejected
# message: `torch.nn.functional.softmax` is not an allocation, view or query
import torch


def run(lhs, rhs):
    return torch.nn.functional.softmax(torch.matmul(lhs, rhs), dim=-1)
