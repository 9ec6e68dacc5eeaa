"""A workload's fixed inputs inside the reference's child: its `scalar` values and its
`safetensors` tensors (nkibench.task.workloads), put in place of the inputs of those names in
every seed's draw.

The reference's child is the trusted side of the task's data: it reads the files from the
session's copy of the task folder and hands the values on as every input crosses the phases
(nkibench.sandbox.arrays), so the kernel's child never reads them itself. A name that is no
input of get_inputs() (its dict's keys, or forward()'s parameters for a list) fails the
reference phase as the task's error.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import ml_dtypes
import numpy as np
from safetensors import safe_open

from nkibench.task.workloads import DATA_FILE_LIMIT, data_path_problem, safetensors_header

__all__ = ["Loader", "WorkloadValues", "data_file", "load_numpy"]

Loader = Callable[[Path, str], Any]
"""Reads one tensor (file, key) in the framework of the reference (NumPy, torch)."""

RAW_DTYPES = {
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "F8_E4M3": np.dtype(ml_dtypes.float8_e4m3fn),
    "F8_E5M2": np.dtype(ml_dtypes.float8_e5m2),
}
"""The dtypes safetensors' NumPy loader does not know (NumPy has none of them): read from the
file's bytes as ml_dtypes' arrays, as nkibench.dtypes holds them."""


def data_file(task_dir: Path, path: str) -> Path:
    """`path` in the task folder's copy, which it may not leave (checked when the task
    loaded; again here, where the file is opened)."""
    problem = data_path_problem(path)
    folder = task_dir.resolve()
    found = (folder / path).resolve()
    if problem is not None or not found.is_relative_to(folder):
        raise ValueError(f"{path!r}: not a file of the task folder ({problem or 'a symlink out'})")
    return found


def load_numpy(path: Path, key: str) -> np.ndarray[Any, Any]:
    """The tensor `key` of a safetensors file as a NumPy array (bfloat16 and float8 through
    ml_dtypes)."""
    with safe_open(str(path), framework="np") as opened:
        dtype = opened.get_slice(key).get_dtype()
        if dtype not in RAW_DTYPES:
            array: np.ndarray[Any, Any] = opened.get_tensor(key)
            return array
    if path.stat().st_size > DATA_FILE_LIMIT:
        raise ValueError(f"{path.name}: over the {DATA_FILE_LIMIT} byte limit")
    raw = path.read_bytes()
    entry = safetensors_header(path.name, raw)[key]
    data = np.frombuffer(raw[entry["start"] : entry["end"]], dtype=RAW_DTYPES[dtype])
    return data.reshape(entry["shape"]).copy()


def input_names(module: ModuleType, names: list[str] | None, count: int) -> list[str]:
    """The names of get_inputs()'s values: its dict's keys, else forward()'s parameters in
    order (a list's values are forward()'s arguments)."""
    if names is not None:
        return names
    try:
        parameters = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        return []
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in parameters if p.kind in positional][:count]


class WorkloadValues:
    """The fixed inputs of the request's workload (`workload_inputs`), read once and copied
    into every seed's draw."""

    def __init__(self, request: dict[str, Any], load: Loader) -> None:
        self.specs: dict[str, dict[str, Any]] = dict(request.get("workload_inputs") or {})
        self.task_dir = Path(request.get("task_dir") or ".")
        self.load = load
        self.values: dict[str, Any] | None = None

    def _read(self) -> dict[str, Any]:
        values = {}
        for name, spec in self.specs.items():
            if spec["type"] == "random":
                continue  # get_inputs()'s draw
            if spec["type"] == "scalar":
                values[name] = spec["value"]
                continue
            path, key = spec["path"], spec["tensor_key"]
            try:
                values[name] = self.load(data_file(self.task_dir, path), key)
            except Exception as e:  # the safetensors package's own errors name no input
                raise ValueError(
                    f"the workload's input {name}: {path}, tensor {key!r}: {type(e).__name__}: {e}"
                ) from None
        return values

    def apply(self, module: ModuleType, values: list[Any], names: list[str] | None) -> None:
        """Put the workload's fixed inputs in place of get_inputs()'s values of those names."""
        if not self.specs:
            return
        known = input_names(module, names, len(values))
        for name in self.specs:
            if name not in known:
                given = ", ".join(known) or "none by name: return a dict from get_inputs()"
                raise TypeError(
                    f"the workload's input {name!r} is no input of get_inputs() ({given})"
                )
        if self.values is None:
            self.values = self._read()
        for name, value in self.values.items():
            values[known.index(name)] = copy.deepcopy(value)  # forward() may change its copy
