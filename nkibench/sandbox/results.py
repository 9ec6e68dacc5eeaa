"""A phase's result, as the parent reads it: data from a child that may have run anything.

The child writes JSON on its result channel (nkibench.sandbox.child), but task or kernel code
ran in that process and may have written something else, or nothing: an empty, truncated,
oversized or malformed result, or one whose fields have the wrong types, is a MalformedResult,
which the harness turns into a typed failure of the phase that wrote it. The checks here are
the shape of what the parent reads; what it believes is decided elsewhere (a kernel's own
result judges nothing: the comparison and the estimate come from other children).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

from nkibench.errors import CHILD_ERROR_KINDS
from nkibench.sandbox.stopwatch import SPANS
from nkibench.sandbox.values import NAME
from nkibench.task.counts import checked_counts

__all__ = [
    "MalformedResult",
    "autotuned_shape",
    "check_compare",
    "check_kernel",
    "check_manifest",
    "check_measured",
    "check_timings",
    "decode",
]

MAX_OUTPUTS = 1024
MAX_LAUNCH_RECORDS = 1000
"""Guarded runs a timing may report the launches of (it makes ten)."""
LATENCY_STATS = ("p50", "mean", "min", "max", "runs", "block_p50_a", "block_p50_b", "rel_spread")
MAX_AUTOTUNED = 64
"""Autotuned kernels a kernel phase may report (16 configs each, 300 characters a config)."""
ARRAY_FILE = re.compile(r"(input|expected)_\d{1,4}\.npy")


class MalformedResult(Exception):
    """A result the parent cannot use; the message says what is wrong with it."""


def decode(raw: bytes | None, limit: int) -> dict[str, Any]:
    """The result object, with `ok` a boolean and, on failure, a known kind and a message."""
    if raw is None:
        raise MalformedResult(f"a result larger than {limit // (1024 * 1024)} MiB")
    if not raw.strip():
        raise MalformedResult("an empty result")
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
        problem = f"{type(e).__name__}: {e}"[:200]
        raise MalformedResult(f"a result that is not JSON ({problem})") from None
    if not isinstance(value, dict) or not isinstance(value.get("ok"), bool):
        raise MalformedResult("a result without a boolean `ok`")
    if not value["ok"]:
        _failure(value, "failure", value.get("kind", "task"))
    return value


def _failure(value: dict[str, Any], what: str, kind: Any) -> None:
    """A failed phase's result (`what` names it in the problem): a known kind, a message, and
    a line, if any, that is a number."""
    _need(kind in CHILD_ERROR_KINDS, f"a {what} of an unknown kind")
    _need(isinstance(value.get("message"), str), f"a {what} without a message")
    line = value.get("line")
    _need(line is None or _integer(line), f"a {what} whose line is not a number")


def _need(condition: bool, problem: str) -> None:
    if not condition:
        raise MalformedResult(problem)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _seeds(result: dict[str, Any], seeds: Iterable[int]) -> dict[str, Any]:
    entries = result.get("seeds")
    if not isinstance(entries, dict):
        raise MalformedResult("a result without per-seed entries")
    for seed in seeds:
        _need(isinstance(entries.get(str(seed)), dict), f"no entry for seed {seed}")
    return dict(entries)


def _value_spec(spec: Any, where: str) -> None:
    _need(isinstance(spec, dict), f"{where}: not a value")
    if spec.get("kind") == "scalar":
        value = spec.get("value")
        _need(isinstance(value, bool) or _number(value), f"{where}: not a number")
        return
    _need(spec.get("kind") == "array", f"{where}: neither an array nor a number")
    _need(
        isinstance(spec.get("file"), str) and ARRAY_FILE.fullmatch(spec["file"]) is not None,
        f"{where}: not an array file name of the phase's own",
    )
    shape = spec.get("shape")
    _need(
        isinstance(shape, list) and len(shape) <= 16 and all(_integer(d) for d in shape),
        f"{where}: not a shape",
    )
    _need(isinstance(spec.get("dtype"), str) and len(spec["dtype"]) <= 32, f"{where}: no dtype")


def _names(names: Any, count: int, where: str) -> None:
    """Names of a seed's inputs or outputs: one per value, each a distinct identifier."""
    _need(
        isinstance(names, list)
        and len(names) == count
        and all(isinstance(n, str) and NAME.fullmatch(n) for n in names)
        and len(set(names)) == count,
        f"{where}: not one distinct name (an identifier) per value",
    )


def check_manifest(result: dict[str, Any], seeds: Iterable[int]) -> dict[str, Any]:
    """A reference phase's per-seed inputs and expected outputs, each a value the other phases
    can read back (nkibench.sandbox.arrays.value_spec), their names where they are named
    (nkibench.sandbox.values), its forward time, and the seed's roofline counts where
    reference.py computes them (nkibench.task.counts)."""
    entries = _seeds(result, seeds)
    for seed, entry in entries.items():
        for key in ("inputs", "expected"):
            values = entry.get(key)
            _need(isinstance(values, list) and len(values) <= MAX_OUTPUTS, f"seed {seed}: {key}")
            for i, spec in enumerate(values):
                _value_spec(spec, f"seed {seed}: {key} {i}")
        for key, counted in (("input_names", "inputs"), ("output_names", "expected")):
            if key in entry:
                _names(entry[key], len(entry[counted]), f"seed {seed}: {key}")
        _need(_number(entry.get("forward_s", 0.0)), f"seed {seed}: forward_s")
        if "counts" in entry:
            try:
                checked_counts(entry["counts"])
            except ValueError as e:
                raise MalformedResult(f"seed {seed}: counts: {e}") from None
    return entries


def check_kernel(result: dict[str, Any], seeds: Iterable[int]) -> dict[str, Any]:
    """A kernel phase's per-seed counts (none of which is believed as a verdict)."""
    entries = _seeds(result, seeds)
    for seed, entry in entries.items():
        outputs = entry.get("outputs")
        _need(_integer(outputs) and outputs <= MAX_OUTPUTS, f"seed {seed}: output count")
        _need(_number(entry.get("kernel_s", 0.0)), f"seed {seed}: kernel_s")
        never = entry.get("never_written", [])
        _need(isinstance(never, list) and all(_integer(n) for n in never), f"seed {seed}: counts")
        _need(_integer(entry.get("launches", 0)), f"seed {seed}: launches")
    _need(autotuned_shape(result.get("autotuned", {})), "autotuned")
    warnings = result.get("warnings", [])
    _need(isinstance(warnings, list) and all(isinstance(w, str) for w in warnings), "warnings")
    capacity = result.get("capacity", {})
    _need(isinstance(capacity, dict) and all(_number(v) for v in capacity.values()), "capacity")
    return entries


def autotuned_shape(value: Any) -> bool:
    """Autotuned kernel's name → the configs it used, as text (bounded)."""
    return (
        isinstance(value, dict)
        and len(value) <= MAX_AUTOTUNED
        and all(
            isinstance(name, str)
            and len(name) <= 100
            and isinstance(configs, list)
            and len(configs) <= 16
            and all(isinstance(c, str) and len(c) <= 300 for c in configs)
            for name, configs in value.items()
        )
    )


def check_compare(result: dict[str, Any], seeds: Iterable[int]) -> dict[str, Any]:
    """The comparison's verdict per seed (it stops at the first failing seed)."""
    entries = result.get("seeds")
    if not isinstance(entries, dict):
        raise MalformedResult("a comparison without verdicts")
    for seed in seeds:
        verdict = entries.get(str(seed))
        if verdict is None:
            continue  # after a failing seed
        _need(isinstance(verdict, dict), f"seed {seed}: not a verdict")
        _need(isinstance(verdict.get("correct"), bool), f"seed {seed}: no verdict")
        error = verdict.get("max_rel_l2")
        _need(error is None or isinstance(error, int | float), f"seed {seed}: max_rel_l2")
        _need(isinstance(verdict.get("message"), str), f"seed {seed}: message")
        never = verdict.get("never_written", [])
        _need(isinstance(never, list) and all(_integer(n) for n in never), f"seed {seed}: counts")
    return dict(entries)


def check_measured(result: Any, fresh_seeds: Iterable[int] = ()) -> dict[str, Any]:
    """A GPU timing's result (the kernel child's `measured`, or the re-verification's child):
    a failure of a known kind with its message, or the latency's statistics, the synchronised
    and launch times, the launches of the guarded runs, and where asked, the eager latency and
    the re-verification's latency and per-seed counts (`fresh_seeds`). A number here is the
    child's measurement, bounded and typed; what it means is the parent's to decide."""
    _need(isinstance(result, dict) and isinstance(result.get("ok"), bool), "a timing without `ok`")
    checked: dict[str, Any] = result
    if not checked["ok"]:
        _failure(checked, "timing failure", checked.get("kind"))  # a kind it must name
        return checked
    _latency(result.get("latency"), "latency")
    for key in ("synchronised_ms", "launch_overhead_ms"):
        _need(_number(result.get(key)), key)
    launches = result.get("launches")
    _need(
        isinstance(launches, list)
        and len(launches) <= MAX_LAUNCH_RECORDS
        and all(_integer(n) for n in launches),
        "launches",
    )
    if "eager" in result:
        _latency(result["eager"], "eager")
    _need(autotuned_shape(result.get("autotuned", {})), "autotuned")
    chosen = list(fresh_seeds)
    if chosen:
        fresh = result.get("fresh")
        _need(isinstance(fresh, dict), "no re-verification")
        _latency(fresh.get("latency"), "fresh latency")
        check_kernel(fresh, chosen)
    return checked


def _latency(stats: Any, where: str) -> None:
    _need(
        isinstance(stats, dict) and all(_number(stats.get(key)) for key in LATENCY_STATS),
        f"{where}: not the timer's statistics",
    )


TIMING_SLACK_S = 1.0
"""How far a child's account of its time may exceed its life as the parent measured it
(clock reads on either side of the pipes) before the account is dropped as untrue."""


def check_timings(value: Any, life_s: float) -> tuple[dict[str, float], float]:
    """A child's own account of its time (nkibench.sandbox.stopwatch.report): seconds per
    known span and its total, each finite, none negative, the spans' sum within the total and
    the total within `life_s`, the child's life from spawn to exit as the parent measured it.
    Diagnostics, never a verdict: the caller drops an account that is a MalformedResult."""
    _need(isinstance(value, dict) and set(value) == {"spans", "total_s"}, "not a timing report")
    spans, total = value["spans"], value["total_s"]
    _need(isinstance(spans, dict) and len(spans) <= len(SPANS), "spans: not a small mapping")
    unknown = sorted(str(k)[:40] for k in spans if k not in SPANS)
    _need(not unknown, f"spans: unknown span(s) {unknown[:3]}")
    _need(all(_number(v) and v >= 0 for v in spans.values()), "spans: not seconds")
    _need(_number(total) and total >= 0, "total_s: not seconds")
    _need(total <= life_s + TIMING_SLACK_S, f"total_s {total:.3g} longer than the child lived")
    _need(sum(spans.values()) <= total + 1e-3, "spans longer than the child's total")
    return {k: float(spans[k]) for k in SPANS if k in spans}, float(total)
