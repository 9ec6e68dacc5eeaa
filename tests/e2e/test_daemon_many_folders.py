"""The real daemon on a real directory and SQLite file, with two thousand task folders dropped
at once: each is recorded once. Apart from test_daemon.py, so that its two minutes under load
run beside that file's tests on another worker."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from events.catalog import KernelSourceChanged, TaskInvalid
from nkibench.suites import NKI_LEGACY_SUITE as SUITE
from tests.support.daemon_process import DaemonProcess, wait_until

SMALL = ("--shapes", "small")


def test_two_thousand_folders_at_once_are_each_recorded_once(tmp_path: Path) -> None:
    daemon = DaemonProcess(tmp_path, *SMALL)
    staging = tmp_path / "staging"
    names = [f"silu{i:04d}" for i in range(2000)]
    for name in names:
        shutil.copytree(SUITE / "silu", staging / name)
    daemon.start()
    try:
        for name in names:
            os.rename(staging / name, daemon.watch / name)
        wait_until(
            lambda: len(daemon.events(KernelSourceChanged)) >= 2000, 240, "2000 revisions", 2.0
        )
        time.sleep(3.0)  # late duplicates would show up now (an absence: nothing to wait on)
        revisions = daemon.events(KernelSourceChanged)
        assert sorted(r.task for r in revisions) == names
        assert not daemon.events(TaskInvalid)
        assert daemon.alive()
    finally:
        assert daemon.stop() == 0
