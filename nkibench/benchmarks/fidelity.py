"""`accelopt bench fidelity`: the cost model against AccelOpt's measured trn1 profiles.

Run against a copy of AccelOpt's tree that the user fetches (zhang677/AccelOpt): its NKIBench
kernels are imported into a temporary folder, run under nkisim and estimated, and each
estimate is put beside the neuron-profile summary AccelOpt measured for the same kernel
(nkibench/benchmarks/accelopt_measured.py): latency, % of peak both ways, busy time of the
engines whose busy time neuron-profile reports, HBM traffic and spills. The optimized samples
(`samples/nki/`) are estimated against their baselines and compared with the measured
speedups.

Every estimate is labelled as one; the measured numbers are AccelOpt's, never ours. Tasks whose
measurements some constant of the cost model was fitted on (`FITTED_TASKS` in
nkibench.cost.tables) are summarised apart from the others, which are predictions.
"""

from __future__ import annotations

import math
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nkibench import python_ast
from nkibench.backends.nkisim.backend import NkisimBackend
from nkibench.benchmarks.accelopt_measured import ACCELOPT_TRN1, SAMPLES, MeasuredProfile
from nkibench.benchmarks.nki import rank_correlation
from nkibench.cost import MODEL_VERSION
from nkibench.cost.tables import FITTED_TASKS
from nkibench.dialects import detect_dialect
from nkibench.errors import NkiBenchError
from nkibench.harness import profile_kernel
from nkibench.policy.roofline import Work, pct_of_peak, roofline
from nkibench.result import KernelResult
from nkibench.suites import NKI_LEGACY_SUITE
from nkibench.task.importer import import_nkibench
from nkibench.task.spec import TaskSpec, load_task, with_imports_of

__all__ = ["ENGINES_MEASURED", "WITHIN", "run_fidelity_benchmark", "summarise"]

ENGINES_MEASURED = ("vector", "scalar", "gpsimd")
"""The engines whose busy time neuron-profile's summary gives (as active-time fractions)."""
WITHIN = (0.67, 1.5)
"""The band of estimate / measurement that counts as close."""
ENGINE_FACTOR = 2.0
"""An engine's estimated busy time is close when within this factor of the measured one."""
NEGLIGIBLE_BUSY_MS = 0.05
"""Busy times both under this are equal for the 2x test (an idle engine's 0.001 against 0)."""


def _roofline_work(task: TaskSpec, measured: MeasuredProfile) -> Work | None:
    """AccelOpt's roofline counts for the task: our suite's task.toml formulas (the same
    computations; tests/nkibench/test_roofline.py checks that they give back AccelOpt's % of
    peak) at the measured shape, or None where the suite lacks the task."""
    ours = NKI_LEGACY_SUITE / task.name
    if not (ours / "task.toml").is_file():
        return None
    counts = load_task(ours).roofline_counts("full", overrides=measured.shape)
    return Work(counts["vec_flops"], counts["mm_flops"], counts["bytes"], "task.toml")


def _ratio(estimated: float | None, measured: float | None) -> float | None:
    if estimated is None or not measured:
        return None
    return estimated / measured


def _engine_rows(result: KernelResult, measured: MeasuredProfile) -> dict[str, dict[str, Any]]:
    rows = {}
    for engine in ENGINES_MEASURED:
        estimated = result.engines.get(engine, {}).get("busy_ms", 0.0)
        actual = measured.busy_ms(engine)
        negligible = max(estimated, actual) < NEGLIGIBLE_BUSY_MS
        close = negligible or (
            estimated > 0
            and actual > 0
            and 1 / ENGINE_FACTOR <= estimated / actual <= ENGINE_FACTOR
        )
        rows[engine] = {"estimated_ms": estimated, "measured_ms": actual, "within_2x": close}
    return rows


def _row(task: TaskSpec, result: KernelResult, work: Work | None) -> dict[str, Any]:
    measured = ACCELOPT_TRN1[task.name]
    counters = result.counters
    line = roofline(work, "trn1") if work is not None else None
    estimated_ms = result.latency_ms if result.correct else None
    return {
        "task": task.name,
        "fitted": task.name in FITTED_TASKS,
        "correct": result.correct,
        "message": result.message,
        "estimated_ms": estimated_ms,
        "measured_ms": measured.latency_ms,
        "ratio": _ratio(estimated_ms, measured.latency_ms),
        "pct_of_peak_estimated": (
            pct_of_peak(line.seconds, estimated_ms * 1e-3) if line and estimated_ms else None
        ),
        "pct_of_peak_measured": (
            pct_of_peak(line.seconds, measured.latency_ms * 1e-3) if line else None
        ),
        "bound_by": result.bound_by,
        "engines": _engine_rows(result, measured),
        "hbm_read_bytes": {
            "estimated": counters.get("hbm_read_bytes"),
            "measured": measured.hbm_read_bytes,
        },
        "hbm_write_bytes": {
            "estimated": counters.get("hbm_write_bytes"),
            "measured": measured.hbm_write_bytes,
        },
        "spill_bytes": {
            "estimated": counters.get("spill_save_bytes", 0.0)
            + counters.get("spill_reload_bytes", 0.0),
            "measured": measured.spill_save_bytes + measured.spill_reload_bytes,
        },
    }


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The agreement of estimates and measurements over `rows` (those with an estimate)."""
    rated = [r for r in rows if r["ratio"] is not None]
    ratios = [r["ratio"] for r in rated]
    low, high = WITHIN
    summary: dict[str, Any] = {
        "tasks": len(rated),
        "spearman": None,
        "spearman_pct_of_peak": None,
        "geomean_ratio": statistics.geometric_mean(ratios) if ratios else None,
        "geo_std": (math.exp(statistics.pstdev([math.log(r) for r in ratios])) if ratios else None),
        "within_0_67_1_5": sum(low <= r <= high for r in ratios),
        "engines_within_2x": sum(
            r["engines"]["vector"]["within_2x"] and r["engines"]["scalar"]["within_2x"]
            for r in rated
        ),
    }
    if len(rated) >= 2:
        summary["spearman"] = rank_correlation(
            [r["estimated_ms"] for r in rated], [r["measured_ms"] for r in rated]
        )
        peaks = [r for r in rated if r["pct_of_peak_estimated"] is not None]
        if len(peaks) >= 2:
            summary["spearman_pct_of_peak"] = rank_correlation(
                [r["pct_of_peak_estimated"] for r in peaks],
                [r["pct_of_peak_measured"] for r in peaks],
            )
    return summary


def _profile(task: TaskSpec, shapes: str, target: str) -> KernelResult:
    return profile_kernel(
        task,
        backend=NkisimBackend(),
        shapes=shapes,
        target=target,
        seeds=(0,),
        order_check=False,
    )


def _sample_rows(
    samples: Path,
    tasks: dict[str, TaskSpec],
    rows: dict[str, dict[str, Any]],
    shapes: str,
    target: str,
) -> list[dict[str, Any]]:
    found = []
    for file, sample in sorted(SAMPLES.items()):
        path = samples / file
        task = tasks.get(sample.task)
        baseline = rows.get(sample.task, {}).get("estimated_ms")
        if not path.is_file() or task is None:
            continue
        # AccelOpt's samples are bodies that its profiling scripts prefix with the imports
        source = with_imports_of(path.read_text(encoding="utf-8"), task.kernel_source)
        dialect = detect_dialect(python_ast.parse(source, str(path)), str(path)) or task.dialect
        variant = task.with_kernel(source, dialect)
        result = _profile(variant, shapes, target)
        estimated = result.latency_ms if result.correct else None
        found.append(
            {
                "sample": file,
                "task": sample.task,
                "correct": result.correct,
                "message": result.message,
                "estimated_ms": estimated,
                "measured_ms": sample.latency_ms,
                "estimated_speedup": baseline / estimated if baseline and estimated else None,
                "measured_speedup": sample.speedup,
            }
        )
    return found


def run_fidelity_benchmark(
    nkibench: Path,
    *,
    samples: Path | None = None,
    target: str = "trn1",
    shapes: str = "full",
    names: list[str] | None = None,
) -> dict[str, Any]:
    """Estimate AccelOpt's NKIBench kernels (and its optimized samples) and compare."""
    if not (nkibench / "summary.json").is_file():
        raise NkiBenchError(f"{nkibench}: no summary.json; pass AccelOpt's NKIBench folder")
    rows: dict[str, dict[str, Any]] = {}
    tasks: dict[str, TaskSpec] = {}
    with tempfile.TemporaryDirectory(prefix="accelopt-fidelity-") as scratch:
        for imported in import_nkibench(nkibench, Path(scratch)):
            if imported.error is not None:
                raise NkiBenchError(f"{imported.name}: {imported.error}")
            if imported.name not in ACCELOPT_TRN1 or (names and imported.name not in names):
                continue
            task = load_task(imported.path)
            measured = ACCELOPT_TRN1[task.name]
            values = task.shape_values("full")
            shape = {k: values.get(k) for k in measured.shape}
            if shape != measured.shape:
                raise NkiBenchError(
                    f"{nkibench}: {task.name} runs at {shape}, AccelOpt measured it at "
                    f"{measured.shape}; the measurements compare only at their own shape"
                )
            tasks[task.name] = task
            rows[task.name] = _row(
                task, _profile(task, shapes, target), _roofline_work(task, measured)
            )
        sampled = _sample_rows(samples, tasks, rows, shapes, target) if samples else []
    ordered = [rows[name] for name in sorted(rows)]
    return {
        "model_version": MODEL_VERSION,
        "target": target,
        "shapes": shapes,
        "latency_kind": {"estimated": "cost model", "measured": "AccelOpt, trn1 hardware"},
        "tasks": ordered,
        "summary": {
            **summarise(ordered),
            "fitted": summarise([r for r in ordered if r["fitted"]]),
            "predicted": summarise([r for r in ordered if not r["fitted"]]),
            "samples": sampled,
        },
    }
