"""The gradient rules of the matrix products: ``matmul`` (vectors, matrices, batches) and
the products by a transpose its rules use, ``matmul_nt``/``matmul_tn``."""

from __future__ import annotations

from typing import Any

from ...core import BATCH
from ...recording import defvjp
from .. import primitives as P
from ..helpers import shape_of, unbroadcast


# -- matmul: vectors, matrices, batches --------------------------------------------------
# In a batched sweep the cotangent of a vector-valued product is a matrix (one row per
# batch element): where the other operand is a matrix, the rule is one matrix product of
# the whole batch (``(B, m) @ W``) rather than one matrix-vector product per row.
def _col(v: Any) -> Any:
    """``v[..., None]``: a trailing axis of length 1."""
    return P.reshape(v, shape=(*shape_of(v), 1))


def _uncol(v: Any) -> Any:
    """``v[..., 0]``."""
    return P.getitem(v, key=(Ellipsis, 0))


def _rows(prim: Any, g: Any, nb: int, other: Any) -> Any:
    """``prim(g, other)`` for a cotangent ``g`` of shape ``batch + (n,)`` and a matrix
    ``other``: the batch axes flattened into the rows of one matrix product."""
    if nb == 1:
        return prim(g, other)
    shape = shape_of(g)
    out = prim(P.reshape(g, shape=(-1, shape[-1])), other)
    return P.reshape(out, shape=(*shape[:-1], shape_of(out)[-1]))


def _matmul_x(g: Any, ans: Any, x: Any, y: Any) -> Any:
    xd, yd = len(shape_of(x)), len(shape_of(y))
    nb = BATCH.axes
    if xd == 1 and yd == 1:  # a dot product: g is batch + ()
        return g * y if not nb else _col(g) * y
    if xd == 1:  # (k,) @ (..., k, m) -> (..., m)
        if yd == 2:  # d/dx = y @ g, for a batch g @ y.T
            return P.matmul(y, g) if not nb else _rows(P.matmul_nt, g, nb, y)
        return unbroadcast(_uncol(P.matmul(y, _col(g))), x)
    if yd == 1:  # (..., n, k) @ (k,) -> (..., n)
        return unbroadcast(_col(g) * y, x)
    return unbroadcast(P.matmul_nt(g, y), x)  # (an outer product when y has one column)


def _matmul_y(g: Any, ans: Any, x: Any, y: Any) -> Any:
    xd, yd = len(shape_of(x)), len(shape_of(y))
    nb = BATCH.axes
    if xd == 1 and yd == 1:
        return g * x if not nb else _col(g) * x
    if xd == 1:
        return unbroadcast(_col(x) * P.reshape(g, shape=(*shape_of(g)[:-1], 1, -1)), y)
    if yd == 1:  # (..., n, k) @ (k,) -> (..., n)
        if xd == 2:  # d/dy = g @ x, for a batch too
            return P.matmul(g, x) if nb < 2 else _rows(P.matmul, g, nb, x)
        return unbroadcast(_uncol(P.matmul_tn(x, _col(g))), y)
    return unbroadcast(P.matmul_tn(x, g), y)


defvjp(P.matmul, _matmul_x, _matmul_y)
# a @ b.T (both >= 2-D): d/da = G @ b, d/db = G.T @ a; a.T @ b: d/da = b @ G.T, d/db = a @ G
defvjp(
    P.matmul_nt,
    lambda g, ans, a, b: unbroadcast(P.matmul(g, b), a),
    lambda g, ans, a, b: unbroadcast(P.matmul_tn(g, a), b),
)
defvjp(
    P.matmul_tn,
    lambda g, ans, a, b: unbroadcast(P.matmul_nt(b, g), a),
    lambda g, ans, a, b: unbroadcast(P.matmul(a, g), b),
)
