"""The backends, by name: what each runs, on which devices, and how it opens on this host.

A backend lives in its own package here (nkisim/, neuron/, triton/): the parent side (a
class implementing nkibench.backend.Backend), its sandboxed phases (named in the class's phase
table, imported only inside the child) and an `open_backend` provider. This registry names
them without importing them, so that reading a task or a CLI choice never loads a backend.
Adding a backend is its package, one entry below, and nothing else.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from nkibench.errors import BackendUnavailable
from nkibench.sandbox.isolation import Isolation

if TYPE_CHECKING:
    from nkibench.backend import Backend

__all__ = [
    "BACKENDS",
    "BackendInfo",
    "DeclaredDtype",
    "DeviceMemo",
    "OpenedBackend",
    "backend_info",
    "dialect_of_backend",
    "open_backend",
]


@dataclass(frozen=True)
class DeclaredDtype:
    """A backend whose tasks state their dtype and roofline in task.toml, because nothing counts
    the work of their reference (a PyTorch forward); their matmuls run at the dtype's rate, and
    their tolerance and seeds follow the dtype."""

    task: str
    """What messages call such a task ("a Triton task")."""
    rel_tol: Mapping[str, float]
    """The default tolerance per dtype."""
    seeds: tuple[int, ...]
    """The default seeds."""


@dataclass(frozen=True)
class BackendInfo:
    name: str
    dialects: tuple[str, ...]
    """The kernel languages it can run (nkibench.dialects); a task that names the backend and
    imports no kernel package is taken to be written in the first. An opened backend may
    run fewer (the Neuron SDK installed decides)."""
    devices: str
    """What `--devices` names for it."""
    latency_kind: Literal["estimated", "measured"]
    summary: str
    """One line for the CLI's help."""
    provider: str
    """"module:function" that opens it on this host (see open_backend)."""
    declared_dtype: DeclaredDtype | None = None
    """Where set, its tasks must give their dtype and roofline in task.toml."""


BACKENDS: dict[str, BackendInfo] = {
    info.name: info
    for info in (
        BackendInfo(
            "nkisim",
            ("nki", "nki-legacy"),
            "CPU workers (a count, or a list of indices)",
            "estimated",
            "NKI on the CPU: nkisim and the Trainium cost model",
            "nkibench.backends.nkisim.provider:open_backend",
        ),
        BackendInfo(
            "neuron",
            ("nki", "nki-legacy"),
            "NeuronCores",
            "measured",
            "NKI on a Trainium NeuronCore: the nki compile path and neuron-explorer (SDK >= "
            "2.30), or neuronx-cc and neuron-profile (legacy NKI, SDK <= 2.29)",
            "nkibench.backends.neuron.provider:open_backend",
        ),
        BackendInfo(
            "triton",
            ("triton",),
            "GPUs (CUDA device indices)",
            "measured",
            "Triton on an NVIDIA GPU, or Triton's CPU interpreter for checks",
            "nkibench.backends.triton.provider:open_backend",
            DeclaredDtype(
                "a Triton task",
                # a float32 `tl.dot` runs in tf32 on the GPU (about 3e-4 relative error);
                # bfloat16 operands land between 1e-3 and 1e-2
                rel_tol={"float32": 1e-3, "bfloat16": 2e-2, "float16": 5e-3},
                seeds=(0, 21, 42),
            ),
        ),
    )
}


def backend_info(name: str) -> BackendInfo:
    try:
        return BACKENDS[name]
    except KeyError:
        raise BackendUnavailable(
            f"no backend named {name!r}; the backends are {', '.join(BACKENDS)}"
        ) from None


def dialect_of_backend(name: str) -> str:
    """The kernel language of a task that names this backend in its task.toml."""
    return backend_info(name).dialects[0]


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


def open_backend(
    name: str,
    devices: Sequence[str] = ("0",),
    *,
    target: str | None = None,
    require_device: bool = True,
    memo: DeviceMemo | None = None,
    isolation: Isolation | None = None,
    options: Mapping[str, str] | None = None,
) -> OpenedBackend:
    """Open backend `name` on `devices` of this host. `require_device=False` accepts a host
    without the device where the backend can still check kernels (Triton's interpreter);
    `memo` keeps what is measured once per device; `isolation` is the OS sandbox its children
    run in (default: bubblewrap, or SandboxUnavailable); `options` are the host's settings of
    one backend (neuron: "nrtpy_python"), which the others ignore. Raises BackendUnavailable
    with what is missing."""
    info = backend_info(name)
    if not devices:
        raise BackendUnavailable(f"the {name} backend needs at least one device")
    module, _, function = info.provider.partition(":")
    provider: Provider = getattr(importlib.import_module(module), function)
    return provider(
        devices,
        target=target,
        require_device=require_device,
        memo=memo,
        isolation=isolation or Isolation.detect(),
        options=options or {},
    )
