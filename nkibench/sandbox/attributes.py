"""Attribute writes on the kernel's own objects (NKI 0.7's Python meta-programming: config
classes that set `self.tile = ...`), and on nothing else.

A kernel may not write attributes in general: that is how modules get patched (`nl.affine_range
= range`) and how nkisim's own classes could be bent (a tensor method that reports fewer bytes
to the cost model). In a dialect that allows it, the static check lets through exactly the
statement forms `guard_attribute_writes` rewrites (`name.attr = v`, `name.attr += v`,
`name.attr: T = v`, the receiver a plain name), and the rewritten kernel calls `checked_setattr`
for each, which writes only on an instance of a class the kernel module defined (whose bases
are the kernel's own classes, `object`, or the dialect's own base for such objects). A method
called with a module or a tensor as `self` is refused at run time.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from typing import Any

from nkibench.errors import KernelError

__all__ = [
    "SETATTR_NAME",
    "AttributeWriteRefused",
    "checked_setattr",
    "guard_attribute_writes",
    "guarded_targets",
]

SETATTR_NAME = "__accelopt_setattr__"
"""What the rewritten kernel calls (an underscore name: kernel source cannot reach it)."""
_VALUE_NAME = "__accelopt_value__"


class AttributeWriteRefused(KernelError):
    kind = "rejected"


def guarded_targets(statement: ast.stmt) -> list[ast.Attribute]:
    """The attribute targets of a statement that the rewrite guards: `name.attr` targets of
    an assignment, augmented assignment or annotated assignment with a value."""
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, ast.AugAssign) or (
        isinstance(statement, ast.AnnAssign) and statement.value is not None
    ):
        targets = [statement.target]
    else:
        return []
    return [t for t in targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)]


def _guarded_call(target: ast.Attribute, value: ast.expr) -> ast.stmt:
    call = ast.Call(
        func=ast.Name(SETATTR_NAME, ast.Load()),
        args=[ast.Name(target.value.id, ast.Load()), ast.Constant(target.attr), value],  # type: ignore[attr-defined]
        keywords=[],
    )
    return ast.Expr(call)


class _Rewrite(ast.NodeTransformer):
    def visit_Assign(self, node: ast.Assign) -> Any:
        guarded = guarded_targets(node)
        if not guarded:
            return node
        if len(node.targets) == 1:
            return ast.copy_location(_guarded_call(guarded[0], node.value), node)
        # `a.x = b = value`: the value once, then each target in order
        statements: list[ast.stmt] = [ast.Assign([ast.Name(_VALUE_NAME, ast.Store())], node.value)]
        for target in node.targets:
            value = ast.Name(_VALUE_NAME, ast.Load())
            if target in guarded:
                statements.append(_guarded_call(target, value))
            else:
                statements.append(ast.Assign([target], value))
        return [ast.copy_location(s, node) for s in statements]

    def visit_AugAssign(self, node: ast.AugAssign) -> Any:
        guarded = guarded_targets(node)
        if not guarded:
            return node
        target = guarded[0]
        current = ast.Attribute(ast.Name(target.value.id, ast.Load()), target.attr, ast.Load())  # type: ignore[attr-defined]
        return ast.copy_location(
            _guarded_call(target, ast.BinOp(current, node.op, node.value)), node
        )

    def visit_AnnAssign(self, node: ast.AnnAssign) -> Any:
        guarded = guarded_targets(node)
        if not guarded or node.value is None:
            return node
        return ast.copy_location(_guarded_call(guarded[0], node.value), node)


def guard_attribute_writes(tree: ast.Module) -> ast.Module:
    """The kernel with every guarded attribute write turned into a `checked_setattr` call."""
    rewritten: ast.Module = _Rewrite().visit(tree)
    return ast.fix_missing_locations(rewritten)


def checked_setattr(module_name: str, base: tuple[str, str]) -> Callable[[Any, str, Any], None]:
    """The setattr of kernels loaded as module `module_name`: instances of its own classes
    only, which may also derive from `base` (module, class name: the dialect's base for
    kernel-side objects, looked up where the kernel imported it, nkisim's or the real one)."""

    def write(obj: Any, name: str, value: Any) -> None:
        kind = type(obj)
        allowed = (object, getattr(sys.modules.get(base[0]), base[1], object))
        own = not isinstance(obj, type) and all(
            c.__module__ == module_name or c in allowed for c in kind.__mro__
        )
        if not own:
            raise AttributeWriteRefused(
                f"`.{name}` may be set only on objects of the kernel's own classes, not on a "
                f"{kind.__name__} (modules, tensors and the simulator's objects are read-only)"
            )
        setattr(obj, name, value)

    return write
