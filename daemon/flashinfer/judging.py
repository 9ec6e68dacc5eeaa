"""How FlashInfer-Bench judges a definition's outputs, read from flashinfer_bench itself: the
evaluator its registry picks for the definition, and its benchmark's default tolerances
(BenchmarkConfig's field defaults), so that an imported task is held to what its traces were.

A definition FlashInfer-Bench judges by the distribution of its outputs (sampling) cannot be
an accelopt task, whose check compares outputs with the reference's."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from flashinfer_bench.bench import BenchmarkConfig
from flashinfer_bench.bench.evaluators import (
    LowBitEvaluator,
    SamplingEvaluator,
    resolve_evaluator,
)

from daemon.flashinfer.shapes import Unconvertible

__all__ = ["Judging", "judging"]

LOWBIT_MATCHED_RATIO = 0.95
"""The share of elements FlashInfer-Bench's low-bit evaluator requires where its config sets
none (bench/evaluators/lowbit.py)."""


@dataclass(frozen=True)
class Judging:
    atol: float
    rtol: float
    matched_ratio: float | None
    """None: every element must pass."""


def judging(definition: Any) -> Judging:
    try:
        evaluator = resolve_evaluator(definition)
    except ValueError as e:
        raise Unconvertible(f"FlashInfer-Bench has no one evaluator for it: {e}") from None
    if evaluator is SamplingEvaluator:
        raise Unconvertible(
            "FlashInfer-Bench judges it by the distribution of its samples, and accelopt's "
            "check compares outputs with the reference's"
        )
    defaults: dict[str, Any] = {f.name: f.default for f in fields(BenchmarkConfig)}
    ratio = defaults["required_matched_ratio"]
    if ratio is None and evaluator is LowBitEvaluator:
        ratio = LOWBIT_MATCHED_RATIO
    return Judging(float(defaults["atol"]), float(defaults["rtol"]), ratio)
