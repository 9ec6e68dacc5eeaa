"""The allow-list check run on kernel source before any of it executes.

Kernels are written by LLMs and treated as untrusted. The check is the first of three
layers (then restricted builtins and a guarded import in the child, then the child's
scrubbed environment, resource limits and wall-clock kill). It refuses imports outside the
allow-list, the builtins that reach files, code or other objects' attributes by name, every
attribute starting with an underscore (the doors to `__class__.__subclasses__()`, frames and
globals), and numpy's file and pointer APIs.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from nkibench.errors import ErrorKind

__all__ = [
    "ALLOWED_MODULES",
    "FORBIDDEN_ATTRIBUTES",
    "FORBIDDEN_NAMES",
    "FORBIDDEN_NUMPY_ATTRIBUTES",
    "Violation",
    "check_source",
    "module_allowed",
    "violation_kind",
]

ALLOWED_MODULES = (
    "numpy",
    "math",
    "typing",
    "functools",
    "itertools",
    "neuronxcc",
    "neuronxcc.nki",
    "neuronxcc.nki.language",
    "neuronxcc.nki.isa",
    "neuronxcc.nki.typing",
    "nki",
    "nki.language",
    "nki.isa",
    "nki.typing",
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


def module_allowed(name: str) -> bool:
    return name in ALLOWED_MODULES


class _Checker(ast.NodeVisitor):
    def __init__(self, numpy_names: set[str]) -> None:
        self.violations: list[Violation] = []
        self.numpy_names = numpy_names
        self._receivers: set[int] = set()

    def _flag(self, node: ast.AST, problem: str) -> None:
        self.violations.append(Violation(getattr(node, "lineno", 0), problem))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if not module_allowed(alias.name):
                self._flag(node, f"import of {alias.name!r} is not allowed")
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self._flag(node, "relative imports are not allowed")
        elif node.module is None or not module_allowed(node.module):
            self._flag(node, f"import from {node.module!r} is not allowed")
        else:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                numpy_io = node.module == "numpy" and alias.name in FORBIDDEN_NUMPY_ATTRIBUTES
                if alias.name == "*":
                    self._flag(node, "`import *` is not allowed")
                elif alias.name.startswith("_") or numpy_io or alias.name in FORBIDDEN_ATTRIBUTES:
                    self._flag(node, f"import of {full!r} is not allowed")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in FORBIDDEN_NAMES:
            self._flag(node, f"`{node.id}` is not allowed in a kernel")
        elif node.id in self.numpy_names and id(node) not in self._receivers:
            self._flag(node, f"the numpy module `{node.id}` may only be used as {node.id}.<name>")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._receivers.add(id(node.value))
        on_numpy = isinstance(node.value, ast.Name) and node.value.id in self.numpy_names
        if node.attr.startswith("_"):
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


def _numpy_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.asname or a.name for a in node.names if a.name == "numpy"}
    return names


def violation_kind(violations: list[Violation]) -> ErrorKind:
    """A syntax error is a compile failure; anything else the check finds is a rejection."""
    return (
        "compile" if violations and violations[0].problem.startswith("SyntaxError") else "rejected"
    )


def check_source(source: str, filename: str = "kernel.py") -> list[Violation]:
    """The violations of the allow-list in a kernel's source (empty: allowed).

    A syntax error is reported as a violation too, so callers get one list to show.
    """
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as e:
        return [Violation(e.lineno or 0, f"SyntaxError: {e.msg}")]
    checker = _Checker(_numpy_names(tree))
    checker.visit(tree)
    return checker.violations
