"""A phase function for the breakdown's tests: a child whose own account of its time was
tampered with before it was reported, as code that ran in the child may do."""

from __future__ import annotations

from typing import Any

from nkibench.sandbox import stopwatch


def garbage_phase(request: dict[str, Any]) -> dict[str, Any]:
    spans: dict[str, Any] = stopwatch._spans  # what a kernel could reach
    garbage = request["garbage"]
    if garbage == "unknown span":
        spans["kernel_was_free"] = 0.0
    elif garbage == "negative":
        spans["compile"] = -5.0
    elif garbage == "longer than the child":
        spans["timed_runs"] = 1e9
    elif garbage == "oversized":
        spans.update({f"span_{i}": 1.0 for i in range(100_000)})
    elif garbage == "not seconds":
        spans["compile"] = "fast"
    return {"ok": True, "garbage": garbage}
