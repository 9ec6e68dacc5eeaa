"""A task's workloads (nkibench.task.workloads): workloads.jsonl read and checked line by line,
the safetensors files it names kept inside the task folder, each workload a shape set; and the
result over them (nkibench.policy.workloads): correct only if correct on all, the latency the
geometric mean of theirs."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import save_file

from nkibench.errors import TaskError
from nkibench.policy.workloads import WorkloadRun, combine, geometric_mean
from nkibench.result import KernelResult
from nkibench.task.files import read_task_files
from nkibench.task.spec import load_task
from tests.support import DATA

TASK = DATA / "format" / "gather_workloads"
GOOD = {
    "uuid": "u-1",
    "axes": {"M": 16},
    "inputs": {
        "indices": {
            "type": "safetensors",
            "path": "blobs/indices.safetensors",
            "tensor_key": "indices",
        },
        "scale": {"type": "scalar", "value": 0.5},
    },
}


def _task(tmp_path: Path, *lines: Any) -> Path:
    """The gather_workloads task with workloads.jsonl of `lines` (a dict as JSON, a str as
    it is)."""
    folder = tmp_path / "task"
    shutil.copytree(TASK, folder)
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines)
    (folder / "workloads.jsonl").write_text(text + "\n")
    return folder


def test_each_workload_is_a_shape_set_with_its_axes_and_inputs() -> None:
    task = load_task(TASK)
    assert task.shape_names == ["full", "w0", "w1"]
    assert [w.uuid[-1] for w in task.workloads] == ["1", "2"]
    assert task.shape_values("w1")["N"] == 40
    assert task.shape_values("full")["N"] == 32
    assert task.workload_inputs("w0")["indices"] == {
        "type": "safetensors",
        "path": "blobs/indices.safetensors",
        "tensor_key": "indices",
    }
    assert task.workload_inputs("w1")["scale"] == {"type": "scalar", "value": 2.0}
    assert task.workload_inputs("full") == {}
    assert task.roofline_counts("w1")["bytes"] == 2 * 4 * 6 * 40 + 4 * 6
    assert set(task.workload_files) == {"workloads.jsonl", "blobs/indices.safetensors"}
    # a workload is a real size: full's time limit, not a small set's
    assert task.timeout_for("w0") == task.timeout_for("full")


def test_the_workloads_and_their_files_are_part_of_the_revision(tmp_path: Path) -> None:
    folder = _task(tmp_path, GOOD)
    before = load_task(folder).content_hash
    save_file(
        {"indices": np.array([1, 2, 3, 4], dtype=np.int32)}, folder / "blobs/indices.safetensors"
    )
    assert load_task(folder).content_hash != before
    files = read_task_files(folder)
    assert set(files) >= {"workloads.jsonl", "blobs/indices.safetensors"}


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"uuid": "u-2", "axes": {}, "inputs": {', "not JSON"),
        (
            {**GOOD, "uuid": "u-2", "inputs": {"scale": {"type": "gaussian"}}},
            "unknown input type 'gaussian'",
        ),
        (
            {
                **GOOD,
                "uuid": "u-2",
                "inputs": {
                    "indices": {
                        "type": "safetensors",
                        "path": "../x.safetensors",
                        "tensor_key": "i",
                    }
                },
            },
            "may not leave the task folder",
        ),
        (
            {
                **GOOD,
                "uuid": "u-2",
                "inputs": {
                    "indices": {
                        "type": "safetensors",
                        "path": "/etc/x.safetensors",
                        "tensor_key": "i",
                    }
                },
            },
            "must be relative to the task folder",
        ),
        (
            {
                **GOOD,
                "uuid": "u-2",
                "inputs": {
                    "indices": {
                        "type": "safetensors",
                        "path": "blobs/indices.safetensors",
                        "tensor_key": "kv_indptr",
                    }
                },
            },
            "has no tensor 'kv_indptr' (it has: indices)",
        ),
        (
            {
                **GOOD,
                "uuid": "u-2",
                "inputs": {
                    "indices": {
                        "type": "safetensors",
                        "path": "blobs/none.safetensors",
                        "tensor_key": "i",
                    }
                },
            },
            "blobs/none.safetensors: no such file in the task folder",
        ),
        (
            {**GOOD, "uuid": "u-2", "axes": {"BATCH": 4}},
            "reference.py has no module-level constant BATCH",
        ),
        ({**GOOD, "uuid": "u-2", "axes": {"M": -1}}, "axes.M: must be an integer ≥ 0"),
        (
            {**GOOD, "uuid": "u-2", "inputs": {"scale": {"type": "scalar", "value": "x"}}},
            "value must be a finite number",
        ),
        ({**GOOD, "uuid": "u-2", "extra": 1}, "unknown key(s) 'extra'"),
        (GOOD, "uuid 'u-1' is line 1's already"),
        ("[1, 2]", "must be a JSON object (a Workload), not an array"),
    ],
)
def test_a_malformed_line_is_the_tasks_error_naming_the_file_and_line(
    tmp_path: Path, line: Any, problem: str
) -> None:
    folder = _task(tmp_path, GOOD, line)
    with pytest.raises(TaskError) as caught:
        load_task(folder)
    message = str(caught.value)
    assert f"{folder.resolve() / 'workloads.jsonl'} line 2" in message
    assert problem in message


def test_a_safetensors_file_that_is_a_symlink_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.safetensors"
    save_file({"indices": np.zeros(4, dtype=np.int32)}, outside)
    folder = _task(tmp_path, GOOD)
    os.remove(folder / "blobs/indices.safetensors")
    os.symlink(outside, folder / "blobs/indices.safetensors")
    with pytest.raises(TaskError, match=r"a symlink to .*outside the task folder"):
        load_task(folder)


def test_a_file_that_is_no_safetensors_file_is_named(tmp_path: Path) -> None:
    folder = _task(tmp_path, GOOD)
    (folder / "blobs/indices.safetensors").write_bytes(b"\xff" * 64)
    with pytest.raises(
        TaskError, match=r"workloads.jsonl line 1: inputs.indices: .*not a safetensors file"
    ):
        load_task(folder)


def test_task_toml_may_name_the_workloads_file(tmp_path: Path) -> None:
    folder = _task(tmp_path, GOOD)
    (folder / "workloads.jsonl").rename(folder / "traces.jsonl")
    toml = folder / "task.toml"
    assert len(load_task(folder).workloads) == 0  # no workloads.jsonl: none
    toml.write_text(toml.read_text() + '\n[workloads]\nfile = "traces.jsonl"\n')
    assert [w.uuid for w in load_task(folder).workloads] == ["u-1"]
    toml.write_text(toml.read_text().replace("traces.jsonl", "gone.jsonl"))
    with pytest.raises(TaskError, match=r"task.toml: workloads.file: gone.jsonl: no such file"):
        load_task(folder)
    toml.write_text(toml.read_text().replace("gone.jsonl", "../up.jsonl"))
    with pytest.raises(TaskError, match=r"workloads.file: '../up.jsonl' may not leave"):
        load_task(folder)
    toml.write_text(toml.read_text().replace("../up.jsonl", "kernel.py"))
    with pytest.raises(TaskError, match=r"workloads.file: 'kernel.py' must name a .jsonl file"):
        load_task(folder)


def test_a_shape_set_may_not_take_a_workloads_name(tmp_path: Path) -> None:
    folder = _task(tmp_path, GOOD)
    toml = folder / "task.toml"
    toml.write_text(toml.read_text() + "\n[shapes.w0]\nM = 4\n")
    with pytest.raises(TaskError, match=r"\[shapes.w0\]: `w<index>` names the workloads"):
        load_task(folder)


def test_an_empty_workloads_file_is_refused(tmp_path: Path) -> None:
    folder = _task(tmp_path, "")
    with pytest.raises(TaskError, match="holds no workload"):
        load_task(folder)


# --- the result over the workloads --------------------------------------------------------


def _ran(
    name: str, latency: float | None, *, correct: bool = True, pct: float = 10.0
) -> WorkloadRun:
    result = KernelResult("t", "nkisim", "trn2", name, compiled=True, correct=correct, seeds=[0])
    if correct and latency is not None:
        result.latency_ms, result.latency_kind, result.pct_of_peak = latency, "estimated", pct
        result.latency_stats = {"p50": latency, "runs": 100.0, "rel_spread": latency / 100}
        result.counters = {"dma_percent": latency / 100}
    if not correct:
        result.error_kind, result.message = "incorrect", "seed 0: output 0: relative L2 error 0.5"
    return WorkloadRun(name, f"uuid-{name}", result)


def _over(*runs: WorkloadRun) -> KernelResult:
    return combine(KernelResult("t", "nkisim", "trn2", "full"), list(runs))


def test_the_latency_is_the_geometric_mean_of_the_workloads() -> None:
    result = _over(_ran("w0", 1.0, pct=5.0), _ran("w1", 4.0, pct=20.0), _ran("w2", 16.0, pct=80.0))
    assert result.correct
    assert result.latency_ms == pytest.approx(4.0)  # (1 * 4 * 16) ** (1/3), not the mean 7
    assert result.latency_kind == "estimated"
    assert result.pct_of_peak == pytest.approx(20.0)
    assert result.latency_stats["p50"] == pytest.approx(4.0)
    assert result.latency_stats["runs"] == 300.0  # every run timed, over the workloads
    assert result.latency_stats["rel_spread"] == 0.16  # the least steady workload's
    assert len(result.workloads) == 3
    assert result.counters == {"dma_percent": 0.16}  # the slowest workload's
    assert [(w["name"], w["latency_ms"], w["latency_kind"]) for w in result.workloads] == [
        ("w0", 1.0, "estimated"),
        ("w1", 4.0, "estimated"),
        ("w2", 16.0, "estimated"),
    ]


def test_a_spread_of_zero_stays_a_statistic_of_the_workloads() -> None:
    """Two blocks that agree exactly (a spread of 0, on a steady GPU) keep the spread among
    the statistics: `accelopt profile` prints it."""
    steady = _ran("w0", 1.0)
    steady.result.latency_stats["rel_spread"] = 0.0
    result = _over(steady)
    assert result.latency_stats["rel_spread"] == 0.0
    assert result.latency_stats["runs"] == 100.0


def test_the_ratio_of_two_kernels_aggregates_is_the_mean_of_their_speedups() -> None:
    slow = _over(_ran("w0", 2.0), _ran("w1", 100.0))
    fast = _over(_ran("w0", 1.0), _ran("w1", 25.0))  # 2x and 4x faster
    assert slow.latency_ms is not None
    assert fast.latency_ms is not None
    assert slow.latency_ms / fast.latency_ms == pytest.approx(math.sqrt(2.0 * 4.0))


def test_a_kernel_wrong_on_one_workload_is_not_correct_and_has_no_latency() -> None:
    result = _over(_ran("w0", 1.0), _ran("w1", None, correct=False))
    assert not result.correct
    assert result.error_kind == "incorrect"
    assert result.message == "workload w1 (uuid uuid-w1): seed 0: output 0: relative L2 error 0.5"
    assert result.latency_ms is None
    assert [w["correct"] for w in result.workloads] == [True, False]


@pytest.mark.parametrize("values", [[], [1.0, 0.0], [1.0, math.inf], [-1.0]])
def test_a_geometric_mean_refuses_what_is_no_latency(values: list[float]) -> None:
    with pytest.raises(ValueError, match="positive, finite"):
        geometric_mean(values)
