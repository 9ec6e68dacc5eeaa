"""The one place that turns `--backend`, `--target` and `--devices` into backends.

Backends themselves live in nkibench's registry (nkibench.backends); this module parses the
device list, opens the backend on this host, and keeps what a backend measures once per device
(a GPU's ceilings) in the event log, as `DeviceCeilingsMeasured`, so that every later run on
the same device reads it back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from daemon.settings import Settings
from events.catalog import DeviceCeilingsMeasured
from nkibench.backend import OpenedBackend
from nkibench.backends.open import open_backend
from nkibench.sandbox.isolation import Isolation
from store.base import EventStore
from store.recorder import Recorder

__all__ = ["DeviceListError", "EventLogDeviceMemo", "open_for_command", "parse_devices"]


StoreSource = EventStore | Callable[[], EventStore]
"""A store, or how to open one when it is first needed (a command that profiles on a backend
that keeps nothing never touches the database)."""


class EventLogDeviceMemo:
    """Device facts kept in the log: one `DeviceCeilingsMeasured` per device identity."""

    def __init__(self, store: StoreSource) -> None:
        self._source = store
        self._recorder: Recorder | None = None

    @property
    def recorder(self) -> Recorder:
        if self._recorder is None:
            source = self._source
            self._recorder = Recorder(source if isinstance(source, EventStore) else source())
        return self._recorder

    def load(self, key: str) -> dict[str, Any] | None:
        for event in self.recorder.of_type(f"device:{key}", DeviceCeilingsMeasured):
            return event.model_dump(exclude={"device_key"})
        return None

    def save(self, key: str, facts: dict[str, Any]) -> None:
        event = DeviceCeilingsMeasured(device_key=key, **facts)
        self.recorder.record(f"device:{key}", event, key=f"ceilings|{key}")


class DeviceListError(ValueError):
    """A `--devices` value that names no devices; the message says why."""


def parse_devices(text: str | None, backend: str) -> list[str]:
    """The devices a `--devices` value names: a list ("0,1"), ranges ("0-3"), or for nkisim,
    whose devices are interchangeable CPU workers, also a count ("2"). None: device 0. A bare
    "0" is device 0 on every backend (the documented default), never a count of none."""
    if text is None:
        return ["0"]
    if backend == "nkisim" and text.isdigit() and int(text) > 0:
        return [str(i) for i in range(int(text))]
    devices: list[str] = []
    for part in text.split(","):
        if "-" in part:
            low, _, high = part.partition("-")
            if not (low.isdigit() and high.isdigit()) or int(low) > int(high):
                raise DeviceListError(f"{part!r} is not a range like 0-3")
            devices += [str(i) for i in range(int(low), int(high) + 1)]
        elif part.isdigit():
            devices.append(str(int(part)))
        else:
            raise DeviceListError(f"{part!r} is not a device number")
    if len(set(devices)) != len(devices):
        raise DeviceListError(f"{text!r} names a device twice")
    return devices


def open_for_command(
    backend: str,
    devices: Sequence[str],
    target: str | None,
    store: StoreSource | None,
    *,
    isolation: Isolation,
    settings: Settings,
    require_device: bool = True,
) -> OpenedBackend:
    """Open `backend` on `devices`, its children in `isolation`, its per-device facts kept in
    `store`'s log (if any), with the host facts `settings` name (the nrtpy interpreter)."""
    memo = EventLogDeviceMemo(store) if store is not None else None
    return open_backend(
        backend,
        devices,
        target=target,
        require_device=require_device,
        memo=memo,
        isolation=isolation,
        options={
            "nrtpy_python": str(settings.nrtpy_python or ""),
            "warm_children": "1" if settings.warm_children else "0",
        },
    )
