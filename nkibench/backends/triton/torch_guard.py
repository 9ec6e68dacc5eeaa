"""The run-time half of "a Triton kernel computes in Triton" (child side: imports torch).

The static check refuses torch calls it can see in run() (nkibench.sandbox.static_check);
operators on tensors (`x * 2`, `2.718 ** -x`), `float(t)` and calls it cannot name reach
PyTorch without a name. While run() executes, a TorchDispatchMode sees every aten op PyTorch
runs, whatever Python spelled it, and refuses any op outside ALLOWED_OPS: a kernel that
computes its result with PyTorch is a cheat, whatever the answer.

Triton's own launches run no aten op on a GPU (the launcher passes data pointers). Under
Triton's CPU interpreter a launch copies its arguments to and from host tensors with aten ops;
those copies are the harness's, marked `trusted()` (nkibench.backends.triton.interpreter), as
is the harness's poisoning of fresh allocations.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from nkibench.errors import KernelError

__all__ = ["ALLOWED_OPS", "TorchCompute", "TorchComputeGuard", "guarded", "trusted", "warm_up"]

ALLOWED_OPS = frozenset(
    {
        # allocation: torch.empty / empty_like / empty_strided / zeros / ones / full (and
        # their _like and Tensor.new_* forms)
        "empty",
        "empty_like",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
        "zeros",
        "zeros_like",
        "new_zeros",
        "ones",
        "ones_like",
        "new_ones",
        "full",
        "full_like",
        "new_full",
        # views: .view, .reshape, .flatten, .t(), .T, .permute, .transpose, .unsqueeze,
        # .squeeze, .expand, slicing and indexing with ints, .narrow, .split, .chunk,
        # .unbind, .detach, .as_strided
        "view",
        "_unsafe_view",
        "t",
        "permute",
        "transpose",
        "unsqueeze",
        "squeeze",
        "expand",
        "slice",
        "select",
        "split",
        "split_with_sizes",
        "unbind",
        "detach",
        "alias",
        "as_strided",
        # the copy that .contiguous() and .reshape() of a strided tensor make (no arithmetic)
        "clone",
    }
)
"""Aten ops (by name, any overload) a Triton task's run() may run: allocation, views and
layout copies. Queries (`.shape`, `.stride()`, `.numel()`, `.dtype`, `.device`,
`.data_ptr()`, `.is_contiguous()`) run no aten op at all. Anything else computes, or reads
tensor data on the host (`.item()`, `float(t)`: `_local_scalar_dense`), or edits a tensor in
place (`fill_`, `zero_`, `copy_`)."""


class TorchCompute(KernelError):
    """A Triton task's run() computed with PyTorch (or read tensor data on the host)."""

    kind = "cheat"


class TorchComputeGuard(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Active while run() executes: every aten op outside ALLOWED_OPS raises TorchCompute,
    except within trusted() (the harness's own ops)."""

    trusted_depth = 0

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # torch's TorchDispatchMode is untyped

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        name = func.overloadpacket.__name__
        if TorchComputeGuard.trusted_depth == 0 and name not in ALLOWED_OPS:
            raise TorchCompute(
                f"run() computed with PyTorch: aten.{name} ({func}); a Triton task's run() "
                "may use torch only to allocate, view and query tensors, and every computation "
                "runs in a @triton.jit kernel (or the task says allow_torch_compute = true)"
            )
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def trusted() -> Iterator[None]:
    """The harness's own aten ops inside run(): not the kernel's."""
    TorchComputeGuard.trusted_depth += 1
    try:
        yield
    finally:
        TorchComputeGuard.trusted_depth -= 1


def guarded(enabled: bool) -> contextlib.AbstractContextManager[Any]:
    """The guard when `enabled` (the task does not allow torch compute), else nothing."""
    return TorchComputeGuard() if enabled else contextlib.nullcontext()


def warm_up() -> None:
    """Enter the guard once before the kernel loads: its first use imports more of torch (and
    rewraps torch.manual_seed), which must happen under the harness's own builtins and before
    the module snapshot, not inside the kernel's first run()."""
    with guarded(True):
        torch.empty(1).view(-1)
