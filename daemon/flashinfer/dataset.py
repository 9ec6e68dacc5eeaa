"""A FlashInfer Trace dataset folder, read with flashinfer_bench's models: every file is
validated on its own first, so that a problem names its file (and line), and the folder is
then loaded by flashinfer_bench's own loader (TraceSet.from_path), which decides what a
dataset is."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flashinfer_bench.data import Definition, Solution, Trace, TraceSet
from pydantic import BaseModel, ValidationError

from daemon.flashinfer.package import FlashInferError

__all__ = ["Dataset", "blob_file", "load_dataset", "problem"]

LAYOUT = "definitions/<op_type>/<name>.json, workloads/, solutions/, traces/"


@dataclass(frozen=True)
class Dataset:
    root: Path
    traces: Any
    """flashinfer_bench's TraceSet of the folder."""
    definition_files: dict[str, Path] = field(default_factory=dict)
    solution_files: dict[str, Path] = field(default_factory=dict)
    workload_files: dict[str, str] = field(default_factory=dict)
    """A workload's uuid -> `file line N`, for messages."""


def problem(error: ValidationError) -> str:
    """pydantic's errors on one line: where and what, the first three."""
    parts = []
    for item in error.errors()[:3]:
        where = ".".join(str(p) for p in item.get("loc", ()))
        parts.append(f"{where}: {item['msg']}" if where else str(item["msg"]))
    more = len(error.errors()) - 3
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def _model(model: type[BaseModel], text: str, where: str) -> Any:
    try:
        return model.model_validate_json(text)
    except ValidationError as e:
        raise FlashInferError(
            f"{where}: not a valid FlashInfer-Bench {model.__name__}: {problem(e)}"
        ) from None


def _files(folder: Path, pattern: str) -> Iterable[Path]:
    return sorted(folder.rglob(pattern)) if folder.is_dir() else []


def _lines(path: Path) -> Iterable[tuple[str, str]]:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            yield f"{path} line {number}", line


def load_dataset(root: Path) -> Dataset:
    """The dataset at `root`, every file validated (FlashInferError names the first bad one)."""
    root = root.resolve()
    if not (root / "definitions").is_dir():
        raise FlashInferError(
            f"{root}: no definitions/ folder: not a FlashInfer Trace dataset ({LAYOUT})"
        )
    definitions: dict[str, Path] = {}
    for path in _files(root / "definitions", "*.json"):
        definition = _model(Definition, path.read_text(encoding="utf-8"), str(path))
        if definition.name in definitions:
            raise FlashInferError(
                f"{path}: definition {definition.name!r} again (first in "
                f"{definitions[definition.name]})"
            )
        definitions[definition.name] = path
    solutions: dict[str, Path] = {}
    for path in _files(root / "solutions", "*.json"):
        solution = _model(Solution, path.read_text(encoding="utf-8"), str(path))
        if solution.name in solutions:
            raise FlashInferError(
                f"{path}: solution {solution.name!r} again (first in {solutions[solution.name]})"
            )
        solutions[solution.name] = path
    workloads: dict[str, str] = {}
    for path in _files(root / "workloads", "*.jsonl"):
        for where, line in _lines(path):
            trace = _model(Trace, line, where)
            if not trace.is_workload_trace():
                raise FlashInferError(f"{where}: a workload line holds a solution or evaluation")
            workloads[trace.workload.uuid] = where
    for path in _files(root / "traces", "*.jsonl"):
        for where, line in _lines(path):
            if _model(Trace, line, where).is_workload_trace():
                raise FlashInferError(f"{where}: a trace without a solution and evaluation")
    try:
        traces = TraceSet.from_path(str(root))
    except (ValueError, AssertionError, OSError) as e:
        raise FlashInferError(f"{root}: flashinfer_bench's loader refused it: {e}") from None
    return Dataset(root, traces, definitions, solutions, workloads)


def blob_file(dataset: Dataset, path: str, where: str) -> Path:
    """A workload's safetensors file: a regular file inside the dataset's folder."""
    found = (dataset.root / path).resolve()
    if not found.is_relative_to(dataset.root):
        raise FlashInferError(f"{where}: blob {path!r} lies outside the dataset {dataset.root}")
    if not found.is_file():
        raise FlashInferError(f"{where}: blob {path!r} is missing ({found} is not a file)")
    return found
