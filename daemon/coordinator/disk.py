"""The state directory's free space against its floor (ACCELOPT_MIN_FREE_MB): under it the
daemon's workers take no new job (running ones finish), and `status`, the daemon's status line
and its log say why. Read from the file system each time: a disk that fills or frees is seen
on the next look."""

from __future__ import annotations

import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

import structlog

__all__ = ["DiskFloor", "DiskSpace", "state_disk"]

log = structlog.get_logger("accelopt.daemon")


@dataclass(frozen=True)
class DiskSpace:
    path: Path
    free_bytes: int
    floor_bytes: int

    @property
    def low(self) -> bool:
        return self.free_bytes < self.floor_bytes

    def describe(self) -> str:
        return (
            f"the state disk ({self.path}) has {self.free_bytes / 2**20:,.0f} MB free, under "
            f"the floor of {self.floor_bytes / 2**20:,.0f} MB (ACCELOPT_MIN_FREE_MB)"
        )


def state_disk(state_dir: Path, min_free_mb: float) -> DiskSpace:
    """The free space of the file system that holds `state_dir` (its nearest existing
    ancestor, before the daemon made it)."""
    path = state_dir
    while not path.exists() and path != path.parent:
        path = path.parent
    return DiskSpace(state_dir, shutil.disk_usage(path).free, int(min_free_mb * 2**20))


class DiskFloor:
    """The daemon's look at its state disk, once a tick: under the floor `halt` is set (the
    workers take no new job; running ones finish) and `low` says why; above it again `halt`
    is cleared, unless the daemon is stopping."""

    def __init__(
        self,
        state_dir: Path,
        min_free_mb: float,
        *,
        halt: threading.Event,
        stopping: threading.Event,
    ) -> None:
        self.state_dir, self.min_free_mb = state_dir, min_free_mb
        self.halt, self.stopping = halt, stopping
        self.low: DiskSpace | None = None

    def check(self) -> None:
        disk = state_disk(self.state_dir, self.min_free_mb)
        if disk.low and self.low is None:
            log.warning("new jobs paused", reason=disk.describe())
        elif not disk.low and self.low is not None:
            log.info("new jobs resumed", free_mb=round(disk.free_bytes / 2**20))
        self.low = disk if disk.low else None
        if self.low is not None or self.stopping.is_set():
            self.halt.set()
        else:
            self.halt.clear()
