"""Opening the nkisim backend: one worker per listed CPU slot; the target is the Trainium
generation whose costs the model uses (trn1 unless asked)."""

from __future__ import annotations

from collections.abc import Sequence

from nkibench.backends import DeviceMemo, OpenedBackend
from nkibench.backends.nkisim.backend import NkisimBackend
from nkibench.cost.tables import GENERATIONS
from nkibench.errors import BackendUnavailable

__all__ = ["DEFAULT_TARGET", "open_backend"]

DEFAULT_TARGET = "trn1"


def open_backend(
    devices: Sequence[str],
    *,
    target: str | None,
    require_device: bool,
    memo: DeviceMemo | None,
) -> OpenedBackend:
    resolved = target or DEFAULT_TARGET
    if resolved not in GENERATIONS:
        raise BackendUnavailable(
            f"nkisim models {', '.join(sorted(GENERATIONS))}; there is no target {resolved!r}"
        )
    return OpenedBackend("nkisim", resolved, [(f"cpu{d}", NkisimBackend) for d in devices])
