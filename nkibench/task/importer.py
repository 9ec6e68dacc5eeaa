"""Importing an NKIBench tree (AccelOpt's `summary.json` + seeds/, reference/, kernels/) into
task folders of accelopt's format. The tree's files are copied unchanged; a task.toml records
where each came from."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nkibench.errors import NkiBenchError, TaskError
from nkibench.task.spec import load_task

__all__ = ["Imported", "import_nkibench"]

TOLERANCES = {"mamba": 3e-5}
"""AccelOpt's per-problem relative L2 tolerances (2e-5 otherwise)."""


@dataclass(frozen=True)
class Imported:
    name: str
    path: Path
    error: str | None


def _toml_string(text: str) -> str:
    return json.dumps(text)  # a JSON string literal is a valid TOML basic string


def _summary(root: Path) -> dict[str, Any]:
    path = root / "summary.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NkiBenchError(f"{root}: no summary.json (is this an NKIBench tree?)") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise NkiBenchError(f"{path}: not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise NkiBenchError(f"{path}: expected an object of problems")
    return data


def import_nkibench(root: Path, destination: Path) -> list[Imported]:
    """One task folder per (problem, case, implementation); existing folders are refused."""
    summary = _summary(root)
    imported: list[Imported] = []
    for problem, entry in sorted(summary.items()):
        cases = entry.get("cases") if isinstance(entry, dict) else None
        if not isinstance(cases, dict):
            raise NkiBenchError(f"{root / 'summary.json'}: problem {problem!r} has no cases")
        single = len(cases) == 1 and all(len(c.get("impls", [])) == 1 for c in cases.values())
        for case_id, case in sorted(cases.items()):
            for number, impl in enumerate(case.get("impls", [])):
                name = problem if single else f"{problem}_{case_id}_{number}"
                folder = destination / name
                imported.append(
                    _import_one(
                        root,
                        folder=folder,
                        name=name,
                        problem=problem,
                        case_id=case_id,
                        case=case,
                        impl=impl,
                    )
                )
    return imported


def _import_one(
    root: Path,
    *,
    folder: Path,
    name: str,
    problem: str,
    case_id: str,
    case: dict[str, Any],
    impl: dict[str, Any],
) -> Imported:
    try:
        reference = (root / impl["task"]).resolve()
        kernel = (root / impl["kernel"]).resolve()
    except (KeyError, TypeError):
        return Imported(name, folder, "the summary entry has no task/kernel paths")
    for path in (reference, kernel):
        if not path.is_file():
            return Imported(name, folder, f"{path}: missing")
    if folder.exists():
        return Imported(name, folder, f"{folder} already exists")
    folder.mkdir(parents=True)
    shutil.copyfile(kernel, folder / "kernel.py")
    shutil.copyfile(reference, folder / "reference.py")
    values = ", ".join(f"{k}={v}" for k, v in sorted(case.get("values", {}).items()))
    sources = f"{impl['task']}, {impl['kernel']}"
    description = f"NKIBench {problem} case {case_id} ({values}): {sources}"
    lines = [
        f"name = {_toml_string(name)}",
        f"description = {_toml_string(description)}",
        "",
        "[correctness]",
        f"rel_tol = {TOLERANCES.get(problem, 2e-5)}",
        "",
    ]
    (folder / "task.toml").write_text("\n".join(lines), encoding="utf-8")
    try:
        load_task(folder)
    except TaskError as e:
        return Imported(name, folder, e.message)
    return Imported(name, folder, None)
