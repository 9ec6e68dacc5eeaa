"""Opening the nkisim backend: one worker per listed CPU slot; the target is the Trainium
generation whose costs the model uses (trn2 unless asked)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial

from nkibench.backend import Backend, DeviceMemo, OpenedBackend
from nkibench.backends.nkisim.backend import NkisimBackend
from nkibench.cost.tables import GENERATIONS
from nkibench.errors import BackendUnavailable
from nkibench.sandbox.isolation import Isolation

__all__ = ["DEFAULT_TARGET", "open_backend"]

DEFAULT_TARGET = "trn2"
"""Both NKI dialects run on it (current NKI: trn2 and trn3; legacy: trn1 and trn2)."""


def open_backend(
    devices: Sequence[str],
    *,
    target: str | None,
    require_device: bool,
    memo: DeviceMemo | None,
    isolation: Isolation,
    options: Mapping[str, str],
) -> OpenedBackend:
    resolved = target or DEFAULT_TARGET
    if resolved not in GENERATIONS:
        raise BackendUnavailable(
            f"nkisim models {', '.join(sorted(GENERATIONS))}; there is no target {resolved!r}"
        )
    make: Callable[[], Backend] = partial(NkisimBackend, isolation=isolation)
    return OpenedBackend(
        "nkisim", resolved, NkisimBackend.dialects, [(f"cpu{d}", make) for d in devices]
    )
