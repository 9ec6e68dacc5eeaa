# dialect: triton
# family: escape: read another file (torch's file readers)
# task: gpu/silu
# expect: rejected
# message: `.from_file` (files, pickles, pointers or code from text) is not allowed
# The expected output's bytes, from the file the reference phase wrote beside the inputs.
import torch


def run(x):
    storage = torch.UntypedStorage.from_file("../data/expected_0.npy", False, 128 + 2 * x.numel())
    return torch.empty_like(x)
