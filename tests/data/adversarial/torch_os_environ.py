# dialect: triton
# family: escape: reading the environment (torch holds os)
# task: gpu/silu
# expect: rejected
# message: `.os` is the standard library's os module
import torch


def run(x):
    raise RuntimeError(str(dict(torch.os.environ)))
