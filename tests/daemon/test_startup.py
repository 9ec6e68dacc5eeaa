"""What the daemon does as it starts (daemon/coordinator/startup.py): a `--shapes` value no
task has is refused before anything is recorded, and the work folders of killed jobs are swept."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import structlog

from daemon.coordinator.startup import OptionRefused, check_shapes, sweep_work
from nkibench.sandbox.parse_child import PARSE_PREFIX
from nkibench.suites import NKI_LEGACY_SUITE
from tests.flashinfer.dataset import RMSNORM, write_dataset
from tests.support.cli import run_cli


def test_a_shapes_value_no_task_has_is_refused_with_a_usage_status(tmp_path: Path) -> None:
    watch = tmp_path / "kernels"
    shutil.copytree(NKI_LEGACY_SUITE / "silu", watch / "silu")
    shutil.copytree(NKI_LEGACY_SUITE / "matmul", watch / "matmul")
    with pytest.raises(OptionRefused) as caught:
        check_shapes("smal", watch)
    assert caught.value.exit_code == 2
    assert caught.value.message == (
        f"--shapes 'smal': none of the 2 task folders in {watch} has this shape set (they "
        "have: full, small); did you mean 'small'?"
    )
    assert "\n" not in caught.value.message
    with pytest.raises(OptionRefused, match=r"--shapes: '\.\./x' is not a task name"):
        check_shapes("../x", watch)
    check_shapes("small", watch)
    check_shapes("full", watch)


def test_with_no_task_yet_a_shapes_value_is_taken_and_said(tmp_path: Path) -> None:
    """Nothing to check it against: a first start on an empty directory is normal."""
    with structlog.testing.capture_logs() as logs:
        check_shapes("small", tmp_path)
    assert [(line["event"], line["shapes"]) for line in logs] == [
        ("--shapes cannot be checked: no task folder yet", "small")
    ]


def test_killed_jobs_folders_are_swept_and_nothing_else(tmp_path: Path) -> None:
    """Every SIGKILL leaked its work/nkibench-* folder (about 1.8 GB for a full-shape job)."""
    work = tmp_path / "state" / "work"
    for name, size in (("nkibench-a1", 3000), ("nkibench-b2", 1000)):
        (work / name / "data").mkdir(parents=True)
        (work / name / "data" / "seed0.npy").write_bytes(b"x" * size)
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    (work / "nkibench-link").symlink_to(outside, target_is_directory=True)
    (work / "other").mkdir()
    (work / "nkibench-file").write_text("not a folder")
    with structlog.testing.capture_logs() as logs:
        lock = sweep_work(work)
    assert lock is not None
    assert sorted(p.name for p in work.iterdir()) == [
        ".lock",
        "nkibench-file",
        "nkibench-link",
        "other",
    ]
    assert (outside / "keep.txt").read_text() == "keep"
    [line] = [line for line in logs if line["event"] == "work folders of killed jobs removed"]
    assert (line["removed"], line["bytes"]) == (2, 4000)

    # a second daemon on the same state directory sweeps nothing while the first runs
    (work / "nkibench-c3").mkdir()
    with structlog.testing.capture_logs() as logs:
        assert sweep_work(work) is None
    assert (work / "nkibench-c3").is_dir()
    assert [line["event"] for line in logs] == ["work folder in use by another daemon: not swept"]
    lock.close()
    second = sweep_work(work)
    assert second is not None
    assert not (work / "nkibench-c3").exists()
    second.close()


def test_a_tasks_workloads_are_shape_sets_it_has(tmp_path: Path) -> None:
    """A task imported from FlashInfer-Bench: each line of its workloads.jsonl is a shape set
    (`w0`, `w1`), which `--shapes` may name."""
    dataset = write_dataset(tmp_path / "dataset")
    watch = tmp_path / "kernels"
    run = run_cli("import-flashinfer", str(dataset), str(watch), "--definition", RMSNORM)
    assert run.code == 0, run.err
    check_shapes("w1", watch)
    with pytest.raises(OptionRefused, match=r"\(they have: full, w0, w1\); did you mean 'w1'\?"):
        check_shapes("w11", watch)


def test_a_parse_child_s_folder_is_swept_like_a_job_s(tmp_path: Path) -> None:
    """A SIGKILL of the daemon while a candidate is parsed leaves the parse child's folder."""
    work = tmp_path / "work"
    left = work / f"{PARSE_PREFIX}x1"
    (left / "parse").mkdir(parents=True)
    (left / "parse" / "kernel.py").write_text("x = 1\n")
    lock = sweep_work(work)
    assert lock is not None
    lock.close()
    assert not left.exists()
