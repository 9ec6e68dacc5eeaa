"""The interface every backend implements, the session a backend works in, and what opening
one on a host gives (an OpenedBackend, from the provider its catalogue entry names).

The harness (nkibench.harness) owns the flow that is the same everywhere: the reference
child, the kernel child, the comparison child, the roofline. A backend says which kernel
languages it runs, which functions its sandboxed children run for each phase (by name, so
that the child imports them inside the sandbox and the harness names no backend), what those
children's environment and limits are, how the kernel's latency is obtained once it is known
to be correct, and what hardware and toolchain produced it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from nkibench.policy.roofline import Peaks
from nkibench.result import KernelResult
from nkibench.sandbox.ahead import Ahead
from nkibench.sandbox.isolation import Isolation, Mounts
from nkibench.sandbox.process import Limits
from nkibench.sandbox.warm import WarmPool
from nkibench.task.spec import TaskSpec

__all__ = [
    "COMPARE_PHASE",
    "REFERENCE_PHASE",
    "REQUIRED_PHASES",
    "Backend",
    "Check",
    "DeviceMemo",
    "Inputs",
    "OpenedBackend",
    "Phase",
    "PhaseOwner",
    "Provider",
    "Session",
]

PhaseOwner = Literal["kernel", "task", "backend"]


@dataclass(frozen=True)
class Phase:
    """One kind of sandboxed child a backend runs."""

    entry: str
    """"module:function", imported inside the child (the function takes the request and
    returns the result, both JSON objects)."""
    runs: PhaseOwner
    """Whose code runs there, so whose fault its death is: the kernel's (a timeout, a crash),
    the task's reference code, or the backend's own (a probe, the device's ceilings)."""
    backend_environment: bool = False
    """The child gets the backend's environment (the GPU, the Neuron tools)."""
    reports_progress: bool = False
    """The child beats while it simulates (nkibench.sandbox.progress), so a kernel that has no
    baseline time to go by may run past its limit while it beats (nkibench.harness)."""


REFERENCE_PHASE = Phase("nkibench.sandbox.reference:reference_phase", "task")
"""NumPy tasks' reference: inputs and expected outputs per seed."""
COMPARE_PHASE = Phase("nkibench.sandbox.compare:compare_phase", "task")
"""The comparison with the expected outputs (any backend)."""
REQUIRED_PHASES = ("reference", "kernel", "compare")


@dataclass(frozen=True)
class Inputs:
    """What one reference run made: the manifest of every seed's inputs and expected outputs,
    and the two folders it wrote them to (the inputs are shown to kernel children, the
    expected outputs only to the comparison)."""

    manifest: dict[str, Any]
    data_dir: Path
    expected_dir: Path
    work: dict[str, Any] | None = None
    """The work the reference counted for the roofline, when asked (count_work)."""


@dataclass(frozen=True)
class Check:
    """A trusted function ("module:function") and its request, run on a kernel run's outputs
    (the request names the folder, which the child reads)."""

    entry: str
    request: dict[str, Any]
    reads: Path


class Session(Protocol):
    """One evaluation of a kernel against a task (nkibench.harness.Session): what a backend
    may read and which children it may start while it measures. A child sees only the folders
    it is given (`writes`, `reads`), each made fresh by the session (`folder`)."""

    task: TaskSpec
    source: str
    seeds: tuple[int, ...]
    shapes: str
    target: str
    limits: Limits
    result: KernelResult
    cancel: threading.Event | None
    inputs: Inputs | None
    out_dir: Path | None
    trusted: dict[str, Any]
    kernel_writes: list[Path]
    """Folders of the session's that the kernel's child writes beside its outputs, for a
    later child of the backend's to read (added in begin)."""

    @property
    def ahead(self) -> Mapping[str, Ahead]:
        """Children started ahead of their work (start_ahead), by phase."""
        ...

    @property
    def manifest(self) -> dict[str, Any]: ...

    @property
    def common(self) -> dict[str, Any]: ...

    def folder(self, name: str) -> Path: ...

    def release(self, *folders: Path) -> None: ...

    def child(
        self,
        phase: str,
        request: dict[str, Any],
        *,
        writes: Sequence[Path] = (),
        reads: Sequence[Path] = (),
        mounts: Mounts = ...,
        launcher: Sequence[str] = (),
    ) -> dict[str, Any]:
        """Run the backend's phase `phase` in a sandboxed child and return its result
        (`mounts` beyond the backend's; `launcher`: a profiler that starts it)."""
        ...

    def data_dir(self) -> Path:
        """The folder the reference writes the session's inputs to (made on first use)."""
        ...

    def start_ahead(
        self,
        phase: str,
        *,
        writes: Sequence[Path] = (),
        reads: Sequence[Path] = (),
        mounts: Mounts = ...,
        launcher: Sequence[str] = (),
    ) -> Ahead:
        """Start `phase`'s child now, ahead of its work (nkibench.sandbox.ahead); the session
        ends it when it ends."""
        ...

    def run_reference(self, seeds: Sequence[int], *, count_work: bool = False) -> Inputs: ...

    def kernel_request(self, inputs: Inputs) -> dict[str, Any]: ...

    def verdicts(
        self,
        inputs: Inputs,
        ran: dict[str, Any],
        out_dir: Path,
        *,
        seeds: Sequence[int] | None = None,
    ) -> dict[str, Any]: ...


class Backend(Protocol):
    name: str
    dialects: frozenset[str]
    """The kernel languages it runs (nkibench.dialects)."""

    @property
    def phases(self) -> Mapping[str, Phase]:
        """Phase name → what the child runs; at least REQUIRED_PHASES."""
        ...

    fresh_inputs: bool
    """Draw fresh seeds for every evaluation (unless the caller names seeds)."""
    times_every_seed: bool
    """Its latency is taken over every seed's inputs in turn (triton), not over the first
    seed's alone (nkisim's estimate, neuron's profile): the roofline's counts computed by
    reference.py are averaged over the same seeds."""
    sentinel_outputs: bool
    """Outputs start filled with nkisim's sentinel, so the comparison (a child that never ran
    the kernel) counts the elements never written."""
    isolation: Isolation
    """The OS sandbox its children run in."""
    warm: WarmPool | None
    """Warm processes that fork its own phases' children (nkibench.sandbox.warm); None: every
    child starts cold."""

    def mounts(self) -> Mounts:
        """What the backend's own children need to see beyond the sandbox's view (device nodes,
        a toolchain); the reference and comparison children never get it."""
        ...

    def environment(self) -> dict[str, str]:
        """What the backend's children need in their environment besides the sandbox's own."""
        ...

    def limits(self, task: TaskSpec, shapes: str, threads: int) -> Limits: ...

    def begin(self, session: Session, profile: bool) -> None:
        """The evaluation starts: its folders exist, and no child has run yet. A backend may
        start a child ahead of its work here (Session.start_ahead)."""
        ...

    def kernel_request(self, session: Session, profile: bool) -> dict[str, Any]:
        """Backend fields of the kernel phase's request. A `timed_runs` field
        (nkibench.harness.TIMED_RUNS_FIELD) says that the kernel's child also times it, in at
        most that many more runs of it: the child's time limit counts them."""
        ...

    def trusted_check(
        self, session: Session, kernel: dict[str, Any], profile: bool
    ) -> Check | None:
        """What to run on what the kernel handed back in a child that never ran the kernel
        (None: nothing beyond the comparison). The harness runs it in the comparison's child
        when that child runs no task code, else in a child of its own (phase `check`)."""
        ...

    def verify(self, session: Session, found: dict[str, Any] | None, profile: bool) -> None:
        """Take the trusted check's result (`found`, None without one), once the outputs
        compare correct (raises PhaseFailure)."""
        ...

    def measure(self, session: Session, kernel: dict[str, Any]) -> None:
        """Fill the result's latency fields for a kernel that is correct."""
        ...

    def fingerprint(self, target: str) -> dict[str, str]: ...

    def peaks(self, target: str) -> Peaks | None:
        """The roofline's peaks (None: none known, so no % of peak)."""
        ...

    def resolve_target(self, requested: str) -> str:
        """The target results are labelled with: the requested one where the backend models
        several (nkisim), the hardware it runs on otherwise."""
        ...

    def refusal(self, dialect: str) -> str | None:
        """Why it does not run kernels of `dialect` (None: it does)."""
        ...


def refuse_other_dialects(backend: Backend, dialect: str) -> str | None:
    """The refusal of a backend whose dialects are fixed: it names the ones it runs."""
    if dialect in backend.dialects:
        return None
    runs = ", ".join(sorted(backend.dialects))
    return f"a {dialect} task; the {backend.name} backend runs {runs} kernels"


class DeviceMemo(Protocol):
    """What a backend measured once about a device and keeps for later runs (a GPU's
    ceilings), keyed by the device's identity; the caller decides where it is kept."""

    def load(self, key: str) -> dict[str, Any] | None: ...

    def save(self, key: str, facts: dict[str, Any]) -> None: ...


@dataclass
class OpenedBackend:
    """A backend opened on this host: its name, the target its results are labelled with, and
    one backend factory per device (a worker calls its factory once per job)."""

    name: str
    target: str
    dialects: frozenset[str]
    """The kernel languages it runs here: a Neuron SDK runs current NKI, legacy NKI or both
    (its version decides), so this is what the opened backend found, not the backend's list."""
    devices: Sequence[tuple[str, Callable[[], Backend]]] = field(default_factory=list)
    """(worker name, factory) per device, in the order asked for."""

    def first(self) -> Backend:
        """A backend on the first device (a single command's)."""
        return self.devices[0][1]()


class Provider(Protocol):
    """The function a catalogue entry names (nkibench.backends.BackendInfo.provider) that opens
    its backend on this host (called by nkibench.backends.open)."""

    def __call__(
        self,
        devices: Sequence[str],
        *,
        target: str | None,
        require_device: bool,
        memo: DeviceMemo | None,
        isolation: Isolation,
        options: Mapping[str, str],
    ) -> OpenedBackend: ...
