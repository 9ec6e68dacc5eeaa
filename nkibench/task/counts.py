"""Counts reference.py computes from a seed's inputs, for the roofline's formulas.

Some work depends on the data, not the shapes: the causal (query, key) pairs over ragged
sequence lengths, the tokens routed to each expert. reference.py may define
`roofline_counts(...)`, called like forward() on a copy of each seed's inputs inside the
reference's sandboxed child, returning a dict of name -> number; task.toml's [roofline]
formulas may then use those names beside the shape constants. The counts are recorded per
seed in the reference phase's manifest; the roofline takes their mean over the seeds the
latency is measured on (nkibench.backend.Backend.times_every_seed), the work the measured
runs did on average.

The same checks run in the child (its error names reference.py) and on the parent's side (the
child's result is data).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

from nkibench.task.files import VALUE_NAME

__all__ = ["COUNTS_FUNCTION", "MAX_COUNTS", "checked_counts", "mean_counts"]

COUNTS_FUNCTION = "roofline_counts"
"""The function of reference.py that returns a seed's counts."""
MAX_COUNTS = 64
"""Names one call may return (a roofline needs a handful)."""


def _real(value: Any) -> float | None:
    """A plain or NumPy number, or a 0-d array or tensor holding one (`lengths.sum()`), as a
    float; None for anything else (a bool is no count)."""
    if getattr(value, "ndim", None) == 0 and callable(getattr(value, "item", None)):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    return float(value)


def checked_counts(value: Any) -> dict[str, float]:
    """`value` as counts: a dict of at most MAX_COUNTS identifiers to finite numbers >= 0.
    Raises ValueError naming what is wrong."""
    if not isinstance(value, dict):
        raise ValueError(f"returned a {type(value).__name__}, not a dict of name -> number")
    if len(value) > MAX_COUNTS:
        raise ValueError(f"returned {len(value)} counts, more than {MAX_COUNTS}")
    counts: dict[str, float] = {}
    for name, item in value.items():
        if not isinstance(name, str) or VALUE_NAME.fullmatch(name) is None:
            raise ValueError(
                f"{name!r} is not a name (a Python identifier of at most 128 characters)"
            )
        number = _real(item)
        if number is None or not (math.isfinite(number) and number >= 0):
            shown = " ".join(repr(item).split())[:80]  # an array's repr spans lines
            raise ValueError(f"{name} = {shown}: a count must be a finite number >= 0")
        counts[name] = number
    return counts


def mean_counts(per_seed: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """The mean of each count over the seeds (seed -> its counts), which must all give the
    same names (ValueError)."""
    if not per_seed:
        return {}
    first, *others = per_seed
    names = set(per_seed[first])
    for seed in others:
        if set(per_seed[seed]) != names:
            given, other = ", ".join(sorted(names)), ", ".join(sorted(per_seed[seed]))
            raise ValueError(
                f"seed {first} gives {given or 'no counts'} and seed {seed} "
                f"{other or 'none'}: return the same names for every seed"
            )
    return {
        name: math.fsum(c[name] for c in per_seed.values()) / len(per_seed)
        for name in sorted(names)
    }
