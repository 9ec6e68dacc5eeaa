"""The task format: what a user drops into the watched directory, loaded and validated.

An NKI task (the default):
    <task>/kernel.py      an @nki.jit function named `kernel` (AccelOpt's `optimized_kernel`
                          is accepted too)
    <task>/reference.py   module-level shape constants, get_inputs() using np.random,
                          forward(*inputs); optional transform_to_nki_inputs(inputs) and
                          transform_nki_outputs(kernel_result, reference_result)
    <task>/task.toml      optional: tolerance, seeds, shape sets, roofline counts, limits,
                          weight, tunables

A Triton task (`backend = "triton"` in task.toml, which is then required with `dtype` and
the roofline's counts):
    <task>/kernel.py      `run(*inputs)`: launches @triton.jit kernels, returns the outputs;
                          torch there only allocates, views and queries tensors unless
                          task.toml says `allow_torch_compute = true`
    <task>/reference.py   module-level shape constants, get_inputs() returning torch tensors
                          (torch.manual_seed is set per seed), forward(*inputs) in PyTorch

Loading never runs the task's code: it parses it. Everything wrong is reported as a
TaskError naming the file and the problem.
"""

from __future__ import annotations

import ast
import hashlib
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nkibench.backends import BACKENDS, dialect_of_backend
from nkibench.dialects import get_dialect
from nkibench.errors import TaskError
from nkibench.task.safe_eval import (
    Number,
    UnsafeExpression,
    evaluate,
    module_bindings,
    module_constants,
)

__all__ = [
    "DEFAULT_SEEDS",
    "FULL",
    "TASK_FILES",
    "TaskSpec",
    "folder_hash",
    "load_task",
    "parse_source",
]

KERNEL_FILE, REFERENCE_FILE, TOML_FILE = "kernel.py", "reference.py", "task.toml"
TASK_FILES = (KERNEL_FILE, REFERENCE_FILE, TOML_FILE)
FULL = "full"
"""The shape set of reference.py's own constants."""
DEFAULT_SEEDS = (0, 21, 42, 63, 84)  # AccelOpt's correctness seeds
DEFAULT_REL_TOL = 2e-5  # AccelOpt: relative L2 error, float32
DEFAULT_TIMEOUT_S = {FULL: 1800.0, "*": 120.0}
DEFAULT_MEMORY_MB = 8192
TASK_DTYPES = ("float32", "bfloat16", "float16")
TRITON_REL_TOL = {"float32": 1e-3, "bfloat16": 2e-2, "float16": 5e-3}
"""Default tolerances of Triton tasks: a float32 `tl.dot` runs in tf32 on the GPU (about 3e-4
relative error); bfloat16 operands land between 1e-3 and 1e-2."""
TRITON_SEEDS = (0, 21, 42)
ROOFLINE_KEYS = ("vec_flops", "mm_flops", "bytes")
MATMUL_DTYPES = ("float32", "bfloat16", "float16")
"""The precision whose TensorE peak the roofline uses (AccelOpt's tasks are all float32)."""


@dataclass(frozen=True)
class TaskSpec:
    """A validated task folder."""

    name: str
    path: Path
    kernel_source: str
    reference_source: str
    kernel_function: str
    constants: dict[str, Number]
    """reference.py's module-level constants: the `full` shape set."""
    shape_sets: dict[str, dict[str, Number]] = field(default_factory=dict)
    """Named overrides of constants (`small`, ...); `full` has none."""
    rel_tol: float = DEFAULT_REL_TOL
    seeds: tuple[int, ...] = DEFAULT_SEEDS
    roofline: dict[str, str] = field(default_factory=dict)
    matmul_dtype: str = "float32"
    """Which TensorE peak bounds the task's matmuls (see MATMUL_DTYPES)."""
    weight: float = 1.0
    backend: str = "nkisim"
    dtype: str = "float32"
    """The precision of the task's data (Triton tasks declare it)."""
    description: str = ""
    timeout_s: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_TIMEOUT_S))
    memory_mb: int = DEFAULT_MEMORY_MB
    strict_capacity: bool = False
    tunables: dict[str, list[Any]] = field(default_factory=dict)
    allow_torch_compute: bool = False
    """A Triton task whose run() may compute with PyTorch (by default torch only allocates,
    views and queries tensors there, and every computation runs in Triton kernels)."""
    content_hash: str = ""

    @property
    def dialect(self) -> str:
        """The kernel language (nkibench.dialects): the one its backend runs."""
        return dialect_of_backend(self.backend)

    @property
    def default_backend(self) -> str:
        """The backend that runs it anywhere: nkisim for NKI, triton (GPU or interpreter)."""
        return get_dialect(self.dialect).default_backend

    @property
    def shape_names(self) -> list[str]:
        return [FULL, *sorted(self.shape_sets)]

    def overrides(self, shapes: str) -> dict[str, Number]:
        if shapes == FULL:
            return {}
        if shapes not in self.shape_sets:
            known = ", ".join(self.shape_names)
            raise TaskError(f"{self.path / TOML_FILE}: no shape set {shapes!r} (known: {known})")
        return self.shape_sets[shapes]

    def shape_values(self, shapes: str) -> dict[str, Number]:
        """The constants of reference.py under a shape set: the set's values, and every
        constant derived from them recomputed (as the reference sees them when it runs)."""
        overrides = self.overrides(shapes)
        if not overrides:
            return dict(self.constants)
        return module_constants(ast.parse(self.reference_source), overrides)

    def timeout_for(self, shapes: str) -> float:
        return self.timeout_s.get(shapes, self.timeout_s.get("*", DEFAULT_TIMEOUT_S["*"]))

    def roofline_counts(self, shapes: str) -> dict[str, float]:
        """vec_flops, mm_flops and bytes under a shape set (what task.toml declares)."""
        values = self.shape_values(shapes)
        return {key: float(evaluate(expr, values)) for key, expr in self.roofline.items()}


def folder_hash(files: Mapping[str, bytes]) -> str:
    """The revision of a task folder: sha256 over its files' names and contents."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + len(files[name]).to_bytes(8, "big"))
        digest.update(files[name])
    return digest.hexdigest()


def parse_source(path: Path, raw: bytes) -> tuple[str, ast.Module]:
    """Decode and parse a Python file, naming the file and line of any problem."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TaskError(
            f"{path}: not UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start})"
        ) from None
    try:
        return text, ast.parse(text, filename=str(path))
    except SyntaxError as e:
        raise TaskError(f"{path} line {e.lineno}: SyntaxError: {e.msg}") from None


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}


def _kernel_function(path: Path, tree: ast.Module, dialect_name: str) -> str:
    functions = _functions(tree)
    names = get_dialect(dialect_name).entry_points
    for name in names:
        if name in functions:
            return name
    other = [s for s in tree.body if isinstance(s, ast.AsyncFunctionDef)]
    hint = " (it must not be async)" if other else ""
    raise TaskError(f"{path}: no module-level function named `{names[0]}`{hint}")


def _check_reference(path: Path, tree: ast.Module) -> None:
    functions = _functions(tree)
    for required in ("get_inputs", "forward"):
        if required not in functions:
            raise TaskError(f"{path}: no module-level function `{required}`")
    if functions["get_inputs"].args.args:
        raise TaskError(
            f"{path} line {functions['get_inputs'].lineno}: get_inputs() must take no arguments"
        )
    names = {name for s in tree.body for name in module_bindings(s)}
    for optional in ("transform_to_nki_inputs", "transform_nki_outputs"):
        if optional in names and optional not in functions:
            raise TaskError(f"{path}: `{optional}` must be a function")


_TOP_KEYS = (
    "name",
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
)


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
        for key in ("name", "description", "backend", "dtype", "kernel_function"):
            if key in self.data:
                if not isinstance(self.data[key], str):
                    raise self.fail(key, "must be a string")
                self.out[key] = self.data[key]
        backend = self.out.get("backend", "nkisim")
        if backend not in BACKENDS:
            raise self.fail("backend", f"must be one of {', '.join(BACKENDS)}")
        if self.out.get("dtype", "float32") not in TASK_DTYPES:
            raise self.fail("dtype", f"must be one of {', '.join(TASK_DTYPES)}")
        if backend == "triton":
            self._triton_defaults()
        if "allow_torch_compute" in self.data:
            allow = self.data["allow_torch_compute"]
            if not isinstance(allow, bool):
                raise self.fail("allow_torch_compute", "must be true or false")
            if allow and dialect_of_backend(backend) != "triton":
                raise self.fail(
                    "allow_torch_compute", "only a Triton task's run() can compute with PyTorch"
                )
            self.out["allow_torch_compute"] = allow
        if "weight" in self.data:
            self.out["weight"] = self.number("weight", self.data["weight"])
            if not self.out["weight"] > 0:
                raise self.fail("weight", "must be > 0")
        self._correctness()
        self._shapes()
        self._roofline()
        self._limits()
        self._tunables()
        return self.out

    def _triton_defaults(self) -> None:
        """A Triton task states its dtype and its roofline (nothing counts a PyTorch forward);
        its matmuls run at its dtype's rate, and its tolerance and seeds follow the dtype."""
        if "dtype" not in self.out:
            raise self.fail("dtype", "a Triton task must give its dtype (float32, bfloat16...)")
        roofline = self.data.get("roofline")
        if not isinstance(roofline, dict) or "bytes" not in roofline:
            raise self.fail("[roofline]", "a Triton task must give at least `bytes`")
        self.out["matmul_dtype"] = self.out["dtype"]
        self.out["rel_tol"] = TRITON_REL_TOL[self.out["dtype"]]
        self.out["seeds"] = TRITON_SEEDS

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
        for key, expression in roofline.items():
            if isinstance(expression, bool) or not isinstance(expression, str | int | float):
                raise self.fail(f"roofline.{key}", "must be a formula or a number")
            for overrides in [{}, *self.out["shape_sets"].values()]:
                try:
                    value = evaluate(str(expression), module_constants(self.reference, overrides))
                except UnsafeExpression as e:
                    raise self.fail(f"roofline.{key}", str(e)) from None
                if not (math.isfinite(value) and value >= 0):
                    raise self.fail(f"roofline.{key}", "must be a finite number ≥ 0")
        self.out["roofline"] = {key: str(value) for key, value in roofline.items()}

    def _limits(self) -> None:
        limits = self.table("limits", ("timeout_s", "memory_mb", "strict_capacity"))
        if "timeout_s" in limits:
            timeout = limits["timeout_s"]
            table = timeout if isinstance(timeout, dict) else {FULL: timeout, "*": timeout}
            seconds = {k: self.number(f"limits.timeout_s.{k}", v) for k, v in table.items()}
            if not all(v > 0 for v in seconds.values()):
                raise self.fail("limits.timeout_s", "must be > 0")
            self.out["timeout_s"] = {**DEFAULT_TIMEOUT_S, **seconds}
        if "memory_mb" in limits:
            memory = limits["memory_mb"]
            if isinstance(memory, bool) or not isinstance(memory, int) or memory < 256:
                raise self.fail("limits.memory_mb", "must be an integer ≥ 256")
            self.out["memory_mb"] = memory
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


def _read_toml(path: Path, reference: ast.Module) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise TaskError(f"{path}: not UTF-8") from None
    except tomllib.TOMLDecodeError as e:
        raise TaskError(f"{path}: {e}") from None
    return _TomlReader(path, data, reference).read()


def load_task(path: Path | str) -> TaskSpec:
    """Load and validate a task folder (parsing only: none of its code runs)."""
    folder = Path(path).resolve()
    if not folder.is_dir():
        raise TaskError(f"{folder}: not a directory")
    files: dict[str, bytes] = {}
    for file_name in TASK_FILES:
        file = folder / file_name
        if file.is_file():
            files[file_name] = file.read_bytes()
        elif file_name != TOML_FILE:
            raise TaskError(f"{folder}: missing {file_name}")
    kernel_source, kernel_tree = parse_source(folder / KERNEL_FILE, files[KERNEL_FILE])
    reference_source, reference_tree = parse_source(folder / REFERENCE_FILE, files[REFERENCE_FILE])
    _check_reference(folder / REFERENCE_FILE, reference_tree)
    constants = module_constants(reference_tree)
    settings = _read_toml(folder / TOML_FILE, reference_tree) if TOML_FILE in files else {}
    kernel_function: str = settings.pop("kernel_function", None) or _kernel_function(
        folder / KERNEL_FILE, kernel_tree, dialect_of_backend(settings.get("backend", "nkisim"))
    )
    if kernel_function not in _functions(kernel_tree):
        raise TaskError(f"{folder / KERNEL_FILE}: no module-level function `{kernel_function}`")
    task_name: str = settings.pop("name", folder.name)
    return TaskSpec(
        name=task_name,
        path=folder,
        kernel_source=kernel_source,
        reference_source=reference_source,
        kernel_function=kernel_function,
        constants=constants,
        content_hash=folder_hash(files),
        **settings,
    )
