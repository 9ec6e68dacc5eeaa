# dialect: triton
# family: work on a side stream (in a task that allows torch compute)
# task: local/silu_torch
# expect: rejected
# message: `torch.cuda.Stream` is not allowed in a kernel
# allow_torch_compute lets run() compute with PyTorch; it opens none of torch's other doors.
import torch


def run(x):
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        return x / (1.0 + torch.exp(-x))
