"""`accelopt import-flashinfer`: each definition of a FlashInfer Trace dataset becomes a task
folder DEST/<definition name>/ holding

    reference.py      the definition's reference and FlashInfer-Bench's input draws
                      (reference_source), the first workload's axes as its constants
    kernel.py         the chosen Triton solution (choose, kernel_source)
    task.toml         task_toml
    workloads.jsonl   the definition's workloads, one Workload JSON a line, their safetensors
                      files copied under blobs/ and their paths made relative to the folder
    definition.json   the Definition as FlashInfer-Bench writes it (export reads it back)
    provenance.json   the dataset, the definition, the solution, how it was chosen, its traces

A folder is written whole or not at all (in a hidden folder renamed at the end), never over an
existing one, and loaded by accelopt's task loader before it counts as imported.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from flashinfer_bench.data import SafetensorsInput

from daemon.flashinfer.choose import Ranked, rank
from daemon.flashinfer.dataset import Dataset, blob_file, load_dataset
from daemon.flashinfer.judging import judging
from daemon.flashinfer.kernel_source import Kernel, kernel_source
from daemon.flashinfer.package import FlashInferError
from daemon.flashinfer.reference_source import reference_source
from daemon.flashinfer.shapes import Unconvertible, check_names
from daemon.flashinfer.task_toml import task_toml
from nkibench.errors import TaskError
from nkibench.task.files import name_problem
from nkibench.task.spec import load_task

__all__ = ["Imported", "import_flashinfer"]

BLOBS = "blobs"
DEFINITION_FILE, PROVENANCE_FILE, WORKLOADS_FILE = (
    "definition.json",
    "provenance.json",
    "workloads.jsonl",
)


@dataclass
class Imported:
    imported: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"imported": self.imported, "skipped": self.skipped}


def _blobs(dataset: Dataset, name: str) -> dict[str, Path]:
    """Every safetensors file the definition's workloads name (relative path -> file),
    each checked to be there."""
    found: dict[str, Path] = {}
    for trace in dataset.traces.workloads.get(name, []):
        where = dataset.workload_files.get(trace.workload.uuid, f"workload {trace.workload.uuid}")
        for given in trace.workload.inputs.values():
            if isinstance(given, SafetensorsInput) and given.path not in found:
                found[given.path] = blob_file(dataset, given.path, where)
    return found


def _blob_names(blobs: dict[str, Path]) -> dict[str, str]:
    """Each blob's path inside the task folder: blobs/<file name>, numbered where two share
    a name."""
    names: dict[str, str] = {}
    taken: set[str] = set()
    for path in blobs:
        base = Path(path).name
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{n}_{base}"
        taken.add(name)
        names[path] = f"{BLOBS}/{name}"
    return names


def _workload_lines(workloads: list[Any], renamed: dict[str, str]) -> str:
    lines = []
    for trace in workloads:
        data = trace.workload.model_dump(mode="json")
        for given in data["inputs"].values():
            if given.get("type") == "safetensors":
                given["path"] = renamed[given["path"]]
        lines.append(json.dumps(data))
    return "".join(line + "\n" for line in lines)


def _trace_summary(trace: Any) -> dict[str, Any]:
    evaluation = trace.evaluation
    performance = evaluation.performance if evaluation is not None else None
    return {
        "workload": trace.workload.uuid,
        "status": evaluation.status.value if evaluation is not None else None,
        "latency_ms": performance.latency_ms if performance is not None else None,
        "hardware": evaluation.environment.hardware if evaluation is not None else None,
        "timestamp": evaluation.timestamp if evaluation is not None else None,
    }


def _choose(
    dataset: Dataset, name: str, wanted: str | None
) -> tuple[list[Ranked], list[dict[str, Any]]]:
    """The Triton solutions that may be imported, best first (choose.rank), and the others
    with why they may not."""
    solutions = dataset.traces.solutions.get(name, [])
    traces = dataset.traces.traces.get(name, [])
    if wanted is not None:
        solutions = [s for s in solutions if s.name == wanted]
    notes: list[dict[str, Any]] = []
    usable = []
    for solution in solutions:
        if str(solution.spec.language.value) != "triton":
            notes.append(
                {
                    "solution": solution.name,
                    "standing": f"not Triton ({solution.spec.language.value})",
                }
            )
        else:
            usable.append(solution)
    ranked = rank(usable, traces)
    ranked_names = {r.solution.name for r in ranked}
    notes += [
        {"solution": s.name, "standing": "every trace failed"}
        for s in usable
        if s.name not in ranked_names
    ]
    return ranked, notes


def _kernel(
    definition: Any, ranked: list[Ranked], notes: list[dict[str, Any]], wanted: str | None
) -> tuple[Ranked, Kernel, list[dict[str, Any]]]:
    """The first of `ranked` whose source makes a kernel.py (a solution of several Python
    files, say, does not: the next one is taken, and the candidates say why)."""
    candidates = []
    found: tuple[Ranked, Kernel] | None = None
    for item in ranked:
        summary = item.summary()
        if found is None:
            try:
                found = item, kernel_source(definition, item.solution)
            except Unconvertible as e:
                summary["standing"] = str(e)
            except SyntaxError as e:
                summary["standing"] = f"does not parse: {e}"
        candidates.append(summary)
    candidates += notes
    if found is None:
        what = f"solution {wanted}" if wanted else "no Triton solution"
        reason = "; ".join(f"{n['solution']}: {n['standing']}" for n in candidates)
        raise Unconvertible(f"{what} to import" + (f" ({reason})" if reason else ""))
    return found[0], found[1], candidates


def _write(
    folder: Path, files: dict[str, str], blobs: dict[str, Path], renamed: dict[str, str]
) -> None:
    folder.mkdir()
    for file_name, text in files.items():
        (folder / file_name).write_text(text, encoding="utf-8")
    if blobs:
        (folder / BLOBS).mkdir()
        for path, source in blobs.items():
            shutil.copyfile(source, folder / renamed[path])


def _convert(
    dataset: Dataset, name: str, destination: Path, wanted: str | None, allow_torch_compute: bool
) -> dict[str, Any]:
    definition = dataset.traces.definitions[name]
    problem = name_problem(name)
    if problem is not None:
        raise Unconvertible(f"its name cannot name a task: {problem}")
    check_names(definition)
    judged = judging(definition)
    target = destination / name
    if target.exists():
        raise Unconvertible(f"{target} exists (an existing folder is never overwritten)")
    workloads = dataset.traces.workloads.get(name, [])
    first = workloads[0].workload if workloads else None
    chosen, kernel, candidates = _kernel(definition, *_choose(dataset, name, wanted), wanted)
    blobs = _blobs(dataset, name)
    renamed = _blob_names(blobs)
    where = dataset.definition_files[name]
    provenance = {
        "source": "flashinfer-bench",
        "flashinfer_bench": metadata.version("flashinfer-bench"),
        "dataset": str(dataset.root),
        "definition": {"name": name, "op_type": definition.op_type, "file": str(where)},
        "solution": {
            "name": chosen.solution.name,
            "author": chosen.solution.author,
            "file": str(dataset.solution_files.get(chosen.solution.name, "")),
            "entry_point": chosen.solution.spec.entry_point,
            "calling_convention": kernel.convention,
            "kernel_function": kernel.function,
            "files_left_out": kernel.left_out,
            "chosen_by": "--solution" if wanted else "traces (daemon/flashinfer/choose.py)",
            "standing": chosen.standing,
        },
        "candidates": candidates,
        "traces": [_trace_summary(t) for t in chosen.traces],
        "workloads": [t.workload.uuid for t in workloads],
        "constants_from_workload": first.uuid if first is not None else None,
    }
    files = {
        "reference.py": reference_source(definition, first, f"{where}"),
        "kernel.py": kernel.source,
        "task.toml": task_toml(definition, judged, kernel.function, allow_torch_compute),
        WORKLOADS_FILE: _workload_lines(workloads, renamed),
        DEFINITION_FILE: definition.model_dump_json(indent=2) + "\n",
        PROVENANCE_FILE: json.dumps(provenance, indent=2) + "\n",
    }
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=destination))
    try:
        _write(staging / name, files, blobs, renamed)
        try:
            load_task(staging / name)
        except TaskError as e:
            raise Unconvertible(f"the task written does not load: {e.message}") from None
        (staging / name).rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return {
        "definition": name,
        "path": str(target),
        "solution": chosen.solution.name,
        "standing": chosen.standing,
        "workloads": len(workloads),
    }


def import_flashinfer(
    root: Path,
    destination: Path,
    definitions: list[str] | None = None,
    solution: str | None = None,
    allow_torch_compute: bool = False,
) -> Imported:
    """Every definition of the dataset at `root` (or those named) as a task folder under
    `destination`; FlashInferError for a dataset that does not load, a name it does not hold
    or a workload's missing blob (before anything is written)."""
    dataset = load_dataset(root)
    known = dataset.traces.definitions
    names = list(dict.fromkeys(definitions)) if definitions else sorted(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise FlashInferError(
            f"{dataset.root}: no definition {', '.join(unknown)} (it holds "
            f"{', '.join(sorted(known)) or 'none'})"
        )
    wanted_for: str | None = None
    if solution is not None:
        found = dataset.traces.get_solution(solution)
        if found is None:
            raise FlashInferError(f"{dataset.root}: no solution {solution!r}")
        if found.definition not in names:
            raise FlashInferError(
                f"solution {solution} solves {found.definition}, which is not imported"
            )
        wanted_for = found.definition
    for name in names:
        _blobs(dataset, name)  # a missing blob stops the import before anything is written
    destination.mkdir(parents=True, exist_ok=True)
    result = Imported()
    for name in names:
        try:
            result.imported.append(
                _convert(
                    dataset,
                    name,
                    destination,
                    solution if name == wanted_for else None,
                    allow_torch_compute,
                )
            )
        except Unconvertible as e:
            result.skipped.append({"definition": name, "reason": str(e)})
    return result
