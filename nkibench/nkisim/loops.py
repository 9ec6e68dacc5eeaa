"""Loop iterators of legacy NKI. All run sequentially, as the hardware executes them.

`affine_range` promises independent iterations. nkisim can run chosen affine loops backwards
(`Config.reverse_affine`): a kernel whose result changes is carrying a dependency through a
loop that promised none, which the Neuron compiler may reorder or pipeline into wrong results.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from nkibench.nkisim.errors import UnsupportedApi
from nkibench.nkisim.machine import current

__all__ = ["LoopIndex", "affine_range", "sequential_range", "static_range"]


class LoopIndex(int):
    """A loop variable: an int that also knows whether it is its loop's first iteration."""

    first: bool


def _bounds(args: tuple[Any, ...], api: str) -> range:
    if not 1 <= len(args) <= 3 or not all(
        isinstance(a, int) and not isinstance(a, bool) for a in args
    ):
        raise UnsupportedApi(f"{api} takes integer (stop), (start, stop) or (start, stop, step)")
    return range(*args)


def _iterate(values: range | list[int], *, backwards: bool) -> Iterator[LoopIndex]:
    order = list(reversed(values)) if backwards else values
    for position, value in enumerate(order):
        index = LoopIndex(value)
        index.first = position == 0
        yield index


def affine_range(*args: Any, **_hints: Any) -> Iterator[LoopIndex]:
    machine = current()
    line = machine.line()
    machine.affine_lines.add(line)
    lines = machine.config.reverse_affine
    backwards = lines is not None and (not lines or line in lines)
    return _iterate(_bounds(args, "nl.affine_range"), backwards=backwards)


def sequential_range(*args: Any, **_hints: Any) -> Iterator[LoopIndex]:
    return _iterate(_bounds(args, "nl.sequential_range"), backwards=False)


def static_range(*args: Any, **_hints: Any) -> Iterator[LoopIndex]:
    return _iterate(_bounds(args, "nl.static_range"), backwards=False)
