"""Opening a backend on this host: the catalogue's provider for it, imported only now."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence

from nkibench.backend import DeviceMemo, OpenedBackend, Provider
from nkibench.backends import backend_info
from nkibench.errors import BackendUnavailable
from nkibench.sandbox.isolation import Isolation

__all__ = ["open_backend"]


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
