"""The triton backend wired to the event log: a GPU's ceilings are measured once per device
and recorded as a `DeviceCeilingsMeasured` event; later runs read them back."""

from __future__ import annotations

import hashlib

from agents.recorder import Recorder
from events.catalog import DeviceCeilingsMeasured
from nkibench.triton.backend import DeviceCeilings, TritonBackend
from store.base import EventStore

__all__ = ["device_ceilings", "device_key", "triton_backend"]

IDENTITY = ("gpu", "compute_capability", "driver", "cuda", "multiprocessors", "memory_gib")
"""What makes two GPUs the same device for ceilings (not the torch or triton version)."""


def device_key(fingerprint: dict[str, str]) -> str:
    identity = "|".join(fingerprint.get(k, "") for k in IDENTITY)
    return hashlib.sha256(identity.encode()).hexdigest()[:16]


def device_ceilings(store: EventStore, backend: TritonBackend) -> DeviceCeilings:
    """The ceilings recorded for this GPU, or measured now and recorded."""
    key = device_key(backend.host.fingerprint)
    recorder = Recorder(store)
    stream = f"device:{key}"
    for event in recorder.of_type(stream, DeviceCeilingsMeasured):
        return DeviceCeilings(**event.model_dump(exclude={"device_key"}))
    measured = backend.measure_ceilings()
    event = DeviceCeilingsMeasured(device_key=key, **measured.to_json())
    recorder.record(stream, event, key=f"ceilings|{key}")
    return measured


def triton_backend(store: EventStore, device: str, *, require_gpu: bool) -> TritonBackend:
    """A triton backend for `device`, with its GPU's ceilings (from the log, or measured)."""
    backend = TritonBackend(device=device, require_gpu=require_gpu)
    if backend.host.gpu is not None:
        backend.ceilings = device_ceilings(store, backend)
    return backend
