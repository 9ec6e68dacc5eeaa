"""Checking and profiling a kernel against its task: the parent side, which never runs task or
kernel code.

Sandboxed children do the work (see nkibench.sandbox.child): the reference makes inputs and expected
outputs per seed, the backend runs the kernel, and the comparison applies the task's output
transform and AccelOpt's relative-L2 rule; correctness stops at the first failing seed. A
profile then asks the backend for the latency of the (correct) kernel and puts it against the
task's roofline.
"""

from __future__ import annotations

import json
import secrets
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from nkibench.backend import Backend, Phase, PhaseOwner
from nkibench.dialects import check_target, get_dialect
from nkibench.errors import BackendUnavailable, ErrorKind, PhaseFailure, recordable
from nkibench.policy.roofline import Peaks, Work, pct_of_peak, roofline
from nkibench.result import KernelResult
from nkibench.sandbox.isolation import Isolation, Mounts
from nkibench.sandbox.process import ChildOutcome, Limits, run_child
from nkibench.sandbox.static_check import check_source, violation_kind
from nkibench.task.spec import KERNEL_FILE, REFERENCE_FILE, TASK_FILES, TaskSpec

__all__ = ["Session", "check_kernel", "fresh_seeds", "profile_kernel", "run_phase"]

CHILD = "nkibench.sandbox.child"
"""The module every sandboxed child runs (it imports the phase's function by name)."""
NO_MOUNTS = Mounts()
KERNEL_WRITES = ("out_dir", "fresh_out_dir")
KERNEL_READS = ("data_dir", "fresh_data_dir", "task_dir", "artifacts_dir")
"""The request's folders a child running kernel code may write (its outputs) and read (its
inputs, the task's files, what an earlier phase built such as a NEFF); nothing else of the
session is in its sandbox, least of all the expected outputs
(nkibench.sandbox.arrays.expected_folder), which it could copy."""


def run_phase(
    name: str,
    phase: Phase,
    request: dict[str, Any],
    workdir: Path,
    limits: Limits,
    *,
    isolation: Isolation,
    mounts: Mounts = NO_MOUNTS,
    read_only: Sequence[Path] = (),
    environment: dict[str, str] | None = None,
    cancel: threading.Event | None = None,
) -> dict[str, Any]:
    """Run one phase in a sandboxed child; a child that died without a result becomes a typed
    failure that says whose code died. The task's and the backend's children may write all of
    `workdir` (the session's folder); a child running kernel code sees only its own folder, its
    inputs (read-only) and its outputs."""
    own = workdir / name
    own.mkdir(parents=True, exist_ok=True)
    result_path = own / "result.json"
    result_path.unlink(missing_ok=True)  # a phase run twice never reads its last result
    writable: list[Path] = [workdir]
    if phase.runs == "kernel":
        writable = [Path(request[key]) for key in KERNEL_WRITES if request.get(key)]
        if request.get("trace_path"):
            writable.append(Path(request["trace_path"]).parent)
        for folder in writable:
            folder.mkdir(parents=True, exist_ok=True)
        read_only = [*read_only, *(Path(request[k]) for k in KERNEL_READS if request.get(k))]
    outcome = run_child(
        CHILD,
        {**request, "entry": phase.entry, "result_path": str(result_path)},
        workdir=own,
        limits=limits,
        isolation=isolation,
        writable=writable,
        read_only=read_only,
        mounts=mounts,
        environment=environment,
        cancel=cancel,
    )
    if result_path.exists():
        result: dict[str, Any] = json.loads(result_path.read_text())
        return result
    raise PhaseFailure(*_death(name, phase, outcome, limits))


KERNEL_FLOOR_S = 60.0
KERNEL_FACTOR = 10.0
"""A kernel child may take max(KERNEL_FLOOR_S, KERNEL_FACTOR x the reference's phase time)
plus the backend's fixed start-up (compiling), never more than the task's limit: a hanging
kernel costs a minute or so, not the task's whole budget. nkisim runs a kernel 1-4x slower than
NumPy runs the reference (bench/RESULTS.md), and the reference phase runs every seed too."""


def kernel_limits(limits: Limits, reference_s: float | None) -> Limits:
    """The limits of a kernel child once the task's own cost is known."""
    if reference_s is None:
        return limits
    measured = limits.startup_s + max(KERNEL_FLOOR_S, KERNEL_FACTOR * reference_s)
    return replace(limits, timeout_s=min(limits.timeout_s, measured))


DEATH_KIND: dict[PhaseOwner, ErrorKind] = {
    "kernel": "runtime",
    "task": "task",
    "backend": "measurement",
}


def _death(name: str, phase: Phase, outcome: ChildOutcome, limits: Limits) -> tuple[ErrorKind, str]:
    who = {
        "kernel": "the kernel",
        "task": f"the task's reference code ({name})",
        "backend": f"the backend's {name} phase",
    }[phase.runs]
    kind = DEATH_KIND[phase.runs]
    # a limit the task's own code reaches is the task's failure, whatever the limit
    limit_kind: ErrorKind = "task" if phase.runs == "task" else "resource"
    if outcome.timed_out:
        return ("timeout" if phase.runs == "kernel" else kind), (
            f"{who} ran past the {limits.timeout_s:g} s limit and was killed with its process group"
        )
    if outcome.flooded:
        return limit_kind, (
            f"{who} wrote more than {limits.output_mb} MiB to stdout or stderr and was killed "
            "with its process group"
        )
    number = outcome.signal
    tail = outcome.stderr_tail.strip().splitlines()[-3:]
    detail = f": {' | '.join(tail)}" if tail else ""
    if number == signal.SIGXFSZ:
        return limit_kind, f"{who} wrote more than {limits.file_size_mb} MB (file size limit)"
    if number in (signal.SIGKILL, signal.SIGXCPU):
        return limit_kind, (f"{who} was killed ({outcome.describe_signal()}): memory or CPU limit")
    if number:
        return kind, f"{who} crashed with {outcome.describe_signal()}{detail}"
    return kind, f"{who} exited with status {outcome.returncode} and no result{detail}"


@dataclass
class Session:
    """One evaluation's children, sharing a temporary directory (backends run more phases)."""

    task: TaskSpec
    source: str
    seeds: tuple[int, ...]
    shapes: str
    target: str
    limits: Limits
    root: Path
    result: KernelResult
    backend: Backend
    order_check: bool
    cancel: threading.Event | None = None
    manifest: dict[str, Any] = field(default_factory=dict)
    """Per seed: the inputs and expected outputs the reference phase saved."""
    reference_s: float | None = None
    """How long the reference phase took (every seed): the yardstick of the kernel's limit."""

    @property
    def common(self) -> dict[str, Any]:
        return {
            "reference": str(self.root / TASK_COPY / REFERENCE_FILE),
            "task_dir": str(self.root / TASK_COPY),
            "overrides": self.task.overrides(self.shapes),
            "seeds": list(self.seeds),
            "data_dir": str(self.root / "data"),
            "out_dir": str(self.root / "outputs"),
        }

    def child(self, phase: str, request: dict[str, Any]) -> dict[str, Any]:
        declared = self.backend.phases[phase]
        backend_side = declared.backend_environment
        limits = kernel_limits(self.limits, self.reference_s) if phase == "kernel" else self.limits
        return run_phase(
            phase,
            declared,
            request,
            self.root,
            limits,
            isolation=self.backend.isolation,
            mounts=self.backend.mounts() if backend_side else NO_MOUNTS,
            environment=self.backend.environment() if backend_side else None,
            cancel=self.cancel,
        )

    def kernel_request(self, manifest: dict[str, Any]) -> dict[str, Any]:
        return {
            **self.common,
            "manifest": manifest,
            "kernel_source": self.source,
            "kernel_file": str(self.task.path / KERNEL_FILE),
            "display_name": KERNEL_FILE,
            "function": self.task.kernel_function,
            "dialect": self.task.dialect,
            "allow_torch_compute": self.task.allow_torch_compute,
            "target": self.target,
            "strict_capacity": self.task.strict_capacity,
            "order_check": self.order_check,
        }

    def reference(self, *, count_work: bool) -> dict[str, Any]:
        request = {**self.common, "count_work": count_work}
        started = time.monotonic()
        reference = self.child("reference", request)
        self.reference_s = time.monotonic() - started
        if not reference["ok"]:
            raise PhaseFailure("task", reference["message"])
        self.result.forward_seconds = reference["seeds"][str(self.seeds[0])]["forward_s"]
        return reference

    def kernel(self, manifest: dict[str, Any], *, profile: bool) -> dict[str, Any]:
        request = {**self.kernel_request(manifest), **self.backend.kernel_request(self, profile)}
        kernel = self.child("kernel", request)
        if not kernel["ok"]:
            raise PhaseFailure(kernel["kind"], kernel["message"], kernel.get("line") or None)
        first = kernel["seeds"][str(self.seeds[0])]
        result = self.result
        result.kernel_seconds = first["kernel_s"]
        result.instructions = first.get("instructions")
        result.engine_counts = first.get("engine_counts", {})
        result.warnings = [recordable(w, 500) for w in kernel["warnings"][:50]]
        result.capacity = kernel.get("capacity", {})
        result.compiled = True
        for seed in self.seeds:
            for i, count in enumerate(kernel["seeds"][str(seed)].get("never_written", [])):
                if count:
                    raise PhaseFailure(
                        "incorrect",
                        f"seed {seed}: output {i}: {count} element(s) were never written "
                        "(a skipped tile: a tile count rounded down, or a mask too narrow)",
                    )
        return kernel

    def verdicts(
        self,
        manifest: dict[str, Any],
        ran: dict[str, Any],
        *,
        seeds: tuple[int, ...] | list[int] | None = None,
        data_dir: Path | None = None,
        out_dir: Path | None = None,
    ) -> dict[str, Any]:
        """The comparison phase's verdict per seed on the outputs of `ran` (a kernel phase's
        per-seed results); seeds and folders default to the session's own."""
        chosen = list(seeds or self.seeds)
        request = {
            **self.common,
            "seeds": chosen,
            **({"data_dir": str(data_dir)} if data_dir else {}),
            **({"out_dir": str(out_dir)} if out_dir else {}),
            "manifest": manifest,
            "output_counts": {str(s): ran[str(s)]["outputs"] for s in chosen},
            "rel_tol": self.task.rel_tol,
            "transform": get_dialect(self.task.dialect).output_transform,
        }
        comparison = self.child("compare", request)
        if not comparison["ok"]:
            raise PhaseFailure("task", comparison["message"])
        verdicts: dict[str, Any] = comparison["seeds"]
        return verdicts

    def compare(self, manifest: dict[str, Any], kernel: dict[str, Any]) -> None:
        verdicts = self.verdicts(manifest, kernel["seeds"])
        worst = 0.0
        for seed in self.seeds:
            verdict = verdicts[str(seed)]
            if verdict["max_rel_l2"] is not None:
                worst = max(worst, verdict["max_rel_l2"])
            if not verdict["correct"]:
                self.result.max_rel_l2 = verdict["max_rel_l2"]
                raise PhaseFailure("incorrect", f"seed {seed}: {verdict['message']}")
        self.result.max_rel_l2 = worst
        self.result.correct = True


TASK_COPY = "task"
"""The session's copy of the task's files: the children read the task there, never in its own
folder (which the sandbox does not show them, and which may change while they run)."""


def copy_task(task: TaskSpec, folder: Path) -> None:
    folder.mkdir()
    for name in TASK_FILES:
        if (task.path / name).is_file():
            shutil.copyfile(task.path / name, folder / name)
    if (folder / REFERENCE_FILE).read_text(encoding="utf-8") != task.reference_source:
        raise PhaseFailure("task", f"{task.path / REFERENCE_FILE}: changed while it was checked")


def fresh_seeds(count: int) -> tuple[int, ...]:
    """Seeds never used before (a kernel cannot know its inputs in advance)."""
    return tuple(secrets.randbelow(2**31) for _ in range(count))


def _task_work(task: TaskSpec, shapes: str, counted: dict[str, Any] | None) -> Work | str:
    """The roofline's work: task.toml's formulas, else what the reference phase counted; a
    string says why there is none."""
    if task.roofline:
        counts = task.roofline_counts(shapes)
        return Work(
            counts.get("vec_flops", 0.0),
            counts.get("mm_flops", 0.0),
            counts.get("bytes", 0.0),
            "task.toml",
            task.matmul_dtype,
        )
    if counted is None:
        return "the reference's work was not counted"
    if "error" in counted:
        return str(counted["error"])
    return Work(counted["vec_flops"], counted["mm_flops"], counted["bytes"], "counted")


def _apply_roofline(result: KernelResult, work: Work | str, peaks: Peaks | None) -> None:
    if isinstance(work, str):
        result.warnings.append(f"no roofline, so no % of peak: {work}")
        return
    if peaks is None:
        result.warnings.append("no roofline, so no % of peak: the device's ceilings are unknown")
        return
    line = roofline(work, peaks)
    result.roofline = line.to_json()
    if result.latency_ms is None or result.latency_ms <= 0:
        return
    seconds = result.latency_ms * 1e-3
    result.pct_of_peak = pct_of_peak(line.seconds, seconds)
    if not result.counters:
        # a backend without counters of its own (a GPU here): the rates achieved against the
        # ceilings, and the roofline's term as the bound
        result.bound_by = result.bound_by or line.bound
        result.counters |= {
            "achieved_bandwidth_gbps": work.bytes / seconds / 1e9,
            "achieved_tflops": work.mm_flops / seconds / 1e12,
            "bandwidth_ceiling_gbps": peaks.bandwidth.value / 1e9,
            "matmul_ceiling_tflops": peaks.matmul_rate(work.matmul_dtype).value / 1e12,
        }
    if result.pct_of_peak > 100.0:
        result.warnings.append(
            f"{result.pct_of_peak:.0f}% of peak is above 100%: the roofline's counts "
            f"({work.source}) are too low or the {result.latency_kind} latency too short"
        )


def _evaluate(
    task: TaskSpec,
    backend: Backend,
    *,
    profile: bool,
    kernel_source: str | None,
    shapes: str,
    seeds: tuple[int, ...] | None,
    target: str,
    order_check: bool,
    workdir: Path | None,
    threads: int,
    limits: Limits | None,
    cancel: threading.Event | None = None,
) -> KernelResult:
    started = time.monotonic()
    refusal = backend.refusal(task.dialect)
    if refusal is not None:
        raise BackendUnavailable(f"{task.path}: {refusal}")
    source = task.kernel_source if kernel_source is None else kernel_source
    target = backend.resolve_target(target)
    default = fresh_seeds(len(task.seeds)) if backend.fresh_inputs else task.seeds
    chosen_seeds = tuple(seeds or default)
    check_target(task.dialect, target, str(task.path))
    result = KernelResult(
        task.name, backend.name, target, shapes, seeds=list(chosen_seeds), dialect=task.dialect
    )
    task.overrides(shapes)  # an unknown shape set is the caller's error, raised here
    limits = limits or backend.limits(task, shapes, threads)
    try:
        violations = check_source(
            source, KERNEL_FILE, task.dialect, torch_compute=task.allow_torch_compute
        )
        if violations:
            message = "; ".join(v.render(KERNEL_FILE) for v in violations[:5])
            raise PhaseFailure(violation_kind(violations), message, violations[0].line)
        with tempfile.TemporaryDirectory(prefix="nkibench-", dir=workdir) as tmp:
            copy_task(task, Path(tmp) / TASK_COPY)
            session = Session(
                task,
                source,
                chosen_seeds,
                shapes,
                target,
                limits,
                Path(tmp),
                result,
                backend,
                order_check,
                cancel,
            )
            reference = session.reference(count_work=profile and not task.roofline)
            manifest = session.manifest = reference["seeds"]
            kernel = session.kernel(manifest, profile=profile)
            session.compare(manifest, kernel)
            if profile:
                backend.measure(session, kernel)
                work = _task_work(task, shapes, reference.get("work"))
                _apply_roofline(result, work, backend.peaks(target))
    except PhaseFailure as failure:
        result.error_kind = failure.kind
        result.message = recordable(failure.message)
        result.line = failure.line
    result.fingerprint = backend.fingerprint(target)
    result.duration_s = time.monotonic() - started
    return result


def check_kernel(
    task: TaskSpec,
    *,
    backend: Backend,
    kernel_source: str | None = None,
    shapes: str = "small",
    seeds: tuple[int, ...] | None = None,
    target: str = "trn2",
    order_check: bool = True,
    workdir: Path | None = None,
    threads: int = 1,
    limits: Limits | None = None,
) -> KernelResult:
    """Check `kernel_source` (default: the task's kernel.py) for correctness on `backend`."""
    return _evaluate(
        task,
        backend,
        profile=False,
        kernel_source=kernel_source,
        shapes=shapes,
        seeds=seeds,
        target=target,
        order_check=order_check,
        workdir=workdir,
        threads=threads,
        limits=limits,
    )


def profile_kernel(
    task: TaskSpec,
    *,
    backend: Backend,
    kernel_source: str | None = None,
    shapes: str = "small",
    seeds: tuple[int, ...] | None = None,
    target: str = "trn2",
    order_check: bool = True,
    workdir: Path | None = None,
    threads: int = 1,
    limits: Limits | None = None,
    cancel: threading.Event | None = None,
) -> KernelResult:
    """Check the kernel, then time it on `backend` (nkisim: an estimated latency) and put
    the latency against the task's roofline (% of peak). Raises Cancelled when `cancel` is
    set while a child runs."""
    return _evaluate(
        task,
        backend,
        profile=True,
        kernel_source=kernel_source,
        shapes=shapes,
        seeds=seeds,
        target=target,
        order_check=order_check,
        workdir=workdir,
        threads=threads,
        limits=limits,
        cancel=cancel,
    )
