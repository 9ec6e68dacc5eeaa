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

A task folder is untrusted input to a process that runs for weeks, so reading it is bounded
before anything is parsed: each file has a size limit (FILE_LIMITS: 256 KiB for kernel.py and
reference.py, 64 KiB for task.toml; parsing Python costs about 450 bytes of memory per byte of
source, and the largest suite file is under 6 KiB), checked on the open file before it is read;
only regular files are read (a FIFO would block the reader for ever); and, given the watched
directory as `root`, a task file or folder that resolves outside it (a symlink out, or a
symlink loop) is refused, so that no outside file's content is ever copied into the log. A
task's name becomes a path component of the daemon's state (`revisions/<hash>/<task>`,
`library/<task>`), so it must be a plain identifier (TASK_NAME), and the numbers in [limits]
must be finite and sane (MAX_TIMEOUT_S, MAX_MEMORY_MB): a worker held for ever by one task is
a worker lost to all the others.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import errno
import hashlib
import math
import os
import re
import stat
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nkibench.backends import BACKENDS, backend_info, dialect_of_backend
from nkibench.dialects import DIALECTS, detect_dialect, get_dialect
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
    "FILE_LIMITS",
    "FULL",
    "MAX_MEMORY_MB",
    "MAX_TIMEOUT_S",
    "TASK_FILES",
    "TASK_NAME",
    "TaskSpec",
    "defined_function",
    "folder_hash",
    "load_task",
    "name_problem",
    "parse_source",
    "read_task_files",
    "with_imports_of",
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
FILE_LIMITS = {KERNEL_FILE: 256 * 1024, REFERENCE_FILE: 256 * 1024, TOML_FILE: 64 * 1024}
"""Bytes a task file may hold: 40x the largest suite file, and about 120 MB of parser memory
at most (a 5 MB kernel.py took 2.26 GB and 35 s to parse inside the daemon)."""
TASK_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}")
"""A task name (fullmatch): ASCII letters, digits, `_`, `-` and `.`, not leading (no `..`,
no hidden file), at most 64 characters. It names folders of the daemon's state."""
MAX_TIMEOUT_S = 6 * 3600.0
"""The longest [limits] timeout_s: a full-shape profile takes minutes; six hours is a typo or
an attempt to hold a worker for ever."""
MAX_MEMORY_MB = 1024 * 1024
"""The largest [limits] memory_mb (1 TiB of address space, half the largest Trainium host)."""


def name_problem(name: str) -> str | None:
    """Why `name` cannot be a task's name, or None if it can."""
    if TASK_NAME.fullmatch(name):
        return None
    return (
        f"{name!r} is not a task name: use at most 64 ASCII letters, digits, `_`, `-` and `.` "
        "(not leading)"
    )


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
    dialect: str = "nki-legacy"
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

    def roofline_counts(
        self, shapes: str, overrides: Mapping[str, Number] | None = None
    ) -> dict[str, float]:
        """vec_flops, mm_flops and bytes under a shape set (what task.toml declares), with
        some of its values replaced by `overrides`."""
        values = {**self.shape_values(shapes), **(overrides or {})}
        return {key: float(evaluate(expr, values)) for key, expr in self.roofline.items()}


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


def folder_hash(files: Mapping[str, bytes]) -> str:
    """The revision of a task folder: sha256 over its files' names and contents."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + len(files[name]).to_bytes(8, "big"))
        digest.update(files[name])
    return digest.hexdigest()


def _size(count: int) -> str:
    value, unit = (count / 1024**2, "MiB") if count >= 1024**2 else (count / 1024, "KiB")
    return f"{value:.1f}".removesuffix(".0") + f" {unit}"


def _inside(path: str, root: Path) -> bool:
    return path == str(root) or path.startswith(str(root) + os.sep)


def _link_text(path: Path) -> str:
    with contextlib.suppress(OSError):
        return os.readlink(path)
    return "?"


def _check_folder(folder: Path, root: Path) -> None:
    """Refuse a task folder that is a symlink leading out of `root`, or nowhere."""
    if not folder.is_symlink():
        return
    target = _link_text(folder)
    try:
        real = folder.resolve(strict=True)
    except FileNotFoundError:
        raise TaskError(f"{folder}: a symlink to {target}, which does not exist") from None
    except (OSError, RuntimeError):  # RuntimeError: Python 3.11's symlink loop
        raise TaskError(f"{folder}: a symlink loop ({folder} -> {target})") from None
    if not _inside(str(real), root):
        raise TaskError(f"{folder}: a symlink to {real}, outside the watched directory {root}")


def _read_file(path: Path, limit: int, root: Path | None) -> bytes | None:
    """The file's bytes (None: no such file), read through one descriptor that was checked
    first: where it really is, that it is a regular file, and its size."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        if path.is_symlink():
            raise TaskError(
                f"{path}: a symlink to {_link_text(path)}, which does not exist"
            ) from None
        return None
    except PermissionError:
        where = path if os.access(path.parent, os.X_OK) else path.parent  # chmod 000 folder
        raise TaskError(f"{where}: permission denied (the daemon cannot read it)") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise TaskError(f"{path}: a symlink loop ({path} -> {_link_text(path)})") from None
        raise TaskError(f"{path}: cannot be read: {e.strerror}") from None
    try:
        if root is not None:
            try:
                real = os.readlink(f"/proc/self/fd/{fd}")  # the file opened, not a path
            except OSError:
                real = os.path.realpath(path)
            if not _inside(real, root):
                raise TaskError(
                    f"{path}: a symlink to {real}, outside the watched directory {root}"
                )
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise TaskError(f"{path}: not a regular file")
        if status.st_size > limit:
            raise TaskError(
                f"{path}: {_size(status.st_size)} ({status.st_size} bytes), over the "
                f"{_size(limit)} limit of {path.name}"
            )
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            try:
                chunk = os.read(fd, min(left, 1 << 16))
            except OSError as e:
                raise TaskError(f"{path}: cannot be read: {e.strerror}") from None
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:
            raise TaskError(f"{path}: grew over the {_size(limit)} limit of {path.name}")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_task_files(folder: Path, *, root: Path | None = None) -> dict[str, bytes]:
    """The task files of a folder as they are now (missing ones absent), each within its size
    limit; with `root` (the watched directory), only what lies inside it. Raises TaskError
    for a file that cannot be taken, FileNotFoundError or NotADirectoryError if the folder is
    not there."""
    if root is not None:
        root = root.resolve()
        _check_folder(folder, root)
    if not folder.is_dir():
        if folder.exists() or folder.is_symlink():
            raise NotADirectoryError(str(folder))
        raise FileNotFoundError(str(folder))
    files = {}
    for name in TASK_FILES:
        content = _read_file(folder / name, FILE_LIMITS[name], root)
        if content is not None:
            files[name] = content
    return files


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
        for key in ("name", "description", "backend", "dtype", "kernel_function", "dialect"):
            if key in self.data:
                if not isinstance(self.data[key], str):
                    raise self.fail(key, "must be a string")
                self.out[key] = self.data[key]
        if "name" in self.out:
            problem = name_problem(self.out["name"])
            if problem is not None:
                raise self.fail("name", problem)
        backend = self.out.get("backend", "nkisim")
        if backend not in BACKENDS:
            raise self.fail("backend", f"must be one of {', '.join(BACKENDS)}")
        if self.out.get("dialect", "nki") not in DIALECTS:
            raise self.fail("dialect", f"must be one of {', '.join(DIALECTS)}")
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
            if not (math.isfinite(self.out["weight"]) and self.out["weight"] > 0):
                raise self.fail("weight", "must be a finite number > 0")
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


def _task_dialect(folder: Path, kernel_tree: ast.Module, settings: dict[str, Any]) -> str:
    """The task's dialect (task.toml's `dialect` wins over kernel.py's imports), which its
    backend must run."""
    backend = settings.get("backend", "nkisim")
    detected = detect_dialect(kernel_tree, str(folder / KERNEL_FILE))
    dialect: str = settings.pop("dialect", None) or detected or dialect_of_backend(backend)
    runs = backend_info(backend).dialects
    if dialect not in runs:
        source = "task.toml's dialect" if detected != dialect else "its imports"
        raise TaskError(
            f"{folder / TOML_FILE}: backend: the kernel is {get_dialect(dialect).language} "
            f"({source}), and the {backend} backend runs {', '.join(runs)} kernels"
            + ('; set backend = "triton"' if dialect == "triton" else "")
        )
    return dialect


def _read_toml(path: Path, raw: bytes, reference: ast.Module) -> dict[str, Any]:
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise TaskError(f"{path}: not UTF-8") from None
    except tomllib.TOMLDecodeError as e:
        raise TaskError(f"{path}: {e}") from None
    return _TomlReader(path, data, reference).read()


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
    constants = module_constants(reference_tree)
    settings = (
        _read_toml(folder / TOML_FILE, files[TOML_FILE], reference_tree)
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
    return TaskSpec(
        name=task_name,
        path=folder,
        kernel_source=kernel_source,
        reference_source=reference_source,
        kernel_function=kernel_function,
        constants=constants,
        content_hash=folder_hash(files),
        dialect=dialect,
        **settings,
    )
