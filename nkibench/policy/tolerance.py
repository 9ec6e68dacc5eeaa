"""How one output is judged: task.toml's `[outputs.<name>]` (no NumPy here: the parent reads it
with the task, the comparison's child applies it in nkibench.policy.correctness).

Two rules, each on when its bound is given:
- accelopt's (AccelOpt's): relative L2 error in float64, ||out - ref|| <= rel_tol * ||ref||;
- FlashInfer-Bench's, per element: an element fails when |out - ref| > atol and
  |out - ref| > rtol * |ref| (both), and the output fails when fewer than `matched_ratio` of its
  elements pass (1.0: every element).
`dtype`, when given, is the dtype the kernel's output must have (the reference of a Triton task
computes in float32, so its own dtype says nothing).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["OUTPUT_DTYPES", "Tolerance"]

OUTPUT_DTYPES = {
    "float32": "float",
    "float16": "float",
    "bfloat16": "float",
    "float8_e4m3fn": "float",
    "float8_e5m2": "float",
    "int64": "int",
    "int32": "int",
    "int16": "int",
    "int8": "int",
    "uint8": "int",
    "bool": "int",
}
"""FlashInfer-Bench's dtypes (float4 aside) by NumPy's name, and whether they are floats: an
integer or boolean output is compared exactly unless task.toml says otherwise."""


@dataclass(frozen=True)
class Tolerance:
    rel_tol: float | None
    """The relative-L2 bound, or None where only the per-element rule judges."""
    atol: float | None = None
    rtol: float | None = None
    matched_ratio: float = 1.0
    dtype: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Tolerance:
        """A tolerance as the parent sent it (refused unless every bound is a sane number)."""
        tolerance = cls(
            rel_tol=_bound(data.get("rel_tol")),
            atol=_bound(data.get("atol")),
            rtol=_bound(data.get("rtol")),
            matched_ratio=float(data.get("matched_ratio", 1.0)),
            dtype=data.get("dtype"),
        )
        if tolerance.dtype is not None and tolerance.dtype not in OUTPUT_DTYPES:
            raise ValueError(f"dtype {tolerance.dtype!r}")
        if (tolerance.atol is None) != (tolerance.rtol is None):
            raise ValueError("atol and rtol go together")
        return tolerance

    @property
    def elementwise(self) -> bool:
        return self.atol is not None and self.rtol is not None

    def describe(self) -> str:
        parts = [] if self.rel_tol is None else [f"relative L2 ≤ {self.rel_tol:.1e}"]
        if self.elementwise:
            parts.append(f"atol {self.atol:g}, rtol {self.rtol:g}")
        return ", ".join(parts)


def _bound(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"bound {value!r}")
    if value < 0:
        raise ValueError(f"bound {value!r}")
    return float(value)
