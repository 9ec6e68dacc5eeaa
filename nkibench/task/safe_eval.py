"""Arithmetic on named numbers without executing code: shape constants of reference.py and
the roofline formulas of task.toml are evaluated here, never with eval()."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping

__all__ = ["UnsafeExpression", "evaluate", "module_constants"]

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


def module_constants(tree: ast.Module) -> dict[str, Number]:
    """Module-level `NAME = <arithmetic>` assignments, evaluated in order.

    Assignments that are not plain arithmetic over earlier constants are skipped.
    """
    constants: dict[str, Number] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        else:
            continue
        if not isinstance(target, ast.Name):
            continue
        try:
            constants[target.id] = _eval(value, constants)
        except UnsafeExpression:
            continue
    return constants
