"""Kernel languages: one record per dialect says everything that differs between them.

A task's dialect is the language its kernel.py is written in, read from its imports
(`detect_dialect`; task.toml's `dialect` overrides it). Everything that depends on it
reads this record: the task loader (the kernel's entry-point names), the static check and
the kernel loader (which modules a kernel may import, and which only as `module.<name>`; the
paths, attributes and host-side compute it may not use), the
comparison (whether the reference's output transform applies), nkisim (which shadow modules
stand in for the real package), and the agents (which prompt folder they read).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from nkibench.errors import TaskError
from nkibench.policy import triton_code as triton_policy
from nkibench.policy.nkisim_code import NKISIM_INTERNALS, NKISIM_INTERNALS_PROBLEM
from nkibench.targets import with_neuron_cores

__all__ = [
    "DIALECTS",
    "NKI",
    "NKI_LEGACY",
    "Dialect",
    "HostComputeGuard",
    "InternalAttributes",
    "check_target",
    "detect_dialect",
    "get_dialect",
    "needs_port",
]

COMMON_MODULES = ("math", "typing", "functools", "itertools")


@dataclass(frozen=True)
class HostComputeGuard:
    """What a kernel's host code (outside its device kernels) may not do with a tensor
    library's tensors, unless the task allows it to compute there (task.toml's
    allow_torch_compute): the methods that read tensor data where the kernel child's run-time
    guard cannot see it. What the library computes is decided there, op by op, as it runs
    (a branch that never runs computes nothing)."""

    library_name: str
    """What messages call it ("PyTorch")."""
    unseen_reads: frozenset[str]
    """Methods refused by name on any object: they read tensor data on the host without an
    operation the run-time guard sees (`.numpy()`, `.tolist()`)."""
    device_decorator: str
    """The decorator of device kernels ("triton.jit"), whose bodies the guard leaves alone."""
    hint: str
    """What to do instead, ending every message of the guard."""


@dataclass(frozen=True)
class InternalAttributes:
    """Attributes of the interpreter's own objects behind a dialect's tensors (not part of the
    language), refused on any object: reading them computes beside the interpreter, which then
    counts nothing."""

    names: frozenset[str]
    problem: str
    """Why one is refused, after its name in the message."""


@dataclass(frozen=True)
class Dialect:
    name: str
    language: str
    """What people call it."""
    entry_points: tuple[str, ...]
    """Kernel function names kernel.py may define, the preferred one first."""
    allowed_modules: tuple[str, ...]
    """What a kernel may import (the static check and the kernel loader refuse the rest)."""
    guarded_modules: tuple[str, ...]
    """Modules a kernel may only use as `module.<name>`, never pass around as values (a module
    held in a variable would hide its attributes from the static check)."""
    output_transform: bool
    """The reference may define AccelOpt's transform_nki_outputs, applied before comparing."""
    package_roots: tuple[str, ...]
    """Packages whose every submodule a kernel may reach through attributes (`np.random`,
    `tl.extra.cuda`); any other module it reaches (`typing.sys`) is refused."""
    shadow_front: str | None
    """"module:function" that installs nkisim's stand-ins for the dialect's modules (None:
    nkisim does not run this dialect)."""
    prompt_folder: str
    """The agents' prompt folder (agents/prompts/<folder>)."""
    default_backend: str
    """The backend that runs it on any host (an interpreter: nkisim, or Triton's)."""
    targets: tuple[str, ...] = ()
    """The Trainium generations it runs on (empty: not a Trainium language, no target)."""
    object_base: tuple[str, str] | None = None
    """(module, class) of the dialect's base for kernel-side objects, where kernels may set
    attributes on instances of their own classes (nkibench.sandbox.attributes); None: a kernel
    sets no attribute at all."""
    forbidden_paths: tuple[str, ...] = ()
    """Dotted paths a kernel may not use, with everything under them."""
    global_state_roots: tuple[str, ...] = ()
    """Packages whose `set_*` functions, at any depth, change the process's global state
    (refused)."""
    host_compute: HostComputeGuard | None = None
    """What the kernel's host code may not do with a tensor library's tensors (None: it has no
    host code)."""
    internals: InternalAttributes | None = None
    """The interpreter's own attributes a kernel may not read (None: none)."""
    module_subsets: Mapping[str, frozenset[str]] = field(
        default_factory=lambda: MappingProxyType({}), hash=False
    )
    """Allowed modules of which a kernel may use only the names listed (`inspect`)."""
    by_name_modules: tuple[str, ...] = ()
    """Packages whose modules a kernel may read with `getattr(module, "name"[, default])`."""


NKISIM = InternalAttributes(NKISIM_INTERNALS, NKISIM_INTERNALS_PROBLEM)


LEGACY_NKI_MODULES = (
    "numpy",
    "neuronxcc",
    "neuronxcc.nki",
    "neuronxcc.nki.language",
    "neuronxcc.nki.isa",
    "neuronxcc.nki.typing",
)
NKI_LEGACY = Dialect(
    name="nki-legacy",
    language="legacy NKI (neuronxcc.nki)",
    package_roots=("numpy", "neuronxcc"),
    targets=with_neuron_cores(2, 3),  # trn1, trn2
    entry_points=("kernel", "optimized_kernel"),
    allowed_modules=(*COMMON_MODULES, *LEGACY_NKI_MODULES),
    guarded_modules=(*COMMON_MODULES, *LEGACY_NKI_MODULES),
    output_transform=True,
    shadow_front="nkibench.nkisim.frontend:install_shadow_modules",
    prompt_folder="nki-legacy",
    default_backend="nkisim",
    internals=NKISIM,
)
NKI_MODULES = ("numpy", "nki", "nki.language", "nki.isa", "nki.typing")
NKI = Dialect(
    name="nki",
    language="NKI 0.3-0.7 (the nki package)",
    package_roots=("numpy", "nki"),
    targets=with_neuron_cores(3, 4),  # trn2, trn3
    entry_points=("kernel", "optimized_kernel"),
    allowed_modules=(*COMMON_MODULES, *NKI_MODULES),
    guarded_modules=(*COMMON_MODULES, *NKI_MODULES),
    output_transform=True,
    shadow_front="nkibench.nkisim.current.frontend:install_shadow_modules",
    prompt_folder="nki",
    default_backend="nkisim",
    object_base=("nki.language", "NKIObject"),  # NKI 0.7 configuration objects
    internals=NKISIM,
)
TRITON_MODULES = (
    "torch",
    "triton",
    "triton.language",
    "triton.language.extra",
    "triton.language.extra.libdevice",
    "triton.language.math",
)
TRITON = Dialect(
    name="triton",
    language="Triton (NVIDIA GPUs)",
    entry_points=("run",),
    allowed_modules=(*COMMON_MODULES, *triton_policy.STDLIB_MODULES, *TRITON_MODULES),
    guarded_modules=(*COMMON_MODULES, *triton_policy.STDLIB_MODULES, *TRITON_MODULES),
    package_roots=("torch", "triton"),
    targets=(),
    output_transform=False,
    shadow_front=None,
    prompt_folder="triton",
    default_backend="triton",
    forbidden_paths=triton_policy.FORBIDDEN_PATHS,
    global_state_roots=triton_policy.GLOBAL_STATE_ROOTS,
    module_subsets=MappingProxyType(triton_policy.MODULE_SUBSETS),
    by_name_modules=triton_policy.BY_NAME_MODULES,
    host_compute=HostComputeGuard(
        library_name="PyTorch",
        unseen_reads=triton_policy.UNSEEN_READ_METHODS,
        device_decorator=triton_policy.JIT_DECORATOR,
        hint=triton_policy.UNSEEN_READ_HINT,
    ),
)
DIALECTS: dict[str, Dialect] = {d.name: d for d in (NKI, NKI_LEGACY, TRITON)}


def get_dialect(name: str) -> Dialect:
    """The record of a dialect by name; an unknown name is a TaskError that lists them."""
    try:
        return DIALECTS[name]
    except KeyError:
        raise TaskError(
            f"no kernel dialect named {name!r}; the dialects are {', '.join(DIALECTS)}"
        ) from None


IMPORT_ROOTS = {"neuronxcc": NKI_LEGACY.name, "nki": NKI.name, "triton": TRITON.name}
"""The top-level package a kernel imports → the dialect it is written in."""


def detect_dialect(tree: ast.Module, where: str) -> str | None:
    """The dialect a kernel's imports name (None: they name none, as in a kernel that imports
    nothing). Two dialects in one kernel is a TaskError naming both and their lines: current
    NKI refuses any `neuronxcc.nki` inside a kernel since Neuron SDK 2.30."""
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            dialect = IMPORT_ROOTS.get(name.partition(".")[0])
            if dialect is not None:
                found.setdefault(dialect, node.lineno)
    if len(found) > 1:
        named = ", ".join(
            f"{get_dialect(d).language} (line {line})"
            for d, line in sorted(found.items(), key=lambda item: item[1])
        )
        raise TaskError(
            f"{where}: mixes kernel dialects: {named}; a kernel is written in one of them "
            "(to move a legacy kernel to current NKI: accelopt port TASK_DIR --to nki)"
        )
    return next(iter(found), None)


def needs_port(dialect_name: str, target: str, runs: tuple[str, ...] | frozenset[str]) -> bool:
    """Whether a task must be ported to current NKI before a backend that runs `runs` on
    `target` can serve it: a legacy kernel where legacy NKI cannot run (Trainium3, or a
    Neuron SDK of 2.30 and later) and current NKI can."""
    if dialect_name != NKI_LEGACY.name:
        return False
    legacy_runs = target in NKI_LEGACY.targets and NKI_LEGACY.name in runs
    return not legacy_runs and target in NKI.targets and NKI.name in runs


def check_target(dialect_name: str, target: str, where: str) -> None:
    """Refuse a target the dialect does not run on, naming both (current NKI supports
    Trainium2 and Trainium3 only; legacy NKI compiles on SDK <= 2.29, for trn1 and trn2)."""
    dialect = get_dialect(dialect_name)
    if dialect.targets and target not in dialect.targets:
        hint = (
            "; port it to current NKI with accelopt port TASK_DIR --to nki"
            if dialect is NKI_LEGACY
            else ""
        )
        raise TaskError(
            f"{where}: a {dialect.name} task ({dialect.language}) runs on "
            f"{' or '.join(dialect.targets)}, not {target}{hint}"
        )
