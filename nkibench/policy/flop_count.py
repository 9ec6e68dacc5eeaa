"""Counting a NumPy reference's work, for the roofline of a task whose task.toml gives none.

`forward` runs once more on inputs wrapped in `Counted`, an ndarray subclass that tallies, as
AccelOpt's hand counts do:
- matmul flops: 2·M·N·K for every `@`, `np.matmul`, `np.dot`, `np.tensordot`, `np.einsum`
  contraction (einsum: 2 x the product of all index extents);
- vector flops: one per output element of every element-wise ufunc on two arrays or one
  array; an operation with a constant scalar operand (`x * 0.5`, `1 + e`) is not counted,
  because hardware fuses it into a neighbouring instruction; reductions count one per input
  element.
Compulsory bytes are the kernel's inputs plus the expected outputs, each moved once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["WorkCount", "compulsory_bytes", "count_forward"]

_REDUCTIONS = {
    np.sum: 1,
    np.mean: 1,
    np.max: 1,
    np.min: 1,
    np.amax: 1,
    np.amin: 1,
    np.prod: 1,
    np.cumsum: 1,
    np.cumprod: 1,
    np.var: 3,
    np.std: 3,
    np.argmax: 1,
    np.argmin: 1,
    np.linalg.norm: 2,
}
_ELEMENTWISE_FUNCTIONS = {np.clip: 2, np.where: 1, np.outer: 1}


@dataclass
class WorkCount:
    vec_flops: float = 0.0
    mm_flops: float = 0.0


_active: list[WorkCount] = []


def _plain(value: Any) -> Any:
    if isinstance(value, Counted):
        return value.view(np.ndarray)
    if isinstance(value, tuple | list):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _wrapped(value: Any) -> Any:
    if isinstance(value, np.ndarray) and not isinstance(value, Counted):
        return value.view(Counted)
    if isinstance(value, tuple):
        return tuple(_wrapped(v) for v in value)
    if isinstance(value, list):
        return [_wrapped(v) for v in value]
    return value


def _is_constant(value: Any) -> bool:
    return not isinstance(value, np.ndarray) or value.size == 1


def _einsum_flops(args: Sequence[Any]) -> float:
    spec = args[0] if isinstance(args[0], str) else None
    if spec is None:
        raise ValueError("np.einsum in the sublist form cannot be counted")
    inputs = spec.split("->")[0].split(",")
    extents: dict[str, int] = {}
    for letters, array in zip(inputs, args[1:], strict=False):
        for letter, size in zip(letters.replace("...", ""), np.shape(array), strict=False):
            extents[letter] = size
    return 2.0 * math.prod(extents.values())


class Counted(np.ndarray):
    """An ndarray that tallies the work done on it into the innermost `count_forward`."""

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = _plain(out)
        result = getattr(ufunc, method)(*_plain(inputs), **kwargs)
        tally = _active[-1] if _active else None
        if tally is not None:
            if ufunc is np.matmul:
                a, b = (np.asarray(x) for x in _plain(inputs[:2]))
                tally.mm_flops += 2.0 * np.size(result) * (a.shape[-1] if b.ndim else a.size)
            elif method in ("reduce", "accumulate", "reduceat"):
                tally.vec_flops += float(np.size(inputs[0]))
            elif method == "__call__" and not any(_is_constant(x) for x in inputs):
                first = result[0] if isinstance(result, tuple) else result
                tally.vec_flops += float(np.size(first))
        if out is not None:
            return out[0] if isinstance(out, tuple) and len(out) == 1 else out
        return _wrapped(result)

    def __array_function__(
        self, func: Callable[..., Any], types: Any, args: Any, kwargs: Any
    ) -> Any:
        plain_args, plain_kwargs = _plain(args), _plain(kwargs)
        result = func(*plain_args, **plain_kwargs)
        tally = _active[-1] if _active else None
        if tally is not None:
            if func in (np.dot, np.inner, np.tensordot, np.vdot):
                # a = free_a x C, b = C x free_b, result = free_a x free_b: 2·|result|·C
                sizes = np.size(plain_args[0]) * np.size(plain_args[1]) * np.size(result)
                tally.mm_flops += 2.0 * math.sqrt(sizes)
            elif func is np.einsum:
                tally.mm_flops += _einsum_flops(plain_args)
            elif func in _REDUCTIONS:
                tally.vec_flops += _REDUCTIONS[func] * float(np.size(plain_args[0]))
            elif func in _ELEMENTWISE_FUNCTIONS:
                tally.vec_flops += _ELEMENTWISE_FUNCTIONS[func] * float(np.size(result))
        return _wrapped(result)


def count_forward(forward: Callable[..., Any], inputs: Sequence[Any]) -> WorkCount:
    """Run `forward` on counting copies of `inputs` and return what it did."""
    tally = WorkCount()
    _active.append(tally)
    try:
        forward(*[np.array(x).view(Counted) if isinstance(x, np.ndarray) else x for x in inputs])
    finally:
        _active.pop()
    return tally


def compulsory_bytes(inputs: Sequence[Any], outputs: Sequence[Any]) -> float:
    return float(sum(x.nbytes for x in [*inputs, *outputs] if isinstance(x, np.ndarray)))
