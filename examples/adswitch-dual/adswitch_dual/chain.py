"""The chain rule, on ``(value, tangent)`` pairs of plain numpy arrays.

A tangent has its value's shape plus one trailing axis, one entry per tangent direction
(see :mod:`adswitch_dual.dual`); a constant's tangent is ``None``. Each function here
computes a result's value and tangent from its operands' pairs and a rule of
:mod:`adswitch_dual.rules`: every direction is multiplied by the same derivative, so
one pass pushes all of them. The dual type wraps the pairs (``DualArray(*pair)``).

Example:
    >>> import numpy as np
    >>> from adswitch_dual.rules import BINARY
    >>> x = (np.array([1.0, 2.0]), np.eye(2))  # two directions: d/dx0, d/dx1
    >>> value, tangent = binary(x, x, *BINARY["multiply"])
    >>> tangent.tolist()
    [[2.0, 0.0], [0.0, 4.0]]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from adswitch_dual.rules import Derivative, Partial

__all__ = ["Pair", "binary", "combine", "matmul", "unary"]

Pair = tuple[Any, np.ndarray | None]
"""``(value, tangent)``: an array (or Python scalar) and its tangent, ``None`` if constant."""


def _times(factor: Any, tangent: np.ndarray) -> Any:
    """``factor * tangent``, but 0 where either is 0: a zero tangent (or a zero factor)
    contributes nothing even against an infinite one (``sqrt`` at 0), never nan."""
    with np.errstate(invalid="ignore"):
        term = factor * tangent
    if np.isnan(term).any():  # only then: 0 * inf
        term = np.where((factor == 0) | (tangent == 0), np.zeros_like(term), term)
    return term


def combine(out: Any, terms: list[tuple[Any, np.ndarray | None]]) -> Pair:
    """The pair of value ``out`` whose tangent is ``sum(factor * tangent)``.

    Args:
        out: the result's value.
        terms: ``(factor, tangent)`` pairs; a ``None`` factor means 1, a ``None``
            tangent (a constant operand) contributes nothing.

    Returns:
        ``(out, tangent)``: the tangent in ``out``'s dtype, a new array (never a view of
        an operand's), or ``None`` when every term is constant.
    """
    out = np.asarray(out)
    total: np.ndarray | None = None
    for factor, tangent in terms:
        if tangent is None:
            continue
        term = tangent if factor is None else _times(np.asarray(factor)[..., None], tangent)
        total = term if total is None else total + term
    if total is None:
        return out, None
    result = np.empty((*out.shape, total.shape[-1]), dtype=out.dtype)
    result[...] = total
    return out, result


def unary(x: Pair, f: Callable[[Any], Any], df: Derivative) -> Pair:
    """The elementwise ``f``; ``df(value, out)`` is its derivative."""
    value, tangent = x
    out = np.asarray(f(value))
    return combine(out, [(df(value, out) if tangent is not None else None, tangent)])


def binary(a: Pair, b: Pair, f: Callable[[Any, Any], Any], da: Partial, db: Partial) -> Pair:
    """The broadcasting ``f(a, b)``; ``da``/``db(a, b, out)`` are its partials (``None``
    means 1). A partial is only evaluated when that operand has a tangent."""
    (av, at), (bv, bt) = a, b
    out = np.asarray(f(av, bv))
    terms = [
        (da(av, bv, out) if da is not None and at is not None else None, at),
        (db(av, bv, out) if db is not None and bt is not None else None, bt),
    ]
    return combine(out, terms)


def matmul(a: Pair, b: Pair) -> Pair:
    """``a @ b`` for vectors, matrices and broadcast batches of matrices: the tangent is
    ``a_tangent @ b + a @ b_tangent``."""
    av, bv = np.asarray(a[0]), np.asarray(b[0])
    out = np.asarray(av @ bv)
    # Promote vectors to matrices, put the tangent axis first as an extra batch axis,
    # multiply, then drop the promoted axes: one code path for every shape combination.
    a2 = av[None, :] if av.ndim == 1 else av
    b2 = bv[:, None] if bv.ndim == 1 else bv
    rank = max(a2.ndim, b2.ndim)

    def front(t: np.ndarray, like: np.ndarray, vector_axis: int | None) -> np.ndarray:
        t = np.moveaxis(t, -1, 0)
        if vector_axis is not None:
            t = np.expand_dims(t, vector_axis)
        return t.reshape((t.shape[0],) + (1,) * (rank - like.ndim) + t.shape[1:])

    terms: list[np.ndarray] = []
    if a[1] is not None:
        terms.append(front(a[1], a2, 1 if av.ndim == 1 else None) @ b2)
    if b[1] is not None:
        terms.append(a2 @ front(b[1], b2, -1 if bv.ndim == 1 else None))
    if not terms:
        return out, None
    total = terms[0] if len(terms) == 1 else terms[0] + terms[1]
    total = total.reshape((total.shape[0], *out.shape))
    return combine(out, [(None, np.moveaxis(total, 0, -1))])
