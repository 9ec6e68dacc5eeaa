"""CI: the NKI suite, in both NKI dialects (nkibench/suites/nki_legacy and nkibench/suites/nki),
is NKIBench's 14 tasks, the current one the legacy one's twin (the same references, shape sets,
roofline counts and tolerances), and every baseline kernel is correct under nkisim at small
shapes on trn2, on all of its seeds, through the real sandboxed harness (with the affine-loop
order check). Each check takes 4-7 s here: not slow."""

from __future__ import annotations

from pathlib import Path

import pytest

from nkibench.backends.nkisim.backend import NkisimBackend
from nkibench.benchmarks.nki import suite_tasks
from nkibench.harness import check_kernel
from nkibench.suites import NKI_LEGACY_SUITE
from nkibench.task.spec import load_task

DIALECTS = ("nki-legacy", "nki")
TASKS = [(dialect, folder) for dialect in DIALECTS for folder in suite_tasks(dialect=dialect)]
CURRENT = suite_tasks(dialect="nki")
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


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_suite_is_nkibench(dialect: str) -> None:
    assert {folder.name for folder in suite_tasks(dialect=dialect)} == NKIBENCH


@pytest.mark.parametrize("folder", CURRENT, ids=[f.name for f in CURRENT])
def test_task_is_its_legacy_twin_in_current_nki(folder: Path) -> None:
    task = load_task(folder)
    twin = load_task(NKI_LEGACY_SUITE / folder.name)
    assert task.dialect == "nki"
    assert twin.dialect == "nki-legacy"
    assert task.reference_source == twin.reference_source
    assert task.constants == twin.constants
    assert task.shape_sets == twin.shape_sets
    assert "small" in task.shape_sets
    for shapes in task.shape_names:
        assert task.shape_values(shapes) == twin.shape_values(shapes)
        assert task.roofline_counts(shapes) == twin.roofline_counts(shapes)
    assert task.roofline == twin.roofline
    assert task.rel_tol == twin.rel_tol
    assert task.seeds == twin.seeds
    assert task.kernel_function == twin.kernel_function
    assert "neuronxcc" not in task.kernel_source


@pytest.mark.parametrize(("dialect", "folder"), TASKS, ids=[f"{d}/{f.name}" for d, f in TASKS])
def test_baseline_is_correct_at_small_shapes(dialect: str, folder: Path, tmp_path: Path) -> None:
    task = load_task(folder)
    result = check_kernel(
        task, backend=NkisimBackend(), shapes="small", target="trn2", workdir=tmp_path
    )
    assert result.correct, f"{result.error_kind}: {result.message}"
    assert result.compiled
    assert result.dialect == task.dialect == dialect
    assert result.seeds == list(task.seeds)
    assert result.max_rel_l2 is not None
    assert result.max_rel_l2 <= task.rel_tol
    assert result.instructions
    assert sum(result.engine_counts.values()) == result.instructions
    assert not result.warnings, result.warnings
    assert result.capacity["sbuf_peak_bytes"] <= result.capacity["sbuf_limit_bytes"]
    assert result.capacity["psum_peak_banks"] <= result.capacity["psum_banks"]
