"""A worker's devices: which is free, which is healthy, and who gets the next job.

A job waits here for a free device that is not quarantined, holds it while it runs, and gives
it back. A device that fails `quarantine_after` jobs in a row is quarantined: it takes no job
for `quarantine_s`, then is tried again. A failure is what points at the device rather than at
the kernel: the job's handler raising (the backend or the sandbox broke) or a result whose
timing failed (`measurement`: the kernel ran correctly, the profiler or the device did not).
Each quarantine and each return is an event (`DeviceQuarantined`, `DeviceRestored`) on the
device's stream, `fleet:<device>`.

While a device is quarantined the worker still fetches as many jobs as it has devices; one of
them waits here for a healthy device (at most one job's time), and the others go to other
workers. A job that waits when the worker stops goes back to the queue (JobCancelled). The same
holds for a device the queue says is not usable (its lease unsure, lost to another worker, or
another worker's job still on it: store.jobs.leases).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from events.catalog import DeviceQuarantined, DeviceRestored
from store.jobs.base import Handler, Job, JobCancelled
from store.recorder import Recorder

__all__ = ["DevicePool"]

log = structlog.get_logger("accelopt.devices")


@dataclass
class _Device:
    name: str
    handler: Handler
    busy: bool = False
    failures: int = 0
    """Jobs failed in a row."""
    quarantined_until: float | None = None
    quarantines: int = 0


class DevicePool:
    def __init__(
        self,
        devices: Sequence[tuple[str, Handler]],
        *,
        recorder: Recorder,
        stop: threading.Event,
        quarantine_after: int = 3,
        quarantine_s: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._devices = [_Device(name, handler) for name, handler in devices]
        self.recorder = recorder
        self.stop = stop
        self.quarantine_after = quarantine_after
        self.quarantine_s = quarantine_s
        self._clock = clock
        self._changed = threading.Condition()

    @property
    def names(self) -> list[str]:
        return [device.name for device in self._devices]

    def quarantined(self) -> list[str]:
        with self._changed:
            return [d.name for d in self._devices if d.quarantined_until is not None]

    @contextlib.contextmanager
    def lease(
        self, usable: Callable[[str], bool] = lambda _name: True
    ) -> Iterator[tuple[str, Handler]]:
        """The first free healthy device that is `usable`, held until the block ends;
        JobCancelled if the worker stops while the job waits (or `usable` raises it)."""
        device = self._take(usable)
        try:
            yield device.name, _counted(self, device)
        finally:
            with self._changed:
                device.busy = False
                self._changed.notify_all()

    def _take(self, usable: Callable[[str], bool]) -> _Device:
        with self._changed:
            while True:
                if self.stop.is_set():
                    raise JobCancelled("the worker is stopping")
                self._restore_due()
                for device in self._devices:
                    if not device.busy and device.quarantined_until is None and usable(device.name):
                        device.busy = True
                        return device
                self._changed.wait(self._next_wake())

    def _next_wake(self) -> float:
        """Until the next quarantine ends, a release wakes it, or a stop or a device becoming
        usable (each checked often)."""
        ends = [d.quarantined_until for d in self._devices if d.quarantined_until is not None]
        left = min(ends) - self._clock() if ends else 0.5
        return max(0.01, min(left, 0.5))

    def _restore_due(self) -> None:
        now = self._clock()
        for device in self._devices:
            until = device.quarantined_until
            if until is not None and now >= until:
                device.quarantined_until = None
                device.failures = 0
                log.info("device restored", device=device.name)
                self.recorder.record(
                    f"fleet:{device.name}",
                    DeviceRestored(device=device.name),
                    key=f"restored|{device.name}|{device.quarantines}|{time.time_ns()}",
                )

    def _outcome(self, device: _Device, error: str | None) -> None:
        """A job ended on `device`: `error` says why it counts against the device (None: it
        worked)."""
        with self._changed:
            if error is None:
                device.failures = 0
                return
            device.failures += 1
            if device.failures < self.quarantine_after:
                return
            device.quarantined_until = self._clock() + self.quarantine_s
            device.quarantines += 1
            failures = device.failures
        log.warning(
            "device quarantined",
            device=device.name,
            failures=failures,
            quarantine_s=self.quarantine_s,
            error=error,
        )
        self.recorder.record(
            f"fleet:{device.name}",
            DeviceQuarantined(
                device=device.name,
                failures=failures,
                quarantine_s=self.quarantine_s,
                last_error=error[:2000],
            ),
            key=f"quarantined|{device.name}|{device.quarantines}|{time.time_ns()}",
        )


def _counted(pool: DevicePool, device: _Device) -> Handler:
    """`device`'s handler, its outcome counted for the device's health."""

    def run(job: Job) -> dict[str, Any]:
        try:
            result = device.handler(job)
        except JobCancelled:
            raise
        except Exception as e:
            pool._outcome(device, f"{type(e).__name__}: {e}")
            raise
        failed = result.get("error_kind") == "measurement"
        pool._outcome(device, str(result.get("message") or "timing failed") if failed else None)
        return result

    return run
