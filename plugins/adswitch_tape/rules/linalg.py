"""The gradient rules of the matrix products: ``matmul`` (vectors, matrices, batches) and
the products by a transpose its rules use, ``matmul_nt``/``matmul_tn``."""

from __future__ import annotations

from typing import Any

from ..recording import defvjp
from . import primitives as P
from .helpers import shape_of, unbroadcast


# -- matmul: vectors, matrices, batches --------------------------------------------------
def _col(v: Any) -> Any:
    """``v[..., None]``: a trailing axis of length 1."""
    return P.reshape(v, shape=(*shape_of(v), 1))


def _uncol(v: Any) -> Any:
    """``v[..., 0]``."""
    return P.getitem(v, key=(Ellipsis, 0))


def _matmul_x(g: Any, ans: Any, x: Any, y: Any) -> Any:
    xd, yd = len(shape_of(x)), len(shape_of(y))
    if xd == 1 and yd == 1:
        return g * y
    if xd == 1:  # (k,) @ (..., k, m) -> (..., m)
        return unbroadcast(_uncol(P.matmul(y, _col(g))), x)
    if yd == 1:  # (..., n, k) @ (k,) -> (..., n)
        return unbroadcast(_col(g) * y, x)
    return unbroadcast(P.matmul_nt(g, y), x)  # (an outer product when y has one column)


def _matmul_y(g: Any, ans: Any, x: Any, y: Any) -> Any:
    xd, yd = len(shape_of(x)), len(shape_of(y))
    if xd == 1 and yd == 1:
        return g * x
    if xd == 1:
        return unbroadcast(_col(x) * P.reshape(g, shape=(*shape_of(g)[:-1], 1, -1)), y)
    if yd == 1:
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
