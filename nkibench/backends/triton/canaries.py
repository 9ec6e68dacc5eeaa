"""Guard bands (canaries) around a checked run's buffers (child side: imports torch).

A Triton kernel writes through raw pointers: a mask one tile too wide, or an offset computed
from the wrong stride, writes past its buffer into whatever the allocator put beside it, and
the outputs may still compare equal to the reference. So every input of a checked run, and
every buffer run() allocates with torch's `empty` and `zeros` families (its outputs among
them), lies inside a larger allocation with GUARD_BYTES of a canary byte on each side, and
after the run both bands must still hold it. A band that changed names the buffer (the input
or output by name where the task names them) and the element offsets written.

What this cannot see: a write that jumps past a band (more than GUARD_BYTES away), and
buffers run() makes some other way (torch.ones, torch.full, arithmetic results). Allocations
that are not plain strided device memory (an `out=` argument, pinned memory, a sparse
layout, a tensor that requires grad) are made as asked, without bands.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from nkibench.backends.triton.tensors import extent
from nkibench.backends.triton.torch_guard import trusted
from nkibench.errors import KernelError

__all__ = ["CANARY", "GUARD_BYTES", "Canaries", "OutOfBounds"]

GUARD_BYTES = 4096
"""Each band: 512 elements of the widest dtype, and a multiple of any alignment Triton
specialises on (16 bytes), so that a buffer's data pointer keeps the alignment its
allocation had."""
CANARY = 0xA5
"""The band's byte: as float32 bits 0xA5A5A5A5 is -2.9e-16, as bfloat16 -2.9e-16, as an int32
-1515870811; no kernel's output is likely to hold it by chance, and never a whole band."""


_EMPTY = torch.empty
"""torch.empty as the harness found it: the bands' own storage, which `allocations` must not
route through its own wrapper."""


class OutOfBounds(KernelError):
    kind = "runtime"


@dataclass
class Band:
    """One guarded allocation: its whole storage as bytes, where the buffer's span lies in it,
    and what the buffer is."""

    storage: torch.Tensor
    start: int
    end: int
    element_size: int
    what: str

    def trampled(self) -> tuple[str, list[int]] | None:
        """Where the kernel wrote into a band: ("before" or "after", the element offsets
        from the buffer's first element, or past its last), or None."""
        before = (self.storage[: self.start] != CANARY).nonzero().flatten()
        if before.numel():
            first = self.start - int(before[0].item())
            return "before", [-(first // self.element_size)]
        after = (self.storage[self.end :] != CANARY).nonzero().flatten()
        if after.numel():
            offsets = sorted({int(b) // self.element_size for b in after.tolist()})
            return "after", offsets
        return None


def _banded(like: torch.Tensor, device: torch.device, what: str) -> tuple[torch.Tensor, Band]:
    """A tensor of `like`'s shape, strides and dtype on `device`, inside a guarded storage;
    only the bands are written here (the caller fills the buffer itself)."""
    size, stride = tuple(like.shape), tuple(like.stride())
    guard = GUARD_BYTES // like.element_size()
    span = extent(like)
    storage = _EMPTY(span + 2 * guard, dtype=like.dtype, device=device)
    raw = storage.view(torch.uint8)
    start, end = guard * like.element_size(), (guard + span) * like.element_size()
    raw[:start].fill_(CANARY)
    raw[end:].fill_(CANARY)
    tensor = storage.as_strided(size, stride, storage_offset=guard)
    return tensor, Band(raw, start, end, like.element_size(), what)


class Canaries:
    """The guarded buffers of one kernel's child: its inputs (guarded once, kept across
    seeds) and what each checked run allocates."""

    def __init__(self) -> None:
        self.inputs: dict[int, Band] = {}
        """By their storage's address."""
        self.allocated: list[Band] = []
        self._allocating = False

    def guard_inputs(self, values: list[Any]) -> list[Any]:
        """The tensors among `values` copied into guarded storage (other values as they are)."""
        guarded: list[Any] = []
        for value in values:
            if not isinstance(value, torch.Tensor) or not _plain(value) or not value.numel():
                guarded.append(value)
                continue
            tensor, band = _banded(value, value.device, "")  # named by check()
            tensor.copy_(value)
            self.inputs[_storage(tensor)] = band
            guarded.append(tensor)
        return guarded

    @contextlib.contextmanager
    def allocations(self, fill: Callable[[torch.Tensor], torch.Tensor]) -> Iterator[None]:
        """Within: torch's `empty` family (filled by `fill`: the poison) and `zeros` family
        return guarded tensors, recorded for `check`."""
        self.allocated.clear()
        wrapped: dict[tuple[Any, str], Any] = {}
        for owner, name, body in (
            (torch, "empty", fill),
            (torch, "empty_like", fill),
            (torch, "empty_strided", fill),
            (torch.Tensor, "new_empty", fill),
            (torch, "zeros", torch.Tensor.zero_),
            (torch, "zeros_like", torch.Tensor.zero_),
            (torch.Tensor, "new_zeros", torch.Tensor.zero_),
        ):
            original = getattr(owner, name)
            wrapped[(owner, name)] = original
            sourced = name.endswith("_like") or name.startswith("new_")
            setattr(owner, name, self._guarded(original, body, sourced=sourced))
        try:
            yield
        finally:
            for (owner, name), original in wrapped.items():
                setattr(owner, name, original)

    def _guarded(self, allocate: Any, body: Callable[[torch.Tensor], Any], *, sourced: bool) -> Any:
        """`allocate` made inside a guarded storage; `sourced`: its first argument is the
        tensor whose device it takes by default (`*_like`, `new_*`)."""

        def guarded(*args: Any, **kwargs: Any) -> torch.Tensor:
            if self._allocating:  # torch's own Python decompositions call torch.empty
                return allocate(*args, **kwargs)  # type: ignore[no-any-return]
            self._allocating = True
            try:
                with trusted():
                    return _filled(self._banded_or_plain(allocate, args, kwargs, sourced), body)
            finally:
                self._allocating = False

        return guarded

    def _banded_or_plain(
        self, allocate: Any, args: tuple[Any, ...], kwargs: dict[str, Any], sourced: bool
    ) -> torch.Tensor:
        if not _bandable(kwargs):
            return allocate(*args, **kwargs)  # type: ignore[no-any-return]
        shaped = allocate(*args, **{**kwargs, "device": "meta"})  # the shape and strides
        if shaped.layout != torch.strided or not shaped.numel():
            return allocate(*args, **kwargs)  # type: ignore[no-any-return]
        dtype = str(shaped.dtype).removeprefix("torch.")
        what = f"a {tuple(shaped.shape)} {dtype} buffer run() allocated"
        tensor, band = _banded(shaped, _device_of(args, kwargs, sourced=sourced), what)
        self.allocated.append(band)
        return tensor

    def check(
        self,
        inputs: list[Any],
        outputs: list[Any],
        input_names: list[str] | None,
        output_names: list[str] | None,
    ) -> None:
        """Raise OutOfBounds for the first band the run wrote into: the inputs', then the
        outputs', then the other buffers run() allocated."""
        named = {
            **_by_storage(inputs, input_names, "input"),
            **_by_storage(outputs, output_names, "output"),
        }
        bands = [self.inputs[p] for p in _storages(inputs) if p in self.inputs]
        for band in bands + self.allocated:
            found = band.trampled()
            if found is None:
                continue
            where, offsets = found
            what = named.get(_storage(band.storage), band.what)
            if where == "before":
                raise OutOfBounds(
                    f"run() wrote before the start of {what}, {-offsets[0]} element(s) ahead of "
                    "its first: a negative offset, or a mask that lets it through"
                )
            raise OutOfBounds(
                f"run() wrote past the end of {what}: {len(offsets)} element(s), at offsets "
                f"{_ranges(offsets)} after its last (a mask too wide, or a tile count rounded up "
                "without one)"
            )


def _plain(value: torch.Tensor) -> bool:
    return value.layout == torch.strided and not value.requires_grad and type(value) is torch.Tensor


def _bandable(kwargs: dict[str, Any]) -> bool:
    """Whether an allocation asked with `kwargs` can be made inside a guarded storage."""
    return (
        kwargs.get("out") is None
        and not kwargs.get("pin_memory")
        and not kwargs.get("requires_grad")
        and kwargs.get("layout", torch.strided) == torch.strided
    )


def _device_of(args: tuple[Any, ...], kwargs: dict[str, Any], *, sourced: bool) -> torch.device:
    """Where the allocation was asked for: `device=`, else (for `*_like` and `new_*`) the
    source tensor's device, else torch's default device."""
    if kwargs.get("device") is not None:
        return torch.device(kwargs["device"])
    source = args[0] if args else kwargs.get("input")
    if sourced and isinstance(source, torch.Tensor):
        return source.device
    return torch.get_default_device()


def _filled(tensor: torch.Tensor, body: Callable[[torch.Tensor], Any]) -> torch.Tensor:
    body(tensor)
    return tensor


def _ranges(offsets: list[int]) -> str:
    """Sorted offsets as runs: [0, 1, 2, 7] -> "0-2 and 7" (the first four runs)."""
    runs: list[list[int]] = []
    for offset in offsets:
        if runs and offset == runs[-1][1] + 1:
            runs[-1][1] = offset
        else:
            runs.append([offset, offset])
    shown = [f"{a}-{b}" if b > a else str(a) for a, b in runs[:4]]
    more = " and more" if len(runs) > 4 else ""
    return (", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) > 1 else shown[0]) + more


def _storage(tensor: torch.Tensor) -> int:
    """The address of a tensor's storage: the same for every view of one allocation."""
    return int(tensor.untyped_storage().data_ptr())


def _storages(values: list[Any]) -> list[int]:
    return [_storage(v) for v in values if isinstance(v, torch.Tensor)]


def _by_storage(values: list[Any], names: list[str] | None, kind: str) -> dict[int, str]:
    """`kind` and name (or position) of each tensor among `values`, by its storage."""
    found = {}
    for i, value in enumerate(values):
        if isinstance(value, torch.Tensor):
            label = f"{kind} {names[i]!r}" if names and i < len(names) else f"{kind} {i}"
            found[_storage(value)] = label
    return found
