"""Reading `neuron-profile view --output-format summary-json`, and latency statistics.

The summary is a JSON object with one key (a per-NEFF id such as "n_<hash>", not a fixed
name) whose value is the flat metrics dict; `--output-format json` puts the same dict at
["summary"][0]. Some versions print log lines before the JSON. `total_time` is in seconds;
the `*_percent` fields are fractions in [0, 1] despite their names (AccelOpt's trn1 profiles:
hfu_estimated_percent 0.36 for a kernel at 36%); a value above 1 is taken to be a percent and
scaled, so that every counter accelopt stores is a fraction.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

__all__ = ["SummaryError", "latency_stats", "parse_summary"]


class SummaryError(ValueError):
    """neuron-profile printed something that is not a profile summary."""


def _metrics(document: Any) -> dict[str, Any]:
    if isinstance(document, dict):
        summary = document.get("summary")
        if isinstance(summary, list) and summary and isinstance(summary[0], dict):
            return summary[0]
        if "total_time" in document:
            return document
        for value in document.values():
            if isinstance(value, dict) and "total_time" in value:
                return value
    raise SummaryError("no metrics with a total_time in the profile summary")


def parse_summary(text: str) -> dict[str, float]:
    """The numeric metrics of a summary, `*_percent` as fractions."""
    start = text.find("{")
    if start < 0:
        raise SummaryError(f"no JSON in neuron-profile's output: {text[:200]!r}")
    try:
        document, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as e:
        raise SummaryError(f"neuron-profile's summary is not valid JSON: {e}") from None
    metrics: dict[str, float] = {}
    for key, value in _metrics(document).items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        number = float(value)
        if key.endswith("_percent") and number > 1.0:
            number /= 100.0
        metrics[key] = number
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
