"""A task's reference.py inside the sandboxed child: loaded under a shape set (constants
replaced before it runs), and the NumPy reference phase of NKI tasks, which makes every seed's
inputs and expected outputs.

Runs only inside a sandboxed child: reference code is the user's, and may be slow or broken.
"""

from __future__ import annotations

import ast
import copy
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from nkibench import python_ast
from nkibench.dtypes import as_dtype
from nkibench.errors import TaskError
from nkibench.policy.flop_count import compulsory_bytes, count_forward
from nkibench.sandbox.arrays import listed, value_spec
from nkibench.sandbox.values import call, named
from nkibench.sandbox.workload_inputs import WorkloadValues, load_numpy
from nkibench.task.counts import COUNTS_FUNCTION, checked_counts, mean_counts
from nkibench.task.safe_eval import module_bindings

__all__ = [
    "FIXED_SEED",
    "FixedInputs",
    "SeedCounts",
    "TaskCodeFailed",
    "fixed_positions",
    "get_inputs",
    "load_reference",
    "names_of",
    "reference_module",
    "reference_phase",
]


def _override(tree: ast.Module, overrides: dict[str, Any], path: Path) -> None:
    """Every module-level binding of an overridden name is followed by `NAME = value`: a
    plain, annotated, tuple (`ROWS, COLS = 300, 1000`) or chained (`A = B = 4`) assignment
    keeps its other names, and constants derived later see the shape set's value (as
    nkibench.task.safe_eval.module_constants computes them for the roofline)."""
    seen: set[str] = set()
    body: list[ast.stmt] = []
    for statement in tree.body:
        body.append(statement)
        for name in module_bindings(statement):
            if name in overrides:
                seen.add(name)
                value = ast.Assign([ast.Name(name, ast.Store())], ast.Constant(overrides[name]))
                body.append(ast.copy_location(value, statement))
    tree.body = body
    ast.fix_missing_locations(tree)
    remaining = sorted(set(overrides) - seen)
    if remaining:
        raise TaskError(f"{path}: no module-level assignment of {', '.join(remaining)}")


def load_reference(path: Path, overrides: dict[str, Any]) -> ModuleType:
    source = path.read_text(encoding="utf-8")
    tree = python_ast.parse(source, filename=str(path))
    _override(tree, overrides, path)
    module = ModuleType("reference")
    module.__file__ = str(path)
    exec(compile(tree, str(path), "exec"), module.__dict__)
    return module


def _reference_error(error: BaseException, path: str, doing: str = "") -> dict[str, Any]:
    """The phase's result for an error of reference.py's code, at its line there (`doing`:
    what it was doing, when that is not plain from the line)."""
    line = 0
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename == path:
            line = frame.lineno or 0
    where = f"{Path(path).name} line {line}" if line else Path(path).name
    message = f"{where}: {doing}{type(error).__name__}: {error}"
    return {"ok": False, "kind": "task", "message": message}


class TaskCodeFailed(Exception):
    """The task's own code failed: the phase's result is this error (the child writes it)."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__(result["message"])
        self.result = result


def reference_module(request: dict[str, Any]) -> ModuleType:
    """The request's reference.py, loaded; its failure is the phase's result."""
    path = request["reference"]
    try:
        return load_reference(Path(path), request["overrides"])
    except Exception as e:
        raise TaskCodeFailed(_reference_error(e, path)) from e


def _count_work(
    module: ModuleType, inputs: list[Any], kernel_inputs: list[Any], expected: list[Any]
) -> dict[str, Any]:
    """The roofline's flops and bytes, counted from forward() (see nkibench.policy.flop_count)."""
    try:
        tally = count_forward(module.forward, inputs)
    except Exception as e:
        return {"error": f"counting forward()'s work failed: {type(e).__name__}: {e}"}
    return {
        "vec_flops": tally.vec_flops,
        "mm_flops": tally.mm_flops,
        "bytes": compulsory_bytes(kernel_inputs, expected),
    }


class SeedCounts:
    """reference.py's roofline_counts(), where it defines one, on each seed's inputs in turn:
    called as forward() is (by keyword where it takes their names) on a copy of them, its
    result checked (nkibench.task.counts), and every seed's names the same (the roofline
    averages them). A failure is the phase's result, naming reference.py (TaskCodeFailed)."""

    def __init__(self, module: ModuleType, path: str) -> None:
        self.function = getattr(module, COUNTS_FUNCTION, None)
        self.path = path
        self.by_seed: dict[str, dict[str, float]] = {}

    def _fail(self, problem: str) -> TaskCodeFailed:
        message = f"{Path(self.path).name}: {problem}"
        return TaskCodeFailed({"ok": False, "kind": "task", "message": message})

    def of(self, seed: int, inputs: list[Any], names: list[str] | None) -> dict[str, float]:
        """The seed's counts ({} where reference.py defines no roofline_counts)."""
        if self.function is None:
            return {}
        doing = f"{COUNTS_FUNCTION}() on seed {seed}: "
        try:
            value = call(self.function, copy.deepcopy(inputs), names)
        except Exception as e:
            raise TaskCodeFailed(_reference_error(e, self.path, doing)) from e
        try:
            counts = checked_counts(value)
            self.by_seed[str(seed)] = counts
            mean_counts(self.by_seed)  # refuses a seed that names other counts
        except ValueError as e:
            raise self._fail(f"{doing}{e}") from None
        return counts

    def entry(self, seed: int, inputs: list[Any], names: list[str] | None) -> dict[str, Any]:
        """The seed's manifest entry for its counts: `counts`, where there is a function."""
        counts = self.of(seed, inputs, names)
        return {"counts": counts} if self.function is not None else {}


def _check_dtypes(kernel_inputs: list[Any]) -> None:
    for i, value in enumerate(kernel_inputs):
        if isinstance(value, np.ndarray):
            try:
                as_dtype(value.dtype)
            except Exception:
                raise TypeError(
                    f"kernel input {i} has dtype {value.dtype}, which NKI does not have "
                    "(cast it, e.g. .astype(np.float32))"
                ) from None


def get_inputs(module: ModuleType) -> tuple[list[Any], list[str] | None]:
    """get_inputs()'s values and, when it returns a dict, their names."""
    inputs = module.get_inputs()
    if not isinstance(inputs, list | tuple | dict):
        raise TypeError(f"get_inputs() returned a {type(inputs).__name__}, not a list or a dict")
    return named(inputs, "get_inputs()'s result")


FIXED_SEED = 0
"""The seed FIXED_INPUTS are drawn under (once per phase, before each seed's own draw)."""


def fixed_positions(
    declared: Sequence[str | int], names: list[str] | None, count: int
) -> list[int]:
    """FIXED_INPUTS' entries as positions of get_inputs()'s values (names or positions)."""
    positions = []
    for item in declared:
        if isinstance(item, int) and 0 <= item < count:
            positions.append(item)
        elif isinstance(item, str) and names is not None and item in names:
            positions.append(names.index(item))
        else:
            given = ", ".join(names) if names is not None else f"{count} positional"
            raise TypeError(f"FIXED_INPUTS: {item!r} is no input of get_inputs() ({given})")
    return positions


def _described(value: Any) -> str:
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is None:
        return type(value).__name__
    return f"shape {list(shape)} and dtype {dtype}"


class FixedInputs:
    """The inputs reference.py's FIXED_INPUTS marks (by name or position): drawn once, by
    get_inputs() under FIXED_SEED, and put in place of the same inputs of every seed's draw,
    which must have their shape and dtype (their shape may not depend on the seed)."""

    def __init__(
        self,
        declared: Sequence[str | int],
        reseed: Callable[[int], Any],
        workload: WorkloadValues | None = None,
    ) -> None:
        self.declared = list(declared)
        self.reseed = reseed
        self.drawn: dict[int, Any] | None = None
        self.workload = workload
        """A workload's scalar and safetensors inputs, put in place last (they are the
        workload's own, whatever the draw)."""

    def draw(self, module: ModuleType, seed: int) -> tuple[list[Any], list[str] | None]:
        """get_inputs() under `seed`, the fixed inputs in place."""
        if self.declared and self.drawn is None:
            self.reseed(FIXED_SEED)
            values, names = get_inputs(module)
            positions = fixed_positions(self.declared, names, len(values))
            self.drawn = {p: values[p] for p in positions}
        self.reseed(seed)
        values, names = get_inputs(module)
        for position, fixed in (self.drawn or {}).items():
            if position >= len(values):
                raise TypeError(f"FIXED_INPUTS: seed {seed}'s draw has no input {position}")
            if _described(values[position]) != _described(fixed):
                label = names[position] if names else position
                raise TypeError(
                    f"FIXED_INPUTS: input {label} has {_described(values[position])} in seed "
                    f"{seed}'s draw but {_described(fixed)} in the fixed draw (a fixed input's "
                    "shape may not depend on the seed)"
                )
            values[position] = copy.deepcopy(fixed)  # forward() may not change it for others
        if self.workload is not None:
            self.workload.apply(module, values, names)
        return values, names


def names_of(inputs: list[str] | None, outputs: list[str] | None) -> dict[str, list[str]]:
    """The manifest's names of a seed's inputs and expected outputs, where they have them."""
    found = {"input_names": inputs, "output_names": outputs}
    return {key: names for key, names in found.items() if names is not None}


def reference_phase(request: dict[str, Any]) -> dict[str, Any]:
    """get_inputs() under np.random.seed(seed) (FIXED_INPUTS drawn once under FIXED_SEED, a
    workload's scalar and safetensors inputs in place) and forward() per seed, with AccelOpt's
    optional transform_to_nki_inputs; both saved, with the work counted once when asked, and
    each seed's roofline_counts() where reference.py defines it."""
    path = request["reference"]
    module = reference_module(request)
    data, expected_dir = Path(request["data_dir"]), Path(request["expected_dir"])
    seeds: dict[str, Any] = {}
    work: dict[str, Any] | None = None
    fixed = FixedInputs(
        request.get("fixed_inputs", []), np.random.seed, WorkloadValues(request, load_numpy)
    )
    roofline_counts = SeedCounts(module, path)
    for seed in request["seeds"]:
        folder = data / f"seed_{seed}"
        folder.mkdir()
        hidden = expected_dir / f"seed_{seed}"
        hidden.mkdir()
        try:
            inputs, names = fixed.draw(module, seed)
            counts = roofline_counts.entry(seed, inputs, names)  # before anything else sees them
            started = time.perf_counter()
            expected, output_names = named(
                call(
                    module.forward,
                    [np.copy(x) if isinstance(x, np.ndarray) else x for x in inputs],
                    names,
                ),
                "forward()'s result",
            )
            forward_s = time.perf_counter() - started
            transform = getattr(module, "transform_to_nki_inputs", None)
            kernel_inputs = listed(transform(list(inputs))) if transform else list(inputs)
            _check_dtypes(kernel_inputs)
            if request.get("count_work") and work is None:
                work = _count_work(module, list(inputs), kernel_inputs, expected)
            seeds[str(seed)] = {
                "inputs": [
                    value_spec(v, folder, f"input_{i}") for i, v in enumerate(kernel_inputs)
                ],
                "expected": [
                    value_spec(v, hidden, f"expected_{i}") for i, v in enumerate(expected)
                ],
                "forward_s": forward_s,
                **names_of(names if not transform else None, output_names),
                **counts,
            }
        except TaskCodeFailed:
            raise
        except Exception as e:
            return _reference_error(e, path)
    return {"ok": True, "seeds": seeds, "work": work}
