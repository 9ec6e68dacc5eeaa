"""Reading `neuron-profile` / `neuron-explorer view --output-format summary-json`, and latency
statistics.

The metrics are those of Neuron Explorer's Summary table (tools/neuron-explorer/
profile-schema-reference.rst): `total_time` in seconds (device time between the runtime's
start and stop notifications), `<engine>_engine_active_time_percent`,
`dma_active_time_percent`, `hbm_read_bytes`... Where they sit in the JSON differs:
neuron-profile prints an object with one key (a per-NEFF id such as "n_<hash>") whose value is
the flat metrics dict, `--output-format json` puts it at ["summary"][0], and neuron-explorer's
summary may be the flat dict itself (its shape is not documented and "may change between
versions", says its FAQ; AWS's NKI profiling skill reads a top-level `latency` in ms, taken
here when no `total_time` is given). Some versions print log lines before the JSON.

The `*_percent` fields are fractions in [0, 1] in neuron-profile's summaries despite their
names (AccelOpt's trn1 profiles: hfu_estimated_percent 0.36 for a kernel at 36%); Explorer's
schema gives their unit as percent. A summary with any `*_percent` above 1 is taken to be in
percent throughout and scaled, so that every counter accelopt stores is a fraction.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from typing import Any

__all__ = ["SummaryError", "best_latency", "latency_stats", "parse_summary"]


class SummaryError(ValueError):
    """The profiler printed something that is not a profile summary."""


def _has_time(metrics: Any) -> bool:
    return isinstance(metrics, dict) and ("total_time" in metrics or "latency" in metrics)


def _metrics(document: Any) -> dict[str, Any]:
    if isinstance(document, dict):
        summary = document.get("summary")
        if isinstance(summary, list) and summary and isinstance(summary[0], dict):
            return summary[0]
        if _has_time(document):
            return document
        for value in document.values():
            if _has_time(value):
                return dict(value)
    raise SummaryError("no metrics with a total_time (or latency) in the profile summary")


def parse_summary(text: str) -> dict[str, float]:
    """The numeric metrics of a summary, `total_time` in seconds, `*_percent` as fractions."""
    start = text.find("{")
    if start < 0:
        raise SummaryError(f"no JSON in the profiler's output: {text[:200]!r}")
    try:
        document, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as e:
        raise SummaryError(f"the profiler's summary is not valid JSON: {e}") from None
    metrics = {
        key: float(value)
        for key, value in _metrics(document).items()
        if isinstance(value, int | float) and not isinstance(value, bool)
    }
    if any(v > 1.0 for k, v in metrics.items() if k.endswith("_percent")):
        metrics = {k: v / 100.0 if k.endswith("_percent") else v for k, v in metrics.items()}
    if "total_time" not in metrics and "latency" in metrics:
        metrics["total_time"] = metrics["latency"] * 1e-3
    if metrics.get("total_time", 0.0) <= 0.0:
        raise SummaryError("the profile summary's total_time is missing or not positive")
    return metrics


def latency_stats(times_ms: list[float]) -> dict[str, float]:
    """Mean (the latency AccelOpt reports), min, max, median and relative spread, in ms."""
    if not times_ms:
        raise ValueError("no latency samples")
    low, high = min(times_ms), max(times_ms)
    return {
        "mean": statistics.fmean(times_ms),
        "min": low,
        "max": high,
        "p50": statistics.median(times_ms),
        "runs": float(len(times_ms)),
        "rel_spread": (high - low) / low,
    }


def best_latency(
    sample: Callable[[int], list[float]], retries: int, tolerance: float
) -> tuple[dict[str, float], int]:
    """Statistics of `sample(attempt)` (latencies in ms), sampled again while their relative
    spread exceeds `tolerance`, at most `retries` more times: the steadiest attempt's
    statistics and the number of attempts."""
    best: dict[str, float] | None = None
    attempts = 0
    for attempt in range(1 + retries):
        attempts = attempt + 1
        stats = latency_stats(sample(attempt))
        if best is None or stats["rel_spread"] < best["rel_spread"]:
            best = stats
        if stats["rel_spread"] <= tolerance:
            break
    assert best is not None
    return best, attempts
