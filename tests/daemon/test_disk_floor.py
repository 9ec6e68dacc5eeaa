"""Under the state disk's floor the daemon's workers take no new job, and the status says why;
above it again, or with no floor, they go on. A stopping daemon stays halted."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from daemon.coordinator.disk import DiskFloor, state_disk


def free(monkeypatch: pytest.MonkeyPatch, mb: float) -> None:
    usage = shutil.disk_usage("/")

    def disk_usage(_path: Any) -> Any:
        return usage._replace(free=int(mb * 2**20))

    monkeypatch.setattr("daemon.coordinator.disk.shutil.disk_usage", disk_usage)


def test_the_floor_halts_new_jobs_and_lifts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    halt, stopping = threading.Event(), threading.Event()
    floor = DiskFloor(tmp_path / "not-made-yet", 1024, halt=halt, stopping=stopping)
    free(monkeypatch, 500)
    floor.check()
    assert halt.is_set()
    low = floor.low
    assert low is not None
    assert "has 500 MB free, under the floor of 1,024 MB (ACCELOPT_MIN_FREE_MB)" in (low.describe())
    free(monkeypatch, 5000)
    floor.check()
    assert not halt.is_set()
    assert floor.low is None
    stopping.set()
    floor.check()
    assert halt.is_set()  # a stopping daemon's workers take nothing new, whatever the disk


def test_no_floor_never_halts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    free(monkeypatch, 0)
    assert not state_disk(tmp_path, 0).low
    assert state_disk(tmp_path, 1).low
