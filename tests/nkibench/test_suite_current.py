"""CI: the NKI suite in current NKI (nkibench/suites/nki, the `nki` package 0.3-0.7) is the
legacy suite's twin: the same 14 tasks, the same references, shape sets, roofline counts and
tolerances, with kernels in the current dialect; and every one of its baseline kernels is
correct under nkisim at small shapes on trn2, on all of its seeds, through the real sandboxed
harness (with the affine-loop order check)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nkibench.backends.nkisim.backend import NkisimBackend
from nkibench.harness import check_kernel
from nkibench.suites import NKI_LEGACY_SUITE, NKI_SUITE
from nkibench.task.spec import load_task

TASKS = sorted(p for p in NKI_SUITE.iterdir() if (p / "kernel.py").is_file())
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


def test_the_current_suite_is_nkibench() -> None:
    assert {folder.name for folder in TASKS} == NKIBENCH
    legacy = {p.name for p in NKI_LEGACY_SUITE.iterdir() if (p / "kernel.py").is_file()}
    assert legacy == NKIBENCH


@pytest.mark.parametrize("folder", TASKS, ids=[f.name for f in TASKS])
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


# Each check takes 4-7 s here, like the legacy suite's (tests/nkibench/test_suite.py): not slow.
@pytest.mark.parametrize("folder", TASKS, ids=[f.name for f in TASKS])
def test_baseline_is_correct_at_small_shapes_on_trn2(folder: Path, tmp_path: Path) -> None:
    task = load_task(folder)
    result = check_kernel(
        task, backend=NkisimBackend(), shapes="small", target="trn2", workdir=tmp_path
    )
    assert result.correct, f"{result.error_kind}: {result.message}"
    assert result.compiled
    assert result.dialect == "nki"
    assert result.seeds == list(task.seeds)
    assert result.max_rel_l2 is not None
    assert result.max_rel_l2 <= task.rel_tol
    assert result.instructions
    assert sum(result.engine_counts.values()) == result.instructions
    assert not result.warnings, result.warnings
    assert result.capacity["sbuf_peak_bytes"] <= result.capacity["sbuf_limit_bytes"]
    assert result.capacity["psum_peak_banks"] <= result.capacity["psum_banks"]
