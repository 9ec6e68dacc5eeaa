"""Arithmetic on named numbers without executing code: shape constants of reference.py and
the roofline formulas of task.toml are evaluated here, never with eval().

A formula is numbers, names, + - * / // % ** and three functions: `min(a, b, ...)`,
`max(a, b, ...)` (a sliding window's `min(SEQ, WINDOW)`) and `ceil(x)` (whole pages or tiles:
`ceil(SEQ / PAGE)`). Its time is bounded by its length: every integer stays below 2**MAX_BITS
(a power is refused before it is computed, and a product of huge constants after), so no
formula of task.toml's 64 KiB can make the loader compute for ever.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping

from nkibench import python_ast

__all__ = [
    "FUNCTIONS",
    "MAX_BITS",
    "UnsafeExpression",
    "bound_names",
    "evaluate",
    "formula_names",
    "module_bindings",
    "module_constants",
]

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


def _ceil(x: Number) -> Number:
    if not math.isfinite(x):
        raise UnsafeExpression(f"ceil({x}) is no number")
    return math.ceil(x)


FUNCTIONS: dict[str, tuple[int, int | None, Callable[..., Number]]] = {
    "min": (2, None, min),
    "max": (2, None, max),
    "ceil": (1, 1, _ceil),
}
"""The functions a formula may call: name -> (fewest arguments, most (None: any), function)."""
MAX_BITS = 1024
"""Integers beyond 2**1024 are refused: no count is that large (a float stops there), and
Python's integers would grow, and their arithmetic slow down, without end."""


class UnsafeExpression(ValueError):
    """The expression uses something other than numbers, known names, + - * / // % ** and
    min(), max() and ceil()."""


def _function(node: ast.Call) -> Callable[..., Number]:
    """The function a call in a formula names, if it is one of FUNCTIONS called plainly."""
    name = node.func.id if isinstance(node.func, ast.Name) else ""
    if name not in FUNCTIONS:
        allowed = ", ".join(f"{f}()" for f in FUNCTIONS)
        raise UnsafeExpression(f"{ast.unparse(node)!r} calls something other than {allowed}")
    fewest, most, function = FUNCTIONS[name]
    if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
        raise UnsafeExpression(f"{ast.unparse(node)!r}: give {name}() its numbers plainly")
    if len(node.args) < fewest or (most is not None and len(node.args) > most):
        wanted = f"{fewest}" if most == fewest else f"{fewest} or more"
        raise UnsafeExpression(f"{ast.unparse(node)!r}: {name}() takes {wanted} argument(s)")
    return function


def _number(node: ast.Constant) -> Number:
    if isinstance(node.value, bool) or not isinstance(node.value, int | float):
        raise UnsafeExpression(f"{node.value!r} is not a number")
    return node.value


def _bounded(value: object) -> Number:
    """`value`, if it is a real number within MAX_BITS (a negative base's fractional power is
    complex)."""
    if isinstance(value, int) and value.bit_length() > MAX_BITS:
        raise UnsafeExpression(f"a number beyond 2**{MAX_BITS}")
    if not isinstance(value, int | float):
        raise UnsafeExpression(f"{value!r} is not a real number")
    return value


def _power(left: Number, right: Number) -> Number:
    if abs(right) > 64:
        raise UnsafeExpression("exponent too large")
    # an integer power has at least (bits - 1) * right bits: refused before Python computes it
    if (
        isinstance(left, int)
        and isinstance(right, int)
        and (left.bit_length() - 1) * right > MAX_BITS
    ):
        raise UnsafeExpression(f"a number beyond 2**{MAX_BITS}")
    return _bounded(left**right)


def _eval(node: ast.AST, names: Mapping[str, Number]) -> Number:
    if isinstance(node, ast.Expression):
        return _eval(node.body, names)
    if isinstance(node, ast.Constant):
        return _number(node)
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise UnsafeExpression(f"unknown name {node.id!r}")
        return names[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _eval(node.operand, names)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left, names), _eval(node.right, names)
        if isinstance(node.op, ast.Pow):
            return _power(left, right)
        return _bounded(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.Call):
        function = _function(node)
        return _bounded(function(*(_eval(a, names) for a in node.args)))
    raise UnsafeExpression(f"{ast.unparse(node)!r} is not plain arithmetic")


def _value(node: ast.AST, names: Mapping[str, Number]) -> Number:
    """_eval, with Python's arithmetic errors and a recursion too deep (a chain of thousands
    of terms) as UnsafeExpression."""
    try:
        return _eval(node, names)
    except ZeroDivisionError:
        raise UnsafeExpression("division by zero") from None
    except OverflowError:
        raise UnsafeExpression("a number too large for a float") from None
    except RecursionError:
        raise UnsafeExpression("nested too deeply") from None


def _parse(expression: str) -> ast.Expression:
    try:
        return python_ast.parse(expression.strip(), mode="eval")
    except SyntaxError as e:
        raise UnsafeExpression(f"not an expression: {e.msg}") from None
    except (MemoryError, RecursionError):
        raise UnsafeExpression("nested too deeply") from None


def evaluate(expression: str, names: Mapping[str, Number]) -> Number:
    """The value of an arithmetic expression over `names`."""
    return _value(_parse(expression), names)


def formula_names(expression: str) -> set[str]:
    """The names a formula reads, once it is known to be plain arithmetic (UnsafeExpression
    otherwise): what the loader checks a formula against before the names have values (the
    counts reference.py computes from each seed's inputs)."""
    tree = _parse(expression)
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    names: set[str] = set()
    for node in ast.walk(tree):  # iterative: no recursion limit
        if isinstance(node, ast.Expression | ast.Load | ast.operator | ast.unaryop):
            continue
        if isinstance(node, ast.Constant):
            _number(node)
        elif isinstance(node, ast.Name):
            if id(node) not in called:
                names.add(node.id)
        elif isinstance(node, ast.Call):
            _function(node)
        elif not (
            (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd))
            or (isinstance(node, ast.BinOp) and type(node.op) in _BINARY)
        ):
            raise UnsafeExpression(f"{ast.unparse(node)!r} is not plain arithmetic")
    return names


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
        return {target.id: _value(value, names)}
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
