"""A task's workloads (FlashInfer-Bench's Workloads): workloads.jsonl and the safetensors files
its lines name, read and checked without running anything.

One JSON object a line, in exactly FlashInfer-Bench's shape, so that an imported dataset's lines
are copied verbatim:

    {"uuid": "...", "axes": {"batch_size": 7},
     "inputs": {"q": {"type": "random"},
                "kv_indptr": {"type": "safetensors", "path": "blobs/x.safetensors",
                              "tensor_key": "kv_indptr"},
                "sm_scale": {"type": "scalar", "value": 0.0883}}}

Each workload is a shape set of its own, named `w<index>` (its line among the workloads, from
0): its axes replace reference.py's constants of the same names, as `[shapes.X]` does; its
`random` inputs are get_inputs()'s draw per seed; its `scalar` and `safetensors` inputs replace
the input of that name in every seed (the reference's child reads the file:
nkibench.sandbox.workload_inputs). Paths are relative to the task folder, which they may not
leave. Everything is bounded before it is parsed: the file, each line, the number of
workloads and inputs, each data file and all of them together, each safetensors header.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from nkibench.errors import TaskError
from nkibench.task.names import VALUE_NAME

__all__ = [
    "DATA_FILE_LIMIT",
    "DATA_TOTAL_LIMIT",
    "WORKLOADS_FILE",
    "WORKLOADS_LIMIT",
    "Workload",
    "WorkloadInput",
    "check_data_files",
    "data_path_problem",
    "parse_workloads",
    "safetensors_header",
]

WORKLOADS_FILE = "workloads.jsonl"
"""The workloads' file when task.toml's `[workloads] file` names none."""
WORKLOADS_LIMIT = 4 * 1024 * 1024
"""Bytes workloads.jsonl may hold (FlashInfer-Bench's largest definition has about 60
workloads of well under 1 KiB each)."""
LINE_LIMIT = 64 * 1024
"""Bytes one line may hold: json.loads's time and memory grow with it."""
MAX_WORKLOADS = 256
MAX_INPUTS = 256
DATA_FILE_LIMIT = 64 * 1024 * 1024
"""Bytes one safetensors file may hold: the daemon reads and records a task's files whenever
they change (index arrays and page tables are kilobytes; a tensor of data should be random)."""
DATA_TOTAL_LIMIT = 256 * 1024 * 1024
"""Bytes all of a task's safetensors files may hold together."""
HEADER_LIMIT = 1024 * 1024
"""Bytes a safetensors file's JSON header may hold (its format allows 100 MB)."""
SAFETENSORS_DTYPES = {
    "BOOL": 1,
    "U8": 1,
    "I8": 1,
    "I16": 2,
    "I32": 4,
    "I64": 8,
    "F16": 2,
    "BF16": 2,
    "F32": 4,
    "F64": 8,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
}
"""The safetensors dtypes whose values cross the phases (nkibench.sandbox.values), with their
element size in bytes."""
INPUT_TYPES = ("random", "scalar", "safetensors")
InputType = Literal["random", "scalar", "safetensors"]


@dataclass(frozen=True)
class WorkloadInput:
    """One input of a workload: drawn per seed (`random`), or the same in every seed (a
    `scalar` value, or a `safetensors` file's tensor)."""

    name: str
    type: InputType
    value: int | float | bool | None = None
    path: str | None = None
    tensor_key: str | None = None

    def to_request(self) -> dict[str, Any]:
        """What the reference's child is told of it (nkibench.sandbox.workload_inputs)."""
        if self.type == "random":
            return {"type": "random"}
        if self.type == "scalar":
            return {"type": "scalar", "value": self.value}
        return {"type": "safetensors", "path": self.path, "tensor_key": self.tensor_key}


@dataclass(frozen=True)
class Workload:
    name: str
    """Its shape set's name: `w<index>`."""
    uuid: str
    line: int
    """Its line in the workloads' file (from 1), for messages."""
    axes: dict[str, int]
    inputs: tuple[WorkloadInput, ...]

    @property
    def request(self) -> dict[str, dict[str, Any]]:
        """Its inputs as the reference's child is told of them (which checks their names, and
        puts the scalar and safetensors ones in every seed's draw)."""
        return {i.name: i.to_request() for i in self.inputs}

    @property
    def data_files(self) -> list[str]:
        return sorted({i.path for i in self.inputs if i.path is not None})


def data_path_problem(path: str) -> str | None:
    """Why `path` cannot name a file of the task folder (None if it can): relative, in `/`
    separated components, none of them empty, `.`, `..` or hidden."""
    if not path or len(path) > 512:
        return "must be a relative path of 1 to 512 characters"
    if path.startswith("/") or "\\" in path or "\0" in path:
        return "must be relative to the task folder (no leading /, no \\)"
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "may not leave the task folder (no `..`, `.` or empty component)"
    if any(part.startswith(".") for part in parts):
        return "may not name a hidden file or folder"
    return None


def parse_workloads(path: Path, raw: bytes) -> list[Workload]:
    """The workloads of a workloads.jsonl's bytes; a TaskError names the file, the line and
    the problem (blank lines are skipped)."""
    if len(raw) > WORKLOADS_LIMIT:
        raise TaskError(f"{path}: {len(raw)} bytes, over the {WORKLOADS_LIMIT} byte limit")
    workloads: list[Workload] = []
    uuids: dict[str, int] = {}
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        where = f"{path} line {number}"
        if len(workloads) == MAX_WORKLOADS:
            raise TaskError(f"{where}: more than {MAX_WORKLOADS} workloads")
        workload = _workload(where, line, number, f"w{len(workloads)}")
        if workload.uuid in uuids:
            raise TaskError(
                f"{where}: uuid {workload.uuid!r} is line {uuids[workload.uuid]}'s already"
            )
        uuids[workload.uuid] = number
        workloads.append(workload)
    return workloads


def _workload(where: str, line: bytes, number: int, name: str) -> Workload:
    if len(line) > LINE_LIMIT:
        raise TaskError(f"{where}: {len(line)} bytes, over the {LINE_LIMIT} byte limit of a line")
    try:
        data = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        raise TaskError(f"{where}: not UTF-8") from None
    except json.JSONDecodeError as e:
        raise TaskError(f"{where}: not JSON: {e.msg} (column {e.colno})") from None
    except RecursionError:
        raise TaskError(f"{where}: not JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise TaskError(f"{where}: must be a JSON object (a Workload), not {_kind(data)}")
    unknown = sorted(set(data) - {"uuid", "axes", "inputs"})
    missing = [key for key in ("uuid", "axes", "inputs") if key not in data]
    if unknown or missing:
        problems = [f"unknown key(s) {', '.join(map(repr, unknown))}"] if unknown else []
        problems += [f"no {', '.join(missing)}"] if missing else []
        raise TaskError(f"{where}: {'; '.join(problems)} (a Workload has uuid, axes, inputs)")
    uuid = data["uuid"]
    if not isinstance(uuid, str) or not 0 < len(uuid) <= 128:
        raise TaskError(f"{where}: uuid must be a string of 1 to 128 characters")
    return Workload(name, uuid, number, _axes(where, data["axes"]), _inputs(where, data["inputs"]))


def _kind(value: Any) -> str:
    kinds: dict[type, str] = {dict: "an object", list: "an array", str: "a string"}
    return kinds.get(type(value), repr(value)[:40])


def _axes(where: str, axes: Any) -> dict[str, int]:
    if not isinstance(axes, dict):
        raise TaskError(f"{where}: axes must be an object of name: integer")
    for axis, value in axes.items():
        if VALUE_NAME.fullmatch(axis) is None:
            raise TaskError(f"{where}: axes: {axis[:40]!r} is not a constant's name")
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**53:
            raise TaskError(f"{where}: axes.{axis}: must be an integer ≥ 0, not {value!r}")
    return dict(axes)


def _inputs(where: str, inputs: Any) -> tuple[WorkloadInput, ...]:
    if not isinstance(inputs, dict):
        raise TaskError(f"{where}: inputs must be an object of name: input")
    if len(inputs) > MAX_INPUTS:
        raise TaskError(f"{where}: more than {MAX_INPUTS} inputs")
    return tuple(_input(where, name, spec) for name, spec in inputs.items())


def _input(where: str, name: str, spec: Any) -> WorkloadInput:
    at = f"{where}: inputs.{name}"
    if VALUE_NAME.fullmatch(name) is None:
        raise TaskError(f"{where}: inputs: {name[:40]!r} is not an input's name (an identifier)")
    if not isinstance(spec, dict) or spec.get("type") not in INPUT_TYPES:
        given = spec.get("type") if isinstance(spec, dict) else spec
        raise TaskError(
            f"{at}: unknown input type {str(given)[:40]!r} (random, scalar or safetensors)"
        )
    kind: InputType = spec["type"]
    keys = {"random": {"type"}, "scalar": {"type", "value"}}.get(
        kind, {"type", "path", "tensor_key"}
    )
    unknown, missing = sorted(set(spec) - keys), sorted(keys - set(spec))
    if unknown or missing:
        problems = [f"unknown key(s) {', '.join(map(repr, unknown))}"] if unknown else []
        problems += [f"no {', '.join(missing)}"] if missing else []
        raise TaskError(f"{at}: a {kind} input: {'; '.join(problems)}")
    if kind == "random":
        return WorkloadInput(name, kind)
    if kind == "scalar":
        value = spec["value"]
        if not isinstance(value, int | float) or (
            isinstance(value, float) and not math.isfinite(value)
        ):
            raise TaskError(f"{at}: value must be a finite number or a boolean, not {value!r}")
        return WorkloadInput(name, kind, value=value)
    path, key = spec["path"], spec["tensor_key"]
    if not isinstance(path, str) or not isinstance(key, str) or not key:
        raise TaskError(f"{at}: path and tensor_key must be non-empty strings")
    problem = data_path_problem(path)
    if problem is not None:
        raise TaskError(f"{at}: path {path[:80]!r} {problem}")
    if PurePosixPath(path).suffix != ".safetensors":
        raise TaskError(f"{at}: path {path[:80]!r} must name a .safetensors file")
    return WorkloadInput(name, kind, path=path, tensor_key=key)


def safetensors_header(where: str, raw: bytes) -> dict[str, dict[str, Any]]:
    """A safetensors file's tensors (name -> dtype, shape, and the start and end of its bytes
    in the file), read from its header and checked
    against the file's size (the format: an 8-byte little-endian header length, the JSON
    header, the data)."""
    if len(raw) < 8:
        raise TaskError(f"{where}: not a safetensors file ({len(raw)} bytes)")
    size = int.from_bytes(raw[:8], "little")
    if size > HEADER_LIMIT or 8 + size > len(raw):
        raise TaskError(f"{where}: not a safetensors file (a header of {size} bytes)")
    try:
        header = json.loads(raw[8 : 8 + size].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise TaskError(f"{where}: not a safetensors file (its header is not JSON)") from None
    if not isinstance(header, dict):
        raise TaskError(f"{where}: not a safetensors file (its header is not an object)")
    body = len(raw) - 8 - size
    tensors = {}
    for key, entry in header.items():
        if key == "__metadata__":
            continue
        tensor = _tensor(f"{where}: tensor {key[:80]!r}", entry, body)
        tensor["start"] += 8 + size  # offsets from the file's start, not the data's
        tensor["end"] += 8 + size
        tensors[key] = tensor
    return tensors


def _tensor(where: str, entry: Any, body: int) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise TaskError(f"{where}: not a tensor entry")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype not in SAFETENSORS_DTYPES:
        raise TaskError(
            f"{where}: dtype {str(dtype)[:20]!r} cannot be an input "
            f"({', '.join(SAFETENSORS_DTYPES)})"
        )
    if not (
        isinstance(shape, list)
        and len(shape) <= 8
        and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)
        and isinstance(offsets, list)
        and len(offsets) == 2
        and all(isinstance(n, int) and not isinstance(n, bool) for n in offsets)
        and 0 <= offsets[0] <= offsets[1] <= body
    ):
        raise TaskError(f"{where}: a malformed shape or data_offsets")
    if offsets[1] - offsets[0] != math.prod(shape) * SAFETENSORS_DTYPES[dtype]:
        raise TaskError(f"{where}: its data_offsets do not hold its shape and dtype")
    return {"dtype": dtype, "shape": list(shape), "start": offsets[0], "end": offsets[1]}


def check_data_files(
    workloads_path: Path, workloads: list[Workload], files: dict[str, bytes]
) -> None:
    """Every safetensors input's file is among the folder's files (read by read_task_files)
    and holds its tensor_key; a TaskError names the workloads' file and line."""
    headers: dict[str, dict[str, dict[str, Any]]] = {}
    for workload in workloads:
        for item in workload.inputs:
            if item.path is None:
                continue
            at = f"{workloads_path} line {workload.line}: inputs.{item.name}"
            if item.path not in files:
                raise TaskError(f"{at}: {item.path}: no such file in the task folder")
            if item.path not in headers:
                headers[item.path] = safetensors_header(f"{at}: {item.path}", files[item.path])
            if item.tensor_key not in headers[item.path]:
                known = ", ".join(sorted(headers[item.path]))[:200]
                raise TaskError(
                    f"{at}: {item.path} has no tensor {item.tensor_key!r} (it has: {known})"
                )
