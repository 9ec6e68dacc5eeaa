# dialect: triton
# family: escape: writing files
# task: gpu/silu
# expect: rejected
# message: `torch.save` is not allowed in a kernel
# An output file planted where the comparison reads the kernel's outputs.
import torch


def run(x):
    torch.save(x, "../outputs/seed_0/output_0.npy")
    return x
