"""Workloads on the nkisim backend (the NumPy reference's side): the suite's SiLU with two
workloads, the second taking its input from a safetensors file; its latency is an estimate on
each workload and their geometric mean over both."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import save_file

from nkibench.backends.nkisim.backend import NkisimBackend
from nkibench.harness import profile_kernel
from nkibench.sandbox.workload_inputs import data_file, load_numpy
from nkibench.suites import NKI_SUITE
from nkibench.task.spec import load_task


def _silu_with_workloads(tmp_path: Path) -> tuple[Path, np.ndarray]:
    folder = tmp_path / "silu"
    shutil.copytree(NKI_SUITE / "silu", folder)
    x = np.linspace(-6.0, 6.0, 256 * 1024, dtype=np.float32).reshape(256, 1024)
    (folder / "data").mkdir()
    save_file({"x": x}, folder / "data" / "x.safetensors")
    lines = [
        {"uuid": "a", "axes": {"M": 128, "N": 1024}, "inputs": {"x": {"type": "random"}}},
        {
            "uuid": "b",
            "axes": {"M": 256, "N": 1024},
            "inputs": {
                "x": {"type": "safetensors", "path": "data/x.safetensors", "tensor_key": "x"}
            },
        },
    ]
    (folder / "workloads.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return folder, x


def test_profiling_full_estimates_every_workload_and_takes_their_geometric_mean(
    tmp_path: Path,
) -> None:
    folder, _ = _silu_with_workloads(tmp_path)
    task = load_task(folder)
    result = profile_kernel(task, backend=NkisimBackend(), shapes="full", workdir=tmp_path)
    assert result.correct, f"{result.error_kind}: {result.message}"
    assert [(w["name"], w["uuid"], w["latency_kind"]) for w in result.workloads] == [
        ("w0", "a", "estimated"),
        ("w1", "b", "estimated"),
    ]
    latencies = [w["latency_ms"] or 0.0 for w in result.workloads]
    assert all(v > 0 for v in latencies)
    assert latencies[1] > latencies[0]  # twice the rows
    assert result.latency_kind == "estimated"
    assert result.latency_ms == pytest.approx(math.sqrt(latencies[0] * latencies[1]))


def test_a_wrong_kernel_fails_on_the_workload_whose_file_it_meets(tmp_path: Path) -> None:
    """The kernel below clamps its input to [-5, 5]: right on seed 0's random normal draw
    (whose largest magnitude is 4.85), wrong on the file's data, which runs to ±6."""
    folder, _ = _silu_with_workloads(tmp_path)
    task = load_task(folder)
    source = task.kernel_source.replace(
        "nisa.dma_copy(dst=x_tile, src=x[rows, cols])",
        "nisa.dma_copy(dst=x_tile, src=x[rows, cols])\n"
        "            nisa.tensor_scalar(dst=x_tile, data=x_tile, op0=nl.minimum, operand0=5.0,"
        " op1=nl.maximum, operand1=-5.0)",
    )
    assert source != task.kernel_source
    result = profile_kernel(
        task,
        backend=NkisimBackend(),
        kernel_source=source,
        shapes="full",
        seeds=(0,),
        workdir=tmp_path,
    )
    assert not result.correct
    assert result.message.startswith("workload w1 (uuid b): "), result.message
    assert [w["correct"] for w in result.workloads] == [True, False]


def test_numpy_reads_bfloat16_tensors_through_ml_dtypes(tmp_path: Path) -> None:
    """safetensors' NumPy loader has no bfloat16 (NumPy has none): read from the file's bytes."""
    torch = pytest.importorskip("torch")  # only to write a bfloat16 file, as FlashInfer-Bench's are
    from safetensors.torch import save_file as save_torch

    values = torch.tensor([[1.5, -2.0], [0.25, 3.0]], dtype=torch.bfloat16)
    save_torch({"w": values, "i": torch.arange(3, dtype=torch.int64)}, tmp_path / "t.safetensors")
    path = data_file(tmp_path, "t.safetensors")
    loaded = load_numpy(path, "w")
    assert loaded.dtype == np.dtype(ml_dtypes.bfloat16)
    assert loaded.astype(np.float32).tolist() == [[1.5, -2.0], [0.25, 3.0]]
    assert load_numpy(path, "i").tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="not a file of the task folder"):
        data_file(tmp_path, "../t.safetensors")
