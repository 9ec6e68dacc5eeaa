# dialect: triton
# family: finding the expected output through inspect (the caller's frame)
# task: gpu/silu
# expect: rejected
# message: import of 'inspect' is not allowed
import inspect

import torch


def run(x):
    caller = inspect.currentframe().f_back
    return caller.f_locals["copies"][0]
