"""A kernel's result over a task's workloads, from its result on each (pure: results in, a
result out).

Correct only where correct on every workload checked; the first that failed is named in the
message. The latency is the geometric mean of the workloads' latencies: the ratio of two
kernels' means is then the geometric mean of their per-workload speed-ups, so that no
workload weighs more for being the slowest (an arithmetic mean would be decided by the
largest shapes alone). The % of peak is the geometric mean of the workloads' too (each is the
roofline's time over that latency), and so is each latency statistic. What describes one run
of the kernel (its counters, roofline, bound, hot lines, the estimate beside a measurement) is
the slowest workload's: where the time goes is where the kernel is worth improving.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from nkibench.errors import recordable
from nkibench.result import KernelResult, WorkloadOutcome

__all__ = ["WorkloadRun", "combine", "geometric_mean", "outcome"]


@dataclass(frozen=True)
class WorkloadRun:
    """A kernel's result on one workload (its shape set)."""

    name: str
    uuid: str
    result: KernelResult


SUMMED = frozenset({"runs"})
"""Latency statistics that add up over the workloads."""
WORST = frozenset({"rel_spread"})
"""Latency statistics whose worst (largest) workload's value stands for all."""


def geometric_mean(values: Sequence[float]) -> float:
    """exp(mean(log v)) of positive, finite values (a latency never is otherwise: the harness
    refuses it first)."""
    if not values or any(not (math.isfinite(v) and v > 0) for v in values):
        raise ValueError(f"a geometric mean needs positive, finite values, not {list(values)}")
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))


def outcome(run: WorkloadRun) -> WorkloadOutcome:
    result = run.result
    return WorkloadOutcome(
        name=run.name,
        uuid=run.uuid,
        correct=result.correct,
        latency_ms=result.latency_ms,
        latency_kind=result.latency_kind,
        error_kind=result.error_kind,
        max_rel_l2=result.max_rel_l2,
        pct_of_peak=result.pct_of_peak,
    )


def _label(run: WorkloadRun) -> str:
    return f"workload {run.name} (uuid {run.uuid[:36]})"


def combine(into: KernelResult, runs: Sequence[WorkloadRun]) -> KernelResult:
    """`into` (the result over every workload, its task, backend and shapes set) filled
    from `runs`, the workloads' results in order, the last of them the first that failed."""
    results = [run.result for run in runs]
    into.workloads = [outcome(run) for run in runs]
    into.compiled = bool(runs) and all(r.compiled for r in results)
    into.correct = bool(runs) and all(r.correct for r in results)
    errors = [r.max_rel_l2 for r in results if r.max_rel_l2 is not None]
    into.max_rel_l2 = max(errors) if errors else None
    into.seeds = list(dict.fromkeys(seed for r in results for seed in r.seeds))
    into.warnings = [f"{run.name}: {w}" for run in runs for w in run.result.warnings]
    into.kernel_seconds = _total([r.kernel_seconds for r in results])
    into.forward_seconds = _total([r.forward_seconds for r in results])
    into.schedule_seconds = _total([r.schedule_seconds for r in results])
    into.duration_s = math.fsum(r.duration_s for r in results)
    for result in results:
        for kernel, configs in result.autotuned.items():
            known = into.autotuned.setdefault(kernel, [])
            known += [c for c in configs if c not in known]
    if results:
        into.fingerprint = dict(results[0].fingerprint)
        into.dialect = results[0].dialect
    failed = next((run for run in runs if not run.result.correct), None)
    if failed is not None:
        into.error_kind = failed.result.error_kind
        into.message = recordable(f"{_label(failed)}: {failed.result.message}")
        into.line = failed.result.line
        return into
    _latency(into, runs)
    return into


def _total(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return math.fsum(known) if known else None


def _statistics(stats: Sequence[dict[str, float]]) -> dict[str, float]:
    """The latency statistics over the workloads: the runs timed add up, the blocks' spread is
    the worst workload's (a measurement is as steady as its least steady part), and each
    other statistic (p50, mean, min, max...) is the geometric mean, as the latency is."""
    shared = set.intersection(*(set(s) for s in stats))
    combined = {}
    for key in sorted(shared):
        values = [s[key] for s in stats]
        if not all(math.isfinite(v) for v in values):
            continue
        if key in SUMMED:
            combined[key] = math.fsum(values)
        elif key in WORST:
            combined[key] = max(values)
        elif all(v > 0 for v in values):
            combined[key] = geometric_mean(values)
    return combined


def _latency(into: KernelResult, runs: Sequence[WorkloadRun]) -> None:
    """The geometric means, where every workload has a latency of one kind."""
    results = [run.result for run in runs]
    latencies = [r.latency_ms for r in results]
    kinds = {r.latency_kind for r in results}
    if not results or any(v is None for v in latencies) or len(kinds) != 1:
        return  # a check, or no profile of every workload: no latency over them all
    into.latency_ms = geometric_mean([v for v in latencies if v is not None])
    into.latency_kind = results[0].latency_kind
    pcts = [r.pct_of_peak for r in results]
    if all(p is not None and p > 0 for p in pcts):
        into.pct_of_peak = geometric_mean([p for p in pcts if p is not None])
    into.latency_stats = _statistics([r.latency_stats for r in results])
    slowest = max(runs, key=lambda run: run.result.latency_ms or 0.0)
    found = slowest.result
    into.model_version = found.model_version
    into.roofline = found.roofline
    into.bound_by = found.bound_by
    into.counters = dict(found.counters)
    into.engines = dict(found.engines)
    into.hot_lines = list(found.hot_lines)
    into.estimate = found.estimate
    into.instructions = found.instructions
    into.engine_counts = dict(found.engine_counts)
    into.capacity = dict(found.capacity)
    if len(runs) > 1:
        into.warnings.append(
            f"the latency is the geometric mean over {len(runs)} workloads; the counters, "
            f"roofline and hot lines are {_label(slowest)}'s, the slowest "
            f"({found.latency_ms:.4g} ms)"
        )
