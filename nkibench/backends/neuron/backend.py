"""The neuron backend, parent side: real Neuron compilers and a real NeuronCore.

Which kernels it runs depends on the Neuron SDK found (detect.py): legacy NKI
(`neuronxcc.nki`, SDK 2.29 and older), current NKI (the `nki` package, 0.3 and later, on
trn2/trn3), or both (SDK 2.29 with NKI 0.3). `dialects` says which; each kernel takes its
dialect's route:
- legacy: `neuronxcc.nki.baremetal` compiles and runs it, `neuron-profile capture/view` time it
  (phases.py);
- current: `@nki.jit` on NumPy arrays compiles and runs it standalone, keeping the NEFF,
  `neuron-explorer capture/view` profile it and nrtpy times it where an nrtpy interpreter is
  known (current.py).
A kernel of a dialect this SDK does not run is refused before any child starts, with the SDK
named (a legacy kernel on SDK 2.30 or later would not compile).

Each job is pinned to one NeuronCore through NEURON_RT_VISIBLE_CORES (it takes precedence
over NEURON_RT_NUM_CORES). The children get the parent's PATH and NEURON_* variables, which
hold tool locations and runtime settings, never secrets; everything else stays scrubbed.
Legacy compilation uses AccelOpt's options, so latencies compare with its published ones:
`--auto-cast=none` keeps fp32 matmuls in fp32 (older neuronx-cc cast them to bf16 by
default), `--logical-nc-config=1` compiles for one physical core, `--disable-dge` keeps DMA
descriptors static. Current kernels run with LNC 1 too (`kernel(...)` is `kernel[1](...)`, and
NEURON_LOGICAL_NC_CONFIG must match it). The address-space limit is off for these children:
the Neuron runtime maps device memory into the process; the wall-clock timeout and the
process-group kill stay.

When asked (the default), the same kernel also runs under nkisim and its estimate is
recorded beside the measurement, so the cost model's error is known for every kernel.
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Any

from nkibench.backend import COMPARE_PHASE, REFERENCE_PHASE, Check, Phase, Session
from nkibench.backends.neuron.detect import (
    CURRENT,
    LEGACY,
    NeuronHost,
    detect_neuron,
    dialect_refusal,
    runnable_dialects,
    target_of_instance,
)
from nkibench.backends.nkisim.backend import CHECK_PHASE, taken, trace_check
from nkibench.backends.nkisim.backend import KERNEL_PHASE as NKISIM_KERNEL_PHASE
from nkibench.cost.model import DEPENDENCY_BOUND
from nkibench.errors import BackendUnavailable, PhaseFailure
from nkibench.policy.provenance import package_version
from nkibench.policy.roofline import PEAKS, Peaks
from nkibench.sandbox.isolation import Isolation, Mounts
from nkibench.sandbox.process import Limits
from nkibench.sandbox.warm import WarmPool
from nkibench.task.spec import TaskSpec

__all__ = ["ACCELOPT_COMPILE_OPTIONS", "CURRENT_COMPILE", "NeuronBackend"]

ACCELOPT_COMPILE_OPTIONS = "--disable-dge --logical-nc-config=1"
CURRENT_COMPILE = "nki.jit standalone, LNC 1"
"""What the fingerprint says of a current kernel's compilation (nki.jit takes no flags)."""
ENGINE_ACTIVITY = {
    "tensor": "tensor_engine_active_time_percent",
    "vector": "vector_engine_active_time_percent",
    "scalar": "scalar_engine_active_time_percent",
    "gpsimd": "gpsimd_engine_active_time_percent",
    "dma": "dma_active_time_percent",
}
MEASURE_PHASES = {LEGACY: "measure", CURRENT: "measure_current"}


def bound_by_activity(counters: dict[str, float]) -> str | None:
    """The busiest engine by the profile's active-time fractions."""
    activity = {e: counters[k] for e, k in ENGINE_ACTIVITY.items() if k in counters}
    if not activity:
        return None
    busiest = max(activity, key=lambda e: activity[e])
    return busiest if activity[busiest] >= DEPENDENCY_BOUND else "dependencies"


class NeuronBackend:
    name = "neuron"
    phases = MappingProxyType(
        {
            "reference": REFERENCE_PHASE,
            "kernel": Phase("nkibench.backends.neuron.phases:kernel_phase", "kernel", True),
            "compare": COMPARE_PHASE,
            "measure": Phase("nkibench.backends.neuron.phases:measure_phase", "kernel", True),
            "measure_current": Phase(
                "nkibench.backends.neuron.current:measure_phase", "kernel", True
            ),
            "nkisim": Phase(NKISIM_KERNEL_PHASE.entry, "kernel", True),
            "check": CHECK_PHASE,
        }
    )
    """`kernel` runs the route of the kernel's dialect; `measure` times a legacy kernel,
    `measure_current` a current one; `nkisim`: nkisim's kernel phase on the same kernel, and
    `check` the cost model on its trace (in a child of its own), for the model's error."""
    fresh_inputs = False
    times_every_seed = False
    sentinel_outputs = False
    warm: WarmPool | None = None  # its children need no warm process: no torch to import

    def __init__(
        self,
        *,
        core: int = 0,
        target: str | None = None,
        iterations: int = 10,
        retries: int = 2,
        spread_tolerance: float = 0.01,
        compile_options: str = ACCELOPT_COMPILE_OPTIONS,
        compile_timeout_s: float = 600.0,
        estimate: bool = True,
        host: NeuronHost | None = None,
        isolation: Isolation | None = None,
        nrtpy_python: str | None = None,
    ) -> None:
        self.isolation = isolation or Isolation.detect()
        self.host = host or detect_neuron(nrtpy_python=nrtpy_python)
        if core not in self.host.cores:
            raise BackendUnavailable(
                f"NeuronCore {core} is not on this host (neuron-ls lists "
                f"{', '.join(map(str, self.host.cores))})"
            )
        detected = target_of_instance(self.host.instance_type)
        if target is not None and detected is not None and target != detected:
            raise BackendUnavailable(
                f"--target {target} does not match this {self.host.instance_type} ({detected})"
            )
        resolved = target or detected
        if resolved is None:
            raise BackendUnavailable(
                f"cannot tell the Trainium generation of instance type "
                f"{self.host.instance_type!r}; pass --target trn1, trn2 or trn3"
            )
        self.target = resolved
        self.runs = runnable_dialects(self.host, resolved)
        """The NKI dialects this SDK runs on this target, current NKI first."""
        if not self.runs:
            reasons = "; ".join(
                r for d in (CURRENT, LEGACY) if (r := dialect_refusal(self.host, resolved, d))
            )
            raise BackendUnavailable(f"the neuron backend runs no NKI kernel here: {reasons}")
        self.dialects = frozenset(self.runs)
        self.core = core
        self.iterations = iterations
        self.retries = retries
        self.spread_tolerance = spread_tolerance
        self.compile_options = compile_options
        self.compile_timeout_s = compile_timeout_s
        self.with_estimate = estimate
        self.dialect: str | None = None
        """The dialect of the kernel this backend was last asked to run (one job each)."""
        self.timer: str | None = None
        """What timed it ("nrtpy", "neuron-explorer capture", "neuron-profile capture")."""

    def refusal(self, dialect: str) -> str | None:
        """Why this host does not run `dialect` kernels, naming the SDK (None: it does)."""
        return dialect_refusal(self.host, self.target, dialect)

    def environment(self) -> dict[str, str]:
        passed = {k: v for k, v in os.environ.items() if k.startswith("NEURON_")}
        library_path = os.environ.get("LD_LIBRARY_PATH")
        current = {"NEURON_LOGICAL_NC_CONFIG": "1"} if self.dialect == CURRENT else {}
        return {
            **passed,
            **({"LD_LIBRARY_PATH": library_path} if library_path else {}),
            "PATH": self.host.path,
            "PYTHONPATH": os.pathsep.join([*self.host.python_path, *(p for p in sys.path if p)]),
            "NEURON_RT_VISIBLE_CORES": str(self.core),
            "NEURON_CC_FLAGS": "--auto-cast=none",
            "NEURON_PLATFORM_TARGET_OVERRIDE": self.target,
            **current,
        }

    def mounts(self) -> Mounts:
        """The NeuronCores' device nodes, /sys (the runtime reads the devices there), and the
        toolchain: the Neuron tools' PATH, the compilers' Python packages, and the
        environment of the nrtpy interpreter."""
        tools = [*self.host.path.split(os.pathsep), *self.host.python_path, "/opt/aws/neuron"]
        if self.host.nrtpy_python is not None:
            tools.append(str(Path(self.host.nrtpy_python).parent.parent))
        return Mounts(
            devices=tuple(sorted(str(p) for p in Path("/dev").glob("neuron*"))),
            read_only=tuple(p for p in tools if p),
            system=True,
        )

    def limits(self, task: TaskSpec, shapes: str, threads: int) -> Limits:
        return Limits(
            timeout_s=task.timeout_for(shapes) + self.compile_timeout_s,
            memory_mb=None,
            disk_mb=task.disk_mb,
            threads=threads,
            startup_s=self.compile_timeout_s,
            adaptive=not task.declares_timeout(shapes),
        )

    def begin(self, session: Session, profile: bool) -> None:
        return None

    def kernel_request(self, session: Session, profile: bool) -> dict[str, Any]:
        dialect = session.task.dialect
        self.dialect = dialect
        refusal = self.refusal(dialect)
        if refusal is not None:
            # the real SDK would fail to compile it: a compile error the author can act on
            raise PhaseFailure("compile", f"a {dialect} kernel: {refusal}")
        out = session.out_dir  # the folder the kernel's child may write
        assert out is not None
        request: dict[str, Any] = {"route": dialect, "neff_path": str(out / "kernel.neff")}
        if dialect == LEGACY:
            request |= {
                "compile_options": self.compile_options,
                "ntff_path": str(out / "kernel.ntff"),
            }
        else:
            request["inputs_dir"] = str(out / "profile_inputs")
        return request

    def measure(self, session: Session, kernel: dict[str, Any]) -> None:
        dialect = self.dialect or session.task.dialect
        out = session.out_dir
        assert out is not None
        request: dict[str, Any] = {
            # the kernel phase's NEFF (and trace, and inputs), read-only: the measuring child
            # writes only in its own folder
            "artifacts_dir": str(out),
            "neff_path": str(out / "kernel.neff"),
            "profiler": self.host.profiler(dialect),
            "iterations": self.iterations,
            "retries": self.retries,
            "spread_tolerance": self.spread_tolerance,
        }
        if dialect == LEGACY:
            request["ntff_path"] = str(out / "kernel.ntff")
        else:
            request |= {"inputs": kernel.get("inputs", {}), "nrtpy_python": self.host.nrtpy_python}
        measured = session.child(MEASURE_PHASES[dialect], request, reads=[out])
        if not measured["ok"]:
            raise PhaseFailure("measurement", measured["message"])
        self.timer = measured.get("timer")
        result = session.result
        stats = measured["latency"]
        result.latency_ms = stats["mean"]
        result.latency_kind = "measured"
        result.latency_stats = {**stats, "attempts": float(measured["attempts"])}
        result.counters = measured["counters"]
        result.bound_by = bound_by_activity(result.counters)
        if self.with_estimate:
            result.estimate = self._estimate(session, stats["mean"])

    def _estimate(self, session: Session, measured_ms: float) -> dict[str, Any]:
        """nkisim's estimate of the same kernel on the first seed (its error is the model's)."""
        assert session.inputs is not None
        seed = session.seeds[0]
        out = session.folder("nkisim_outputs")
        request = {
            **session.kernel_request(session.inputs),
            "seeds": [seed],
            "order_check": False,
            "out_dir": str(out),
        }
        ran = session.child("nkisim", request, writes=[out], reads=[session.inputs.data_dir])
        if not ran["ok"]:
            return {"error": f"{ran['kind']}: {ran['message']}"}
        check = trace_check(session, out, ran, estimate=True)
        try:
            estimate = taken(session.child("check", check.request, reads=[out]))["estimate"]
        except PhaseFailure as e:
            return {"error": f"{e.kind}: {e.message}"}
        return {
            "latency_ms": estimate["latency_ms"],
            "latency_kind": "estimated",
            "model_version": estimate["model_version"],
            "bound_by": estimate["bound_by"],
            "ratio_to_measured": estimate["latency_ms"] / measured_ms,
        }

    def trusted_check(
        self, session: Session, kernel: dict[str, Any], profile: bool
    ) -> Check | None:
        return None  # the device ran the kernel: its outputs are compared, its time measured

    def verify(self, session: Session, found: dict[str, Any] | None, profile: bool) -> None:
        return None

    def peaks(self, target: str) -> Peaks | None:
        return PEAKS.get(target)

    def resolve_target(self, requested: str) -> str:
        return self.target

    def fingerprint(self, target: str) -> dict[str, str]:
        dialect = self.dialect or "+".join(self.runs)  # no kernel asked for: what it runs
        return {
            "backend": self.name,
            "target": self.target,
            "latency_kind": "measured",
            "dialect": dialect,
            "neuron_sdk": self.host.sdk_version or "unknown",
            "neuronx_cc": self.host.compiler_version,
            "nki": self.host.nki_version or "none",
            "timer": self.timer or "none",
            "instance_type": self.host.instance_type or "unknown",
            "neuron_devices": str(self.host.devices),
            "neuron_core": str(self.core),
            "compile_options": CURRENT_COMPILE if dialect == CURRENT else self.compile_options,
            "accelopt": package_version("accelopt"),
            "python": platform.python_version(),
        }
