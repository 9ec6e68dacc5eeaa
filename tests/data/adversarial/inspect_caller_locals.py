# dialect: triton
# family: finding the expected output through inspect (the caller's frame)
# task: gpu/silu
# expect: rejected
# message: `inspect.currentframe` is not allowed
# inspect may be imported (to bind arguments with inspect.signature), but its frames are
# not among the names a kernel may use of it, and `.f_back` is refused on any object.
import inspect

import torch


def run(x):
    caller = inspect.currentframe().f_back
    return caller.f_locals["copies"][0]
