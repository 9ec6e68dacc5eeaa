"""Arithmetic on named numbers without executing code: shape constants of reference.py and
the roofline formulas of task.toml are evaluated here, never with eval()."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping

__all__ = ["UnsafeExpression", "bound_names", "evaluate", "module_bindings", "module_constants"]

Number = int | float

_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


class UnsafeExpression(ValueError):
    """The expression uses something other than numbers, known names and + - * / // % **."""


def _eval(node: ast.AST, names: Mapping[str, Number]) -> Number:
    if isinstance(node, ast.Expression):
        return _eval(node.body, names)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        if isinstance(node.value, bool):
            raise UnsafeExpression("booleans are not numbers here")
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise UnsafeExpression(f"unknown name {node.id!r}")
        return names[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _eval(node.operand, names)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left, names), _eval(node.right, names)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise UnsafeExpression("exponent too large")
        try:
            return _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise UnsafeExpression("division by zero") from None
    raise UnsafeExpression(f"{ast.unparse(node)!r} is not plain arithmetic")


def evaluate(expression: str, names: Mapping[str, Number]) -> Number:
    """The value of an arithmetic expression over `names`."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as e:
        raise UnsafeExpression(f"not an expression: {e.msg}") from None
    return _eval(tree, names)


def bound_names(target: ast.expr) -> list[str]:
    """The names an assignment target binds: `N`, `ROWS, COLS`, `(A, B), C`, `*rest`."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [name for element in target.elts for name in bound_names(element)]
    if isinstance(target, ast.Starred):
        return bound_names(target.value)
    return []


def module_bindings(statement: ast.stmt) -> list[str]:
    """The module-level names an assignment statement binds (empty for other statements)."""
    if isinstance(statement, ast.Assign):
        return [name for target in statement.targets for name in bound_names(target)]
    if isinstance(statement, ast.AnnAssign | ast.AugAssign):
        return bound_names(statement.target)
    return []


def _unpack(target: ast.expr, value: ast.expr, names: Mapping[str, Number]) -> dict[str, Number]:
    """`target = value` evaluated: every name of the target with its number. A value that is not
    plain arithmetic, or a tuple that does not match the target's shape, raises
    UnsafeExpression."""
    if isinstance(target, ast.Name):
        return {target.id: _eval(value, names)}
    if (
        isinstance(target, ast.Tuple | ast.List)
        and isinstance(value, ast.Tuple | ast.List)
        and len(target.elts) == len(value.elts)
        and not any(isinstance(e, ast.Starred) for e in (*target.elts, *value.elts))
    ):
        bound: dict[str, Number] = {}
        for element, item in zip(target.elts, value.elts, strict=True):
            # Python evaluates the whole right-hand side before it binds anything
            bound |= _unpack(element, item, names)
        return bound
    raise UnsafeExpression(f"{ast.unparse(target)} = {ast.unparse(value)} is not plain arithmetic")


def _statement_values(statement: ast.stmt, names: Mapping[str, Number]) -> dict[str, Number]:
    if isinstance(statement, ast.Assign):
        bound: dict[str, Number] = {}
        for target in statement.targets:  # `A = B = 4` binds both
            bound |= _unpack(target, statement.value, names)
        return bound
    if isinstance(statement, ast.AnnAssign) and statement.value is not None:
        return _unpack(statement.target, statement.value, names)
    if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
        current = ast.Name(statement.target.id, ast.Load())
        return _unpack(statement.target, ast.BinOp(current, statement.op, statement.value), names)
    raise UnsafeExpression("not an assignment of numbers")


def module_constants(
    tree: ast.Module, overrides: Mapping[str, Number] | None = None
) -> dict[str, Number]:
    """Module-level numeric constants, evaluated in order as Python would bind them: `N = 8`,
    `N: int = 8`, `ROWS, COLS = 300, 1000`, `A = B = 4`, `N += 1`.

    `overrides` (a shape set) replace a name's value at every binding of it, as load_reference
    does when it runs the module, so constants derived from it follow. A name bound to
    something other than plain arithmetic over earlier constants is not a constant (and a
    later such binding forgets an earlier number).
    """
    given = dict(overrides or {})
    constants: dict[str, Number] = {}
    for statement in tree.body:
        names = module_bindings(statement)
        if not names:
            continue
        try:
            values = _statement_values(statement, constants)
        except UnsafeExpression:
            values = {}
        for name in names:
            if name in given:
                constants[name] = given[name]
            elif name in values:
                constants[name] = values[name]
            else:
                constants.pop(name, None)
    return constants
