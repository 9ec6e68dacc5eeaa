"""A job's memory and disk (issue 27): the sandbox's tmpfs are sized out of memory_mb, memory_mb
is capped at the job's share of the host, and the job's folders hold at most disk_mb. Every
child runs under bubblewrap, as in the daemon."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from types import MappingProxyType

import pytest

from nkibench.backend import Phase
from nkibench.backends.nkisim.backend import NkisimBackend
from nkibench.errors import PhaseFailure, TaskError
from nkibench.harness import check_kernel, run_phase, share_of_host
from nkibench.sandbox import disk
from nkibench.sandbox.disk import DiskQuota, measure
from nkibench.sandbox.folders import SessionFolders
from nkibench.sandbox.isolation import Isolation, Mounts, Tmpfs
from nkibench.sandbox.process import Limits
from nkibench.sandbox.resources import HOST_MEMORY_FRACTION, host_memory_mb, split_memory
from nkibench.task.spec import TaskSpec, load_task
from tests.support import REPOSITORY
from tests.support.hoarder import HOARD

SILU = REPOSITORY / "nkibench" / "suites" / "nki" / "silu"


class HoardingBackend(NkisimBackend):
    """nkisim, its kernel's run writing 3 GiB where it is told (tests/support/hoarder.py)."""

    phases = MappingProxyType(
        {
            **NkisimBackend.phases,
            "kernel": Phase("tests.support.hoarder:kernel_phase", "kernel", True),
        }
    )

    def __init__(self, where: str) -> None:
        super().__init__()
        self.where = where

    def environment(self) -> dict[str, str]:
        return {HOARD: self.where}


def silu_with(tmp_path: Path, limits: str) -> TaskSpec:
    folder = tmp_path / "silu"
    shutil.copytree(SILU, folder)
    with (folder / "task.toml").open("a") as toml:
        toml.write(f"\n[limits]\n{limits}\n")
    return load_task(folder)


def test_tmpfs_and_address_space_share_memory_mb() -> None:
    split = split_memory(1024)
    assert (split.address_space_mb, split.tmp_mb, split.shm_mb) == (896, 96, 32)
    assert 896 + split.tmp_mb + split.shm_mb == 1024
    assert split_memory(None).address_space_mb is None  # a GPU's child: tmpfs still bounded


def test_every_tmpfs_of_the_sandbox_has_a_size_and_its_own_are_read_only() -> None:
    command = Isolation.detect().command(
        ["/bin/true"],
        workdir=Path("/"),
        writable=[],
        read_only=[],
        mounts=Mounts(),
        tmpfs=Tmpfs(96 * 1024**2, 32 * 1024**2),
    )
    mounted = [command[i + 1] for i, word in enumerate(command) if word == "--tmpfs"]
    assert mounted == ["/tmp", "/dev/shm"]
    sizes = [command[i - 1] for i, word in enumerate(command) if word == "--tmpfs"]
    assert sizes == [str(96 * 1024**2), str(32 * 1024**2)]
    assert all(command[i - 2] == "--size" for i, word in enumerate(command) if word == "--tmpfs")
    remounted = [command[i + 1] for i, word in enumerate(command) if word == "--remount-ro"]
    assert remounted == ["/dev", "/"]


def test_a_kernel_filling_tmp_is_a_resource_failure_long_before_3_gib(tmp_path: Path) -> None:
    task = silu_with(tmp_path, "memory_mb = 1024")
    result = check_kernel(task, backend=HoardingBackend("/tmp"), seeds=(0,))
    assert not result.correct
    assert result.error_kind == "resource", result.message
    message = result.message or ""
    assert "/tmp is full" in message, message
    assert "limited to 96 MB" in message
    assert "memory_mb = 1024" in message


def test_a_kernel_writing_past_disk_mb_is_stopped_as_a_resource_failure(tmp_path: Path) -> None:
    task = silu_with(tmp_path, "disk_mb = 256")
    result = check_kernel(task, backend=HoardingBackend("work"), seeds=(0,))
    assert not result.correct
    assert result.error_kind == "resource", result.message
    message = result.message or ""
    assert "the kernel left the folders it writes holding more than 256 MB" in message
    assert "[limits] disk_mb" in message


def test_an_honest_kernel_stays_within_its_quota_and_tmpfs(tmp_path: Path) -> None:
    task = silu_with(tmp_path, "memory_mb = 1024\ndisk_mb = 64")
    result = check_kernel(task, backend=NkisimBackend(), seeds=(0,))
    assert result.correct, result.message
    assert result.warnings == []


def test_memory_mb_above_the_host_share_is_capped_with_a_warning() -> None:
    asked = Limits(timeout_s=60, memory_mb=8192)
    capped, warning = share_of_host(asked, jobs=4, host_mb=16384)
    assert capped.memory_mb == int(16384 * HOST_MEMORY_FRACTION) // 4 == 3072
    assert warning is not None
    assert "memory_mb = 8192" in warning
    assert "over 4 concurrent job(s)" in warning
    assert "the job ran with memory_mb = 3072" in warning
    assert share_of_host(asked, jobs=1, host_mb=16384) == (asked, None)  # 12288: within
    unlimited = Limits(timeout_s=60, memory_mb=None)  # a GPU's child: no address space limit
    assert share_of_host(unlimited, jobs=8, host_mb=1024) == (unlimited, None)


def test_a_task_asking_1_tib_runs_with_the_hosts_share_and_says_so(tmp_path: Path) -> None:
    task = silu_with(tmp_path, "memory_mb = 1048576")
    result = check_kernel(task, backend=NkisimBackend(), seeds=(0,), jobs=2)
    assert result.correct, result.message
    cap = int(host_memory_mb() * HOST_MEMORY_FRACTION) // 2
    assert result.warnings[0].startswith("memory_mb = 1048576 is more than one job's share")
    assert f"the job ran with memory_mb = {cap}" in result.warnings[0]


@pytest.fixture(scope="module")
def isolation() -> Isolation:
    return Isolation.detect()


def test_the_meter_counts_blocks_once_and_follows_no_link(
    tmp_path: Path, isolation: Isolation
) -> None:
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"x" * 4 * 1024**2)
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "data.bin").write_bytes(b"y" * 1024**2)
    os.link(root / "a" / "b" / "data.bin", root / "a" / "again.bin")
    (root / "link").symlink_to(outside)
    (root / "folder_link").symlink_to(tmp_path)
    fifo = root / "fifo"
    os.mkfifo(fifo)  # a walker that opened it would wait for ever
    usage = measure([root], isolation)
    assert usage.complete
    assert not usage.over_limits
    assert usage.entries == 7  # root, a, b, the data (again.bin is the same inode), 2 links, fifo
    assert 1024**2 <= usage.bytes < 2 * 1024**2  # the data once; not the 4 MiB outside


def test_a_folder_the_meter_cannot_read_is_over_the_quota_once_the_children_ended(
    tmp_path: Path, isolation: Isolation
) -> None:
    if isolation.child_uid is None:
        pytest.skip("the meter runs as this user, who may read any folder it owns")
    root = tmp_path / "root"
    hidden = root / "hidden"
    hidden.mkdir(parents=True)
    (hidden / "data.bin").write_bytes(b"z" * 1024**2)
    hidden.chmod(0o000)  # what a child can do to a folder it owns
    quota = DiskQuota([root], isolation, limit_mb=64)
    assert not quota.exceeded()  # while the child runs: asked again at the next poll
    assert not quota.last.complete
    assert quota.exceeded(now=True)
    assert "could not read" in quota.describe()


def test_too_many_entries_are_over_the_quota_whatever_their_size(
    tmp_path: Path, isolation: Isolation, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(disk, "MAX_ENTRIES", 50)
    root = tmp_path / "root"
    root.mkdir()
    for i in range(60):
        (root / f"empty{i}").touch()
    quota = DiskQuota([root], isolation, limit_mb=64)
    assert quota.exceeded()
    assert quota.last.entries == 61
    assert quota.describe() == "more than 50 files and folders"


@pytest.mark.parametrize("value", ["10", "1073741824", "'4096'", "true", "4096.5", "-1", "0"])
def test_disk_mb_out_of_bounds_or_not_an_integer_is_refused(tmp_path: Path, value: str) -> None:
    with pytest.raises(TaskError, match=r"task.toml: limits.disk_mb: must be an integer ≥ 64"):
        silu_with(tmp_path, f"disk_mb = {value}")


def test_disk_mb_defaults_to_4096_and_reaches_the_childs_limits(tmp_path: Path) -> None:
    assert load_task(SILU).disk_mb == 4096
    task = silu_with(tmp_path, "disk_mb = 512")
    assert task.disk_mb == 512
    assert NkisimBackend().limits(task, "small", 1).disk_mb == 512


WRITER = Phase("tests.support.hoarder:write_phase", "kernel")


def test_the_quota_is_each_childs_and_its_own_folder_goes_when_it_ends(
    tmp_path: Path, isolation: Isolation
) -> None:
    """Three children each leave 40 MB for later children under a 64 MB quota: 120 MB in all,
    which a quota over the whole job would have stopped at the second (a full-size task's
    seeds, timed and then re-verified, outgrew 4096 MB so). A child's own folder is removed
    when it ends. One child writing 40 MB in each of its two folders is over."""
    limits = Limits(timeout_s=60, disk_mb=64)
    with SessionFolders(tmp_path, isolation.child_uid) as folders:
        kept = []
        for _ in range(3):
            out = folders.fresh("outputs")
            request = {"mb": 40, "own_mb": 16, "into": str(out)}
            run_phase("writer", WRITER, request, folders, limits, isolation=isolation, writes=[out])
            kept.append(out)
        assert measure(kept, isolation).bytes >= 120 * 1024**2
        assert sorted(p.name for p in folders.root.iterdir()) == [
            "outputs",
            "outputs.2",
            "outputs.3",
        ]
        out = folders.fresh("outputs")
        request = {"mb": 40, "own_mb": 40, "into": str(out)}
        with pytest.raises(PhaseFailure) as failure:
            run_phase("writer", WRITER, request, folders, limits, isolation=isolation, writes=[out])
        assert failure.value.kind == "resource"
        assert "left the folders it writes holding more than 64 MB" in str(failure.value)
        folders.release(out)
        assert sorted(p.name for p in folders.root.iterdir()) == [
            "outputs",
            "outputs.2",
            "outputs.3",
        ]
