"""The task format: what a user drops into the watched directory, loaded and validated.

An NKI task (the default):
    <task>/kernel.py      an @nki.jit function named `kernel` (AccelOpt's `optimized_kernel`
                          is accepted too)
    <task>/reference.py   module-level shape constants, get_inputs() using np.random,
                          forward(*inputs); optional transform_to_nki_inputs(inputs) and
                          transform_nki_outputs(kernel_result, reference_result), and
                          roofline_counts(*inputs), counts of the data for task.toml's
                          roofline formulas (nkibench.task.counts)
    <task>/task.toml      optional: tolerance, seeds, shape sets, roofline counts, limits,
                          weight, tunables, the workloads' file
    <task>/workloads.jsonl  optional: FlashInfer-Bench Workloads and the safetensors files
                          they name (nkibench.task.workloads), each a shape set `w<index>`

A Triton task (`backend = "triton"` in task.toml, which is then required with `dtype` and
the roofline's counts):
    <task>/kernel.py      `run(*inputs)`: launches @triton.jit kernels, returns the outputs;
                          torch there only allocates, views and queries tensors unless
                          task.toml says `allow_torch_compute = true`
    <task>/reference.py   module-level shape constants, get_inputs() returning torch tensors
                          (torch.manual_seed is set per seed), forward(*inputs) in PyTorch

Either kind may name its inputs and outputs (get_inputs() and forward() returning dicts,
nkibench.sandbox.values), declare an output's dtype and tolerance (task.toml's
`[outputs.<name>]`, nkibench.policy.tolerance) and mark inputs fixed across seeds
(reference.py's FIXED_INPUTS, a literal list read here).

Loading never runs the task's code: it parses it. Everything wrong is reported as a
TaskError naming the file and the problem. Reading the folder is bounded and symlink-safe
(nkibench.task.files); task.toml is validated key by key (nkibench.task.toml).
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nkibench import python_ast
from nkibench.backends import DEFAULT_BACKEND, backend_info, dialect_of_backend
from nkibench.dialects import NKI_LEGACY, detect_dialect, get_dialect
from nkibench.errors import TaskError
from nkibench.policy.tolerance import Tolerance
from nkibench.task.counts import COUNTS_FUNCTION
from nkibench.task.files import (
    KERNEL_FILE,
    REFERENCE_FILE,
    TOML_FILE,
    VALUE_NAME,
    folder_hash,
    name_problem,
    read_task_files,
)
from nkibench.task.safe_eval import (
    Number,
    UnsafeExpression,
    evaluate,
    module_bindings,
    module_constants,
)
from nkibench.task.toml import (
    DEFAULT_DISK_MB,
    DEFAULT_MEMORY_MB,
    DEFAULT_REL_TOL,
    DEFAULT_SEEDS,
    DEFAULT_TIMEOUT_S,
    FULL,
    read_toml,
)
from nkibench.task.workloads import WORKLOADS_FILE, Workload, check_data_files, parse_workloads

__all__ = [
    "TaskSpec",
    "defined_function",
    "load_task",
    "parse_source",
    "with_imports_of",
]


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
    """Named overrides of constants (`small`, ..., and each workload's axes: `w0`, `w1`...);
    `full` has none."""
    rel_tol: float = DEFAULT_REL_TOL
    seeds: tuple[int, ...] = DEFAULT_SEEDS
    roofline: dict[str, str] = field(default_factory=dict)
    matmul_dtype: str = "float32"
    """Which TensorE peak bounds the task's matmuls (see MATMUL_DTYPES)."""
    weight: float = 1.0
    backend: str = DEFAULT_BACKEND
    dtype: str = "float32"
    """The precision of the task's data (Triton tasks declare it)."""
    description: str = ""
    timeout_s: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_TIMEOUT_S))
    timeout_declared: frozenset[str] = frozenset()
    """The shape sets (or "*", all of them) whose limit task.toml sets: there it is the kernel's
    limit as written, never shortened by the reference's measured time."""
    memory_mb: int = DEFAULT_MEMORY_MB
    disk_mb: int = DEFAULT_DISK_MB
    """What one child's folders (its own and those it writes) may hold on disk together."""
    strict_capacity: bool = False
    tunables: dict[str, list[Any]] = field(default_factory=dict)
    allow_torch_compute: bool = False
    """A Triton task whose run() may compute with PyTorch (by default torch only allocates,
    views and queries tensors there, and every computation runs in Triton kernels)."""
    outputs: dict[str, Tolerance] = field(default_factory=dict)
    """task.toml's `[outputs.<name>]`: an output's dtype and tolerance, by its name or position
    (nkibench.policy.tolerance); the others are held to `rel_tol`."""
    fixed_inputs: tuple[str | int, ...] = ()
    """reference.py's FIXED_INPUTS: the inputs (by name or position) drawn once, under a fixed
    seed, and the same in every seed's inputs (index arrays, page tables)."""
    content_hash: str = ""
    workloads: tuple[Workload, ...] = ()
    """The task's workloads (nkibench.task.workloads): each a shape set of its own, named
    `w<index>`; profiling `full` means every one of them."""
    workload_files: dict[str, str] = field(default_factory=dict)
    """The workloads' file and the safetensors files it names: path in the folder -> sha256
    (a copy made to run them is checked against it)."""
    dialect: str = NKI_LEGACY.name
    """The kernel language (nkibench.dialects): from kernel.py's imports, or task.toml's
    `dialect`, or (a kernel importing no kernel package) the one its backend runs first."""

    @property
    def default_backend(self) -> str:
        """The backend that runs it anywhere: nkisim for NKI, triton (GPU or interpreter)."""
        return get_dialect(self.dialect).default_backend

    def with_kernel(self, source: str, dialect: str) -> TaskSpec:
        """The task running another kernel written in `dialect` (a port to current NKI): the
        same reference, seeds, shapes and revision."""
        entry = defined_function(source, get_dialect(dialect).entry_points)
        return dataclasses.replace(
            self,
            dialect=dialect,
            kernel_source=source,
            kernel_function=entry or self.kernel_function,
        )

    @property
    def smallest_shapes(self) -> str:
        """The shape set a quick check uses: `small` where the task defines it, else full."""
        return "small" if "small" in self.shape_sets else FULL

    @property
    def shape_names(self) -> list[str]:
        named = {w.name for w in self.workloads}
        declared = sorted(set(self.shape_sets) - named)
        return [FULL, *declared, *(w.name for w in self.workloads)]

    def workload(self, shapes: str) -> Workload | None:
        """The workload a shape set is, if it is one."""
        return next((w for w in self.workloads if w.name == shapes), None)

    def workload_inputs(self, shapes: str) -> dict[str, dict[str, Any]]:
        """A workload's inputs, as the reference's child is told of them (its scalar and
        safetensors inputs are fixed across seeds); empty for any other shape set."""
        workload = self.workload(shapes)
        return workload.request if workload is not None else {}

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
        return module_constants(python_ast.parse(self.reference_source), overrides)

    def _limit_key(self, shapes: str) -> str:
        """Whose time limit a shape set has: a workload without one of its own has full's
        (a workload is a real size, as full is)."""
        if self.workload(shapes) is not None and shapes not in self.timeout_s:
            return FULL
        return shapes

    def timeout_for(self, shapes: str) -> float:
        key = self._limit_key(shapes)
        return self.timeout_s.get(key, self.timeout_s.get("*", DEFAULT_TIMEOUT_S["*"]))

    def declares_timeout(self, shapes: str) -> bool:
        """Whether task.toml sets the time limit of this shape set (itself, or for all)."""
        key = self._limit_key(shapes)
        return key in self.timeout_declared or (
            "*" in self.timeout_declared and key not in self.timeout_s
        )

    def roofline_counts(
        self,
        shapes: str,
        overrides: Mapping[str, Number] | None = None,
        counts: Mapping[str, float] | None = None,
    ) -> dict[str, float]:
        """vec_flops, mm_flops and bytes under a shape set (what task.toml declares), with
        some of its values replaced by `overrides`, and reference.py's `counts` (its
        roofline_counts(), combined over seeds: nkibench.task.counts) as names of their own.
        A formula these leave without a value (a name neither gives, a division by a count of
        zero) or a value that is no finite number >= 0 is the task's error (TaskError)."""
        values = {**self.shape_values(shapes), **(overrides or {})}
        given = dict(counts or {})
        clash = sorted(set(given) & set(values))
        if clash:
            raise TaskError(
                f"{self.path / REFERENCE_FILE}: {COUNTS_FUNCTION}() returns "
                f"{', '.join(clash)}, the name(s) of shape constants: name the counts otherwise"
            )
        found: dict[str, float] = {}
        for key, expression in self.roofline.items():
            where = f"{self.path / TOML_FILE}: roofline.{key}"
            try:
                value = float(evaluate(expression, values | given))
            except UnsafeExpression as e:
                returned = ", ".join(given) or "no names"
                hint = f" ({REFERENCE_FILE}'s {COUNTS_FUNCTION}() gave {returned})"
                hint = hint if self.computes_counts else ""
                raise TaskError(f"{where}: {e}{hint}") from None
            if not (math.isfinite(value) and value >= 0):
                raise TaskError(f"{where}: {value} is not a finite number >= 0 (counts: {given})")
            found[key] = value
        return found

    @property
    def computes_counts(self) -> bool:
        """Whether reference.py defines roofline_counts() (nkibench.task.counts)."""
        return defined_function(self.reference_source, (COUNTS_FUNCTION,)) is not None


def defined_function(source: str, names: Iterable[str]) -> str | None:
    """The first of `names` that `source` defines at top level, found by text so that source
    which does not parse (an LLM's answer, before the fixer) is still read."""
    return next((n for n in names if re.search(rf"^def {re.escape(n)}\s*\(", source, re.M)), None)


def with_imports_of(code: str, parent: str) -> str:
    """`code`, headed by `parent`'s import lines where it has none of its own (a kernel body
    written to run after its parent's imports: an LLM's answer, AccelOpt's samples)."""
    if re.search(r"^(import|from) ", code, re.M):
        return code
    header = [line for line in parent.splitlines() if line.startswith(("import ", "from "))]
    return "\n".join(header) + "\n\n\n" + code


def parse_source(path: Path, raw: bytes) -> tuple[str, ast.Module]:
    """Decode and parse a Python file, naming the file and line of any problem."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TaskError(
            f"{path}: not UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start})"
        ) from None
    try:
        return text, python_ast.parse(text, filename=str(path))
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


FIXED_INPUTS = "FIXED_INPUTS"
MAX_FIXED = 1024


def _fixed_inputs(path: Path, tree: ast.Module) -> tuple[str | int, ...]:
    """reference.py's FIXED_INPUTS: a literal list (or tuple) of input names (get_inputs()
    returning a dict) or positions (a list), read without running the module."""
    found: tuple[str | int, ...] = ()
    for statement in tree.body:
        if FIXED_INPUTS not in module_bindings(statement):
            continue
        where = f"{path} line {statement.lineno}: {FIXED_INPUTS}"
        if not (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            raise TaskError(f"{where}: assign it alone: FIXED_INPUTS = ['name', ...]")
        try:
            value = ast.literal_eval(statement.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            value = None
        if not (
            isinstance(value, list | tuple)
            and len(value) <= MAX_FIXED
            and all(
                (isinstance(v, str) and VALUE_NAME.fullmatch(v))
                or (isinstance(v, int) and not isinstance(v, bool) and v >= 0)
                for v in value
            )
            and len(set(value)) == len(value)
        ):
            raise TaskError(
                f"{where}: must be a literal list of distinct input names (identifiers, as "
                "get_inputs()'s dict names them) or positions (0, 1, ...)"
            )
        found = tuple(value)
    return found


def _workloads(
    folder: Path,
    files: Mapping[str, bytes],
    declared: str | None,
    reference: ast.Module,
    settings: dict[str, Any],
) -> dict[str, Any]:
    """The task's workloads (TaskSpec's fields by name), checked against reference.py: their
    axes are its constants, their shape sets' names are free, and the roofline's formulas
    hold under each of them."""
    name = declared or WORKLOADS_FILE
    if name not in files:
        if declared is not None:
            raise TaskError(
                f"{folder / TOML_FILE}: workloads.file: {name}: no such file in the task folder"
            )
        return {}
    path = folder / name
    workloads = parse_workloads(path, files[name])
    if not workloads:
        raise TaskError(f"{path}: holds no workload (remove the file, or give it a line)")
    check_data_files(path, workloads, dict(files))
    constants = module_constants(reference)
    shape_sets: dict[str, dict[str, Number]] = settings.setdefault("shape_sets", {})
    for workload in workloads:
        where = f"{path} line {workload.line}"
        for axis in workload.axes:
            if axis not in constants:
                raise TaskError(
                    f"{where}: axes.{axis}: reference.py has no module-level constant {axis}"
                )
        if workload.name in shape_sets:
            raise TaskError(
                f"{folder / TOML_FILE}: [shapes.{workload.name}]: `w<index>` names the "
                f"workloads of {name}; rename the shape set"
            )
        values = module_constants(reference, workload.axes)
        for key, expression in settings.get("roofline", {}).items():
            try:
                value = evaluate(expression, values)
            except (UnsafeExpression, ArithmeticError) as e:
                raise TaskError(f"{where}: roofline.{key} under its axes: {e}") from None
            if not (math.isfinite(value) and value >= 0):
                raise TaskError(f"{where}: roofline.{key} under its axes is {value!r}, not ≥ 0")
        shape_sets[workload.name] = dict(workload.axes)
    kept = [name, *sorted({p for w in workloads for p in w.data_files})]
    return {
        "workloads": tuple(workloads),
        "workload_files": {p: hashlib.sha256(files[p]).hexdigest() for p in kept},
    }


def _task_dialect(folder: Path, kernel_tree: ast.Module, settings: dict[str, Any]) -> str:
    """The task's dialect (task.toml's `dialect` wins over kernel.py's imports), which its
    backend must run."""
    backend = settings.get("backend", DEFAULT_BACKEND)
    detected = detect_dialect(kernel_tree, str(folder / KERNEL_FILE))
    dialect: str = settings.pop("dialect", None) or detected or dialect_of_backend(backend)
    runs = backend_info(backend).dialects
    if dialect not in runs:
        source = "task.toml's dialect" if detected != dialect else "its imports"
        record = get_dialect(dialect)
        raise TaskError(
            f"{folder / TOML_FILE}: backend: the kernel is {record.language} ({source}), and "
            f"the {backend} backend runs {', '.join(runs)} kernels; set backend = "
            f'"{record.default_backend}"'
        )
    return dialect


def load_task(
    path: Path | str, *, root: Path | None = None, files: Mapping[str, bytes] | None = None
) -> TaskSpec:
    """Load and validate a task folder (parsing only: none of its code runs).

    `root`: the watched directory the folder must stay inside (read_task_files); `files`: the
    folder's files as the caller read them, so that what is validated is exactly what the
    caller records."""
    folder = Path(path).absolute() if root is not None else Path(path).resolve()
    if files is None:
        try:
            files = read_task_files(folder, root=root)
        except (FileNotFoundError, NotADirectoryError):
            raise TaskError(f"{folder}: not a directory") from None
    files = dict(files)
    for file_name in (KERNEL_FILE, REFERENCE_FILE):
        if file_name not in files:
            raise TaskError(f"{folder}: missing {file_name}")
    kernel_source, kernel_tree = parse_source(folder / KERNEL_FILE, files[KERNEL_FILE])
    reference_source, reference_tree = parse_source(folder / REFERENCE_FILE, files[REFERENCE_FILE])
    _check_reference(folder / REFERENCE_FILE, reference_tree)
    fixed_inputs = _fixed_inputs(folder / REFERENCE_FILE, reference_tree)
    constants = module_constants(reference_tree)
    settings = (
        read_toml(folder / TOML_FILE, files[TOML_FILE], reference_tree)
        if TOML_FILE in files
        else {}
    )
    dialect = _task_dialect(folder, kernel_tree, settings)
    kernel_function: str = settings.pop("kernel_function", None) or _kernel_function(
        folder / KERNEL_FILE, kernel_tree, dialect
    )
    if kernel_function not in _functions(kernel_tree):
        raise TaskError(f"{folder / KERNEL_FILE}: no module-level function `{kernel_function}`")
    if "name" not in settings:
        problem = name_problem(folder.name)
        if problem is not None:
            raise TaskError(
                f"{folder}: the folder's name is its task's name, and {problem}; rename the "
                f"folder or give {TOML_FILE} a `name`"
            )
    task_name: str = settings.pop("name", folder.name)
    settings |= _workloads(
        folder, files, settings.pop("workloads_file", None), reference_tree, settings
    )
    return TaskSpec(
        name=task_name,
        path=folder,
        kernel_source=kernel_source,
        reference_source=reference_source,
        kernel_function=kernel_function,
        constants=constants,
        content_hash=folder_hash(files),
        dialect=dialect,
        fixed_inputs=fixed_inputs,
        **settings,
    )
