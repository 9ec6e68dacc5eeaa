"""The arithmetic of NKI's ALU and activation functions, on float32 NumPy arrays.

Kernels name an operation by passing a function: `nl.add`, `np.add`, `nl.max` (a reduction,
accepted as the maximum ALU op), `np.exp`... `op_name` turns any of them into one name.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from nkibench.nkisim.errors import UnsupportedApi

__all__ = [
    "ACTIVATIONS",
    "BINARY",
    "REDUCTIONS",
    "UNARY",
    "op_name",
    "register_op",
]

Array = np.ndarray[Any, Any]
F32 = np.float32


def _erf(x: Array) -> Array:
    values: Array = np.asarray(np.frompyfunc(math.erf, 1, 1)(x)).astype(F32)
    return values


def _sigmoid(x: Array) -> Array:
    return (1.0 / (1.0 + np.exp(-x))).astype(F32)


def _softplus(x: Array) -> Array:
    return np.logaddexp(F32(0), x).astype(F32)


def _gelu(x: Array) -> Array:
    return (0.5 * x * (1.0 + _erf(x / F32(math.sqrt(2.0))))).astype(F32)


def _gelu_tanh(x: Array) -> Array:
    inner = F32(math.sqrt(2.0 / math.pi)) * (x + F32(0.044715) * x * x * x)
    values: Array = (0.5 * x * (1.0 + np.tanh(inner))).astype(F32)
    return values


UNARY: dict[str, Callable[[Array], Array]] = {
    "copy": lambda x: x,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: (F32(1) / np.sqrt(x)).astype(F32),
    "reciprocal": np.reciprocal,
    "square": np.square,
    "tanh": np.tanh,
    "sigmoid": _sigmoid,
    "relu": lambda x: np.maximum(x, F32(0)),
    "silu": lambda x: (x * _sigmoid(x)).astype(F32),
    "silu_dx": lambda x: (_sigmoid(x) * (1 + x * (1 - _sigmoid(x)))).astype(F32),
    "gelu": _gelu,
    "gelu_apprx_tanh": _gelu_tanh,
    "gelu_apprx_sigmoid": lambda x: (x * _sigmoid(F32(1.702) * x)).astype(F32),
    "softplus": _softplus,
    "mish": lambda x: (x * np.tanh(_softplus(x))).astype(F32),
    "erf": _erf,
    "erf_dx": lambda x: (F32(2 / math.sqrt(math.pi)) * np.exp(-x * x)).astype(F32),
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "arctan": np.arctan,
    "abs": np.abs,
    "negative": np.negative,
    "sign": np.sign,
    "ceil": np.ceil,
    "floor": np.floor,
    "trunc": np.trunc,
    "logical_not": np.logical_not,
    "invert": np.invert,
}

BINARY: dict[str, Callable[[Array, Any], Array]] = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "power": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "mod": np.mod,
    "fmod": np.fmod,
    "equal": np.equal,
    "not_equal": np.not_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
    "left_shift": np.left_shift,
    "right_shift": np.right_shift,
}
COMPARISONS = frozenset(
    {"equal", "not_equal", "greater", "greater_equal", "less", "less_equal"}
    | {"logical_and", "logical_or", "logical_xor", "logical_not"}
)

REDUCTIONS: dict[str, Callable[..., Array]] = {
    "add": np.sum,
    "multiply": np.prod,
    "maximum": np.max,
    "minimum": np.min,
    "subtract": lambda a, axis, keepdims: np.negative(np.sum(a, axis=axis, keepdims=keepdims)),
    "bitwise_and": np.bitwise_and.reduce,
    "bitwise_or": np.bitwise_or.reduce,
    "bitwise_xor": np.bitwise_xor.reduce,
    "logical_and": np.logical_and.reduce,
    "logical_or": np.logical_or.reduce,
    "logical_xor": np.logical_xor.reduce,
}

ACTIVATIONS = frozenset(
    {
        "copy",
        "square",
        "sigmoid",
        "relu",
        "gelu",
        "gelu_dx",
        "gelu_apprx_tanh",
        "gelu_apprx_sigmoid",
        "silu",
        "silu_dx",
        "tanh",
        "softplus",
        "mish",
        "erf",
        "erf_dx",
        "exp",
        "log",
        "sin",
        "arctan",
        "sqrt",
        "rsqrt",
        "reciprocal",
        "sign",
        "abs",
    }
)

_NUMPY: dict[Any, str] = {
    np.add: "add",
    np.subtract: "subtract",
    np.multiply: "multiply",
    np.divide: "divide",
    np.power: "power",
    np.maximum: "maximum",
    np.max: "maximum",
    np.amax: "maximum",
    np.minimum: "minimum",
    np.min: "minimum",
    np.amin: "minimum",
    np.sum: "add",
    np.prod: "multiply",
    np.mod: "mod",
    np.fmod: "fmod",
    np.exp: "exp",
    np.log: "log",
    np.sqrt: "sqrt",
    np.reciprocal: "reciprocal",
    np.square: "square",
    np.tanh: "tanh",
    np.sin: "sin",
    np.cos: "cos",
    np.tan: "tan",
    np.arctan: "arctan",
    np.abs: "abs",
    np.negative: "negative",
    np.sign: "sign",
    np.ceil: "ceil",
    np.floor: "floor",
    np.trunc: "trunc",
    np.copy: "copy",
    np.equal: "equal",
    np.not_equal: "not_equal",
    np.greater: "greater",
    np.greater_equal: "greater_equal",
    np.less: "less",
    np.less_equal: "less_equal",
    np.logical_and: "logical_and",
    np.logical_or: "logical_or",
    np.logical_xor: "logical_xor",
    np.logical_not: "logical_not",
    np.bitwise_and: "bitwise_and",
    np.bitwise_or: "bitwise_or",
    np.bitwise_xor: "bitwise_xor",
    np.left_shift: "left_shift",
    np.right_shift: "right_shift",
    np.invert: "invert",
}
_REGISTERED: dict[int, str] = {}


def register_op(function: Callable[..., Any], name: str) -> None:
    """Let an nl.* function be passed as an operation (`op=nl.add`, `op=nl.max`...)."""
    _REGISTERED[id(function)] = name


def op_name(op: Any, what: str) -> str:
    """The operation a kernel passed, by name; UnsupportedApi if nkisim does not know it."""
    if op is None:
        raise UnsupportedApi(f"{what}: an operation is required")
    name = _REGISTERED.get(id(op))
    if name is None:
        try:
            name = _NUMPY.get(op)
        except TypeError:
            name = None
    if name is None:
        label = getattr(op, "__name__", repr(op))
        raise UnsupportedApi(f"{what}: operation {label} is not supported by nkisim")
    return name
