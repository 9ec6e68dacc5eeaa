"""What decides whether a Triton kernel computes in Triton (child side: imports torch).

While run() executes, a TorchDispatchMode sees every aten op PyTorch runs, whatever Python
spelled it (`torch.nn.functional.silu(x)`, `x.sum()`, `x @ w`, `x * 2`, `float(t)`), and
refuses any op outside ALLOWED_OPS: a kernel that computes its result with PyTorch is a
cheat, whatever the answer. What decides is what ran: torch compute in a branch that never
runs (a fallback for CPU tensors, on a GPU host) is fine, and the static check refuses only
what this guard cannot see, the methods that read tensor data on the host without an aten op
(`.numpy()`, `.tolist()`: nkibench.policy.triton_code.UNSEEN_READ_METHODS).

A refusal is an exception the kernel's own code could catch (`try: return torch.exp(x)
except Exception: ...`, to compute with torch wherever nothing watches and in Triton where
something does): the guard keeps its first refusal and raises it again when run() returns,
whatever run() did with it.

One read of tensor data runs no op the mode sees: the text of a tensor (`str(x)`, `repr(x)`,
`f"{x}"`), which torch prints with every dispatch mode off. guard_tensor_text() makes it a
refusal too while a guard is open.

Triton's own launches run no aten op on a GPU (the launcher passes data pointers). Under
Triton's CPU interpreter a launch copies its arguments to and from host tensors with aten ops;
those copies are the harness's, marked `trusted()` (nkibench.backends.triton.interpreter), as
is the harness's poisoning of fresh allocations.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any, ClassVar

import torch
import torch._tensor_str as tensor_str
from torch.utils._python_dispatch import TorchDispatchMode

from nkibench.errors import KernelError

__all__ = [
    "ALLOWED_OPS",
    "TorchCompute",
    "TorchComputeGuard",
    "guard_tensor_text",
    "guarded",
    "trusted",
    "warm_up",
]

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


INTERPRETER_HINT = (
    " Under Triton's CPU interpreter the inputs are CPU tensors: a branch taken when "
    '`x.is_cuda` is false (or `x.device.type != "cuda"`) runs here; launch the Triton kernel '
    "on any device."
)


class TorchComputeGuard(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Active while run() executes: every aten op outside ALLOWED_OPS raises TorchCompute,
    except within trusted() (the harness's own ops). The first refusal is raised again when
    the guard closes, if run()'s own code caught it."""

    trusted_depth = 0
    watching: ClassVar[list[TorchComputeGuard]] = []
    """The guards open, the innermost last."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # torch's TorchDispatchMode is untyped
        self.refused: TorchCompute | None = None
        """The first op refused."""

    def __enter__(self) -> TorchComputeGuard:
        TorchComputeGuard.watching.append(self)
        super().__enter__()  # type: ignore[no-untyped-call]
        return self

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        name = func.overloadpacket.__name__
        if TorchComputeGuard.trusted_depth == 0 and name not in ALLOWED_OPS:
            raise self._refuse(
                f"run() computed with PyTorch: aten.{name} ({func}); a Triton task's run() "
                "may use torch only to allocate, view and query tensors, and every computation "
                "runs in a @triton.jit kernel (or the task says allow_torch_compute = true)"
            )
        return func(*args, **(kwargs or {}))

    def _refuse(self, message: str) -> TorchCompute:
        if os.environ.get("TRITON_INTERPRET") == "1":
            message += INTERPRETER_HINT
        refusal = TorchCompute(message)
        if self.refused is None:
            self.refused = refusal
        return refusal

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> None:
        TorchComputeGuard.watching.remove(self)
        super().__exit__(kind, error, traceback)  # type: ignore[no-untyped-call]
        if self.refused is not None and error is not self.refused:
            raise self.refused  # caught inside run(): a refusal stands


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


def guard_tensor_text() -> None:
    """Make the text of a tensor a refusal of the open guard (for this process): torch prints
    a tensor (`Tensor.__repr__`, and `__str__` and `__format__` through it) with every dispatch
    mode off, so its data would reach run() as text without an op the guard sees."""
    text = tensor_str._str

    def watched(tensor: Any, *, tensor_contents: Any = None) -> Any:
        if TorchComputeGuard.watching and TorchComputeGuard.trusted_depth == 0:
            raise TorchComputeGuard.watching[-1]._refuse(
                "run() read tensor data on the host as text (str, repr or format of a tensor, "
                "which torch prints with the guard off); a Triton task's run() may use torch "
                "only to allocate, view and query tensors"
            )
        return text(tensor, tensor_contents=tensor_contents)  # type: ignore[no-untyped-call]

    setattr(tensor_str, "_str", watched)  # noqa: B010 (a private function, on purpose)


def warm_up() -> None:
    """Enter the guard once before the kernel loads: its first use imports more of torch (and
    rewraps torch.manual_seed), which must happen under the harness's own builtins and before
    the module snapshot, not inside the kernel's first run()."""
    with guarded(True):
        torch.empty(1).view(-1)
