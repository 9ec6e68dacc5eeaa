"""Imported tasks check correct at once under Triton's CPU interpreter: the reference built
from a definition, each solution's calling convention bridged, and a kernel exported by
accelopt and imported back."""

from __future__ import annotations

from pathlib import Path

import pytest

from nkibench.backends.triton.backend import TritonBackend
from nkibench.harness import check_kernel
from nkibench.task.spec import load_task
from tests.flashinfer.dataset import RMSNORM, SCALE_ADD, write_dataset
from tests.support.cli import run_cli
from tests.support.triton_helpers import triton_backend

__all__ = ["triton_backend"]

pytestmark = pytest.mark.slow


def _check(folder: Path, backend: TritonBackend) -> None:
    task = load_task(folder)
    result = check_kernel(task, backend=backend, shapes=task.smallest_shapes)
    assert result.correct, f"{folder.name}: {result.error_kind}: {result.message}"


@pytest.mark.parametrize(
    ("definition", "solution"),
    [
        (RMSNORM, "rmsnorm_dps"),  # destination-passing: the bridge allocates its output
        (RMSNORM, "rmsnorm_returning"),  # value-returning, its entry not named run
        (SCALE_ADD, "scale_add_triton"),  # a scalar input from the workload
    ],
)
def test_an_imported_task_checks_correct(
    tmp_path: Path, triton_backend: TritonBackend, definition: str, solution: str
) -> None:
    root = write_dataset(tmp_path / "ds")
    run = run_cli(
        "import-flashinfer", str(root), str(tmp_path / "tasks"),
        "--definition", definition, "--solution", solution,
    )  # fmt: skip
    assert run.code == 0, run.err
    _check(tmp_path / "tasks" / definition, triton_backend)


def test_a_wrong_solution_fails_the_check(tmp_path: Path, triton_backend: TritonBackend) -> None:
    """The check judges the solution, not the import: a solution off by a factor fails."""
    root = write_dataset(tmp_path / "ds")
    run = run_cli(
        "import-flashinfer", str(root), str(tmp_path / "tasks"), "--definition", SCALE_ADD
    )
    assert run.code == 0, run.err
    kernel = tmp_path / "tasks" / SCALE_ADD / "kernel.py"
    kernel.write_text(kernel.read_text().replace("x * alpha + y", "x * alpha + 2 * y"))
    task = load_task(kernel.parent)
    result = check_kernel(task, backend=triton_backend, shapes=task.smallest_shapes)
    assert not result.correct
    assert result.error_kind == "incorrect"


def test_an_exported_kernel_imports_back_and_checks_correct(
    tmp_path: Path, triton_backend: TritonBackend
) -> None:
    root = write_dataset(tmp_path / "ds")
    assert run_cli("import-flashinfer", str(root), str(tmp_path / "tasks")).code == 0
    out = tmp_path / "apply"
    run = run_cli(
        "export", str(tmp_path / "tasks" / RMSNORM), "--format", "flashinfer", "--out", str(out)
    )
    assert run.code == 0, run.err
    back = run_cli("import-flashinfer", str(out), str(tmp_path / "back"), "--json")
    assert back.code == 0, back.err
    (item,) = back.json()["imported"]
    assert item["solution"] == run.json()["solution"]
    assert item["standing"] == "untraced"  # no profile in the log: no Trace was claimed
    _check(tmp_path / "back" / RMSNORM, triton_backend)
