"""Guards against kernels that game the check or the timer (child side: imports torch).

The known cheats of GPU kernel benchmarks, and what catches each here:
- unwritten outputs: every uninitialised allocation (`torch.empty` and its relatives) is
  filled with a NaN of a payload no arithmetic produces before a checked run; an output
  element still holding that exact bit pattern was never written;
- mutated inputs: the inputs' bits are compared with a copy after every checked run;
- work on a side stream: entering or switching streams raises, and the current stream must
  be the harness's when `run` returns (the static check refuses the names too;
  on a GPU the timer also compares event time with device-synchronised time);
- results cached across calls: every check draws fresh inputs, and the seeds run one after
  another in the same process and in the same buffers (each seed's data copied into the
  first seed's tensors), so a result remembered by content or by address is a wrong result;
  a kernel much faster than its baseline is timed again with fresh data written into the
  timed buffers before every run, and checked on fresh seeds in those buffers;
- outputs that are not plain tensors: a subclass of torch.Tensor (or an object posing as one)
  can compute when the harness reads it, after the timer stopped, or answer the harness's own
  checks (count_poison, the comparison) itself; run() must return torch.Tensor exactly;
- patched modules: what the timer and these guards call (torch.cuda.synchronize, Event, the
  allocation functions, Tensor's methods) is recorded before the kernel loads and must be the
  same objects after every run (the static check refuses every attribute assignment; this is
  the layer under it);
- computing with PyTorch instead of Triton: nkibench.backends.triton.torch_guard.
"""

from __future__ import annotations

from typing import Any

import torch

from nkibench.errors import KernelError

__all__ = [
    "Cheat",
    "ModuleSnapshot",
    "check_outputs",
    "count_poison",
    "forbid_streams",
    "inputs_changed",
    "poison",
    "snapshot",
]


class Cheat(KernelError):
    kind = "cheat"


POISON: dict[torch.dtype, tuple[torch.dtype, int]] = {
    # quiet NaNs with payloads that arithmetic never yields (the GPU's own NaN is canonical)
    torch.float32: (torch.int32, 0x7FD0BAD5),
    torch.float64: (torch.int64, 0x7FF8BAD5BAD5BAD5),
    torch.bfloat16: (torch.int16, 0x7FD5),
    torch.float16: (torch.int16, 0x7ED5),
    torch.int32: (torch.int32, -0x7ABADBAD),
    torch.int64: (torch.int64, -0x7ABADBADBADBADBA),
}


def poison(tensor: torch.Tensor) -> torch.Tensor:
    """`tensor` filled with its dtype's poison (nkibench.backends.triton.canaries fills every
    `empty` allocation of a checked run with it)."""
    if tensor.dtype in POISON and tensor.numel():
        int_dtype, pattern = POISON[tensor.dtype]
        tensor.view(int_dtype).fill_(pattern)
    return tensor


def count_poison(tensor: torch.Tensor) -> int:
    """Elements still holding the poison: never written by the kernel."""
    if tensor.dtype not in POISON:
        return 0
    int_dtype, pattern = POISON[tensor.dtype]
    return int((tensor.contiguous().view(int_dtype) == pattern).sum().item())


def snapshot(values: list[Any]) -> list[Any]:
    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    sizes = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    return tensor.contiguous().view(sizes[tensor.element_size()])


def inputs_changed(values: list[Any], copies: list[Any]) -> list[int]:
    """Indices of tensor inputs whose bits differ from their copies."""
    return [
        i
        for i, (value, copy) in enumerate(zip(values, copies, strict=True))
        if isinstance(value, torch.Tensor) and not torch.equal(_bits(value), _bits(copy))
    ]


def _refuse(*_args: Any, **_kwargs: Any) -> Any:
    raise Cheat(
        "the kernel used another CUDA stream: all work must run on the current stream, which "
        "the harness times (work on a side stream escapes the timer)"
    )


def forbid_streams() -> None:
    """Make every way of making another stream current raise (for this process). Creating a
    Stream object stays possible: torch.cuda.current_stream() itself constructs one, and a
    stream that never becomes current runs nothing of the kernel's."""
    cuda = torch.cuda
    for name in ("stream", "set_stream", "StreamContext", "graph", "CUDAGraph"):
        if hasattr(cuda, name):
            setattr(cuda, name, _refuse)


def check_outputs(outputs: list[Any]) -> None:
    """Every output is a torch.Tensor exactly (no subclass, nothing posing as one)."""
    for i, output in enumerate(outputs):
        kind = type(output)
        if kind is torch.Tensor:
            continue
        if isinstance(output, torch.Tensor):
            raise Cheat(
                f"output {i} is a {kind.__name__}, a subclass of torch.Tensor: run() must return "
                "plain tensors (a subclass can compute when the harness reads it, after the "
                "timer, or answer the harness's checks itself)"
            )
        raise TypeError(f"output {i} is a {kind.__name__}, not a tensor")


WATCHED = ("torch", "torch.cuda", "torch.Tensor", "torch.nn.functional")
"""What the timer, the guards and the comparison call: their attributes may not change."""


class ModuleSnapshot:
    """The public attributes of WATCHED as the kernel found them (taken before it loads)."""

    def __init__(self) -> None:
        self.watched: dict[str, tuple[Any, dict[str, Any]]] = {}
        for path in WATCHED:
            owner = _resolve(path)
            self.watched[path] = (owner, _public(owner))

    def changed(self) -> list[str]:
        """`module.name` of every attribute that is no longer the object it was."""
        moved = []
        for path, (owner, before) in self.watched.items():
            now = _public(owner)
            moved += [f"{path}.{n}" for n, v in before.items() if now.get(n, _GONE) is not v]
        return moved

    def verify(self) -> None:
        moved = self.changed()
        if moved:
            raise Cheat(
                f"the kernel replaced {', '.join(moved[:5])}: a kernel leaves the modules the "
                "harness times and checks with as they are"
            )


_GONE = object()


def _resolve(path: str) -> Any:
    owner: Any = torch
    for part in path.split(".")[1:]:
        owner = getattr(owner, part)
    return owner


def _public(owner: Any) -> dict[str, Any]:
    """Every public function, class and method, inherited ones included (torch.Tensor's
    methods live on its C base class; assigning one on torch.Tensor shadows it). Data is left
    out: torch replaces some of its own as it initialises CUDA (torch.cuda.default_generators)."""
    found = {}
    for name in dir(owner):
        if not name.startswith("_"):
            try:
                value = getattr(owner, name)
            except Exception:  # a lazy attribute that cannot load here: nothing to compare
                continue
            if callable(value):
                found[name] = value
    return found
