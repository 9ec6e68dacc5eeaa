"""The real daemon process on a real directory and a real SQLite file: task folders come,
change and go; broken ones are recorded and served again once fixed; SIGTERM drains."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from events.catalog import (
    DaemonStarted,
    DaemonStopped,
    KernelRemoved,
    KernelSourceChanged,
    ProfileRecorded,
    TaskInvalid,
)
from nkibench.suites import NKI_SUITE as SUITE
from store.engine import make_engine
from store.jobs.sql import SqlJobQueue
from tests.support.daemon_process import DaemonProcess, orphans, wait_until

SMALL = ("--shapes", "small")


def baselines(daemon: DaemonProcess, task: str) -> list[ProfileRecorded]:
    return daemon.events(ProfileRecorded, task=task, purpose="baseline")


def test_a_task_folder_comes_changes_twice_and_goes(tmp_path: Path) -> None:
    daemon = DaemonProcess(tmp_path, *SMALL)
    daemon.start()
    try:
        folder = daemon.drop(SUITE / "silu", "silu")
        wait_until(lambda: baselines(daemon, "silu"), 60, "the baseline")
        kernel = folder / "kernel.py"
        with kernel.open("a") as handle:  # an in-place save
            handle.write("\n# tuned by hand\n")
        wait_until(lambda: len(baselines(daemon, "silu")) == 2, 60, "a second baseline")
        staging = folder / ".kernel.py.swp"  # an editor's atomic save
        staging.write_text(kernel.read_text() + "# and again\n")
        os.replace(staging, kernel)
        wait_until(lambda: len(baselines(daemon, "silu")) == 3, 60, "a third baseline")
        kernel.write_text(kernel.read_text())  # a save that changes nothing
        time.sleep(2.0)
        revisions = daemon.events(KernelSourceChanged, task="silu")
        assert len(revisions) == 3
        assert len({r.content_hash for r in revisions}) == 3
        assert len(baselines(daemon, "silu")) == 3
        assert all(p.correct and p.latency_kind == "estimated" for p in baselines(daemon, "silu"))
        shutil.rmtree(folder)
        wait_until(lambda: daemon.events(KernelRemoved, task="silu"), 30, "the removal")
        assert daemon.alive()
    finally:
        assert daemon.stop() == 0
    assert len(daemon.events(DaemonStarted)) == len(daemon.events(DaemonStopped)) == 1
    assert '"observer": "inotify"' in daemon.log_text()


def test_two_hundred_folders_at_once_are_each_recorded_once(tmp_path: Path) -> None:
    daemon = DaemonProcess(tmp_path, *SMALL)
    staging = tmp_path / "staging"
    names = [f"silu{i:03d}" for i in range(200)]
    for name in names:
        shutil.copytree(SUITE / "silu", staging / name)
    daemon.start()
    try:
        for name in names:
            os.rename(staging / name, daemon.watch / name)
        wait_until(lambda: len(daemon.events(KernelSourceChanged)) >= 200, 120, "200 revisions")
        time.sleep(3.0)  # late duplicates would show up now
        revisions = daemon.events(KernelSourceChanged)
        assert sorted(r.task for r in revisions) == names
        assert not daemon.events(TaskInvalid)
    finally:
        assert daemon.stop() == 0


def test_a_broken_folder_is_recorded_and_recovers(tmp_path: Path) -> None:
    daemon = DaemonProcess(tmp_path, *SMALL)
    daemon.drop(SUITE / "silu", "good")
    broken = daemon.drop(SUITE / "silu", "broken")
    good_kernel = (broken / "kernel.py").read_text()
    (broken / "kernel.py").write_text(good_kernel.replace("def kernel(x):", "def kernel(x:"))
    daemon.start()
    try:
        invalid = wait_until(lambda: daemon.events(TaskInvalid, task="broken"), 30, "invalid")
        assert invalid[0].file == "kernel.py"
        assert "kernel.py line" in invalid[0].message
        assert "SyntaxError" in invalid[0].message
        wait_until(lambda: baselines(daemon, "good"), 60, "the good task's baseline")
        assert daemon.alive()
        staging = broken / "kernel.py.tmp"
        staging.write_text(good_kernel)
        os.replace(staging, broken / "kernel.py")
        wait_until(lambda: baselines(daemon, "broken"), 60, "the fixed task's baseline")
        assert len(daemon.events(TaskInvalid, task="broken")) == 1
    finally:
        assert daemon.stop() == 0


def test_sigterm_during_a_job_drains_and_the_work_continues(tmp_path: Path) -> None:
    daemon = DaemonProcess(tmp_path, "--shapes", "full")  # a profile of several seconds
    daemon.drop(SUITE / "silu", "silu")
    daemon.start()
    engine = make_engine(daemon.db)
    queue = SqlJobQueue(engine)
    try:
        wait_until(lambda: queue.counts().get("running"), 60, "a running job")
        time.sleep(0.5)  # the kernel's child processes are up
        assert orphans(daemon.home / "work"), "no kernel process to stop"
        started = time.monotonic()
        code = daemon.stop(signal.SIGTERM, timeout=60)  # the unit's TimeoutStopSec
        took = time.monotonic() - started
        assert code == 0
        assert took < 30
        time.sleep(0.5)
        assert orphans(daemon.home / "work") == []
        assert queue.counts().get("running", 0) == 0  # released, not lost
        assert baselines(daemon, "silu") == []  # the interrupted profile recorded nothing
        daemon.start()
        wait_until(lambda: baselines(daemon, "silu"), 120, "the baseline after the restart")
        assert len(baselines(daemon, "silu")) == 1
    finally:
        engine.dispose()
        if daemon.alive():
            assert daemon.stop() == 0


def test_sigkill_leaves_no_kernel_running(tmp_path: Path) -> None:
    daemon = DaemonProcess(tmp_path, "--shapes", "full")
    daemon.drop(SUITE / "silu", "silu")
    daemon.start()
    engine = make_engine(daemon.db)
    try:
        wait_until(lambda: SqlJobQueue(engine).counts().get("running"), 60, "a running job")
        wait_until(lambda: orphans(daemon.home / "work"), 10, "the kernel's processes")
        daemon.stop(signal.SIGKILL)
        wait_until(lambda: not orphans(daemon.home / "work"), 10, "the kernel's processes to die")
    finally:
        engine.dispose()


@pytest.mark.parametrize("observer", ["polling"])
def test_polling_observer_also_records(tmp_path: Path, observer: str) -> None:
    daemon = DaemonProcess(tmp_path, *SMALL, "--observer", observer)
    daemon.start()
    try:
        daemon.drop(SUITE / "silu", "silu")
        wait_until(lambda: daemon.events(KernelSourceChanged, task="silu"), 30, "the revision")
        assert f'"observer": "{observer}"' in daemon.log_text()
    finally:
        assert daemon.stop() == 0
