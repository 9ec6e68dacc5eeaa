"""Affine index expressions and masks of legacy NKI (`nl.arange`, `nl.mgrid`, `mask=`).

`nl.arange(128)[:, None]` is an index *expression*: an affine combination of aranges placed
on axes of the access, plus a constant. Kernels build them with + - * and integers (loop
indices), compare them to make masks, and index tensors with them. Keeping them symbolic
lets nkisim turn the usual `base + nl.arange(n)` into a plain NumPy slice (a view, no
gather), whose bounds are checked once, on the slice.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from nkibench.nkisim.errors import UnsupportedApi

__all__ = ["Arange", "IndexExpr", "MGrid", "MaskExpr", "arange", "broadcast_shape"]

IntArray = np.ndarray[Any, np.dtype[np.int64]]


@dataclass(frozen=True, slots=True)
class Term:
    """coef * arange(length), laid along `axis` of an index space of `ndim` axes."""

    coef: int
    length: int
    axis: int
    ndim: int

    def shape(self) -> tuple[int, ...]:
        return tuple(self.length if a == self.axis else 1 for a in range(self.ndim))


def _as_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise UnsupportedApi(f"{what}: index arithmetic needs integers, got {type(value).__name__}")
    return int(value)


class IndexExpr:
    """const + Σ coef_k · arange(length_k) on axis_k: an affine index over an access space."""

    __slots__ = ("const", "terms")
    __array_priority__ = 1000  # numpy scalars on the left defer to our operators

    def __init__(self, const: int, terms: tuple[Term, ...]) -> None:
        self.const = const
        self.terms = terms

    # --- shape of the index space ------------------------------------------------------------

    @property
    def ndim(self) -> int:
        return max((t.ndim for t in self.terms), default=0)

    def shape(self) -> tuple[int, ...]:
        dims = [1] * self.ndim
        for term in self.terms:
            dims[term.axis] = max(dims[term.axis], term.length)
        return tuple(dims)

    def evaluate(self, ndim: int | None = None) -> IntArray:
        """The index values as an int64 array of this expression's (or `ndim`'s) rank."""
        rank = self.ndim if ndim is None else ndim
        shift = rank - self.ndim
        value: IntArray = np.full((1,) * rank, self.const, dtype=np.int64)
        for term in self.terms:
            shape = (1,) * shift + term.shape()
            value = value + term.coef * np.arange(term.length, dtype=np.int64).reshape(shape)
        return value

    def as_slice(self) -> tuple[slice, int] | None:
        """(slice, axis) when the expression is `const + coef * arange(n)` with coef > 0."""
        if len(self.terms) != 1 or self.terms[0].coef <= 0:
            return None
        term = self.terms[0]
        stop = self.const + term.coef * (term.length - 1) + 1
        return slice(self.const, stop, term.coef), term.axis

    # --- arithmetic ----------------------------------------------------------------------------

    def _combine(self, other: object, sign: int) -> IndexExpr:
        if isinstance(other, IndexExpr):
            if self.terms and other.terms and self.ndim != other.ndim:
                raise UnsupportedApi(
                    f"index expressions of rank {self.ndim} and {other.ndim} cannot be added; "
                    "give every nl.arange the same number of axes"
                )
            terms = self.terms + tuple(
                Term(sign * t.coef, t.length, t.axis, t.ndim) for t in other.terms
            )
            return IndexExpr(self.const + sign * other.const, terms)
        return IndexExpr(self.const + sign * _as_int(other, "index"), self.terms)

    def __add__(self, other: object) -> IndexExpr:
        return self._combine(other, 1)

    def __radd__(self, other: object) -> IndexExpr:
        return self._combine(other, 1)

    def __sub__(self, other: object) -> IndexExpr:
        return self._combine(other, -1)

    def __rsub__(self, other: object) -> IndexExpr:
        return (-self)._combine(other, 1)

    def __neg__(self) -> IndexExpr:
        return IndexExpr(
            -self.const, tuple(Term(-t.coef, t.length, t.axis, t.ndim) for t in self.terms)
        )

    def __mul__(self, other: object) -> IndexExpr:
        if isinstance(other, IndexExpr):
            raise UnsupportedApi("the product of two index expressions is not affine")
        factor = _as_int(other, "index")
        return IndexExpr(
            self.const * factor,
            tuple(Term(t.coef * factor, t.length, t.axis, t.ndim) for t in self.terms),
        )

    __rmul__ = __mul__

    # --- comparisons make masks ------------------------------------------------------------------

    def _compare(self, other: object, op: Callable[[Any, Any], Any]) -> MaskExpr:
        return MaskExpr(
            lambda ndim: op(self.evaluate(ndim), _value(other, ndim)), self._rank(other)
        )

    def _rank(self, other: object) -> int:
        return max(self.ndim, other.ndim if isinstance(other, IndexExpr) else 0)

    def __lt__(self, other: object) -> MaskExpr:
        return self._compare(other, operator.lt)

    def __le__(self, other: object) -> MaskExpr:
        return self._compare(other, operator.le)

    def __gt__(self, other: object) -> MaskExpr:
        return self._compare(other, operator.gt)

    def __ge__(self, other: object) -> MaskExpr:
        return self._compare(other, operator.ge)

    def __eq__(self, other: object) -> MaskExpr:  # type: ignore[override]
        return self._compare(other, operator.eq)

    def __ne__(self, other: object) -> MaskExpr:  # type: ignore[override]
        return self._compare(other, operator.ne)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        parts = [f"{t.coef}*arange({t.length})@{t.axis}/{t.ndim}" for t in self.terms]
        return " + ".join([*parts, str(self.const)])


def _value(other: object, ndim: int) -> Any:
    if isinstance(other, IndexExpr):
        return other.evaluate(ndim)
    return _as_int(other, "mask comparison")


class MaskExpr:
    """A predicate over index expressions; `&` and `|` combine, `~` negates."""

    __slots__ = ("_build", "ndim")

    def __init__(self, build: Callable[[int], Any], ndim: int) -> None:
        self._build = build
        self.ndim = ndim

    def evaluate(self, ndim: int | None = None) -> np.ndarray[Any, np.dtype[np.bool_]]:
        return np.asarray(self._build(self.ndim if ndim is None else ndim), dtype=bool)

    def _join(self, other: object, op: Callable[[Any, Any], Any]) -> MaskExpr:
        if not isinstance(other, MaskExpr):
            raise UnsupportedApi(
                "masks combine only with other masks (built by comparing nl.arange expressions)"
            )
        rank = max(self.ndim, other.ndim)
        return MaskExpr(lambda ndim: op(self.evaluate(ndim), other.evaluate(ndim)), rank)

    def __and__(self, other: object) -> MaskExpr:
        return self._join(other, operator.and_)

    def __or__(self, other: object) -> MaskExpr:
        return self._join(other, operator.or_)

    def __invert__(self) -> MaskExpr:
        return MaskExpr(lambda ndim: ~self.evaluate(ndim), self.ndim)


class Arange:
    """`nl.arange(n)` before it is placed on axes: indexing it with None and `:` places it."""

    __slots__ = ("length", "start", "step")

    def __init__(self, start: int, stop: int, step: int) -> None:
        if step <= 0:
            raise UnsupportedApi("nl.arange needs a positive step")
        self.start, self.step = start, step
        self.length = max(0, -(-(stop - start) // step))

    def __getitem__(self, placement: object) -> IndexExpr:
        items = placement if isinstance(placement, tuple) else (placement,)
        full = [i for i, item in enumerate(items) if isinstance(item, slice)]
        if len(full) != 1 or any(
            not (item is None or (isinstance(item, slice) and item == slice(None)))
            for item in items
        ):
            raise UnsupportedApi("place nl.arange on one axis, like nl.arange(n)[:, None]")
        return IndexExpr(self.start, (Term(self.step, self.length, full[0], len(items)),))

    def _placed(self) -> IndexExpr:
        return IndexExpr(self.start, (Term(self.step, self.length, 0, 1),))

    # An unplaced arange used directly behaves as a 1-D index over axis 0.
    def __add__(self, other: object) -> IndexExpr:
        return self._placed() + other

    __radd__ = __add__

    def __mul__(self, other: object) -> IndexExpr:
        return self._placed() * other

    __rmul__ = __mul__

    def __sub__(self, other: object) -> IndexExpr:
        return self._placed() - other

    def __rsub__(self, other: object) -> IndexExpr:
        return -self._placed() + other

    def __lt__(self, other: object) -> MaskExpr:
        return self._placed() < other

    def __ge__(self, other: object) -> MaskExpr:
        return self._placed() >= other


def arange(*args: int) -> Arange:
    """nl.arange(stop) / nl.arange(start, stop[, step])."""
    values = [_as_int(a, "nl.arange") for a in args]
    if len(values) == 1:
        return Arange(0, values[0], 1)
    if len(values) in (2, 3):
        return Arange(values[0], values[1], values[2] if len(values) == 3 else 1)
    raise UnsupportedApi("nl.arange takes (stop) or (start, stop[, step])")


class _Grid:
    """The expressions of one nl.mgrid[...] call: `.p`, `.x` and tuple unpacking."""

    def __init__(self, exprs: tuple[IndexExpr, ...]) -> None:
        self.exprs = exprs

    @property
    def p(self) -> IndexExpr:
        return self.exprs[0]

    @property
    def x(self) -> IndexExpr:
        if len(self.exprs) < 2:
            raise UnsupportedApi("this nl.mgrid has no free axis (.x)")
        return self.exprs[1]

    @property
    def y(self) -> IndexExpr:
        if len(self.exprs) < 3:
            raise UnsupportedApi("this nl.mgrid has no second free axis (.y)")
        return self.exprs[2]

    def __iter__(self) -> Any:
        return iter(self.exprs)

    def __len__(self) -> int:
        return len(self.exprs)

    def __getitem__(self, i: int) -> IndexExpr:
        return self.exprs[i]


class MGrid:
    """`nl.mgrid[0:128, 0:512]`: one expression per axis, like numpy.mgrid."""

    def __getitem__(self, key: object) -> _Grid:
        slices = key if isinstance(key, tuple) else (key,)
        exprs = []
        for axis, item in enumerate(slices):
            if not isinstance(item, slice) or item.stop is None:
                raise UnsupportedApi("nl.mgrid takes bounded slices, like nl.mgrid[0:128, 0:512]")
            start = 0 if item.start is None else _as_int(item.start, "nl.mgrid")
            step = 1 if item.step is None else _as_int(item.step, "nl.mgrid")
            length = max(0, -(-(_as_int(item.stop, "nl.mgrid") - start) // step))
            exprs.append(IndexExpr(start, (Term(step, length, axis, len(slices)),)))
        return _Grid(tuple(exprs))


def broadcast_shape(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise UnsupportedApi(f"index expressions of shapes {shapes} do not broadcast") from None
