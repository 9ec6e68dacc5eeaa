"""Importing an NKIBench-style tree (summary.json + reference/ + kernels/) as task folders."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nkibench.backends.nkisim.backend import NkisimBackend
from nkibench.errors import NkiBenchError
from nkibench.harness import check_kernel
from nkibench.suites import NKI_LEGACY_SUITE
from nkibench.task.importer import import_nkibench
from nkibench.task.spec import load_task

SUITE = NKI_LEGACY_SUITE  # the shipped NKI suite


def nkibench_tree(root: Path) -> Path:
    """A tree shaped like AccelOpt's NKIBench, built from the suite's silu and matmul."""
    for folder in ("seeds", "reference", "kernels"):
        (root / folder).mkdir(parents=True)
    summary = {}
    for problem, values in (
        ("silu", {"M": 256, "N": 2048}),
        ("matmul", {"K": 512, "M": 256, "N": 1024}),
    ):
        shape = "_".join(f"{k}{v}" for k, v in sorted(values.items()))
        reference = (SUITE / problem / "reference.py").read_text()
        for name, value in values.items():  # bake the small shapes in, as NKIBench files do
            reference = "\n".join(
                f"{name} = {value}" if line.startswith(f"{name} = ") else line
                for line in reference.splitlines()
            )
        (root / "reference" / f"{problem}_{shape}_numpy_1.py").write_text(reference)
        kernel = (
            (SUITE / problem / "kernel.py")
            .read_text()
            .replace("def kernel(", "def optimized_kernel(")
        )
        (root / "kernels" / f"{problem}_{shape}_0.py").write_text(kernel)
        (root / "seeds" / f"{problem}.yaml").write_text(f"test_name: {problem}\n")
        summary[problem] = {
            "seed": f"./seeds/{problem}.yaml",
            "cases": {
                "2": {
                    "values": values,
                    "impls": [
                        {
                            "task": f"./reference/{problem}_{shape}_numpy_1.py",
                            "kernel": f"./kernels/{problem}_{shape}_0.py",
                        }
                    ],
                }
            },
        }
    (root / "summary.json").write_text(json.dumps(summary))
    return root


def test_an_nkibench_tree_imports_into_checkable_tasks(tmp_path: Path) -> None:
    tree = nkibench_tree(tmp_path / "NKIBench")
    imported = import_nkibench(tree, tmp_path / "tasks")
    assert [(i.name, i.error) for i in imported] == [("matmul", None), ("silu", None)]
    task = load_task(tmp_path / "tasks" / "silu")
    assert task.kernel_function == "optimized_kernel"
    assert task.constants == {"M": 256, "N": 2048}
    assert "NKIBench silu case 2 (M=256, N=2048)" in task.description
    result = check_kernel(
        task, backend=NkisimBackend(), shapes="full", seeds=(0,), workdir=tmp_path
    )
    assert result.correct, result.message
    again = import_nkibench(tree, tmp_path / "tasks")
    assert all(i.error is not None and "already exists" in i.error for i in again)


def test_broken_trees_are_reported(tmp_path: Path) -> None:
    with pytest.raises(NkiBenchError, match=r"no summary\.json"):
        import_nkibench(tmp_path, tmp_path / "out")
    (tmp_path / "summary.json").write_text("{not json")
    with pytest.raises(NkiBenchError, match=r"summary\.json: not valid JSON"):
        import_nkibench(tmp_path, tmp_path / "out")
    tree = nkibench_tree(tmp_path / "tree")
    shutil.rmtree(tree / "kernels")
    imported = import_nkibench(tree, tmp_path / "out")
    assert all(i.error is not None and i.error.endswith(": missing") for i in imported)
