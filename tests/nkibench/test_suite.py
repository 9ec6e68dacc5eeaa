"""CI: every baseline kernel of the NKI suite is correct under nkisim at small shapes, on all of
its seeds, through the real sandboxed harness (with the affine-loop order check)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nkibench.backends.nkisim.backend import NkisimBackend
from nkibench.benchmarks.nki import suite_tasks
from nkibench.harness import check_kernel
from nkibench.task.spec import load_task

TASKS = suite_tasks()
NKIBENCH = {
    "adamw",
    "add_rmsnorm_matmul",
    "bmm",
    "bmm_softmax",
    "gqa_full",
    "lora",
    "mamba",
    "matmul",
    "matmul_add_rmsnorm",
    "rmsnorm_matmul",
    "rope_single_freq_apply",
    "silu",
    "swiglu",
    "transpose_matmul",
}


def test_the_suite_is_nkibench() -> None:
    assert {folder.name for folder in TASKS} == NKIBENCH


@pytest.mark.parametrize("folder", TASKS, ids=[f.name for f in TASKS])
def test_baseline_is_correct_at_small_shapes(folder: Path, tmp_path: Path) -> None:
    task = load_task(folder)
    result = check_kernel(task, backend=NkisimBackend(), shapes="small", workdir=tmp_path)
    assert result.correct, f"{result.error_kind}: {result.message}"
    assert result.compiled
    assert result.seeds == list(task.seeds)
    assert result.max_rel_l2 is not None
    assert result.max_rel_l2 <= task.rel_tol
    assert result.instructions
    assert sum(result.engine_counts.values()) == result.instructions
