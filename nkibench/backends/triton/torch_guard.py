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

**Host reads: integer data yes, floating-point data no.** Reading tensor data on the host
(`.item()`, `int(t)`, `float(t)`, `bool(t)`: aten._local_scalar_dense) is what a cache keys
on content with. Real kernels read lengths and index metadata there (`int(kv_indptr[-1])`,
`int(seq_lens.max())`), so: integer and bool tensors may be read on the host (the scalar read,
and the full reductions to one integer that sizing a grid takes: max, min, amax, amin, sum,
any, all; INTEGER_READS), floating-point ones (bfloat16 and float8 too) never, nor integers
that alias floating-point inputs (a view of one as integers, or a clone of one made in the
run: the guard follows the inputs' storage). Why a cache keyed on integer inputs alone is
still caught: it returns the output computed for other floating-point data, and the harness
makes sure the floating-point data changes under it.

- Per seed, in every check: a task whose inputs hold integer and floating-point tensors runs
  each seed just after a decoy run with the same integer inputs and other floating-point data
  (each element scaled by its own factor in [0.5, 1.5)), in the same buffers
  (nkibench.backends.triton.phases): a result kept by its integer inputs (or by address) is
  the decoy's, and the seed is wrong (`incorrect`), under the interpreter as on a GPU.
- On re-verification (on a GPU, any kernel faster than its baseline where the inputs hold
  integer and floating-point data; nkibench.backends.triton.backend): the timing writes
  fresh floating-point data into the timed buffers before every run while the fresh seeds'
  integers come round again, and each fresh seed's checked run follows a decoy run in the
  same buffers: a result kept across calls is wrong on fresh inputs (`cheat`).
- A task whose inputs are all integer data gets no decoy, and its host reads stay refused
  (there the integers are the data).

What this does not close: integers that a Triton kernel computes from floating-point data (a
hash of the input written into an integer tensor) and the host then reads. That is a content
cache, but no stronger than one kept on the device (a Triton kernel that compares its input
with a copy and skips the work), which needs no host read at all: both hit only on content
seen before, i.e. in the timing loop over the seeds' inputs, and the re-verification (fresh
data before every run: far slower than on repeated data, "results cached across calls") is
their check (for a kernel faster than its baseline where the inputs hold integers beside
floating-point data, more than 10x faster elsewhere). Nor an output that depends
on the integer inputs alone (kept by them, it is right). The device-synchronised runs that
close the timing compare no outputs: they catch torch compute and missing launches, not
caches.

Triton's own launches run no aten op on a GPU (the launcher passes data pointers). Under
Triton's CPU interpreter a launch copies its arguments to and from host tensors with aten ops;
those copies are the harness's, marked `trusted()` (nkibench.backends.triton.interpreter), as
is the harness's poisoning of fresh allocations.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import torch
import torch._tensor_str as tensor_str
from torch.utils._python_dispatch import TorchDispatchMode

from nkibench.dtypes import INTEGER_DTYPE_NAMES
from nkibench.errors import KernelError

__all__ = [
    "ALLOWED_OPS",
    "INTEGER_DTYPES",
    "INTEGER_READS",
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
tensor data on the host (`.item()`, `float(t)`: `_local_scalar_dense`, allowed on integer
data: INTEGER_READS), or edits a tensor in place (`fill_`, `zero_`, `copy_`)."""


INTEGER_DTYPES = frozenset(getattr(torch, name) for name in INTEGER_DTYPE_NAMES)
"""Integer data as torch dtypes (nkibench.dtypes.INTEGER_DTYPE_NAMES)."""
INTEGER_READS = frozenset(
    {"_local_scalar_dense", "max", "min", "amax", "amin", "sum", "any", "all"}
)
"""Aten ops that read integer data on the host, allowed on integer tensors that alias no
floating-point input, where the inputs hold floating-point data: the scalar read, and the
full reductions to one integer (a result of any other shape is compute)."""
READ_HINT = (
    "; a Triton task's run() may read integer tensors on the host (lengths and offsets: "
    "`int(t)`, `t.item()`, `int(t.max())`), never floating-point data, nor integers that alias "
    "it: a cache keyed on it would return results computed for other data"
)


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

    def __init__(self, inputs: Sequence[Any] = ()) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # torch's TorchDispatchMode is untyped
        self.refused: TorchCompute | None = None
        """The first op refused."""
        floating = [
            x for x in inputs if isinstance(x, torch.Tensor) and x.dtype not in INTEGER_DTYPES
        ]
        self.integer_reads = bool(floating)
        """Integer data may be read on the host: the inputs hold floating-point data."""
        self.floating_storages = {_storage(x) for x in floating} - {None}
        """Where the floating-point inputs' data lives (and clones of it made in the run)."""

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
        watched = TorchComputeGuard.trusted_depth == 0
        if watched and name in INTEGER_READS:
            return self._integer_read(func, name, args, kwargs or {})
        if watched and name not in ALLOWED_OPS:
            raise self._refuse(_computed(func), hint=True)
        result = func(*args, **(kwargs or {}))
        if watched and name == "clone" and args and _storage(args[0]) in self.floating_storages:
            self.floating_storages.add(_storage(result))  # a floating-point input's bits
        return result

    def _integer_read(
        self, func: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """An integer read on the host (INTEGER_READS), or its refusal."""
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        floating = [t for t in tensors if t.dtype not in INTEGER_DTYPES]
        aliasing = [t for t in tensors if _storage(t) in self.floating_storages]
        read = f"aten.{name} ({func})"
        if floating and name != "_local_scalar_dense":
            raise self._refuse(_computed(func), hint=True)
        if floating:
            what = f"{floating[0].dtype} tensor data"
            raise self._refuse(f"run() read {what} on the host: {read}{READ_HINT}")
        if aliasing:
            what = "a floating-point input's data as integers"
            raise self._refuse(f"run() read {what} on the host: {read}{READ_HINT}")
        if not self.integer_reads:
            raise self._refuse(
                f"run() read tensor data on the host: {read}; integer tensors may be read on the "
                "host only beside floating-point inputs (their lengths and offsets), and every "
                "input here is integer data"
            )
        result = func(*args, **kwargs)
        if name != "_local_scalar_dense" and not (
            isinstance(result, torch.Tensor) and result.dim() == 0
        ):
            raise self._refuse(
                f"run() computed with PyTorch: {read}, a reduction to more than one value; "
                "integer tensors may be reduced on the host to one integer (`int(t.max())`), "
                "and every other computation runs in a @triton.jit kernel",
                hint=True,
            )
        return result

    def _refuse(self, message: str, *, hint: bool = False) -> TorchCompute:
        if hint and os.environ.get("TRITON_INTERPRET") == "1":
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


def guarded(enabled: bool, inputs: Sequence[Any] = ()) -> contextlib.AbstractContextManager[Any]:
    """The guard of a run on `inputs` when `enabled` (the task does not allow torch compute),
    else nothing."""
    return TorchComputeGuard(inputs) if enabled else contextlib.nullcontext()


def _computed(func: Any) -> str:
    return (
        f"run() computed with PyTorch: aten.{func.overloadpacket.__name__} ({func}); a Triton "
        "task's run() may use torch only to allocate, view and query tensors, and every "
        "computation runs in a @triton.jit kernel (or the task says allow_torch_compute = true)"
    )


def _storage(tensor: Any) -> int | None:
    """Where a tensor's data lives (its storage's first byte; None: no tensor, or no data)."""
    if not isinstance(tensor, torch.Tensor):
        return None
    pointer = tensor.untyped_storage().data_ptr()
    return pointer or None


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
