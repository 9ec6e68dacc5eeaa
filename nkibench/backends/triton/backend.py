"""The triton backend, parent side.

Correctness runs wherever the backend runs: on the GPU, or under Triton's CPU interpreter
(`TRITON_INTERPRET=1`, with the fixes of nkibench.backends.triton.interpreter) on a host
without one, as CI does. Timing needs the GPU: a latency here is always `measured`, never estimated.

Every evaluation draws fresh seeds (unless the caller names them), so a kernel is never
checked twice on the same inputs. Every checked run must have launched a Triton kernel
(NoTritonLaunch): the kernel's child counts the launches (nkibench.backends.triton.launches)
and reports them beside the run's other results; this side decides, the same way on a GPU and
under the interpreter. A kernel more than `reverify_speedup` times faster than
its task's baseline is re-verified before its result counts: timed again with fresh data
written into the timed buffers before every run, and checked on fresh seeds in those same
buffers. Where the inputs hold integer and floating-point data, any kernel faster than its
baseline is: run() may read those integers on the host, and a result kept by them goes
unseen by the timing, however little it saves.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypedDict

from nkibench.backend import (
    COMPARE_PHASE,
    Check,
    Inputs,
    Phase,
    PhaseOwner,
    Session,
    refuse_other_dialects,
)
from nkibench.backends.triton import nsight
from nkibench.backends.triton.compiled import COMPILE_CACHE_FIELD
from nkibench.backends.triton.nsight import (
    CountersUnreadable,
    NsightCompute,
    checked_kernels,
    merge_compiled,
    summarise,
)
from nkibench.dtypes import INTEGER_DTYPE_NAMES
from nkibench.errors import BackendUnavailable, PhaseFailure, recordable
from nkibench.harness import TIMED_RUNS_FIELD, fresh_seeds, profile_kernel, run_phase
from nkibench.policy.provenance import Sourced, package_version
from nkibench.policy.roofline import Peaks
from nkibench.sandbox.folders import SessionFolders
from nkibench.sandbox.isolation import Isolation, Mounts
from nkibench.sandbox.process import Limits
from nkibench.sandbox.results import MalformedResult, autotuned_shape, check_measured
from nkibench.sandbox.warm import WarmPool
from nkibench.task.spec import TaskSpec

__all__ = ["DeviceCeilings", "NoTritonLaunch", "TritonBackend", "mixed_inputs", "probe_host"]

PASSED_VARIABLES = (
    "LD_LIBRARY_PATH",
    "CUDA_HOME",
    "CUDA_PATH",
    "TRITON_LIBCUDA_PATH",
    "TRITON_PTXAS_PATH",
    "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
)
"""Tool and library locations a GPU child needs; never secrets."""
REVERIFY_SPEEDUP = 10.0
MIXED_REVERIFY_SPEEDUP = 1.0
"""The re-verification's threshold where the inputs hold integer and floating-point data. On
an H200 a result kept by an integer input (tests/data/adversarial/int_cache_after_checks.py)
was less than 10x faster than its baseline (its host reads cost part of what it saved), so
it went unchecked, and was reported correct."""
PRELOAD = (
    "nkibench.sandbox.child",
    "nkibench.backends.triton.phases",
    "nkibench.backends.triton.torch_guard:warm_up",
)
"""What a warm process loads once for all its children: torch and triton, and what the torch
guard's first use imports (torch._dynamo, sympy: 4 s of each kernel child on an H100 host)."""
COUNTERS_LEAD = 0.02
"""A candidate's counters are taken when it is this much faster than the task's own kernel: the
timer's repeatability (the same kernel timed twice differs by less than 2% on an H100 and an
H200), so a kernel no faster than the task's own, which cannot lead the search, never pays a
profiler's start and replays for them (11 to 16 s on an H200)."""
TIMED_RUNS = 45
"""The most runs a timing makes of a kernel slower than the timer's blocks (3 warm-up runs, two
blocks of 10, 10 synchronised and 10 guarded runs, the launch overhead's empty kernel, with
room): a faster kernel makes more runs within the blocks' fixed device time, which the kernel
child's floor covers. The kernel child's time limit counts them (nkibench.harness)."""
CACHE_SLOWDOWN = 1.5
"""Fresh inputs may not be this much slower than rotated ones (plus a microsecond margin)."""


def _compile_cache(session: Session) -> dict[str, str]:
    """The request field naming the compile cache the kernel's child shares with the
    counters' child started ahead (begin); none where there is no such child."""
    started = session.ahead.get("counters")
    return {COMPILE_CACHE_FIELD: str(started.writes[1])} if started is not None else {}


def counters_skipped(latency_ms: float | None, baseline_ms: float | None) -> str | None:
    """Why a kernel's counters are not taken (None: they are): a kernel that is not
    COUNTERS_LEAD faster than the task's own (`baseline_ms`; None for the task's own kernel)."""
    if baseline_ms is None or latency_ms is None or latency_ms < baseline_ms * (1 - COUNTERS_LEAD):
        return None
    return (
        f"not taken: {latency_ms:.4f} ms is not {COUNTERS_LEAD:.0%} faster than the task's own "
        f"kernel ({baseline_ms:.4f} ms); counters are taken for the kernels that can lead the "
        "search"
    )


class NoTritonLaunch(PhaseFailure):
    """A checked run of a Triton task's run() that launched no Triton kernel: not correct,
    whatever its outputs. `allow_torch_compute` lets torch compute beside Triton launches,
    never instead of them."""

    def __init__(self, where: str, *, interpreter: bool) -> None:
        hint = (
            " Under Triton's CPU interpreter the inputs are CPU tensors: a branch taken when "
            '`x.is_cuda` is false (or `x.device.type != "cuda"`, or '
            "`torch.cuda.is_available()` is false) runs here; launch the Triton kernel on any "
            "device."
            if interpreter
            else ""
        )
        super().__init__(
            "incorrect",
            f"run() launched no Triton kernel ({where}): a Triton task's run() computes its "
            "outputs in @triton.jit kernels on every call; this one returned without launching "
            f"any (a PyTorch fallback, or a result kept from an earlier call).{hint}",
        )


def require_launches(
    entries: dict[str, Any], seeds: list[int], where: str, *, interpreter: bool
) -> None:
    """Raise NoTritonLaunch unless each seed's run launched a Triton kernel (a missing or
    malformed count is the child's malformed result)."""
    for seed in seeds:
        launches = entries[str(seed)]["launches"]
        if not isinstance(launches, int) or isinstance(launches, bool) or launches < 0:
            raise TypeError(f"seed {seed}: launches {launches!r}")
        if launches == 0:
            raise NoTritonLaunch(f"{where}seed {seed}", interpreter=interpreter)


@dataclass(frozen=True)
class DeviceCeilings:
    """What one GPU was measured to do (nkibench.backends.triton.ceilings), and on which GPU."""

    gpu: str
    fingerprint: dict[str, str]
    bandwidth_bytes_per_s: float
    vector_flops: float
    matmul_flops: dict[str, float]
    method: dict[str, str] = field(default_factory=dict)

    def peaks(self) -> Peaks:
        def measured(value: float, what: str) -> Sourced:
            return Sourced(value, f"measured on this {self.gpu}: {what}")

        return Peaks(
            self.gpu,
            bandwidth=measured(self.bandwidth_bytes_per_s, "device-to-device copy"),
            vector_flops=measured(self.vector_flops, "float32 FMA chains in a Triton kernel"),
            matmul_flops=measured(self.matmul_flops["float32"], "tf32 torch.matmul"),
            matmul_flops_bf16=measured(self.matmul_flops["bfloat16"], "bf16 torch.matmul"),
            matmul_flops_fp16=measured(self.matmul_flops["float16"], "fp16 torch.matmul"),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu,
            "fingerprint": self.fingerprint,
            "bandwidth_bytes_per_s": self.bandwidth_bytes_per_s,
            "vector_flops": self.vector_flops,
            "matmul_flops": self.matmul_flops,
            "method": self.method,
        }


@dataclass(frozen=True)
class TritonHost:
    gpu: str | None
    """None: no GPU here, kernels run under Triton's interpreter (correctness only)."""
    fingerprint: dict[str, str]


def _phase(function: str, runs: PhaseOwner = "kernel") -> Phase:
    return Phase(f"nkibench.backends.triton.phases:{function}", runs, backend_environment=True)


PHASES = MappingProxyType(
    {
        "reference": _phase("reference_phase", "task"),
        "kernel": _phase("kernel_phase"),
        "compare": COMPARE_PHASE,
        "reverify": _phase("reverify_phase"),
        "counters": _phase("counters_phase"),
        "counters_report": Phase(f"{nsight.__name__}:report_phase", "backend"),
        "probe": _phase("probe_phase", "backend"),
        "ceilings": _phase("ceilings_phase", "backend"),
    }
)


def _run_phase(
    name: str,
    request: dict[str, Any],
    environment: dict[str, str],
    limits: Limits,
    isolation: Isolation,
) -> dict[str, Any]:
    """A phase outside any check (the probe, the ceilings), in a folder of its own."""
    with SessionFolders(None, isolation.child_uid, prefix="nkibench-triton-") as folders:
        return run_phase(
            name,
            PHASES[name],
            request,
            folders,
            limits,
            isolation=isolation,
            mounts=gpu_mounts(),
            environment=environment,
        )


def gpu_mounts() -> Mounts:
    """NVIDIA's device nodes, the driver's view of them in /sys, and CUDA's libraries."""
    libraries = [
        *(os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep)),
        *(os.environ[k] for k in ("CUDA_HOME", "CUDA_PATH") if k in os.environ),
        _libcuda_dir() or "",
    ]
    return Mounts(
        devices=tuple(sorted(str(p) for p in Path("/dev").glob("nvidia*"))),
        read_only=tuple(p for p in libraries if p),
        system=True,
    )


def _libcuda_dir() -> str | None:
    """The folder of the driver's libcuda.so.1, found here, outside the sandbox: Triton asks
    `ldconfig -p` for it, which may not work inside (an image without a linker cache)."""
    if "TRITON_LIBCUDA_PATH" in os.environ:
        return os.environ["TRITON_LIBCUDA_PATH"]
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    try:
        listing = subprocess.run(
            [ldconfig, "-p"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        listing = ""
    for line in listing.splitlines():
        if "libcuda.so.1" in line and "=>" in line:
            return str(Path(line.split("=>")[1].strip()).parent)
    for folder in ("/usr/local/nvidia/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64"):
        if (Path(folder) / "libcuda.so.1").exists():
            return folder
    return None


def _environment(device: str | None, interpret: bool) -> dict[str, str]:
    # No Triton cache shared across evaluations: a kernel could plant a compiled binary under
    # another kernel's cache key. Each child caches under its own HOME, so a kernel compiles
    # once per child (a profile's kernel child checks and times it; a re-verification child
    # compiles it again), except the counters' child of a task's own kernel, which finds what
    # the kernel's child of the same session compiled (TritonBackend.begin).
    passed = {k: os.environ[k] for k in PASSED_VARIABLES if k in os.environ}
    environment = {**passed, "PATH": os.environ.get("PATH", os.defpath)}
    libcuda = None if interpret else _libcuda_dir()
    if libcuda is not None:
        environment["TRITON_LIBCUDA_PATH"] = libcuda
    if interpret:
        environment["TRITON_INTERPRET"] = "1"
    if device is not None:
        environment["CUDA_VISIBLE_DEVICES"] = device
    return environment


def probe_host(device: str | None = "0", *, isolation: Isolation | None = None) -> TritonHost:
    """What this host offers the triton backend on `device`, asked of a sandboxed child."""
    answer = _run_phase(
        "probe",
        {},
        _environment(device, False),
        Limits(timeout_s=120, memory_mb=None),
        isolation or Isolation.detect(),
    )
    if not answer.get("ok"):
        raise BackendUnavailable(f"the triton backend cannot start: {answer}")
    return TritonHost(answer["gpu"], answer["fingerprint"])


class UnderNcu(TypedDict):
    """How the counters' child runs (TritonBackend._ncu)."""

    mounts: Mounts
    launcher: list[str]


class TritonBackend:
    name = "triton"
    dialects = frozenset({"triton"})
    phases = PHASES
    fresh_inputs = True
    times_every_seed = True
    sentinel_outputs = False

    def __init__(
        self,
        *,
        device: str = "0",
        require_gpu: bool = False,
        ceilings: DeviceCeilings | None = None,
        reverify_speedup: float = REVERIFY_SPEEDUP,
        host: TritonHost | None = None,
        eager: bool = False,
        baselines: dict[tuple[str, str, str], float] | None = None,
        isolation: Isolation | None = None,
        warm: WarmPool | bool = True,
        nsight: NsightCompute | bool | None = True,
    ) -> None:
        self.device = device
        self.isolation = isolation or Isolation.detect()
        self.host = host or probe_host(device, isolation=self.isolation)
        if warm is True and WarmPool.possible(self.isolation) is None:
            warm = WarmPool(self.isolation, gpu_mounts(), self.environment(), PRELOAD)
        self.warm = warm if isinstance(warm, WarmPool) else None
        """The device's warm processes (nkibench.sandbox.warm), shared by its replicas; None
        where they cannot run here (no sandbox, no Landlock) or were not asked for."""
        self.baselines = {} if baselines is None else baselines
        """(task revision, shapes, GPU) → the task's own kernel's measured p50 in ms, shared
        by the replicas of one device."""
        if require_gpu and self.host.gpu is None:
            raise BackendUnavailable(
                "no CUDA GPU is visible here (torch.cuda.is_available() is false): Triton "
                "kernels can be checked under the CPU interpreter (accelopt check), but not timed"
            )
        self.ceilings = ceilings
        self.reverify_speedup = reverify_speedup
        self.with_eager = eager
        """Also time the reference's forward() in PyTorch eager (`accelopt bench gpu`)."""
        if nsight is True:
            nsight = NsightCompute.find() if self.host.gpu else None
        self.nsight = nsight or None
        """Nsight Compute, which takes each profile's hardware counters; None: none here, or
        not asked for (ACCELOPT_NCU=off)."""

    def replica(self) -> TritonBackend:
        """A backend for another job on the same GPU: the probe and the ceilings shared."""
        return TritonBackend(
            device=self.device,
            host=self.host,
            ceilings=self.ceilings,
            reverify_speedup=self.reverify_speedup,
            eager=self.with_eager,
            baselines=self.baselines,
            isolation=self.isolation,
            warm=self.warm or False,
            nsight=self.nsight or False,
        )

    @property
    def target(self) -> str:
        return self.host.gpu or "interpreter"

    def environment(self) -> dict[str, str]:
        return _environment(self.device, self.host.gpu is None)

    def mounts(self) -> Mounts:
        return gpu_mounts()

    def limits(self, task: TaskSpec, shapes: str, threads: int) -> Limits:
        # CUDA maps far more address space than it uses: no address-space limit on a GPU
        memory = task.memory_mb if self.host.gpu is None else None
        return Limits(
            timeout_s=task.timeout_for(shapes),
            memory_mb=memory,
            disk_mb=task.disk_mb,
            threads=threads,
            adaptive=not task.declares_timeout(shapes),
        )

    def begin(self, session: Session, profile: bool) -> None:
        """The counters' child of a task's own kernel starts now, ahead of its work: Nsight
        Compute's start, the interpreter's and the imports (most of that child's 11 to 17 s on
        an H200) pass while the reference and the kernel's children run. It begins once the
        kernel's child has ended (trusted_check), never while a kernel is timed."""
        if not profile or self.host.gpu is None or self.nsight is None:
            return
        if session.source != session.task.kernel_source:
            return  # a candidate's counters wait for its latency (counters_skipped)
        report = session.folder("counters")
        # what the kernel's child compiles, the counters' child of the same kernel finds
        # (about a second and a half of that child's own compile on an H200 host)
        cache = session.folder("compile_cache")
        session.kernel_writes.append(cache)
        session.start_ahead(
            "counters", writes=[report, cache], reads=[session.data_dir()], **self._ncu(report)
        )

    def kernel_request(self, session: Session, profile: bool) -> dict[str, Any]:
        if not profile or self.host.gpu is None:
            return {}
        shared = _compile_cache(session)
        # A profile is timed in the kernel's own child, after its checked runs: the kernel
        # compiled, autotuned and checked is the one timed, and a second child's start, CUDA
        # initialisation, inputs and compile (about 1.5 s of a candidate on an H200) are saved.
        # What it measured is read once the comparison found the outputs correct.
        return {
            "time": True,
            "eager": self.with_eager,
            TIMED_RUNS_FIELD: TIMED_RUNS * (2 if self.with_eager else 1),
            **shared,
        }

    def trusted_check(
        self, session: Session, kernel: dict[str, Any], profile: bool
    ) -> Check | None:
        # the kernel's child counted the poisoned elements on the device, and the launches
        require_launches(
            kernel["seeds"], list(session.seeds), "", interpreter=self.host.gpu is None
        )
        session.result.autotuned = dict(kernel.get("autotuned", {}))
        counters = session.ahead.get("counters")
        if counters is not None and session.inputs is not None:
            # the kernel's child, which timed it, has ended: the counted run overlaps the
            # comparison (a child of the CPU's), and is dropped with the session if it fails
            counters.begin({**session.kernel_request(session.inputs), **_compile_cache(session)})
        return None

    def verify(self, session: Session, found: dict[str, Any] | None, profile: bool) -> None:
        return None

    def refusal(self, dialect: str) -> str | None:
        return refuse_other_dialects(self, dialect)

    def resolve_target(self, requested: str) -> str:
        return self.target

    def peaks(self, target: str) -> Peaks | None:
        return self.ceilings.peaks() if self.ceilings else None

    def measure_ceilings(self) -> DeviceCeilings:
        if self.host.gpu is None:
            raise BackendUnavailable("device ceilings need a GPU")
        answer = _run_phase(
            "ceilings",
            {},
            self.environment(),
            Limits(timeout_s=600, memory_mb=None),
            self.isolation,
        )
        if not answer.get("ok"):
            raise BackendUnavailable(f"measuring the device's ceilings failed: {answer}")
        measured = answer["ceilings"]
        return DeviceCeilings(
            self.host.gpu,
            self.host.fingerprint,
            measured["bandwidth_bytes_per_s"],
            measured["vector_flops"],
            measured["matmul_flops"],
            measured["method"],
        )

    # --- timing ------------------------------------------------------------------------

    def measure(self, session: Session, kernel: dict[str, Any]) -> None:
        if self.host.gpu is None:
            raise PhaseFailure("measurement", "no GPU here: Triton kernels are timed on a GPU")
        measured = _timing(kernel.get("measured"), "the kernel's child")
        stats = measured["latency"]
        result = session.result
        launches = measured["launches"]
        autotuned = measured.get("autotuned", {})
        if autotuned_shape(autotuned) and autotuned:
            result.autotuned = autotuned
        result.latency_ms = stats["p50"]
        result.latency_kind = "measured"
        if "eager" in measured:
            stats = {**stats, "eager_p50": measured["eager"]["p50"]}
        result.latency_stats = {
            **stats,
            "synchronised_ms": measured["synchronised_ms"],
            "launch_overhead_ms": measured["launch_overhead_ms"],
        }
        baseline = self._baseline_ms(session)
        if baseline is not None and baseline / stats["p50"] > self._reverify_above(session):
            self._reverify(session, stats, baseline)
        # after the re-verification, whose verdict on a result kept across calls is sharper
        if not (isinstance(launches, list) and launches and all(launches)):
            result.correct = False
            raise NoTritonLaunch("in the runs that close the timing", interpreter=False)
        if session.source == session.task.kernel_source:
            # a search profiles the task's own kernel first: its candidates' yardstick
            self.baselines.setdefault(self._baseline_key(session), stats["p50"])
        self._counters(session, baseline)

    def _counters(self, session: Session, baseline_ms: float | None) -> None:
        """The hardware counters of one run of the kernel, per launched kernel, where Nsight
        Compute is here (nkibench.backends.triton.nsight); else, or where they cannot be read,
        the profile says why. A hint for the planner: nothing here changes a verdict.

        They cost a profiler's start and a replay per metric pass (seconds): they are taken
        for the task's own kernel and for a kernel faster than it by more than the timer's
        spread (COUNTERS_LEAD), which are the ones that can lead the search; any other
        kernel's profile says they were not taken."""
        result = session.result
        if self.nsight is None:
            result.counters_unavailable = (
                "no Nsight Compute (ncu) on this host, or ACCELOPT_NCU=off"
            )
            return
        skipped = counters_skipped(result.latency_ms, baseline_ms)
        if skipped is not None:
            result.counters_unavailable = skipped
            return
        assert session.inputs is not None
        started = session.ahead.get("counters")
        report = started.writes[0] if started is not None else session.folder("counters")
        try:
            if started is not None:
                answer = started.result()
            else:
                answer = session.child(
                    "counters",
                    session.kernel_request(session.inputs),
                    writes=[report],
                    reads=[session.inputs.data_dir],
                    **self._ncu(report),
                )
            if not answer.get("ok"):
                raise CountersUnreadable(f"the counted run failed: {answer.get('message')}")
            # read in a child of its own, which runs no kernel: this process opens nothing a
            # child wrote
            read = session.child("counters_report", {"report_dir": str(report)}, reads=[report])
            if not read.get("ok"):
                raise CountersUnreadable(str(read.get("message")))
            kernels = merge_compiled(checked_kernels(read.get("kernels")), answer.get("compiled"))
        except (PhaseFailure, CountersUnreadable) as e:
            result.counters_unavailable = recordable(f"Nsight Compute: {e}")[:300]
            return
        finally:
            session.release(report)
        result.gpu_kernels = kernels
        result.counters |= summarise(kernels)

    def _ncu(self, report: Path) -> UnderNcu:
        """How the counters' child runs: Nsight Compute's folder bound in, ncu starting it and
        writing its CSV into `report`."""
        assert self.nsight is not None
        return {
            "mounts": Mounts(read_only=(self.nsight.folder,)),
            "launcher": self.nsight.command(report / nsight.CSV_NAME),
        }

    def _reverify_above(self, session: Session) -> float:
        """The speed-up over the baseline above which a kernel is re-verified."""
        threshold = self.reverify_speedup
        if math.isfinite(threshold) and session.inputs and mixed_inputs(session.inputs.manifest):
            return min(threshold, MIXED_REVERIFY_SPEEDUP)
        return threshold

    def _time_fresh(
        self, session: Session, seeds: list[int], fresh: Inputs, out: Path
    ) -> dict[str, Any]:
        """The re-verification's child: timed on the session's inputs, then on `fresh`'s seeds
        written into the timed buffers, their outputs into `out`."""
        assert session.inputs is not None
        request = {
            **session.kernel_request(session.inputs),
            "fresh_manifest": fresh.manifest,
            "fresh_data_dir": str(fresh.data_dir),
            "fresh_out_dir": str(out),
            "fresh_seeds": seeds,
        }
        reads = [session.inputs.data_dir, fresh.data_dir]
        answer = session.child("reverify", request, writes=[out], reads=reads)
        return _timing(answer, "the re-verification's child", seeds)

    def _baseline_ms(self, session: Session) -> float | None:
        """The task's own kernel's p50 on this GPU (timed once per device)."""
        task = session.task
        if session.source == task.kernel_source:
            return None
        key = self._baseline_key(session)
        if key not in self.baselines:
            yardstick = self.replica()
            yardstick.reverify_speedup = float("inf")  # the baseline is not re-verified
            yardstick.nsight = None  # only its latency is wanted here
            baseline = profile_kernel(
                task, backend=yardstick, shapes=session.shapes, cancel=session.cancel
            )
            if baseline.latency_ms is None:
                return None
            self.baselines[key] = baseline.latency_ms
        return self.baselines[key]

    def _baseline_key(self, session: Session) -> tuple[str, str, str]:
        return (session.task.content_hash, session.shapes, self.target)

    def _reverify(self, session: Session, rotated: dict[str, float], baseline: float) -> None:
        """Fresh seeds from the reference, written into the timed buffers; timed again with
        fresh data before every run."""
        seeds = list(fresh_seeds(len(session.seeds)))
        inputs = session.run_reference(seeds)
        fresh_out = session.folder("fresh_outputs")
        try:
            self._judge_fresh(session, seeds, inputs, fresh_out, rotated=rotated, baseline=baseline)
        finally:
            session.release(inputs.data_dir, inputs.expected_dir, fresh_out)

    def _judge_fresh(
        self,
        session: Session,
        seeds: list[int],
        inputs: Inputs,
        fresh_out: Path,
        *,
        rotated: dict[str, float],
        baseline: float,
    ) -> None:
        measured = self._time_fresh(session, seeds, inputs, fresh_out)
        fresh = measured["fresh"]
        for seed in seeds:
            if any(fresh["seeds"][str(seed)]["never_written"]):
                raise PhaseFailure(
                    "cheat",
                    f"re-verification, fresh seed {seed}: output "
                    "elements were never written in the timed buffers",
                )
        verdicts = session.verdicts(inputs, fresh["seeds"], fresh_out, seeds=seeds)
        for seed in seeds:
            verdict = verdicts.get(str(seed))
            if verdict is None or not verdict["correct"]:
                message = verdict["message"] if verdict else "not compared"
                raise PhaseFailure(
                    "cheat",
                    (
                        f"{baseline / rotated['p50']:.0f}x faster than the baseline, and wrong on "
                        f"fresh inputs written into the timed buffers (seed {seed}: {message}): "
                        "results cached across calls"
                    ),
                )
        fresh_p50 = fresh["latency"]["p50"]
        if fresh_p50 > CACHE_SLOWDOWN * rotated["p50"] + 1e-3:
            raise PhaseFailure(
                "cheat",
                (
                    f"{fresh_p50:.4f} ms on fresh inputs against {rotated['p50']:.4f} ms on "
                    "repeated ones: results cached across calls"
                ),
            )
        try:  # after the verdicts, sharper on a result kept across calls
            require_launches(fresh["seeds"], seeds, "re-verification, fresh ", interpreter=False)
        except NoTritonLaunch:
            session.result.correct = False
            raise
        session.result.latency_stats |= {
            "reverified": 1.0,
            "fresh_p50": fresh_p50,
            "baseline_ms": baseline,
        }
        session.result.seeds = [*session.result.seeds, *seeds]

    def fingerprint(self, target: str) -> dict[str, str]:
        return {
            "backend": self.name,
            "target": self.target,
            "latency_kind": "measured" if self.host.gpu else "none (interpreter)",
            "children": self.warm.describe() if self.warm else "cold",
            **self.host.fingerprint,
            "accelopt": package_version("accelopt"),
        }


def _timing(answer: Any, who: str, fresh_seeds: list[int] | None = None) -> dict[str, Any]:
    """A timing's result, read as a child's data (nkibench.sandbox.results.check_measured);
    its failure, or a malformed or missing one, is a PhaseFailure."""
    if answer is None:
        raise PhaseFailure("runtime", f"{who} handed back no timing")
    try:
        measured = check_measured(answer, fresh_seeds or ())
    except MalformedResult as e:
        raise PhaseFailure("runtime", f"{who} handed back a malformed timing: {e}") from None
    if not measured["ok"]:
        raise PhaseFailure(measured["kind"], measured["message"], measured.get("line") or None)
    return measured


def mixed_inputs(manifest: dict[str, Any]) -> bool:
    """Whether a seed's inputs hold integer and floating-point arrays (the reference phase's
    manifest: every seed's inputs have the same dtypes)."""
    seeds = list(manifest.values())
    arrays = [v for v in seeds[0]["inputs"] if v["kind"] == "array"] if seeds else []
    integer = [v["dtype"] in INTEGER_DTYPE_NAMES for v in arrays]
    return any(integer) and not all(integer)
