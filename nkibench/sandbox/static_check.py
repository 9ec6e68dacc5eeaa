"""The allow-list check run on kernel source before any of it executes.

Kernels are written by LLMs and treated as untrusted. The check is the first of three
layers (then restricted builtins and a guarded import in the child, then the child's
scrubbed environment, resource limits and wall-clock kill). It refuses imports outside the
allow-list, the builtins that reach files, code or other objects' attributes by name, every
attribute starting with an underscore (the doors to `__class__.__subclasses__()`, frames and
globals), and numpy's file and pointer APIs.

Triton kernels (the `triton` dialect) may import torch and triton instead of NKI; torch's and
triton's doors to files, other processes, foreign code, other streams and the autotuner are
refused by their full dotted path, and these modules may only be used as `module.<name>`, so
that no alias escapes the check.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from nkibench.dialects import get_dialect
from nkibench.errors import ErrorKind

__all__ = [
    "FORBIDDEN_ATTRIBUTES",
    "FORBIDDEN_NAMES",
    "FORBIDDEN_NUMPY_ATTRIBUTES",
    "FORBIDDEN_PATHS",
    "Violation",
    "check_source",
    "module_allowed",
    "violation_kind",
]

FORBIDDEN_PATHS = (
    # files, pickles, processes, foreign code, global state of the process
    "torch.load",
    "torch.save",
    "torch.from_file",
    "torch.hub",
    "torch.utils",
    "torch.library",
    "torch.ops",
    "torch.classes",
    "torch.package",
    "torch.multiprocessing",
    "torch.distributed",
    "torch.jit",
    "torch.compile",
    "torch.backends",
    "torch.set_default_device",
    "torch.set_default_dtype",
    "torch.manual_seed",
    "torch.seed",
    "torch.set_rng_state",
    "torch.random",
    "torch.cuda.set_device",
    "torch.cuda.manual_seed",
    "torch.cuda.memory",
    "torch.cuda.empty_cache",
    # work outside the stream the harness times
    "torch.cuda.Stream",
    "torch.cuda.stream",
    "torch.cuda.set_stream",
    "torch.cuda.ExternalStream",
    "torch.cuda.graph",
    "torch.cuda.CUDAGraph",
    "torch.cuda.Event",
    "torch.cuda.synchronize",
    "torch.Stream",
    # the compiler's and the runtime's internals, the autotuner (timing runs of its own)
    "triton.runtime",
    "triton.compiler",
    "triton.testing",
    "triton.tools",
    "triton.backends",
    "triton.knobs",
    "triton.autotune",
    "triton.Config",
    "triton.heuristics",
    # removed from Triton 3.9 (say so before the kernel fails on the GPU host)
    "triton.language.make_block_ptr",
    "triton.language.advance",
    "triton.language.make_tensor_descriptor",
)

FORBIDDEN_NAMES = frozenset(
    {
        "__import__",
        "__builtins__",
        "__loader__",
        "__spec__",
        "open",
        "eval",
        "exec",
        "compile",
        "globals",
        "locals",
        "vars",
        "getattr",
        "setattr",
        "delattr",
        "input",
        "breakpoint",
        "help",
        "exit",
        "quit",
        "memoryview",
    }
)

# numpy's ways to files, pickles, pointers and foreign code: refused on the numpy module.
FORBIDDEN_NUMPY_ATTRIBUTES = frozenset(
    {
        "load",
        "save",
        "savez",
        "savez_compressed",
        "savetxt",
        "loadtxt",
        "genfromtxt",
        "fromfile",
        "fromregex",
        "memmap",
        "DataSource",
        "ctypeslib",
        "lib",
        "testing",
        "f2py",
        "distutils",
        "show_config",
        "show_runtime",
        "get_include",
    }
)
# ndarray methods reaching files or raw pointers: refused on any object.
FORBIDDEN_ATTRIBUTES = frozenset({"tofile", "dump", "dumps", "ctypes", "open_memmap"})


@dataclass(frozen=True)
class Violation:
    line: int
    problem: str

    def render(self, filename: str) -> str:
        return f"{filename} line {self.line}: {self.problem}"


def module_allowed(name: str, dialect_name: str = "nki") -> bool:
    return name in get_dialect(dialect_name).allowed_modules


def _forbidden_path(path: str) -> str | None:
    for forbidden in FORBIDDEN_PATHS:
        if path == forbidden or path.startswith(forbidden + "."):
            return forbidden
    return None


class _Checker(ast.NodeVisitor):
    def __init__(self, dialect: str, aliases: dict[str, str]) -> None:
        self.violations: list[Violation] = []
        self.dialect = dialect
        self.aliases = aliases
        """Names bound to guarded modules → the module's dotted name."""
        self._receivers: set[int] = set()

    def _flag(self, node: ast.AST, problem: str) -> None:
        self.violations.append(Violation(getattr(node, "lineno", 0), problem))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if not module_allowed(alias.name, self.dialect):
                self._flag(node, f"import of {alias.name!r} is not allowed")
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self._flag(node, "relative imports are not allowed")
        elif node.module is None or not module_allowed(node.module, self.dialect):
            self._flag(node, f"import from {node.module!r} is not allowed")
        else:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                numpy_io = node.module == "numpy" and alias.name in FORBIDDEN_NUMPY_ATTRIBUTES
                if alias.name == "*":
                    self._flag(node, "`import *` is not allowed")
                elif (
                    alias.name.startswith("_")
                    or numpy_io
                    or alias.name in FORBIDDEN_ATTRIBUTES
                    or _forbidden_path(full)
                ):
                    self._flag(node, f"import of {full!r} is not allowed")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in FORBIDDEN_NAMES:
            self._flag(node, f"`{node.id}` is not allowed in a kernel")
        elif (
            node.id in self.aliases
            and id(node) not in self._receivers
            and not isinstance(node.ctx, ast.Store)
        ):
            module = self.aliases[node.id]
            self._flag(
                node, f"the {module} module `{node.id}` may only be used as {node.id}.<name>"
            )
        self.generic_visit(node)

    def _dotted(self, node: ast.Attribute) -> str | None:
        """`tl.make_block_ptr` → "triton.language.make_block_ptr" (None: not on a module)."""
        parts = [node.attr]
        value = node.value
        while isinstance(value, ast.Attribute):
            parts.append(value.attr)
            value = value.value
        if isinstance(value, ast.Name) and value.id in self.aliases:
            return ".".join([self.aliases[value.id], *reversed(parts)])
        return None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._receivers.add(id(node.value))
        on_numpy = isinstance(node.value, ast.Name) and self.aliases.get(node.value.id) == "numpy"
        path = self._dotted(node)
        forbidden = _forbidden_path(path) if path else None
        if path and isinstance(node.ctx, ast.Store | ast.Del):
            self._flag(
                node, f"`{path}` may not be replaced: a kernel leaves its modules as they are"
            )
        elif forbidden and path == forbidden:
            self._flag(node, f"`{forbidden}` is not allowed in a kernel")
        elif node.attr.startswith("_"):
            self._flag(node, f"attribute `.{node.attr}` is not allowed (no underscore names)")
        elif node.attr in FORBIDDEN_ATTRIBUTES or (
            on_numpy and node.attr in FORBIDDEN_NUMPY_ATTRIBUTES
        ):
            self._flag(node, f"`.{node.attr}` (files, pickles or pointers) is not allowed")
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        for name in (node.name, *(a.arg for a in node.args.args + node.args.kwonlyargs)):
            if name in FORBIDDEN_NAMES:
                self._flag(node, f"`{name}` is not allowed in a kernel")
        self.generic_visit(node)


def _module_aliases(tree: ast.Module, dialect_name: str) -> dict[str, str]:
    """Names bound to guarded modules: `import torch`, `import triton.language as tl`,
    `from triton import language as tl`."""
    guarded = get_dialect(dialect_name).guarded_modules
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in guarded:
                    # `import triton.language` binds `triton`; `import ... as x`, the module
                    root = a.name.split(".")[0]
                    aliases[a.asname or root] = a.name if a.asname else root
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                if full in guarded:
                    aliases[a.asname or a.name] = full
    return aliases


def violation_kind(violations: list[Violation]) -> ErrorKind:
    """A syntax error is a compile failure; anything else the check finds is a rejection."""
    return (
        "compile" if violations and violations[0].problem.startswith("SyntaxError") else "rejected"
    )


def check_source(source: str, filename: str = "kernel.py", dialect: str = "nki") -> list[Violation]:
    """The violations of the allow-list in a kernel's source (empty: allowed).

    A syntax error is reported as a violation too, so callers get one list to show.
    """
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as e:
        return [Violation(e.lineno or 0, f"SyntaxError: {e.msg}")]
    checker = _Checker(dialect, _module_aliases(tree, dialect))
    checker.visit(tree)
    return checker.violations
