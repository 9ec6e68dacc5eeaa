"""The kernel's attribute chains followed on the real modules, in the kernel's child.

A list of names can never be complete (typing holds `re`, which holds `enum`, which holds
builtins as `bltns`), so the kernel's child runs check_resolved too, before any kernel code:
every attribute chain on an imported module is followed on the real modules, and a chain that
reaches a module outside the dialect's packages, or numpy's file functions from anywhere, or
a path the dialect forbids, is refused ("rejected") there. It imports the kernel's modules,
which check_source (nkibench.sandbox.static_check) never does.
"""

from __future__ import annotations

import ast
import importlib
import types

from nkibench import python_ast
from nkibench.errors import KernelError
from nkibench.sandbox.main_block import without_main_blocks
from nkibench.sandbox.named_reads import pattern_chains
from nkibench.sandbox.policy import (
    FORBIDDEN_NUMPY_ATTRIBUTES,
    forbidden_path,
    global_setter,
    reachable_module,
    subset_problem,
)
from nkibench.sandbox.static_check import Violation, import_bindings

__all__ = ["check_resolved"]


class _Resolver:
    """Follows attribute chains on the real modules (inside the kernel's child only)."""

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self.violations: list[Violation] = []

    def step(self, node: ast.AST, holder: object, path: str, attr: str, written: str) -> object:
        """`holder.attr` (holder's canonical path `path`), or raises _Stop after a violation
        or where the chain cannot be followed without running the kernel."""
        full = f"{path}.{attr}"
        on_numpy = isinstance(holder, types.ModuleType) and holder.__name__.startswith("numpy")
        if on_numpy and attr in FORBIDDEN_NUMPY_ATTRIBUTES:
            return self.refuse(node, f"`{written}` is numpy's {attr} (files, pickles or pointers)")
        try:
            value = getattr(holder, attr)
        except KernelError as e:
            if e.kind == "rejected":
                return self.refuse(node, e.message)
            raise _Stop from None
        except Exception:
            raise _Stop from None  # running it raises the same, with the kernel's line
        if isinstance(value, types.ModuleType):
            if not reachable_module(value.__name__, self.dialect):
                return self.refuse(
                    node, f"`{written}` is the module {value.__name__}, which a kernel may not use"
                )
            full = value.__name__
        if forbidden_path(full, self.dialect) or global_setter(full, self.dialect):
            return self.refuse(node, f"`{written}` is {full}, which a kernel may not use")
        if problem := subset_problem(full, self.dialect):
            return self.refuse(node, f"`{written}`: {problem}")
        return value

    def follow(
        self, node: ast.AST, roots: dict[str, tuple[object, str]], expression: ast.expr
    ) -> tuple[object, str, str]:
        """An attribute chain on an imported module (`nl.tile.shape`) followed to its value:
        (value, canonical path, the chain as written); _Stop where it is refused, cannot be
        followed, or is not such a chain."""
        chain: list[str] = []
        value = expression
        while isinstance(value, ast.Attribute):
            chain.append(value.attr)
            value = value.value
        if not (isinstance(value, ast.Name) and value.id in roots):
            raise _Stop
        holder, path = roots[value.id]
        written = value.id
        for attr in reversed(chain):
            written = f"{written}.{attr}"
            holder = self.step(node, holder, path, attr, written)
            path = _canonical(holder, f"{path}.{attr}")
        return holder, path, written

    def refuse(self, node: ast.AST, problem: str) -> object:
        self.violations.append(Violation(getattr(node, "lineno", 0), problem))
        raise _Stop

    def root(self, node: ast.AST, name: str, module: str, attr: str | None) -> tuple[object, str]:
        try:
            value: object = importlib.import_module(module)
        except Exception:
            raise _Stop from None
        if attr is None:
            return value, module
        return self.step(node, value, module, attr, f"{module}.{attr}"), f"{module}.{attr}"


class _Stop(Exception):
    """A chain that is refused, or that cannot be followed before the kernel runs."""


def check_resolved(source: str, dialect: str) -> list[Violation]:
    """The attribute chains of a kernel that passed check_source, followed on the real
    modules: every module a chain reaches must be one the kernel may use (`typing.stdlib_re`
    is `re`, whose `enum.bltns` is `builtins`: no name list sees that), and numpy's file
    functions stay refused wherever numpy is reached from (`nl.np.load`). It imports the
    kernel's modules, so it runs in the kernel's child, after nkisim's shadow modules are
    installed and before the kernel's own code runs."""
    tree = _by_name_reads(without_main_blocks(python_ast.parse(source)))
    bindings = import_bindings(tree)
    resolver = _Resolver(dialect)
    roots: dict[str, tuple[object, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            for a in node.names:
                name = a.asname or a.name.split(".")[0]
                if name in bindings and name not in roots:
                    try:
                        roots[name] = resolver.root(node, name, *bindings[name])
                    except _Stop:
                        continue
    receivers = _hasattr_receivers(tree)
    for node in ast.walk(tree):  # outer attributes come before their receivers
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            bound = roots.get(node.id)
            if bound and isinstance(bound[0], types.ModuleType) and id(node) not in receivers:
                resolver.violations.append(Violation(node.lineno, _module_value(node.id, bound[1])))
            continue
        if isinstance(node, ast.Match):
            _follow_patterns(resolver, roots, node)
        if not isinstance(node, ast.Attribute):
            continue
        receivers.add(id(node.value))
        if id(node) in receivers:
            continue
        try:
            holder, path, written = resolver.follow(node, roots, node)
        except _Stop:
            continue
        if isinstance(holder, types.ModuleType):  # `m = np.ma`: a module held as a value
            resolver.violations.append(Violation(node.lineno, _module_value(written, path)))
    return resolver.violations


def _follow_patterns(
    resolver: _Resolver, roots: dict[str, tuple[object, str]], match: ast.Match
) -> None:
    """`match nl.tile: case object(np=n)` is `n = nl.tile.np`: the chains of a match statement's
    class patterns are followed from its subject like attribute chains."""
    try:
        subject = resolver.follow(match, roots, match.subject)
    except _Stop:
        return  # not a chain on an imported module
    for case in match.cases:
        for chain, binds in pattern_chains(case.pattern):
            holder, path, written = subject
            try:
                for attr in chain:
                    written = f"{written}.{attr}"
                    holder = resolver.step(case.pattern, holder, path, attr, written)
                    path = _canonical(holder, f"{path}.{attr}")
            except _Stop:
                continue
            if binds and isinstance(holder, types.ModuleType):
                line = case.pattern.lineno
                resolver.violations.append(Violation(line, _module_value(written, path)))


def _literal_read(node: ast.AST, function: str) -> ast.Call | None:
    """`function(x, "name", ...)` with a literal name and nothing unpacked (None: not that)."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == function
        and len(node.args) >= 2
        and not node.keywords
        and not any(isinstance(a, ast.Starred) for a in node.args)
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return None
    return node


class _GetattrAsAttribute(ast.NodeTransformer):
    """`getattr(tl, "exp2", d)` read as `getattr(tl.exp2, d)`: the chain `tl.exp2` is then
    followed like any other, and refused where it reaches a module (held as a value)."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        call = _literal_read(node, "getattr")
        if call is not None:
            name = call.args[1]
            assert isinstance(name, ast.Constant)
            assert isinstance(name.value, str)
            read = ast.copy_location(ast.Attribute(call.args[0], name.value, ast.Load()), call)
            call.args = [read, *call.args[2:]]
        return node


def _by_name_reads(tree: ast.Module) -> ast.Module:
    result = _GetattrAsAttribute().visit(tree)
    assert isinstance(result, ast.Module)
    return result


def _hasattr_receivers(tree: ast.Module) -> set[int]:
    """`hasattr(tl, "exp2")`: `tl` is asked about, not held as a value."""
    return {
        id(call.args[0])
        for node in ast.walk(tree)
        if (call := _literal_read(node, "hasattr")) is not None
    }


def _module_value(written: str, module: str) -> str:
    return (
        f"`{written}` is the module {module}, which a kernel may only use as "
        f"{written}.<name> (held as a value, its attributes are out of the check's sight)"
    )


def _canonical(value: object, path: str) -> str:
    """A module's own name (`typing.stdlib_re` is `re`); anything else, the path it was
    reached by."""
    return value.__name__ if isinstance(value, types.ModuleType) else path
