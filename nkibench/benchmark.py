"""`accelopt bench nkisim`: how fast nkisim checks the suite, against NumPy's own forward.

For each task: one kernel run's interpreter wall time, the reference forward's wall time on
the same inputs (both single-threaded, in their sandboxed children), their ratio, and the
time of the whole correctness check (every seed, plus the affine-loop order check).
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from nkibench.harness import check_kernel
from nkibench.task import load_task

__all__ = ["NKISIM_TARGETS", "SUITE", "run_nkisim_benchmark", "suite_tasks"]

SUITE = Path(__file__).with_name("suite")
NKISIM_TARGETS = {
    "median_ratio": ("<=", 3.0),
    "worst_ratio": ("<=", 10.0),
    "total_check_s": ("<", 900.0),
}
"""Targets of issue 3 at full shapes on the 2-core development machine."""


def suite_tasks(names: list[str] | None = None) -> list[Path]:
    folders = sorted(p for p in SUITE.iterdir() if (p / "kernel.py").is_file())
    if names:
        known = {p.name: p for p in folders}
        missing = [n for n in names if n not in known]
        if missing:
            raise ValueError(f"no suite task named {', '.join(missing)}")
        folders = [known[n] for n in names]
    return folders


def run_nkisim_benchmark(
    *, shapes: str = "full", names: list[str] | None = None, target: str = "trn1"
) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    started = time.monotonic()
    for folder in suite_tasks(names):
        task = load_task(folder)
        result = check_kernel(task, shapes=shapes, target=target)
        ratio = (
            result.kernel_seconds / result.forward_seconds
            if result.kernel_seconds and result.forward_seconds
            else None
        )
        rows.append(
            {
                "task": task.name,
                "correct": result.correct,
                "error_kind": result.error_kind,
                "message": result.message,
                "nkisim_s": result.kernel_seconds,
                "numpy_s": result.forward_seconds,
                "ratio": ratio,
                "check_s": result.duration_s,
                "instructions": result.instructions,
                "seeds": len(result.seeds),
            }
        )
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
    return {
        "shapes": shapes,
        "target": target,
        "tasks": rows,
        "all_correct": all(r["correct"] for r in rows),
        "median_ratio": statistics.median(ratios) if ratios else None,
        "worst_ratio": max(ratios) if ratios else None,
        "total_check_s": time.monotonic() - started,
        "host": {"cpus": os.cpu_count(), "python": platform.python_version()},
    }
