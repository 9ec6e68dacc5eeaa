"""The neuron backend, parent side: real neuronx-cc and a real NeuronCore.

Each job is pinned to one NeuronCore through NEURON_RT_VISIBLE_CORES (it takes precedence
over NEURON_RT_NUM_CORES). The children get the parent's PATH and NEURON_* variables, which
hold tool locations and runtime settings, never secrets; everything else stays scrubbed.
Compilation uses AccelOpt's options, so latencies compare with its published ones:
`--auto-cast=none` keeps fp32 matmuls in fp32 (older neuronx-cc cast them to bf16 by
default), `--logical-nc-config=1` compiles for one physical core, `--disable-dge` keeps DMA
descriptors static. The address-space limit is off for these children: the Neuron runtime
maps device memory into the process; the wall-clock timeout and the process-group kill stay.

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

from nkibench.backend import COMPARE_PHASE, REFERENCE_PHASE, Phase, Session
from nkibench.backends.neuron.detect import NeuronHost, detect_neuron, target_of_instance
from nkibench.backends.nkisim.backend import KERNEL_PHASE as NKISIM_KERNEL_PHASE
from nkibench.cost.model import DEPENDENCY_BOUND
from nkibench.errors import BackendUnavailable, PhaseFailure
from nkibench.policy.provenance import package_version
from nkibench.policy.roofline import PEAKS, Peaks
from nkibench.sandbox.isolation import Isolation, Mounts
from nkibench.sandbox.process import Limits
from nkibench.task.spec import TaskSpec

__all__ = ["ACCELOPT_COMPILE_OPTIONS", "NeuronBackend"]

ACCELOPT_COMPILE_OPTIONS = "--disable-dge --logical-nc-config=1"
ENGINE_ACTIVITY = {
    "tensor": "tensor_engine_active_time_percent",
    "vector": "vector_engine_active_time_percent",
    "scalar": "scalar_engine_active_time_percent",
    "gpsimd": "gpsimd_engine_active_time_percent",
    "dma": "dma_active_time_percent",
}


def bound_by_activity(counters: dict[str, float]) -> str | None:
    """The busiest engine by neuron-profile's active-time fractions."""
    activity = {e: counters[k] for e, k in ENGINE_ACTIVITY.items() if k in counters}
    if not activity:
        return None
    busiest = max(activity, key=lambda e: activity[e])
    return busiest if activity[busiest] >= DEPENDENCY_BOUND else "dependencies"


class NeuronBackend:
    name = "neuron"
    dialects = frozenset({"nki"})
    phases = MappingProxyType(
        {
            "reference": REFERENCE_PHASE,
            "kernel": Phase("nkibench.backends.neuron.phases:kernel_phase", "kernel", True),
            "compare": COMPARE_PHASE,
            "measure": Phase("nkibench.backends.neuron.phases:measure_phase", "kernel", True),
            "estimate": Phase(NKISIM_KERNEL_PHASE.entry, "kernel", True),
        }
    )
    """`estimate`: nkisim's kernel phase on the same kernel, for the cost model's error."""
    fresh_inputs = False

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
    ) -> None:
        self.isolation = isolation or Isolation.detect()
        self.host = host or detect_neuron()
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
                f"{self.host.instance_type!r}; pass --target trn1 or trn2"
            )
        self.target = resolved
        self.core = core
        self.iterations = iterations
        self.retries = retries
        self.spread_tolerance = spread_tolerance
        self.compile_options = compile_options
        self.compile_timeout_s = compile_timeout_s
        self.with_estimate = estimate

    def environment(self) -> dict[str, str]:
        passed = {k: v for k, v in os.environ.items() if k.startswith("NEURON_")}
        library_path = os.environ.get("LD_LIBRARY_PATH")
        return {
            **passed,
            **({"LD_LIBRARY_PATH": library_path} if library_path else {}),
            "PATH": self.host.path,
            "PYTHONPATH": os.pathsep.join([*self.host.python_path, *(p for p in sys.path if p)]),
            "NEURON_RT_VISIBLE_CORES": str(self.core),
            "NEURON_CC_FLAGS": "--auto-cast=none",
            "NEURON_PLATFORM_TARGET_OVERRIDE": self.target,
        }

    def mounts(self) -> Mounts:
        """The NeuronCores' device nodes, /sys (the runtime reads the devices there), and the
        toolchain: the Neuron tools' PATH and the compiler's Python packages."""
        tools = [*self.host.path.split(os.pathsep), *self.host.python_path, "/opt/aws/neuron"]
        return Mounts(
            devices=tuple(sorted(str(p) for p in Path("/dev").glob("neuron*"))),
            read_only=tuple(p for p in tools if p),
            system=True,
        )

    def limits(self, task: TaskSpec, shapes: str, threads: int) -> Limits:
        return Limits(
            timeout_s=task.timeout_for(shapes) + self.compile_timeout_s,
            memory_mb=None,
            threads=threads,
            startup_s=self.compile_timeout_s,
        )

    def kernel_request(self, session: Session, profile: bool) -> dict[str, Any]:
        return {
            "compile_options": self.compile_options,
            # in the outputs' folder: the one a kernel's child may write
            "neff_path": str(Path(session.common["out_dir"]) / "kernel.neff"),
            "ntff_path": str(Path(session.common["out_dir"]) / "kernel.ntff"),
        }

    def measure(self, session: Session, kernel: dict[str, Any]) -> None:
        request = {
            **self.kernel_request(session, True),
            # the kernel phase's NEFF and trace, read-only: the measuring child writes only
            # in its own folder
            "artifacts_dir": session.common["out_dir"],
            "profiler": self.host.profiler,
            "iterations": self.iterations,
            "retries": self.retries,
            "spread_tolerance": self.spread_tolerance,
        }
        measured = session.child("measure", request)
        if not measured["ok"]:
            raise PhaseFailure("measurement", measured["message"])
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
        seed = session.seeds[0]
        request = {
            **session.kernel_request(session.manifest),
            "seeds": [seed],
            "order_check": False,
            "estimate": True,
            "out_dir": str(session.root / "nkisim_outputs"),
        }
        ran = session.child("estimate", request)
        if not ran["ok"]:
            return {"error": f"{ran['kind']}: {ran['message']}"}
        estimate = ran["estimate"]
        return {
            "latency_ms": estimate["latency_ms"],
            "latency_kind": "estimated",
            "model_version": estimate["model_version"],
            "bound_by": estimate["bound_by"],
            "ratio_to_measured": estimate["latency_ms"] / measured_ms,
        }

    def peaks(self, target: str) -> Peaks | None:
        return PEAKS[target]

    def resolve_target(self, requested: str) -> str:
        return self.target

    def fingerprint(self, target: str) -> dict[str, str]:
        return {
            "backend": self.name,
            "target": self.target,
            "latency_kind": "measured",
            "neuronx_cc": self.host.compiler_version,
            "instance_type": self.host.instance_type or "unknown",
            "neuron_devices": str(self.host.devices),
            "neuron_core": str(self.core),
            "compile_options": self.compile_options,
            "accelopt": package_version("accelopt"),
            "python": platform.python_version(),
        }
