"""Checking a kernel against its task: the parent side, which never runs task or kernel code.

Three sandboxed children do the work (see nkibench.child): the reference makes inputs and
expected outputs per seed, the kernel runs under nkisim, and the comparison applies the task's
output transform and AccelOpt's relative-L2 rule. Correctness stops at the first failing seed.
"""

from __future__ import annotations

import json
import signal
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from nkibench.errors import ErrorKind
from nkibench.sandbox import ChildOutcome, Limits, run_child
from nkibench.static_check import check_source
from nkibench.task import KERNEL_FILE, TaskSpec

__all__ = ["CheckResult", "check_kernel"]

CHILD = "nkibench.child"


@dataclass
class CheckResult:
    """The outcome of checking one kernel on one task (the JSON of `accelopt check`)."""

    task: str
    backend: str
    shapes: str
    compiled: bool
    correct: bool
    error_kind: ErrorKind | None
    message: str
    max_rel_l2: float | None = None
    seeds: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    line: int | None = None
    kernel_seconds: float | None = None
    """nkisim wall time of the first seed's run (interpreter time, not a latency)."""
    forward_seconds: float | None = None
    """NumPy reference forward() time on the same inputs."""
    instructions: int | None = None
    engine_counts: dict[str, int] = field(default_factory=dict)
    capacity: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class _Failure(Exception):
    def __init__(self, kind: ErrorKind, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.kind, self.message, self.line = kind, message, line


def _child(kind: str, request: dict[str, Any], workdir: Path, limits: Limits) -> dict[str, Any]:
    """Run one phase; a child that died without a result becomes a typed failure."""
    result_path = workdir / f"{kind}.result.json"
    outcome = run_child(
        CHILD,
        {**request, "kind": kind, "result_path": str(result_path)},
        workdir=workdir / kind,
        limits=limits,
    )
    if result_path.exists():
        result: dict[str, Any] = json.loads(result_path.read_text())
        return result
    raise _Failure(*_death(kind, outcome, limits))


def _death(kind: str, outcome: ChildOutcome, limits: Limits) -> tuple[ErrorKind, str]:
    who = "the kernel" if kind == "kernel" else f"the task's reference code ({kind})"
    if outcome.timed_out:
        return ("timeout" if kind == "kernel" else "task"), (
            f"{who} ran past the {limits.timeout_s:g} s limit and was killed with its process group"
        )
    number = outcome.signal
    tail = outcome.stderr_tail.strip().splitlines()[-3:]
    detail = f": {' | '.join(tail)}" if tail else ""
    if number == signal.SIGXFSZ:
        return "resource", f"{who} wrote more than {limits.file_size_mb} MB (file size limit)"
    if number in (signal.SIGKILL, signal.SIGXCPU):
        return "resource", f"{who} was killed ({outcome.describe_signal()}): memory or CPU limit"
    if number:
        return (
            "runtime" if kind == "kernel" else "task"
        ), f"{who} crashed with {outcome.describe_signal()}{detail}"
    return (
        "runtime" if kind == "kernel" else "task"
    ), f"{who} exited with status {outcome.returncode} and no result{detail}"


def check_kernel(
    task: TaskSpec,
    *,
    kernel_source: str | None = None,
    shapes: str = "small",
    seeds: tuple[int, ...] | None = None,
    target: str = "trn1",
    order_check: bool = True,
    trace_path: Path | None = None,
    workdir: Path | None = None,
    threads: int = 1,
) -> CheckResult:
    """Check `kernel_source` (default: the task's kernel.py) for correctness under nkisim."""
    started = time.monotonic()
    source = task.kernel_source if kernel_source is None else kernel_source
    chosen_seeds = tuple(seeds or task.seeds)
    result = CheckResult(
        task.name, "nkisim", shapes, False, False, None, "", seeds=list(chosen_seeds)
    )
    overrides = task.overrides(shapes)
    limits = Limits(timeout_s=task.timeout_for(shapes), memory_mb=task.memory_mb, threads=threads)
    display = KERNEL_FILE
    try:
        violations = check_source(source, display)
        if violations:
            raise _Failure(
                "rejected", "; ".join(v.render(display) for v in violations[:5]), violations[0].line
            )
        with tempfile.TemporaryDirectory(prefix="nkibench-", dir=workdir) as tmp:
            root = Path(tmp)
            data, outputs = root / "data", root / "outputs"
            common = {
                "reference": str(task.path / "reference.py"),
                "overrides": overrides,
                "seeds": list(chosen_seeds),
                "data_dir": str(data),
            }
            reference = _child("reference", common, root, limits)
            if not reference["ok"]:
                raise _Failure("task", reference["message"])
            manifest = reference["seeds"]
            result.forward_seconds = manifest[str(chosen_seeds[0])]["forward_s"]
            kernel = _child(
                "kernel",
                {
                    **common,
                    "manifest": manifest,
                    "out_dir": str(outputs),
                    "kernel_source": source,
                    "kernel_file": str(task.path / KERNEL_FILE),
                    "display_name": display,
                    "function": task.kernel_function,
                    "target": target,
                    "strict_capacity": task.strict_capacity,
                    "order_check": order_check,
                    "trace_path": str(trace_path) if trace_path else None,
                },
                root,
                limits,
            )
            if not kernel["ok"]:
                raise _Failure(kernel["kind"], kernel["message"], kernel.get("line") or None)
            first = kernel["seeds"][str(chosen_seeds[0])]
            result.kernel_seconds = first["kernel_s"]
            result.instructions = first["instructions"]
            result.engine_counts = first.get("engine_counts", {})
            result.warnings = kernel["warnings"]
            result.capacity = kernel["capacity"]
            result.compiled = True
            for seed in chosen_seeds:
                unwritten = kernel["seeds"][str(seed)]["never_written"]
                for i, count in enumerate(unwritten):
                    if count:
                        raise _Failure(
                            "incorrect",
                            f"seed {seed}: output {i}: {count} element(s) were never written "
                            "(a tile skipped, e.g. a tile count rounded down, or a mask too narrow)",
                        )
            counts = {str(s): kernel["seeds"][str(s)]["outputs"] for s in chosen_seeds}
            comparison = _child(
                "compare",
                {
                    **common,
                    "manifest": manifest,
                    "out_dir": str(outputs),
                    "output_counts": counts,
                    "rel_tol": task.rel_tol,
                },
                root,
                limits,
            )
            if not comparison["ok"]:
                raise _Failure("task", comparison["message"])
            worst = 0.0
            for seed in chosen_seeds:
                verdict = comparison["seeds"][str(seed)]
                if verdict["max_rel_l2"] is not None:
                    worst = max(worst, verdict["max_rel_l2"])
                if not verdict["correct"]:
                    result.max_rel_l2 = verdict["max_rel_l2"]
                    raise _Failure("incorrect", f"seed {seed}: {verdict['message']}")
            result.max_rel_l2 = worst
            result.correct = True
    except _Failure as failure:
        result.error_kind = failure.kind
        result.message = failure.message
        result.line = failure.line
    result.duration_s = time.monotonic() - started
    return result
