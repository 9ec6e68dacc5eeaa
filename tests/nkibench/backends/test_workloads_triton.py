"""A Triton task with FlashInfer-Bench workloads (tests/data/format/gather_workloads: two
workloads, the first taking its integer row indices from a safetensors file in the task folder
and both a scalar scale), under Triton's CPU interpreter as CI runs it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nkibench.backends.triton.backend import TritonBackend
from nkibench.harness import check_kernel
from nkibench.sandbox.arrays import load_array
from nkibench.task.spec import load_task
from tests.support import DATA
from tests.support.triton_helpers import triton_backend

__all__ = ["triton_backend"]

pytestmark = pytest.mark.slow

TASK = DATA / "format" / "gather_workloads"
FILE_INDICES = [15, 0, 15, 7]
"""blobs/indices.safetensors' `indices`: repeated and unsorted, unlike a draw of randperm."""


def test_a_kernel_correct_on_every_workload_is_correct_with_each_workload_named(
    triton_backend: TritonBackend,
) -> None:
    task = load_task(TASK)
    result = check_kernel(task, backend=triton_backend, shapes="full")
    assert result.correct, f"{result.error_kind}: {result.message}"
    assert [(w["name"], w["uuid"][-1], w["correct"]) for w in result.workloads] == [
        ("w0", "1", True),
        ("w1", "2", True),
    ]
    assert all(w["latency_ms"] is None for w in result.workloads)  # a check times nothing
    assert result.shapes == "full"
    assert len(result.seeds) == len(task.seeds)


def test_a_kernel_right_on_one_workload_only_is_not_correct_and_names_it(
    triton_backend: TritonBackend,
) -> None:
    task = load_task(TASK)
    # one block of 32 columns: every row of w0 (N = 20), not of w1 (N = 40)
    narrow = task.kernel_source.replace("BLOCK=triton.next_power_of_2(N)", "BLOCK=32")
    assert narrow != task.kernel_source
    alone = check_kernel(task, backend=triton_backend, kernel_source=narrow, shapes="w0")
    assert alone.correct, alone.message
    result = check_kernel(task, backend=triton_backend, kernel_source=narrow, shapes="full")
    assert not result.correct
    assert result.error_kind == "incorrect"
    assert result.message.startswith("workload w1 (uuid 6c1e2f0a-0000-4000-8000-000000000002)")
    assert [(w["name"], w["correct"]) for w in result.workloads] == [("w0", True), ("w1", False)]


def _reference(tmp_path: Path, workload: str, seeds: list[int]) -> tuple[dict[str, Any], Path]:
    """The Triton reference phase run in this process on one workload of the task."""
    from nkibench.backends.triton.phases import reference_phase  # imports torch

    task = load_task(TASK)
    data, expected = tmp_path / "inputs", tmp_path / "expected"
    answer = reference_phase(
        {
            "reference": str(TASK / "reference.py"),
            "task_dir": str(TASK),
            "overrides": task.overrides(workload),
            "workload_inputs": task.workload_inputs(workload),
            "seeds": seeds,
            "data_dir": str(data),
            "expected_dir": str(expected),
        }
    )
    return answer, data


def test_the_reference_puts_the_files_tensor_and_the_scalar_in_every_seed(
    tmp_path: Path,
) -> None:
    pytest.importorskip("torch")
    answer, data = _reference(tmp_path, "w0", [3, 4])
    assert answer["ok"], answer
    tables = []
    for seed in (3, 4):
        entry = answer["seeds"][str(seed)]
        assert entry["input_names"] == ["table", "indices", "scale"]
        table, indices, scale = entry["inputs"]
        assert table["shape"] == [16, 20]  # the workload's axes: M = 16, N = 20
        assert indices["dtype"] == "int32"
        assert load_array(data, f"seed_{seed}/{indices['file']}").tolist() == FILE_INDICES
        assert scale == {"kind": "scalar", "value": 0.5}
        tables.append(load_array(data, f"seed_{seed}/{table['file']}"))
    assert not np.array_equal(tables[0], tables[1])  # the random input is each seed's own


def test_the_second_workload_draws_its_indices_and_takes_its_own_scale(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    answer, _ = _reference(tmp_path, "w1", [3])
    assert answer["ok"], answer
    table, indices, scale = answer["seeds"]["3"]["inputs"]
    assert (table["shape"], indices["shape"]) == ([32, 40], [6])
    assert scale["value"] == 2.0


def test_a_workload_input_that_is_no_input_of_the_reference_fails_it(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from nkibench.backends.triton.phases import reference_phase  # imports torch

    task = load_task(TASK)
    answer = reference_phase(
        {
            "reference": str(TASK / "reference.py"),
            "task_dir": str(TASK),
            "overrides": task.overrides("w0"),
            "workload_inputs": {**task.workload_inputs("w0"), "kv_indptr": {"type": "random"}},
            "seeds": [3],
            "data_dir": str(tmp_path / "inputs"),
            "expected_dir": str(tmp_path / "expected"),
        }
    )
    assert not answer["ok"]
    assert answer["kind"] == "task"
    assert (
        "the workload's input 'kv_indptr' is no input of get_inputs() (table, indices, scale)"
        in (answer["message"])
    )
