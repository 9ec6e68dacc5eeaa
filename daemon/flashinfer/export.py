"""`accelopt export --format flashinfer`: a task's kernel as a FlashInfer-Bench Solution, with a
Trace for each workload accelopt measured it on, in a dataset folder (definitions/,
solutions/, workloads/, traces/, blob/) that flashinfer_bench's loader reads and Trace Apply
serves from. Every file is built through flashinfer_bench's models and the folder is loaded
back with TraceSet.from_path before the export counts as done.

The task must carry its Definition (definition.json, written by import-flashinfer). A profile
that holds each workload's latency (a task with workloads, profiled on all of them) gives each
of those workloads its Trace; otherwise accelopt timed the task's full shapes, the reference's
constants, and a Trace is written for each workload whose axes are those constants. The other
workloads are reported as not measured (no Trace claims what was not run). accelopt does not
record element-wise errors,
so a Trace's correctness keeps the schema's zero errors and says in `extra` and in the log how
accelopt judged the kernel instead.
"""

from __future__ import annotations

import ast
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flashinfer_bench.data import (
    BuildSpec,
    Correctness,
    Definition,
    Environment,
    Evaluation,
    Performance,
    SafetensorsInput,
    Solution,
    SourceFile,
    Trace,
    TraceSet,
    Workload,
    append_jsonl_file,
    save_json_file,
    save_jsonl_file,
)
from pydantic import ValidationError

from daemon.flashinfer.dataset import problem
from daemon.flashinfer.importer import DEFINITION_FILE, WORKLOADS_FILE
from daemon.flashinfer.package import FlashInferError
from nkibench import python_ast

__all__ = ["Measurement", "export_flashinfer"]

KERNEL_PATH = "kernel.py"
ENTRY = "flashinfer_run"


@dataclass(frozen=True)
class Measurement:
    """A correct, timed profile of the kernel (a ProfileRecorded, as the CLI found it)."""

    latency_ms: float
    latency_kind: str
    """accelopt's: "measured" (hardware) or "estimated" (a cost model)."""
    hardware: str
    backend: str
    target: str
    recorded_at: str
    job_id: str
    libs: dict[str, str] = field(default_factory=dict)
    reference_ms: float | None = None
    """The definition's PyTorch reference timed on the same inputs, where accelopt did."""
    per_workload: dict[str, tuple[float, str]] = field(default_factory=dict)
    """A profile of every workload (a task's workloads.jsonl profiled on `full`): each correct
    workload's uuid -> its own latency and kind; `latency_ms` is then their geometric mean."""


def _latencies(
    workloads: list[Any], constants: dict[str, int | float], measured: Measurement | None
) -> dict[str, tuple[float, str, float | None]]:
    """Each measured workload's uuid -> its latency, its kind and the reference's time: each
    workload's own where the profile has them, else the profile's for the workloads whose
    axes are the task's full shapes (what it ran on)."""
    if measured is None:
        return {}
    if measured.per_workload:
        return {
            w.uuid: (*measured.per_workload[w.uuid], None)
            for w in workloads
            if w.uuid in measured.per_workload
        }
    return {
        w.uuid: (measured.latency_ms, measured.latency_kind, measured.reference_ms)
        for w in workloads
        if all(constants.get(axis) == value for axis, value in w.axes.items())
    }


def _read(model: Any, path: Path) -> Any:
    try:
        return model.model_validate_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FlashInferError(
            f"{path}: missing; export writes FlashInfer-Bench files for tasks imported with "
            "`accelopt import-flashinfer`, which keeps the definition there"
        ) from None
    except ValidationError as e:
        raise FlashInferError(
            f"{path}: not a valid FlashInfer-Bench {model.__name__}: {problem(e)}"
        ) from None


def _workloads(task_dir: Path) -> list[Any]:
    path = task_dir / WORKLOADS_FILE
    if not path.is_file():
        return []
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                found.append(Workload.model_validate_json(line))
            except ValidationError as e:
                raise FlashInferError(
                    f"{path} line {number}: not a valid Workload: {problem(e)}"
                ) from None
    return found


def _full_shapes(definition: Any, constants: dict[str, int | float]) -> Any:
    """The one workload of a task without workloads.jsonl: its variable axes at the task's
    full shapes, every input random."""
    missing = [a for a in definition.var_axes if not isinstance(constants.get(a), int)]
    if missing:
        raise FlashInferError(
            f"the task has no workloads.jsonl and its reference.py no integer constant "
            f"{', '.join(missing)} (the definition's variable axes)"
        )
    axes = {a: int(constants[a]) for a in definition.var_axes}
    name = "_".join(f"{a}{v}" for a, v in axes.items()) or "const"
    return Workload(
        axes=axes,
        inputs={n: {"type": "random"} for n in definition.inputs},
        uuid=f"accelopt-{definition.name}-{name}",
    )


def _by_keyword(source: str, function: str, names: list[str]) -> bool:
    """Whether accelopt calls the kernel's function by keyword (nkibench.sandbox.values: its
    signature binds the inputs' names), read from the source."""
    for node in python_ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            args = node.args
            if args.kwarg is not None:
                return True
            params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
            optional = {a.arg for a in args.args[len(args.args) - len(args.defaults) :]}
            optional |= {
                a.arg
                for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
                if d is not None
            }
            positional_only = {a.arg for a in args.posonlyargs}
            required = set(params) - optional
            return set(names) <= set(params) - positional_only and required <= set(names)
    raise FlashInferError(f"the kernel defines no function {function}")


def adapted_source(source: str, function: str, definition: Any) -> tuple[str, str]:
    """The kernel with FlashInfer-Bench's entry added: FlashInfer-Bench calls it with the
    inputs in the definition's order and takes a tuple (or the one output), where accelopt's
    kernel may take its inputs by name and return a dict."""
    names = list(definition.inputs)
    outputs = list(definition.outputs)
    tree = python_ast.parse(source)
    bound = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    entry = ENTRY
    while entry in bound or entry in names:
        entry += "_"
    call = (
        ", ".join(f"{n}={n}" for n in names)
        if _by_keyword(source, function, names)
        else ", ".join(names)
    )
    picked = ", ".join(f"result[{o!r}]" for o in outputs) + ("," if len(outputs) == 1 else "")
    unpack = f"result[{outputs[0]!r}]" if len(outputs) == 1 else f"({picked})"
    lines = [
        "",
        "",
        "# --- added by accelopt export: FlashInfer-Bench's calling convention ---",
        f"def {entry}({', '.join(names)}):",
        f"    result = {function}({call})",
        f"    return {unpack} if isinstance(result, dict) else result",
        "",
    ]
    return source.rstrip() + "\n" + "\n".join(lines), entry


def _copy_blobs(workload: Any, task_dir: Path, out: Path, definition: Any) -> Any:
    """The workload with its safetensors files copied into the dataset (blob/workloads/...,
    where flashinfer_bench keeps them) and its paths relative to the dataset's root."""
    inputs = {}
    for name, given in workload.inputs.items():
        if isinstance(given, SafetensorsInput):
            source = (task_dir / given.path).resolve()
            if not source.is_relative_to(task_dir.resolve()) or not source.is_file():
                raise FlashInferError(
                    f"{task_dir / WORKLOADS_FILE}: workload {workload.uuid}: blob "
                    f"{given.path!r} is missing"
                )
            relative = Path("blob", "workloads", definition.op_type, definition.name, source.name)
            (out / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, out / relative)
            inputs[name] = SafetensorsInput(path=relative.as_posix(), tensor_key=given.tensor_key)
        else:
            inputs[name] = given
    return Workload(axes=dict(workload.axes), inputs=inputs, uuid=workload.uuid)


def _evaluation(
    measured: Measurement, latency_ms: float, kind: str, reference: float | None, rule: str
) -> Any:
    note = {
        "latency_kind": kind,
        "backend": measured.backend,
        "target": measured.target,
        "profile_job": measured.job_id,
        "judged_by": rule,
        "element_errors": "not recorded by accelopt (max errors are the schema's defaults)",
    }
    return Evaluation(
        status="PASSED",
        environment=Environment(hardware=measured.hardware, libs=measured.libs),
        timestamp=measured.recorded_at,
        log=f"accelopt: latency {latency_ms:.6g} ms ({kind}) on {measured.backend} "
        f"{measured.target}; correct under {rule}",
        correctness=Correctness(extra={"accelopt": note}),
        performance=Performance(
            latency_ms=latency_ms,
            reference_latency_ms=reference or 0.0,
            speedup_factor=reference / latency_ms if reference and latency_ms else 0.0,
        ),
    )


def export_flashinfer(
    *,
    task_dir: Path,
    constants: dict[str, int | float],
    rule: str,
    kernel: str,
    function: str,
    measured: Measurement | None,
    solution_name: str,
    description: str,
    out: Path,
) -> dict[str, Any]:
    """Write the Solution (and Traces) under `out`; the summary of what was written.
    `constants`: the task's full-shape constants (what a measurement ran on); `rule`: how
    accelopt judged the kernel's outputs, for the Traces."""
    definition = _read(Definition, task_dir / DEFINITION_FILE)
    source, entry = adapted_source(kernel, function, definition)
    try:
        solution = Solution(
            name=solution_name,
            definition=definition.name,
            author="accelopt",
            spec=BuildSpec(
                language="triton",
                target_hardware=[measured.hardware if measured is not None else "cuda"],
                entry_point=f"{KERNEL_PATH}::{entry}",
                destination_passing_style=False,
            ),
            sources=[SourceFile(path=KERNEL_PATH, content=source)],
            description=description,
        )
    except ValidationError as e:
        raise FlashInferError(f"the Solution does not validate: {problem(e)}") from None
    solution_file = (
        out / "solutions" / definition.op_type / definition.name / f"{solution.name}.json"
    )
    if solution_file.exists():
        raise FlashInferError(f"{solution_file} exists: this kernel was exported there already")
    definition_file = out / "definitions" / definition.op_type / f"{definition.name}.json"
    if definition_file.exists() and _read(Definition, definition_file) != definition:
        raise FlashInferError(f"{definition_file} holds another definition of {definition.name}")
    workloads = _workloads(task_dir) or [_full_shapes(definition, constants)]
    latencies = _latencies(workloads, constants, measured)
    copied = {w.uuid: _copy_blobs(w, task_dir, out, definition) for w in workloads}
    traces = [
        Trace(
            definition=definition.name,
            workload=copied[uuid],
            solution=solution.name,
            evaluation=_evaluation(measured, *latencies[uuid], rule),
        )
        for uuid in latencies
        if measured is not None
    ]
    save_json_file(definition, definition_file)
    save_json_file(solution, solution_file)
    workload_file = out / "workloads" / definition.op_type / f"{definition.name}.jsonl"
    if not workload_file.exists():
        save_jsonl_file(
            [Trace(definition=definition.name, workload=w) for w in copied.values()], workload_file
        )
    if traces:  # beside the traces of other solutions the folder may hold
        append_jsonl_file(traces, out / "traces" / definition.op_type / f"{definition.name}.jsonl")
    try:  # flashinfer_bench's own loader must accept the folder
        loaded = TraceSet.from_path(str(out))
    except (ValueError, AssertionError, ValidationError) as e:
        raise FlashInferError(f"{out}: flashinfer_bench's loader refuses the folder: {e}") from None
    if loaded.get_solution(solution.name) is None:
        raise FlashInferError(f"{out}: flashinfer_bench's loader does not find {solution.name}")
    return {
        "dataset": str(out),
        "definition": definition.name,
        "solution": solution.name,
        "solution_file": str(solution_file),
        "traces": [t.workload.uuid for t in traces],
        "not_measured": [w.uuid for w in workloads if w.uuid not in latencies],
        "latency_kind": measured.latency_kind if measured is not None else None,
    }
