"""The gradient rules of matrix products, reductions and scans (the rest of the table is
in :mod:`adswitch_tape.vjps`, which imports this module so one import registers all)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import prims as P
from .gradhelpers import const, expand, shape_of, unbroadcast
from .primitive import defvjp
from .tracer import Tracer, raw


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


# -- reductions and scans --------------------------------------------------------------
def _sum_x(g: Any, ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    if type(g) is np.ndarray and type(x) is np.ndarray:  # top level: the common case
        ge = g if keepdims or axis is None else expand(g, x, axis, keepdims)
        return np.zeros(x.shape, dtype=ge.dtype) + ge
    ge = expand(g, x, axis, keepdims)
    if type(ge) is Tracer:
        return P.broadcast_to(ge, shape=shape_of(x))
    # Plain arrays: a fresh array costs less than np.broadcast_to's Python wrapper, and the
    # gradient handed back must be its own writeable array anyway.
    dtype = ge.dtype if type(ge) is np.ndarray else np.result_type(ge)
    return np.zeros(shape_of(x), dtype=dtype) + ge


def _prod_x(g: Any, ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    ge = expand(g, x, axis, keepdims)
    if not (raw(x) == 0).any():
        return ge * expand(ans, x, axis, keepdims) / x
    return ge * _prod_of_others(x, axis)


def _prod_of_others(x: Any, axis: Any) -> Any:
    """For each element, the product of the *other* elements of its reduced slice --
    exact with zeros and differentiable again (prod/x is neither): a slice of n
    elements becomes n rows, each with its own element replaced by 1, multiplied out.
    O(n^2) memory, used only when the slice holds a zero."""
    shape = shape_of(x)
    ndim = len(shape)
    axes = range(ndim) if axis is None else (axis,) if isinstance(axis, int) else axis
    red = tuple(a % ndim for a in axes)
    keep = tuple(a for a in range(ndim) if a not in red)
    order = keep + red
    n = int(np.prod([shape[a] for a in red]))
    lead = tuple(shape[a] for a in keep)
    flat = P.reshape(P.permute_dims(x, axes=order), shape=(*lead, 1, n))
    rows = P.where(np.eye(n, dtype=bool), 1.0, P.broadcast_to(flat, shape=(*lead, n, n)))
    others = P.prod(rows, axis=len(lead) + 1)  # (*lead, n)
    moved = P.reshape(others, shape=lead + tuple(shape[a] for a in red))
    return P.permute_dims(moved, axes=tuple(int(i) for i in np.argsort(order)))


def _extreme_x(g: Any, ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    hit = raw(x) == raw(expand(ans, x, axis, keepdims))
    share = hit / np.sum(hit, axis=axis, keepdims=True)
    return expand(g, x, axis, keepdims) * const(share, x)


def _cumsum_x(g: Any, ans: Any, x: Any, axis: int, include_initial: bool = False) -> Any:
    if include_initial:
        key = (slice(None),) * (axis % len(shape_of(g))) + (slice(1, None),)
        g = P.getitem(g, key=key)
    return P.flip(P.cumulative_sum(P.flip(g, axis=axis), axis=axis), axis=axis)


defvjp(P.sum, _sum_x)
defvjp(P.prod, _prod_x)
defvjp(P.max, _extreme_x)
defvjp(P.min, _extreme_x)
defvjp(P.cumulative_sum, _cumsum_x)
