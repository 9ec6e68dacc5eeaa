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
from nkibench.static_check import check_source, violation_kind
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


@dataclass
class _Check:
    """One check's phases, each in its sandboxed child, sharing a temporary directory."""

    task: TaskSpec
    source: str
    seeds: tuple[int, ...]
    shapes: str
    target: str
    limits: Limits
    root: Path
    result: CheckResult

    @property
    def common(self) -> dict[str, Any]:
        return {
            "reference": str(self.task.path / "reference.py"),
            "overrides": self.task.overrides(self.shapes),
            "seeds": list(self.seeds),
            "data_dir": str(self.root / "data"),
            "out_dir": str(self.root / "outputs"),
        }

    def reference(self) -> dict[str, Any]:
        reference = _child("reference", self.common, self.root, self.limits)
        if not reference["ok"]:
            raise _Failure("task", reference["message"])
        manifest: dict[str, Any] = reference["seeds"]
        self.result.forward_seconds = manifest[str(self.seeds[0])]["forward_s"]
        return manifest

    def kernel(
        self, manifest: dict[str, Any], *, order_check: bool, trace_path: Path | None
    ) -> dict[str, Any]:
        request = {
            **self.common,
            "manifest": manifest,
            "kernel_source": self.source,
            "kernel_file": str(self.task.path / KERNEL_FILE),
            "display_name": KERNEL_FILE,
            "function": self.task.kernel_function,
            "target": self.target,
            "strict_capacity": self.task.strict_capacity,
            "order_check": order_check,
            "trace_path": str(trace_path) if trace_path else None,
        }
        kernel = _child("kernel", request, self.root, self.limits)
        if not kernel["ok"]:
            raise _Failure(kernel["kind"], kernel["message"], kernel.get("line") or None)
        first = kernel["seeds"][str(self.seeds[0])]
        result = self.result
        result.kernel_seconds = first["kernel_s"]
        result.instructions = first["instructions"]
        result.engine_counts = first.get("engine_counts", {})
        result.warnings = kernel["warnings"]
        result.capacity = kernel["capacity"]
        result.compiled = True
        for seed in self.seeds:
            for i, count in enumerate(kernel["seeds"][str(seed)]["never_written"]):
                if count:
                    raise _Failure(
                        "incorrect",
                        f"seed {seed}: output {i}: {count} element(s) were never written "
                        "(a skipped tile: a tile count rounded down, or a mask too narrow)",
                    )
        return kernel

    def compare(self, manifest: dict[str, Any], kernel: dict[str, Any]) -> None:
        request = {
            **self.common,
            "manifest": manifest,
            "output_counts": {str(s): kernel["seeds"][str(s)]["outputs"] for s in self.seeds},
            "rel_tol": self.task.rel_tol,
        }
        comparison = _child("compare", request, self.root, self.limits)
        if not comparison["ok"]:
            raise _Failure("task", comparison["message"])
        worst = 0.0
        for seed in self.seeds:
            verdict = comparison["seeds"][str(seed)]
            if verdict["max_rel_l2"] is not None:
                worst = max(worst, verdict["max_rel_l2"])
            if not verdict["correct"]:
                self.result.max_rel_l2 = verdict["max_rel_l2"]
                raise _Failure("incorrect", f"seed {seed}: {verdict['message']}")
        self.result.max_rel_l2 = worst
        self.result.correct = True


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
    limits: Limits | None = None,
) -> CheckResult:
    """Check `kernel_source` (default: the task's kernel.py) for correctness under nkisim."""
    started = time.monotonic()
    source = task.kernel_source if kernel_source is None else kernel_source
    chosen_seeds = tuple(seeds or task.seeds)
    result = CheckResult(
        task.name, "nkisim", shapes, False, False, None, "", seeds=list(chosen_seeds)
    )
    task.overrides(shapes)  # an unknown shape set is the caller's error, raised here
    limits = limits or Limits(
        timeout_s=task.timeout_for(shapes), memory_mb=task.memory_mb, threads=threads
    )
    try:
        violations = check_source(source, KERNEL_FILE)
        if violations:
            message = "; ".join(v.render(KERNEL_FILE) for v in violations[:5])
            raise _Failure(violation_kind(violations), message, violations[0].line)
        with tempfile.TemporaryDirectory(prefix="nkibench-", dir=workdir) as tmp:
            check = _Check(task, source, chosen_seeds, shapes, target, limits, Path(tmp), result)
            manifest = check.reference()
            kernel = check.kernel(manifest, order_check=order_check, trace_path=trace_path)
            check.compare(manifest, kernel)
    except _Failure as failure:
        result.error_kind = failure.kind
        result.message = failure.message
        result.line = failure.line
    result.duration_s = time.monotonic() - started
    return result
