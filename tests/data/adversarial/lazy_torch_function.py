# dialect: triton
# family: lazy tensors that defer work past the timer
# task: gpu/silu
# expect: rejected
# message: defining `__torch_function__` is not allowed
# A tensor subclass that computes only when the harness first touches the result (after the
# timer has stopped), and could answer the harness's own checks.
import torch


class Lazy(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def run(x):
    return torch.empty_like(x).as_subclass(Lazy)
