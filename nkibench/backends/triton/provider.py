"""Opening the triton backend: each listed GPU probed once (its host, in a sandboxed child),
and its ceilings measured once per device identity and kept in the caller's memo, so that a
second run on the same GPU reads them back instead of measuring again."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from nkibench.backend import DeviceMemo, OpenedBackend
from nkibench.backends.triton.backend import DeviceCeilings, TritonBackend
from nkibench.errors import BackendUnavailable
from nkibench.sandbox.isolation import Isolation

__all__ = ["IDENTITY", "device_key", "open_backend"]

IDENTITY = ("gpu", "compute_capability", "driver", "cuda", "multiprocessors", "memory_gib")
"""What makes two GPUs the same device for ceilings (not the torch or triton version)."""


def device_key(fingerprint: dict[str, str]) -> str:
    identity = "|".join(fingerprint.get(k, "") for k in IDENTITY)
    return hashlib.sha256(identity.encode()).hexdigest()[:16]


def ceilings(backend: TritonBackend, memo: DeviceMemo | None) -> DeviceCeilings:
    """The ceilings kept for this GPU, or measured now and kept."""
    key = device_key(backend.host.fingerprint)
    known = memo.load(key) if memo is not None else None
    if known is not None:
        return DeviceCeilings(**known)
    measured = backend.measure_ceilings()
    if memo is not None:
        memo.save(key, measured.to_json())
    return measured


def open_backend(
    devices: Sequence[str],
    *,
    target: str | None,
    require_device: bool,
    memo: DeviceMemo | None,
    isolation: Isolation,
    options: Mapping[str, str],
) -> OpenedBackend:
    if target is not None:
        raise BackendUnavailable(
            f"--target {target}: the triton backend's target is the GPU it runs on "
            "(the target names a Trainium generation for nkisim and neuron)"
        )
    warm = options.get("warm_children", "1") != "0"
    backends = [
        TritonBackend(device=d, require_gpu=require_device, isolation=isolation, warm=warm)
        for d in devices
    ]
    for backend in backends:
        if backend.host.gpu is not None:
            backend.ceilings = ceilings(backend, memo)
    workers = [(f"gpu{b.device}", b.replica) for b in backends]
    return OpenedBackend("triton", backends[0].target, backends[0].dialects, workers)
