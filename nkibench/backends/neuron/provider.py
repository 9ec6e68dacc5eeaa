"""Opening the neuron backend: the host is detected once, each listed NeuronCore checked,
and the target is this instance's generation (`target` must agree with it). Option
"nrtpy_python": the interpreter of an environment with nrtpy (the nrtpy docs keep it apart
from the nki wheel's)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from nkibench.backend import Backend, DeviceMemo, OpenedBackend
from nkibench.backends.neuron.backend import NeuronBackend
from nkibench.backends.neuron.detect import NeuronHost
from nkibench.sandbox.isolation import Isolation

__all__ = ["open_backend"]


def _factory(
    core: int, target: str, host: NeuronHost, isolation: Isolation
) -> Callable[[], Backend]:
    def make() -> Backend:
        return NeuronBackend(core=core, target=target, host=host, isolation=isolation)

    return make


def open_backend(
    devices: Sequence[str],
    *,
    target: str | None,
    require_device: bool,
    memo: DeviceMemo | None,
    isolation: Isolation,
    options: Mapping[str, str],
) -> OpenedBackend:
    cores = [int(d) for d in devices]
    first = NeuronBackend(
        core=cores[0],
        target=target,
        isolation=isolation,
        nrtpy_python=options.get("nrtpy_python") or None,
    )
    for core in cores[1:]:  # each core checked now, not at its first job
        NeuronBackend(core=core, target=first.target, host=first.host, isolation=isolation)
    workers = [(f"neuron{c}", _factory(c, first.target, first.host, isolation)) for c in cores]
    return OpenedBackend("neuron", first.target, first.dialects, workers)
