"""The real daemon process on a real directory and a real SQLite file: task folders come,
change and go; broken ones are recorded and served again once fixed; SIGTERM drains."""

from __future__ import annotations

import json
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
from nkibench.sandbox.parse_child import PARSE_PREFIX
from nkibench.suites import NKI_LEGACY_SUITE as SUITE
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


def job_folders(work: Path) -> list[Path]:
    return [p for p in work.glob("nkibench-*") if not p.name.startswith(PARSE_PREFIX)]


def test_sigkill_leaves_no_kernel_running_and_the_next_start_sweeps_its_folder(
    tmp_path: Path,
) -> None:
    """Every SIGKILL leaked the job's `work/nkibench-*` folder (about 1.8 GB for a
    full-shape job); the next start removes it, and says how many and how much."""
    daemon = DaemonProcess(tmp_path, "--shapes", "full")
    daemon.drop(SUITE / "silu", "silu")
    daemon.start()
    engine = make_engine(daemon.db)
    work = daemon.home / "work"
    try:
        wait_until(lambda: SqlJobQueue(engine).counts().get("running"), 60, "a running job")
        # the job's own folder: the candidate's parse child (before it) has a folder of its own
        wait_until(lambda: job_folders(work) and orphans(work), 30, "the job's processes")
        daemon.stop(signal.SIGKILL)
        wait_until(lambda: not orphans(work), 10, "the kernel's processes to die")
        [leaked] = job_folders(work)
        size = sum(f.stat().st_size for f in leaked.rglob("*") if f.is_file())
        assert size > 0
        daemon.start()
        assert not leaked.exists()
        [line] = [
            json.loads(text[3:])
            for text in daemon.log_text().splitlines()
            if '"work folders of killed jobs removed"' in text and '"removed": 1' in text
        ]
        assert line["bytes"] == size
    finally:
        engine.dispose()
        if daemon.alive():
            assert daemon.stop() == 0


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


# --- a hostile kernel directory (issue 14) ----------------------------------------------------

WITHOUT_DAC = (
    "setpriv",
    "--inh-caps=-dac_override,-dac_read_search",
    "--bounding-set=-dac_override,-dac_read_search",
)
"""Root without its permission to ignore file modes: what a `chmod 000` folder means to a
daemon under a user of its own (these tests run as root)."""


def renamed(folder: Path, name: str) -> None:
    """Give the task in `folder` the task.toml name `name`."""
    toml = folder / "task.toml"
    toml.write_text(f"name = {name!r}\n" + toml.read_text())


def test_bad_folders_at_start_leave_the_daemon_and_the_other_folders_unharmed(
    tmp_path: Path,
) -> None:
    """A folder whose name is not UTF-8, or a `chmod 000` folder, made the daemon exit 1 at
    start (a restart loop under systemd)."""
    daemon = DaemonProcess(
        tmp_path,
        *SMALL,
        prefix=WITHOUT_DAC,
        # kernels run as the daemon's user: a root without file-mode rights could not
        # remove the files a sandboxed child (user nobody) leaves in its work folder
        env={"ACCELOPT_SANDBOX": "none"},
    )
    bad = os.fsencode(daemon.watch) + b"/bad\xff"
    shutil.copytree(SUITE / "silu", os.fsdecode(bad))
    locked = daemon.drop(SUITE / "silu", "locked")
    locked.chmod(0)
    daemon.drop(SUITE / "silu", "good")
    try:
        daemon.start()
        [invalid] = wait_until(lambda: daemon.events(TaskInvalid), 30, "the locked folder")
        assert (invalid.task, invalid.file) == ("locked", None)
        assert invalid.message == f"{locked}: permission denied (the daemon cannot read it)"
        [good] = wait_until(lambda: baselines(daemon, "good"), 60, "the good task's baseline")
        assert good.correct
        assert [e.task for e in daemon.events(KernelSourceChanged)] == ["good"]
        assert '"problem": "the folder\'s name is not UTF-8: rename it"' in daemon.log_text()
        assert daemon.alive()
    finally:
        locked.chmod(0o755)
        assert daemon.stop() == 0


def test_a_shapes_typo_stops_the_daemon_and_a_missing_shape_set_is_not_for_good(
    tmp_path: Path,
) -> None:
    """A typo in --shapes marked every task as failing, and a restart with the right value
    did not clear it."""
    daemon = DaemonProcess(tmp_path, "--shapes", "smal")
    daemon.drop(SUITE / "silu", "silu")
    daemon.start(ready=False)
    assert daemon.wait() == 2
    assert daemon.log_text() == (
        f"accelopt: error: --shapes 'smal': none of the 1 task folders in {daemon.watch} has "
        "this shape set (they have: full, small); did you mean 'small'?\n"
    )
    assert not (daemon.home / "accelopt.db").exists()  # nothing recorded, not even a start

    # a shape set one task has and the other lacks: the other is invalid for this daemon
    tiny = daemon.drop(SUITE / "silu", "silu_tiny")
    with (tiny / "task.toml").open("a") as handle:
        handle.write("\n[shapes.tiny]\nM = 128\nN = 512\n")
    daemon.args = ("--shapes", "tiny")
    daemon.start()
    try:
        [invalid] = wait_until(lambda: daemon.events(TaskInvalid, task="silu"), 30, "invalid")
        assert "shapes: no shape set 'tiny', which this daemon profiles" in invalid.message
        wait_until(lambda: baselines(daemon, "silu_tiny"), 60, "the tiny baseline")
    finally:
        assert daemon.stop() == 0
    assert baselines(daemon, "silu") == []

    # restarted with a shape set both have, the task is evaluated again and profiled
    daemon.args = SMALL
    daemon.start()
    try:
        [baseline] = wait_until(lambda: baselines(daemon, "silu"), 60, "the silu baseline")
        assert baseline.correct
        assert len(daemon.events(KernelSourceChanged, task="silu")) == 1
    finally:
        assert daemon.stop() == 0


def test_a_hostile_directory_leaves_the_daemon_unharmed(tmp_path: Path) -> None:
    """Huge and binary files, symlinks out and in loops, FIFOs, a name climbing out of the
    state folder and one taking another folder's task: each is recorded invalid with its
    reason, nothing of them reaches the log or the disk, and the daemon stays small."""
    daemon = DaemonProcess(tmp_path, *SMALL)
    owner = daemon.drop(SUITE / "silu", "silu")
    daemon.start()
    staging = tmp_path / "staging"
    spoilt = {name: shutil.copytree(SUITE / "silu", staging / name) for name in SPOILT}
    five_mb = "x = 1\n" * (5 * 1024 * 1024 // 6)  # the kernel: 2.26 GB to parse
    (spoilt["big"] / "kernel.py").write_text((SUITE / "silu" / "kernel.py").read_text() + five_mb)
    os.truncate(spoilt["sparse"] / "reference.py", 64 * 1024**3)
    (spoilt["binary"] / "kernel.py").write_bytes(b"\xff\xfe" + os.urandom(1 << 16))
    for name in ("outward", "fifo"):
        (spoilt[name] / "kernel.py").unlink()
    (spoilt["outward"] / "kernel.py").symlink_to("/etc/passwd")
    os.mkfifo(spoilt["fifo"] / "kernel.py")
    renamed(spoilt["climber"], "../../library/silu")
    renamed(spoilt["usurper"], "silu")
    try:
        wait_until(lambda: baselines(daemon, "silu"), 60, "the owner's baseline")
        for name in SPOILT:
            os.rename(staging / name, daemon.watch / name)
        (daemon.watch / "etc").symlink_to("/etc", target_is_directory=True)
        (daemon.watch / "loop").symlink_to(daemon.watch / "loop")
        expected = {**SPOILT, "etc": "etc: a symlink to /etc, outside", "loop": "a symlink loop"}
        invalid = wait_until(
            lambda: (
                daemon.events(TaskInvalid)
                if len(daemon.events(TaskInvalid)) >= len(expected)
                else []
            ),
            60,
            "every folder's record",
        )
        messages = {e.task: e.message for e in invalid}
        assert set(messages) == set(expected)
        for name, message in expected.items():
            assert message in messages[name], name
        assert [e.task_dir for e in daemon.events(KernelSourceChanged)] == [str(owner)]
        assert daemon.alive()
        assert daemon.peak_memory_mb() < 400
        assert not (tmp_path / "library").exists()
    finally:
        assert daemon.stop() == 0
    daemon.start()  # the same folders, the same owner: nothing new to record
    try:
        assert len(daemon.events(TaskInvalid)) == len(expected)
        assert len(daemon.events(KernelSourceChanged)) == 1
    finally:
        assert daemon.stop() == 0


SPOILT = {
    "big": "kernel.py: 5 MiB (5243",
    "sparse": "reference.py: 65536 MiB (68719476736 bytes), over the 256 KiB limit",
    "binary": "kernel.py: not UTF-8 (byte 0xff at offset 0)",
    "outward": "kernel.py: a symlink to /etc/passwd, outside the watched directory",
    "fifo": "kernel.py: not a regular file",
    "climber": "task.toml: name: '../../library/silu' is not a task name",
    "usurper": "task.toml: name: 'silu' is the task of the folder",
}
"""Folder → what its record says, in part."""


HANGS = "import time\n\ntime.sleep(3600)\n"
FLOODS = "import os\n\nwhile True:\n    os.write(1, b'x' * 65536)\n"


def test_a_reference_that_hangs_or_floods_is_a_task_error_and_the_daemon_goes_on(
    tmp_path: Path,
) -> None:
    """A reference.py runs in a child bounded by the task's timeout and by an output limit
    (only its tail is read; the file-size limit alone would let it fill the disk)."""
    daemon = DaemonProcess(tmp_path, *SMALL)
    for name, prologue in (("hangs", HANGS), ("floods", FLOODS)):
        folder = daemon.drop(SUITE / "silu", name)
        reference = folder / "reference.py"
        reference.write_text(prologue + reference.read_text())
        with (folder / "task.toml").open("a") as handle:
            handle.write("\n[limits]\ntimeout_s = 5\n")
    daemon.drop(SUITE / "silu", "silu")
    daemon.start()
    try:
        # one device: the three baselines run one after another, each a few children, on a
        # machine whose other test worker may be running a daemon of its own
        [hangs] = wait_until(lambda: baselines(daemon, "hangs"), 180, "the hanging baseline")
        [floods] = wait_until(lambda: baselines(daemon, "floods"), 180, "the flooding baseline")
        [silu] = wait_until(lambda: baselines(daemon, "silu"), 180, "the good baseline")
        assert (hangs.error_kind, floods.error_kind, silu.correct) == ("task", "task", True)
        assert hangs.error_message is not None
        assert floods.error_message is not None
        assert "the task's reference code (reference) ran past the 5 s limit" in (
            hangs.error_message
        )
        assert "the task's reference code (reference) wrote more than 16 MiB to stdout" in (
            floods.error_message
        )
        assert daemon.alive()
    finally:
        assert daemon.stop() == 0
