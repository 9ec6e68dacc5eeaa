"""Checking and profiling a kernel against its task: the parent side, which never runs task or
kernel code.

Sandboxed children do the work (see nkibench.sandbox.child): the reference makes inputs and expected
outputs per seed, the backend runs the kernel, and the comparison applies the task's output
transform and AccelOpt's relative-L2 rule; correctness stops at the first failing seed; the
backend's trusted phase checks what the kernel handed back (nkisim: its trace covers its
outputs). A profile then asks the backend for the latency of the (correct) kernel and puts it
against the task's roofline.

The parent trusts no child: results arrive on a channel it holds and are checked before use
(nkibench.sandbox.results), the folders children see are made fresh for each of them
(nkibench.sandbox.folders), and nothing that judges a kernel (the comparison, the estimate, the
coverage of its outputs) runs in a process where the kernel ran.

A task with workloads (nkibench.task.workloads) has a shape set per workload; checking or
profiling it on `full` runs every workload in turn and combines their results
(nkibench.policy.workloads).
"""

from __future__ import annotations

import hashlib
import math
import secrets
import shutil
import signal
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypedDict

from nkibench.backend import Backend, Check, Inputs, Phase, PhaseOwner
from nkibench.breakdown import recorder
from nkibench.dialects import check_target, get_dialect
from nkibench.errors import BackendUnavailable, ErrorKind, PhaseFailure, TaskError, recordable
from nkibench.policy.roofline import Peaks, Work, pct_of_peak, roofline
from nkibench.policy.workloads import WorkloadRun, combine
from nkibench.result import KernelResult
from nkibench.sandbox import results, stopwatch
from nkibench.sandbox.ahead import Ahead
from nkibench.sandbox.folders import SessionFolders
from nkibench.sandbox.isolation import Isolation, Mounts
from nkibench.sandbox.parse_child import static_violations
from nkibench.sandbox.process import (
    KERNEL_FLOOR_S,
    RESULT_LIMIT,
    ChildOutcome,
    Gate,
    Limits,
    run_child,
)
from nkibench.sandbox.resources import HOST_MEMORY_FRACTION, host_memory_mb, memory_cap_mb
from nkibench.sandbox.results import MalformedResult
from nkibench.sandbox.static_check import violation_kind
from nkibench.sandbox.warm import WarmPool
from nkibench.task.counts import COUNTS_FUNCTION, mean_counts
from nkibench.task.files import KERNEL_FILE, REFERENCE_FILE, TASK_FILES
from nkibench.task.spec import TaskSpec, defined_function
from nkibench.task.toml import FULL
from nkibench.task.workloads import DATA_FILE_LIMIT

__all__ = [
    "KERNEL_FLOOR_S",
    "TIMED_RUNS_FIELD",
    "Inputs",
    "Session",
    "check_kernel",
    "fresh_seeds",
    "profile_kernel",
    "run_phase",
    "share_of_host",
]

CHILD = "nkibench.sandbox.child"
"""The module every sandboxed child runs (it imports the phase's function by name)."""
NO_MOUNTS = Mounts()


def run_phase(
    name: str,
    phase: Phase,
    request: dict[str, Any],
    folders: SessionFolders,
    limits: Limits,
    *,
    isolation: Isolation,
    writes: Sequence[Path] = (),
    reads: Sequence[Path] = (),
    mounts: Mounts = NO_MOUNTS,
    environment: dict[str, str] | None = None,
    cancel: threading.Event | None = None,
    warm: WarmPool | None = None,
    launcher: Sequence[str] = (),
    gate: Gate | None = None,
) -> dict[str, Any]:
    """Run one phase in a sandboxed child that sees a fresh folder of its own, writes `writes`
    and reads `reads` (folders made by `folders`, never a path a child made), and return its
    result. With a `gate`, the child starts ahead of its work (nkibench.sandbox.ahead). A
    child that died without a result, or handed back one the parent cannot use, is
    a typed failure that says whose code it was (nkibench.harness.DEATH_KIND); so is one whose
    folders (its own and `writes`) hold more than the limits' disk quota, even with a result.
    Its own folder is released when it ends: no later child reads it."""
    for folder in (*writes, *reads):
        folders.require(folder)
    own = folders.fresh(name)
    quota = folders.quota([own, *writes], limits.disk_mb, isolation)
    # a child started ahead is counted by what its caller waits for it (Ahead.result)
    breakdown = recorder() if gate is None else None
    if breakdown is not None:  # `accelopt bench gpu --breakdown`: the child's own timings too
        request = {**request, stopwatch.REQUEST_KEY: True}
    spawned = time.perf_counter()
    try:
        outcome = run_child(
            CHILD,
            {**request, "entry": phase.entry},
            workdir=own,
            limits=limits,
            isolation=isolation,
            writable=writes,
            read_only=reads,
            mounts=mounts,
            environment=environment,
            cancel=cancel,
            quota=quota,
            warm=warm,
            launcher=launcher,
            gate=gate,
        )
    finally:  # its result came over a descriptor: nothing in its folder is read
        folders.release(own)
    life_s = time.perf_counter() - spawned
    try:
        if outcome.over_quota or outcome.timed_out or outcome.flooded:
            raise PhaseFailure(*_death(name, phase, outcome, limits))
        if outcome.returncode and not outcome.result:
            raise PhaseFailure(*_death(name, phase, outcome, limits))
        try:
            result = results.decode(outcome.result, RESULT_LIMIT)
        except MalformedResult as e:
            raise PhaseFailure(
                DEATH_KIND[phase.runs], f"{_who(name, phase)} handed back {e}"
            ) from None
    except PhaseFailure:
        if breakdown is not None:
            breakdown.add(name, life_s, {})
        raise
    if breakdown is not None:
        breakdown.add(name, life_s, result)
    return result


TIMED_RUNS_FIELD = "timed_runs"
"""A kernel request's field (Backend.kernel_request) saying that its child also times the
kernel, in at most this many more runs; its time limit counts them."""
REFERENCE_FACTOR = 10.0
"""Without a baseline time or a progress measure (a Triton or Neuron baseline), a kernel
child may take max(the floor, REFERENCE_FACTOR x the reference's phase time): the reference's
NumPy or PyTorch time is the only yardstick left, though no measure of the kernel's."""
BASELINE_FACTOR = 10.0
"""Once the task's baseline kernel has run on this backend, target and shape set, a kernel
child may take max(the floor, BASELINE_FACTOR x the baseline's kernel time x its runs): room
for a candidate ten times slower than the baseline (a legitimate but worse idea costs a run,
not a kill), while a hang still ends at a multiple of what the task's own kernel needs."""
PROGRESS_CEILING_FACTOR = 30.0
"""Without a baseline time, a child that beats (nkisim: instructions executing) may run past
the floor up to PROGRESS_CEILING_FACTOR x the floor (half an hour at 60 s, the full shapes'
default limit): the baseline itself of a slow-to-simulate task completes, and a kernel that
fakes its beats is still bounded."""


def kernel_limits(
    limits: Limits,
    *,
    reference_s: float | None,
    baseline_kernel_s: float | None = None,
    kernel_runs: int = 1,
    timed_runs: int = 0,
    reports_progress: bool = False,
) -> Limits:
    """The limits of a kernel child, never above the task's limit plus nothing: a limit the
    task sets itself (`adaptive` off) holds as written. Else, from the best measure of the
    kernel's own cost: the baseline's kernel time (`baseline_kernel_s`, per run, the phase
    running the kernel `kernel_runs` times, and `timed_runs` more where it also times it),
    else the floor, extended while the child makes progress where its phase
    `reports_progress`, else the reference's time (`reference_s`, a run per seed, scaled by the
    timed runs; None: nothing measured yet, the task's limit holds). The backend's start-up
    (compiling) comes on top of each."""
    if not limits.adaptive:
        return limits
    floor = limits.kernel_floor_s
    runs = kernel_runs + timed_runs
    if baseline_kernel_s is not None:
        return _within(limits, max(floor, BASELINE_FACTOR * runs * baseline_kernel_s))
    if reports_progress:
        ceiling = min(limits.timeout_s, limits.startup_s + PROGRESS_CEILING_FACTOR * floor)
        return replace(_within(limits, floor), progress_until_s=ceiling)
    if reference_s is None:
        return limits
    return _within(limits, max(floor, REFERENCE_FACTOR * reference_s * runs / kernel_runs))


def _within(limits: Limits, allowed_s: float) -> Limits:
    """`limits` with a time limit of the start-up plus `allowed_s`, at most the task's."""
    return replace(limits, timeout_s=min(limits.timeout_s, limits.startup_s + allowed_s))


def share_of_host(
    limits: Limits, jobs: int, host_mb: int | None = None
) -> tuple[Limits, str | None]:
    """`limits` with memory_mb at most one job's share of this host's memory (`host_mb`, or
    measured) when `jobs` run at once, and a warning that says so where it was lowered."""
    host = host_memory_mb() if host_mb is None else host_mb
    cap = memory_cap_mb(host, jobs)
    if limits.memory_mb is None or limits.memory_mb <= cap:
        return limits, None
    warning = (
        f"memory_mb = {limits.memory_mb} is more than one job's share of this host: "
        f"{HOST_MEMORY_FRACTION:.0%} of its {host} MB over {jobs} concurrent job(s); "
        f"the job ran with memory_mb = {cap}"
    )
    return replace(limits, memory_mb=cap), warning


DEATH_KIND: dict[PhaseOwner, ErrorKind] = {
    "kernel": "runtime",
    "task": "task",
    "backend": "measurement",
}


def _who(name: str, phase: Phase) -> str:
    return {
        "kernel": "the kernel",
        "task": f"the task's reference code ({name})",
        "backend": f"the backend's {name} phase",
    }[phase.runs]


def _death(name: str, phase: Phase, outcome: ChildOutcome, limits: Limits) -> tuple[ErrorKind, str]:
    who = _who(name, phase)
    kind = DEATH_KIND[phase.runs]
    # a limit the task's own code reaches is the task's failure, whatever the limit
    limit_kind: ErrorKind = "task" if phase.runs == "task" else "resource"
    if outcome.over_quota:
        return limit_kind, (
            f"{who} left the folders it writes holding {outcome.over_quota} and was stopped"
        )
    if outcome.timed_out:
        return ("timeout" if phase.runs == "kernel" else kind), (
            f"{who} ran past the {_limit_reached(outcome, limits)} and was killed with its "
            "process group"
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


def _limit_reached(outcome: ChildOutcome, limits: Limits) -> str:
    ceiling = limits.progress_until_s
    if ceiling is None:
        return f"{limits.timeout_s:g} s limit"
    if outcome.duration_s >= ceiling:
        return f"{ceiling:g} s ceiling of a child making progress"
    return f"{limits.timeout_s:g} s limit making no progress (no instruction executed)"


class Placement(TypedDict):
    """run_phase's arguments that say what a child sees beyond the folders it writes."""

    isolation: Isolation
    reads: list[Path]
    mounts: Mounts
    environment: dict[str, str] | None


@dataclass
class Session:
    """One evaluation's children, each in folders made fresh for it under one private root
    (nkibench.sandbox.folders): the task's copy, read by all; the reference's inputs and
    expected outputs; each kernel run's outputs; and a folder of its own per child."""

    task: TaskSpec
    source: str
    seeds: tuple[int, ...]
    shapes: str
    target: str
    limits: Limits
    folders: SessionFolders
    result: KernelResult
    backend: Backend
    order_check: bool
    cancel: threading.Event | None = None
    baseline_kernel_s: float | None = None
    """The task's baseline kernel's time (its first seed) on this backend, target and shape
    set, where known: the yardstick of a candidate's limit."""
    inputs: Inputs | None = None
    """The reference's run on the session's seeds."""
    out_dir: Path | None = None
    """The last kernel run's outputs."""
    trusted: dict[str, Any] = field(default_factory=dict)
    """What the backend's trusted phase found (nkisim: the trace's counts and estimate)."""
    reference_s: float | None = None
    """How long the reference phase took (every seed): the yardstick of the kernel's limit."""
    last_phase: tuple[str, Phase] | None = None
    """The child whose result was read last: a result that turns out malformed is its fault."""
    ahead: dict[str, Ahead] = field(default_factory=dict)
    """Children started ahead of their work, by phase (ended with the session: `end`)."""
    kernel_writes: list[Path] = field(default_factory=list)
    """Folders of the session's that the kernel's child writes beside its outputs, for a
    later child of the backend's to read (Backend.begin adds them)."""
    task_dir: Path = field(init=False)
    _data_dir: Path | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.task_dir = copy_task(self.task, self.folders.fresh(TASK_COPY, child_writes=False))

    @property
    def manifest(self) -> dict[str, Any]:
        return self.inputs.manifest if self.inputs else {}

    @property
    def common(self) -> dict[str, Any]:
        return {
            "reference": str(self.task_dir / REFERENCE_FILE),
            "task_dir": str(self.task_dir),
            "overrides": self.task.overrides(self.shapes),
            "seeds": list(self.seeds),
            "fixed_inputs": list(self.task.fixed_inputs),
            "workload_inputs": self.task.workload_inputs(self.shapes),
        }

    def folder(self, name: str) -> Path:
        """A fresh folder for a child to write (and later children to read)."""
        return self.folders.fresh(name)

    def release(self, *folders: Path) -> None:
        """Give back the disk of folders that no later child reads."""
        for folder in folders:
            self.folders.release(folder)

    def data_dir(self) -> Path:
        """The folder the reference writes the session's inputs to, made on first use: a child
        started before the reference runs may be given it to read."""
        if self._data_dir is None:
            self._data_dir = self.folder("inputs")
        return self._data_dir

    def start_ahead(
        self,
        phase: str,
        *,
        writes: Sequence[Path] = (),
        reads: Sequence[Path] = (),
        mounts: Mounts = NO_MOUNTS,
        launcher: Sequence[str] = (),
    ) -> Ahead:
        """`phase`'s child, started cold now, ahead of its work (nkibench.sandbox.ahead): it
        imports, then waits for its request (Ahead.begin). It is `ahead[phase]` until the
        session ends, which ends it."""
        declared = self.backend.phases[phase]
        placement = self._placement(declared, reads, mounts)

        def run(gate: Gate, stop: threading.Event) -> dict[str, Any]:
            return run_phase(
                phase,
                declared,
                {},
                self.folders,
                self.limits,
                writes=writes,
                cancel=stop,
                launcher=launcher,
                gate=gate,
                **placement,
            )

        started = Ahead(phase, run, writes, self.cancel, recorder())
        self.ahead[phase] = started
        return started

    def end(self) -> None:
        """End the children started ahead (begun or not): none outlives the session."""
        for started in self.ahead.values():
            started.end()

    def child(
        self,
        phase: str,
        request: dict[str, Any],
        *,
        writes: Sequence[Path] = (),
        reads: Sequence[Path] = (),
        mounts: Mounts = NO_MOUNTS,
        launcher: Sequence[str] = (),
    ) -> dict[str, Any]:
        """`phase`'s child, reading the task and `reads`, writing `writes`; `mounts` beyond
        the backend's, and `launcher` (a profiler) starting it (nkibench.sandbox.process)."""
        declared = self.backend.phases[phase]
        limits = self.limits
        if phase == "kernel":
            limits = kernel_limits(
                limits,
                reference_s=self.reference_s,
                baseline_kernel_s=self.baseline_kernel_s,
                # every seed, and nkisim's order check runs the first again
                kernel_runs=len(self.seeds) + 1,
                timed_runs=int(request.get(TIMED_RUNS_FIELD, 0)),
                reports_progress=declared.reports_progress,
            )
        self.last_phase = (phase, declared)
        return run_phase(
            phase,
            declared,
            request,
            self.folders,
            limits,
            writes=writes,
            cancel=self.cancel,
            warm=self.backend.warm,  # a comparison too: the zygote has numpy loaded
            launcher=launcher,
            **self._placement(declared, reads, mounts),
        )

    def _placement(self, declared: Phase, reads: Sequence[Path], mounts: Mounts) -> Placement:
        """What a child of `declared` sees beyond the folders it writes: the sandbox, the
        task's copy and `reads`, `mounts` and, for the backend's own phases, its mounts and
        environment."""
        backend_side = declared.backend_environment
        return {
            "isolation": self.backend.isolation,
            "reads": [self.task_dir, *reads],
            "mounts": (self.backend.mounts() if backend_side else NO_MOUNTS) + mounts,
            "environment": self.backend.environment() if backend_side else None,
        }

    def run_reference(
        self, seeds: Sequence[int], *, count_work: bool = False, data: Path | None = None
    ) -> Inputs:
        """The reference phase on `seeds`, into fresh folders (the inputs into `data`, an empty
        one of the session's, where given)."""
        data, expected = data or self.folder("inputs"), self.folder("expected")
        request = {
            **self.common,
            "seeds": list(seeds),
            "data_dir": str(data),
            "expected_dir": str(expected),
            "count_work": count_work,
        }
        started = time.monotonic()
        reference = self.child("reference", request, writes=[data, expected])
        self.reference_s = time.monotonic() - started
        if not reference["ok"]:
            raise PhaseFailure("task", reference["message"])
        try:
            manifest = results.check_manifest(reference, seeds)
        except MalformedResult as e:
            raise PhaseFailure("task", f"the task's reference code handed back {e}") from None
        work = reference.get("work")
        return Inputs(manifest, data, expected, work if isinstance(work, dict) else None)

    def reference(self, *, count_work: bool) -> Inputs:
        self.inputs = self.run_reference(self.seeds, count_work=count_work, data=self.data_dir())
        first = self.inputs.manifest[str(self.seeds[0])]
        self.result.forward_seconds = first.get("forward_s")
        return self.inputs

    def kernel_request(self, inputs: Inputs) -> dict[str, Any]:
        """The request of a child that runs the kernel on `inputs` (it reads `inputs.data_dir`)."""
        return {
            **self.common,
            "manifest": inputs.manifest,
            "data_dir": str(inputs.data_dir),
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

    def kernel(self, inputs: Inputs, *, profile: bool) -> dict[str, Any]:
        out = self.out_dir = self.folder("outputs")
        request = {
            **self.kernel_request(inputs),
            "out_dir": str(out),
            **self.backend.kernel_request(self, profile),
        }
        writes = [out, *self.kernel_writes]
        kernel = self.child("kernel", request, writes=writes, reads=[inputs.data_dir])
        if not kernel["ok"]:
            raise PhaseFailure(kernel["kind"], kernel["message"], kernel.get("line") or None)
        try:
            seeds = results.check_kernel(kernel, self.seeds)
        except MalformedResult as e:
            raise PhaseFailure("runtime", f"the kernel handed back {e}") from None
        result = self.result
        result.kernel_seconds = seeds[str(self.seeds[0])].get("kernel_s")
        result.warnings = [recordable(w, 500) for w in kernel.get("warnings", [])[:50]]
        result.compiled = True
        for seed in self.seeds:
            _never_written(seed, seeds[str(seed)].get("never_written", []))
        return kernel

    @property
    def transforms_outputs(self) -> bool:
        """Whether the comparison runs task code: the task's transform_nki_outputs, for a
        dialect that has the hook."""
        return get_dialect(self.task.dialect).output_transform and (
            defined_function(self.task.reference_source, (OUTPUT_TRANSFORM,)) is not None
        )

    def verdicts(
        self,
        inputs: Inputs,
        ran: dict[str, Any],
        out_dir: Path,
        *,
        seeds: Sequence[int] | None = None,
        check: Check | None = None,
    ) -> dict[str, Any]:
        """The comparison phase's verdict per seed on the outputs in `out_dir` of a kernel run
        on `inputs` (`ran`: that run's per-seed results, from which only the output count is
        taken; the comparison checks it against the reference's). A trusted `check` runs in the
        same child, after the comparison, when that child runs no task code; its result is
        under the key "check"."""
        chosen = list(seeds or self.seeds)
        request = {
            **self.common,
            "seeds": chosen,
            "expected_dir": str(inputs.expected_dir),
            "out_dir": str(out_dir),
            "manifest": inputs.manifest,
            "output_counts": {str(s): ran[str(s)]["outputs"] for s in chosen},
            "rel_tol": self.task.rel_tol,
            "outputs": {key: t.to_json() for key, t in self.task.outputs.items()},
            "transform": self.transforms_outputs,
            "count_unwritten": self.backend.sentinel_outputs,
        }
        reads = [inputs.expected_dir, out_dir]
        if check is not None and not self.transforms_outputs:
            request["check"] = {"entry": check.entry, "request": check.request}
            reads.append(check.reads)
        comparison = self.child("compare", request, reads=list(dict.fromkeys(reads)))
        if not comparison["ok"]:
            raise PhaseFailure("task", comparison["message"])
        try:
            verdicts = results.check_compare(comparison, chosen)
        except MalformedResult as e:
            raise PhaseFailure("task", f"the comparison handed back {e}") from None
        found = comparison.get("check")
        if found is not None:
            verdicts["check"] = found
        return verdicts

    def compare(self, kernel: dict[str, Any], check: Check | None = None) -> dict[str, Any] | None:
        """Compare the last kernel run's outputs (raises PhaseFailure unless correct on every
        seed); the trusted check's result when it ran in the comparison's child."""
        assert self.inputs is not None
        assert self.out_dir is not None
        verdicts = self.verdicts(self.inputs, kernel["seeds"], self.out_dir, check=check)
        found: dict[str, Any] | None = verdicts.pop("check", None)
        worst = 0.0
        for seed in self.seeds:
            verdict = verdicts.get(str(seed))
            if verdict is None:
                raise PhaseFailure("task", f"the comparison gave no verdict for seed {seed}")
            _never_written(seed, verdict.get("never_written", []))
            if verdict["max_rel_l2"] is not None:
                worst = max(worst, verdict["max_rel_l2"])
            if not verdict["correct"]:
                self.result.max_rel_l2 = verdict["max_rel_l2"]
                raise PhaseFailure("incorrect", f"seed {seed}: {verdict['message']}")
        self.result.max_rel_l2 = worst
        return found


def _never_written(seed: int, counts: list[int]) -> None:
    for i, count in enumerate(counts):
        if count:
            raise PhaseFailure(
                "incorrect",
                f"seed {seed}: output {i}: {count} element(s) were never written "
                "(a skipped tile: a tile count rounded down, or a mask too narrow)",
            )


OUTPUT_TRANSFORM = "transform_nki_outputs"
"""AccelOpt's hook in reference.py that the comparison applies to the kernel's outputs."""
TASK_COPY = "task"
"""The session's copy of the task's files: the children read the task there, never in its own
folder (which the sandbox does not show them, and which may change while they run)."""


def copy_task(task: TaskSpec, folder: Path) -> Path:
    for name in TASK_FILES:
        if (task.path / name).is_file():
            shutil.copyfile(task.path / name, folder / name)
    if (folder / REFERENCE_FILE).read_text(encoding="utf-8") != task.reference_source:
        raise PhaseFailure("task", f"{task.path / REFERENCE_FILE}: changed while it was checked")
    for name, digest in task.workload_files.items():
        _copy_checked(task.path / name, folder / name, digest)
    return folder


def _copy_checked(source: Path, target: Path, digest: str) -> None:
    """A workloads' or data file into the session's copy, refused unless it is what the task
    was loaded from (read bounded: the folder may have changed since)."""
    content = b""
    if source.is_file():
        with source.open("rb") as file:
            content = file.read(DATA_FILE_LIMIT + 1)
    if hashlib.sha256(content).hexdigest() != digest:
        raise PhaseFailure("task", f"{source}: changed (or went) since the task was loaded")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content)


def fresh_seeds(count: int) -> tuple[int, ...]:
    """Seeds never used before (a kernel cannot know its inputs in advance)."""
    return tuple(secrets.randbelow(2**31) for _ in range(count))


def _reference_counts(session: Session, inputs: Inputs) -> dict[str, float]:
    """reference.py's counts, the mean over the seeds the latency is measured on (every
    seed's, or the first's: Backend.times_every_seed)."""
    timed = session.seeds if session.backend.times_every_seed else session.seeds[:1]
    entries = {str(s): inputs.manifest[str(s)] for s in timed}
    try:
        return mean_counts({s: e["counts"] for s, e in entries.items() if "counts" in e})
    except ValueError as e:
        raise PhaseFailure("task", f"{REFERENCE_FILE}: {COUNTS_FUNCTION}(): {e}") from None


def _task_work(session: Session, inputs: Inputs) -> Work | str:
    """The roofline's work: task.toml's formulas (over the constants and reference.py's
    counts), else what the reference phase counted; a string says why there is none. A
    formula the counts leave without a value is the task's error."""
    task = session.task
    if task.roofline:
        counts = _reference_counts(session, inputs)
        try:
            values = task.roofline_counts(session.shapes, counts=counts)
        except TaskError as e:
            raise PhaseFailure("task", str(e)) from None
        return Work(
            values.get("vec_flops", 0.0),
            values.get("mm_flops", 0.0),
            values.get("bytes", 0.0),
            "task.toml",
            task.matmul_dtype,
            counts,
        )
    counted = inputs.work
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


READING_ERRORS = (KeyError, TypeError, ValueError, IndexError)
"""What reading a field of a child's result that is missing or of another type raises."""


def _judge(session: Session, profile: bool) -> None:
    """The flow every backend shares: the backend's start (Backend.begin), reference, kernel,
    comparison, the backend's trusted check of what the kernel handed back, and, when
    profiling, the latency (refused unless positive and finite) against the roofline. A
    result that a backend reads and finds malformed is the failure of the child that wrote
    it."""
    task, backend, result = session.task, session.backend, session.result
    try:
        backend.begin(session, profile)
        inputs = session.reference(count_work=profile and not task.roofline)
        work = _task_work(session, inputs)  # a formula the counts break fails before the kernel
        kernel = session.kernel(inputs, profile=profile)
        check = backend.trusted_check(session, kernel, profile)
        found = session.compare(kernel, check)
        if check is not None and found is None:
            found = session.child("check", check.request, reads=[check.reads])
        backend.verify(session, found, profile)
        result.correct = True  # compared, and what the kernel handed back checked
        if profile:
            backend.measure(session, kernel)
            _refuse_latency(result)
            _apply_roofline(result, work, backend.peaks(session.target))
    except READING_ERRORS as e:
        if session.last_phase is None:
            raise
        name, phase = session.last_phase
        raise PhaseFailure(
            DEATH_KIND[phase.runs],
            f"{_who(name, phase)} handed back a malformed result ({type(e).__name__}: {e})",
        ) from None


def _refuse_latency(result: KernelResult) -> None:
    latency = result.latency_ms
    if latency is None or not math.isfinite(latency) or latency <= 0:
        result.latency_ms = None
        raise PhaseFailure(
            "measurement",
            f"the {result.latency_kind} latency {latency!r} ms is not a positive, finite "
            "number: no profile is recorded from it",
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
    jobs: int,
    cancel: threading.Event | None = None,
    baseline_kernel_s: float | None = None,
) -> KernelResult:
    if shapes == FULL and task.workloads:
        return _evaluate_workloads(
            task,
            backend,
            profile=profile,
            kernel_source=kernel_source,
            seeds=seeds,
            target=target,
            order_check=order_check,
            workdir=workdir,
            threads=threads,
            limits=limits,
            jobs=jobs,
            cancel=cancel,
            # the baseline's time over every workload: room enough for each of them
            baseline_kernel_s=baseline_kernel_s,
        )
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
    limits, capped = share_of_host(limits or backend.limits(task, shapes, threads), jobs)
    try:
        # in a child: a candidate's source is untrusted text, and parsing it can take
        # gigabytes (nkibench.sandbox.parse_child)
        violations = static_violations(
            source,
            task.dialect,
            torch_compute=task.allow_torch_compute,
            isolation=backend.isolation,
            workdir=workdir,
        )
        if violations:
            message = "; ".join(v.render(KERNEL_FILE) for v in violations[:5])
            raise PhaseFailure(violation_kind(violations), message, violations[0].line)
        warm = backend.warm
        # under the warm processes' root, where they can see the folders (else: cold children)
        parent = workdir or (warm.root if warm is not None else None)
        with SessionFolders(
            parent, backend.isolation.child_uid, passable=warm is not None
        ) as folders:
            session = Session(
                task,
                source,
                chosen_seeds,
                shapes,
                target,
                limits,
                folders,
                result,
                backend,
                order_check,
                cancel,
                baseline_kernel_s,
            )
            try:
                _judge(session, profile)
            finally:
                session.end()
    except PhaseFailure as failure:
        result.error_kind = failure.kind
        result.message = recordable(failure.message)
        result.line = failure.line
    if capped is not None:
        result.warnings.insert(0, capped)
    result.fingerprint = backend.fingerprint(target)
    result.duration_s = time.monotonic() - started
    return result


def _evaluate_workloads(
    task: TaskSpec,
    backend: Backend,
    *,
    seeds: tuple[int, ...] | None,
    target: str,
    limits: Limits | None,
    **options: Any,
) -> KernelResult:
    """`full` on a task with workloads: every workload in turn (each its own shape set, on
    the same seeds), up to the first the kernel fails; the result over them all
    (nkibench.policy.workloads: the latency is the geometric mean of theirs)."""
    default = fresh_seeds(len(task.seeds)) if backend.fresh_inputs else task.seeds
    chosen = tuple(seeds or default)
    runs: list[WorkloadRun] = []
    for workload in task.workloads:
        found = _evaluate(
            task,
            backend,
            shapes=workload.name,
            seeds=chosen,
            target=target,
            limits=limits,
            **options,
        )
        runs.append(WorkloadRun(workload.name, workload.uuid, found))
        if not found.correct:
            break
    first = runs[0].result
    into = KernelResult(task.name, backend.name, first.target, FULL, dialect=task.dialect)
    return combine(into, runs)


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
    jobs: int = 1,
    baseline_kernel_s: float | None = None,
) -> KernelResult:
    """Check `kernel_source` (default: the task's kernel.py) for correctness on `backend`;
    `jobs` run at once on this host (each gets at most its share of the host's memory);
    `baseline_kernel_s`: the task's baseline kernel's time here, where known (kernel_limits)."""
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
        jobs=jobs,
        baseline_kernel_s=baseline_kernel_s,
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
    jobs: int = 1,
    cancel: threading.Event | None = None,
    baseline_kernel_s: float | None = None,
) -> KernelResult:
    """Check the kernel, then time it on `backend` (nkisim: an estimated latency) and put
    the latency against the task's roofline (% of peak). Raises Cancelled when `cancel` is
    set while a child runs; `jobs` and `baseline_kernel_s` as in check_kernel."""
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
        jobs=jobs,
        cancel=cancel,
        baseline_kernel_s=baseline_kernel_s,
    )
