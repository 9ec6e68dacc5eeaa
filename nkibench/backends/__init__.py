"""The backends, by name: what each runs, on which devices, and which provider opens it.

A backend lives in its own package here (nkisim/, neuron/, triton/): the parent side (a
class implementing nkibench.backend.Backend), its sandboxed phases (named in the class's phase
table, imported only inside the child) and an `open_backend` provider. This catalogue names
them without importing them, so that reading a task or a CLI choice never loads a backend;
it is data only and sits below the task format, which reads it (opening a backend is
nkibench.backends.open, above the protocols). Adding a backend is its package, one entry
below, and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from nkibench.errors import BackendUnavailable

__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "BackendInfo",
    "DeclaredDtype",
    "backend_info",
    "dialect_of_backend",
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
    """"module:function" that opens it on this host (see nkibench.backends.open)."""
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

DEFAULT_BACKEND = "nkisim"
"""The backend of a task whose task.toml names none: NKI on the CPU, which every host has."""


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
