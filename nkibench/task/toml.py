"""task.toml: its keys, their defaults and bounds, and the reader that validates them.

tomllib parses it; the checks are written by hand, not a schema library, because nkibench
depends on numpy only.
The numbers in [limits] must be finite and sane (MAX_TIMEOUT_S, MAX_MEMORY_MB): a worker held
for ever by one task is a worker lost to all the others.
"""

from __future__ import annotations

import ast
import math
import tomllib
from pathlib import Path
from typing import Any

from nkibench.backends import (
    BACKENDS,
    DEFAULT_BACKEND,
    DeclaredDtype,
    backend_info,
    dialect_of_backend,
)
from nkibench.dialects import DIALECTS, get_dialect
from nkibench.errors import TaskError
from nkibench.policy.tolerance import OUTPUT_DTYPES, Tolerance
from nkibench.task.counts import COUNTS_FUNCTION
from nkibench.task.files import VALUE_NAME, name_problem
from nkibench.task.safe_eval import (
    Number,
    UnsafeExpression,
    evaluate,
    formula_names,
    module_constants,
)
from nkibench.task.workloads import data_path_problem

__all__ = [
    "DEFAULT_DISK_MB",
    "DEFAULT_MEMORY_MB",
    "DEFAULT_REL_TOL",
    "DEFAULT_SEEDS",
    "DEFAULT_TIMEOUT_S",
    "FULL",
    "MATMUL_DTYPES",
    "MAX_DISK_MB",
    "MAX_MEMORY_MB",
    "MAX_TIMEOUT_S",
    "read_toml",
]

FULL = "full"
"""The shape set of reference.py's own constants."""
DEFAULT_SEEDS = (0, 21, 42, 63, 84)  # AccelOpt's correctness seeds
DEFAULT_REL_TOL = 2e-5  # AccelOpt: relative L2 error, float32
DEFAULT_TIMEOUT_S = {FULL: 1800.0, "*": 120.0}
DEFAULT_MEMORY_MB = 8192
DEFAULT_DISK_MB = 4096
"""What a job's folders may hold on disk by default: a full shape's inputs, expected outputs
and outputs (hundreds of MB at most in NKIBench) several times over, and a Triton cache."""
TASK_DTYPES = ("float32", "bfloat16", "float16")
ROOFLINE_KEYS = ("vec_flops", "mm_flops", "bytes")
MATMUL_DTYPES = ("float32", "bfloat16", "float16")
"""The precision whose TensorE peak the roofline uses (AccelOpt's tasks are all float32)."""
MAX_TIMEOUT_S = 6 * 3600.0
"""The longest [limits] timeout_s: a full-shape profile takes minutes; six hours is a typo or
an attempt to hold a worker for ever."""
MAX_MEMORY_MB = 1024 * 1024
"""The largest [limits] memory_mb (1 TiB of address space, half the largest Trainium host);
a job gets at most its share of the host it runs on (nkibench.harness.share_of_host)."""
MIN_DISK_MB = 64
"""The smallest [limits] disk_mb: the task's copy, a trace and the Python caches fit."""
MAX_DISK_MB = 1024 * 1024
"""The largest [limits] disk_mb (1 TiB)."""

_TOP_KEYS = (
    "name",
    "dialect",
    "description",
    "backend",
    "dtype",
    "weight",
    "kernel_function",
    "correctness",
    "shapes",
    "roofline",
    "limits",
    "tunables",
    "allow_torch_compute",
    "outputs",
    "workloads",
)
OUTPUT_KEYS = ("dtype", "rel_tol", "atol", "rtol", "matched_ratio")


class _TomlReader:
    """Reads task.toml section by section, naming the key of every problem."""

    def __init__(self, path: Path, data: dict[str, Any], reference: ast.Module) -> None:
        self.path = path
        self.data = data
        self.reference = reference
        self.constants = module_constants(reference)
        self.out: dict[str, Any] = {}

    def fail(self, where: str, problem: str) -> TaskError:
        return TaskError(f"{self.path}: {where}: {problem}")

    def table(self, key: str, allowed: tuple[str, ...] | None = None) -> dict[str, Any]:
        value = self.data.get(key, {})
        if not isinstance(value, dict):
            raise self.fail(key, "must be a table")
        unknown = sorted(set(value) - set(allowed)) if allowed is not None else []
        if unknown:
            raise self.fail(f"[{key}]", f"unknown key(s) {', '.join(unknown)}")
        return value

    def number(self, where: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(where, "must be a number")
        return float(value)

    def read(self) -> dict[str, Any]:
        unknown = sorted(set(self.data) - set(_TOP_KEYS))
        if unknown:
            raise self.fail("top level", f"unknown key(s) {', '.join(unknown)}")
        for key in ("name", "description", "backend", "dtype", "kernel_function", "dialect"):
            if key in self.data:
                if not isinstance(self.data[key], str):
                    raise self.fail(key, "must be a string")
                self.out[key] = self.data[key]
        if "name" in self.out:
            problem = name_problem(self.out["name"])
            if problem is not None:
                raise self.fail("name", problem)
        backend = self.out.get("backend", DEFAULT_BACKEND)
        if backend not in BACKENDS:
            raise self.fail("backend", f"must be one of {', '.join(BACKENDS)}")
        if "dialect" in self.out and self.out["dialect"] not in DIALECTS:
            raise self.fail("dialect", f"must be one of {', '.join(DIALECTS)}")
        if self.out.get("dtype", "float32") not in TASK_DTYPES:
            raise self.fail("dtype", f"must be one of {', '.join(TASK_DTYPES)}")
        declared = backend_info(backend).declared_dtype
        if declared is not None:
            self._declared_dtype(declared)
        if "allow_torch_compute" in self.data:
            allow = self.data["allow_torch_compute"]
            if not isinstance(allow, bool):
                raise self.fail("allow_torch_compute", "must be true or false")
            if allow and get_dialect(dialect_of_backend(backend)).host_compute is None:
                raise self.fail(
                    "allow_torch_compute", "only a Triton task's run() can compute with PyTorch"
                )
            self.out["allow_torch_compute"] = allow
        if "weight" in self.data:
            self.out["weight"] = self.number("weight", self.data["weight"])
            if not (math.isfinite(self.out["weight"]) and self.out["weight"] > 0):
                raise self.fail("weight", "must be a finite number > 0")
        self._correctness()
        self._outputs(declared)
        self._shapes()
        self._roofline()
        self._limits()
        self._tunables()
        self._workloads()
        return self.out

    def _declared_dtype(self, declared: DeclaredDtype) -> None:
        """A task of a backend that needs them states its dtype and its roofline; its matmuls
        run at its dtype's rate, and its tolerance and seeds follow the dtype (DeclaredDtype)."""
        if "dtype" not in self.out:
            raise self.fail("dtype", f"{declared.task} must give its dtype (float32, bfloat16...)")
        roofline = self.data.get("roofline")
        if not isinstance(roofline, dict) or "bytes" not in roofline:
            raise self.fail("[roofline]", f"{declared.task} must give at least `bytes`")
        self.out["matmul_dtype"] = self.out["dtype"]
        self.out["rel_tol"] = declared.rel_tol[self.out["dtype"]]
        self.out["seeds"] = declared.seeds

    def _correctness(self) -> None:
        correctness = self.table("correctness", ("rel_tol", "seeds"))
        if "rel_tol" in correctness:
            rel_tol = self.number("correctness.rel_tol", correctness["rel_tol"])
            if not 0 < rel_tol < 1:
                raise self.fail("correctness.rel_tol", "must be between 0 and 1")
            self.out["rel_tol"] = rel_tol
        if "seeds" in correctness:
            seeds = correctness["seeds"]
            if (
                not isinstance(seeds, list)
                or not seeds
                or not all(isinstance(x, int) and not isinstance(x, bool) for x in seeds)
            ):
                raise self.fail("correctness.seeds", "must be a non-empty list of integers")
            self.out["seeds"] = tuple(seeds)

    def _outputs(self, declared: DeclaredDtype | None) -> None:
        """`[outputs.<name>]` (or `[outputs.<position>]`): one output's dtype and tolerance,
        resolved here (nkibench.policy.tolerance): its own rel_tol; else, with atol and rtol,
        the per-element rule alone; else its dtype's default (exact for integers and booleans,
        the backend's table for floats); else the task's rel_tol."""
        outputs: dict[str, Tolerance] = {}
        for name, table in self.table("outputs").items():
            where = f"[outputs.{name}]"
            if VALUE_NAME.fullmatch(name) is None and not (name.isdigit() and len(name) <= 4):
                raise self.fail(
                    where,
                    "name an output as forward() does (a Python identifier) or by its "
                    "position (0, 1, ...)",
                )
            if not isinstance(table, dict):
                raise self.fail(where, f"must be a table of {', '.join(OUTPUT_KEYS)}")
            unknown = sorted(set(table) - set(OUTPUT_KEYS))
            if unknown:
                raise self.fail(where, f"unknown key(s) {', '.join(unknown)}")
            outputs[name] = self._output(f"outputs.{name}", table, declared)
        self.out["outputs"] = outputs

    def _output(
        self, where: str, table: dict[str, Any], declared: DeclaredDtype | None
    ) -> Tolerance:
        dtype = table.get("dtype")
        if dtype is not None and dtype not in OUTPUT_DTYPES:
            raise self.fail(f"{where}.dtype", f"must be one of {', '.join(OUTPUT_DTYPES)}")
        bounds: dict[str, float] = {}
        for key in ("rel_tol", "atol", "rtol", "matched_ratio"):
            if key in table:
                bounds[key] = self.number(f"{where}.{key}", table[key])
                if not (math.isfinite(bounds[key]) and bounds[key] >= 0):
                    raise self.fail(f"{where}.{key}", "must be a finite number ≥ 0")
        if "rel_tol" in bounds and not 0 < bounds["rel_tol"] < 1:
            raise self.fail(f"{where}.rel_tol", "must be between 0 and 1")
        if "matched_ratio" in bounds and not 0 < bounds["matched_ratio"] <= 1:
            raise self.fail(f"{where}.matched_ratio", "must be > 0 and ≤ 1")
        elementwise = "atol" in bounds or "rtol" in bounds
        if elementwise and not ("atol" in bounds and "rtol" in bounds):
            raise self.fail(
                f"[{where}]",
                "atol and rtol go together (an element fails when it is off by more than both)",
            )
        if "matched_ratio" in bounds and not elementwise:
            raise self.fail(f"{where}.matched_ratio", "applies to atol and rtol: give them too")
        rel_tol: float | None
        if "rel_tol" in bounds:
            rel_tol = bounds["rel_tol"]
        elif elementwise:
            rel_tol = None
        elif dtype is not None and OUTPUT_DTYPES[dtype] == "int":
            return Tolerance(None, 0.0, 0.0, 1.0, dtype)  # integers and booleans: exact
        elif dtype is not None and declared is not None:
            if dtype not in declared.rel_tol:
                raise self.fail(
                    f"[{where}]",
                    f"no default tolerance for {dtype} outputs: give rel_tol, or atol and rtol",
                )
            rel_tol = declared.rel_tol[dtype]
        else:
            rel_tol = self.out.get("rel_tol", DEFAULT_REL_TOL)
        return Tolerance(
            rel_tol,
            bounds.get("atol"),
            bounds.get("rtol"),
            bounds.get("matched_ratio", 1.0),
            dtype,
        )

    def _shapes(self) -> None:
        shape_sets: dict[str, dict[str, Number]] = {}
        for name, overrides in self.table("shapes").items():
            where = f"[shapes.{name}]"
            if name == FULL:
                raise self.fail(where, "`full` is reference.py's own constants; it is not set")
            if not isinstance(overrides, dict):
                raise self.fail(where, "must be a table of constant = number")
            for constant, value in overrides.items():
                if constant not in self.constants:
                    raise self.fail(
                        where, f"sets {constant}, but reference.py has no module-level {constant}"
                    )
                self.number(f"{where} {constant}", value)
            shape_sets[name] = dict(overrides)
        self.out["shape_sets"] = shape_sets

    def _roofline(self) -> None:
        roofline = self.table("roofline", (*ROOFLINE_KEYS, "matmul_dtype"))
        if "matmul_dtype" in roofline:
            dtype = roofline.pop("matmul_dtype")
            if dtype not in MATMUL_DTYPES:
                raise self.fail(
                    "roofline.matmul_dtype", f"must be one of {', '.join(MATMUL_DTYPES)}"
                )
            self.out["matmul_dtype"] = dtype
        functions = {s.name for s in self.reference.body if isinstance(s, ast.FunctionDef)}
        counted = COUNTS_FUNCTION in functions
        for key, expression in roofline.items():
            where = f"roofline.{key}"
            if isinstance(expression, bool) or not isinstance(expression, str | int | float):
                raise self.fail(where, "must be a formula or a number")
            try:
                names = formula_names(str(expression))
                for overrides in [{}, *self.out["shape_sets"].values()]:
                    self._formula(where, str(expression), names, overrides, counted)
            except UnsafeExpression as e:
                raise self.fail(where, str(e)) from None
        self.out["roofline"] = {key: str(value) for key, value in roofline.items()}

    def _formula(
        self,
        where: str,
        expression: str,
        names: set[str],
        overrides: dict[str, Number],
        counted: bool,
    ) -> None:
        """A formula under one shape set: evaluated, where the constants give all its names;
        the others must be counts of reference.py's roofline_counts(), and the formula is
        evaluated once a reference run has given them (TaskSpec.roofline_counts)."""
        constants = module_constants(self.reference, overrides)
        unknown = sorted(names - set(constants))
        if unknown and not counted:
            raise self.fail(
                where,
                f"unknown name {unknown[0]!r}: neither a constant of reference.py nor a count "
                f"(reference.py defines no {COUNTS_FUNCTION}())",
            )
        if unknown:
            return
        value = evaluate(expression, constants)
        if not (math.isfinite(value) and value >= 0):
            raise self.fail(where, "must be a finite number ≥ 0")

    def _limits(self) -> None:
        limits = self.table("limits", ("timeout_s", "memory_mb", "disk_mb", "strict_capacity"))
        if "timeout_s" in limits:
            timeout = limits["timeout_s"]
            table = timeout if isinstance(timeout, dict) else {FULL: timeout, "*": timeout}
            seconds = {}
            for shapes, value in table.items():
                where = "limits.timeout_s" + ("" if timeout is value else f".{shapes}")
                number = self.number(where, value)
                if not (math.isfinite(number) and 0 < number <= MAX_TIMEOUT_S):
                    raise self.fail(
                        where,
                        f"must be a finite number of seconds > 0 and ≤ {MAX_TIMEOUT_S:g} "
                        f"(6 hours), not {value!r}",
                    )
                seconds[shapes] = number
            self.out["timeout_s"] = {**DEFAULT_TIMEOUT_S, **seconds}
            self.out["timeout_declared"] = frozenset(seconds)
        if "memory_mb" in limits:
            memory = limits["memory_mb"]
            if (
                isinstance(memory, bool)
                or not isinstance(memory, int)
                or not 256 <= memory <= MAX_MEMORY_MB
            ):
                raise self.fail(
                    "limits.memory_mb", f"must be an integer ≥ 256 and ≤ {MAX_MEMORY_MB} (1 TiB)"
                )
            self.out["memory_mb"] = memory
        if "disk_mb" in limits:
            disk = limits["disk_mb"]
            if (
                isinstance(disk, bool)
                or not isinstance(disk, int)
                or not MIN_DISK_MB <= disk <= MAX_DISK_MB
            ):
                raise self.fail(
                    "limits.disk_mb",
                    f"must be an integer ≥ {MIN_DISK_MB} and ≤ {MAX_DISK_MB} (1 TiB), not {disk!r}",
                )
            self.out["disk_mb"] = disk
        if "strict_capacity" in limits:
            if not isinstance(limits["strict_capacity"], bool):
                raise self.fail("limits.strict_capacity", "must be true or false")
            self.out["strict_capacity"] = limits["strict_capacity"]

    def _tunables(self) -> None:
        tunables = self.table("tunables")
        for name, choices in tunables.items():
            if not isinstance(choices, list) or not choices:
                raise self.fail(f"tunables.{name}", "must be a non-empty list of choices")
        self.out["tunables"] = tunables

    def _workloads(self) -> None:
        """`[workloads] file`: the workloads' file (nkibench.task.workloads), a path in the
        task folder; read by read_task_files, checked with reference.py by load_task."""
        workloads = self.table("workloads", ("file",))
        if "file" in workloads:
            name = workloads["file"]
            if not isinstance(name, str):
                raise self.fail("workloads.file", "must be a string")
            problem = data_path_problem(name)
            if problem is None and not name.endswith(".jsonl"):
                problem = "must name a .jsonl file (one Workload a line)"
            if problem is not None:
                raise self.fail("workloads.file", f"{name[:80]!r} {problem}")
            self.out["workloads_file"] = name


def read_toml(path: Path, raw: bytes, reference: ast.Module) -> dict[str, Any]:
    """task.toml's settings, validated against reference.py (TaskSpec's fields by name)."""
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise TaskError(f"{path}: not UTF-8") from None
    except tomllib.TOMLDecodeError as e:
        raise TaskError(f"{path}: {e}") from None
    return _TomlReader(path, data, reference).read()
