"""The tangent rules of the reductions, shape, indexing and matrix primitives.

Rules as in ``forward_elementwise``. Most of these primitives are linear, so the tangent
rule is the primitive itself applied to the tangent, its axes, shapes and keys moved
behind the batch axes (``helpers.shifted_axes``, ``shapes.keyed``). The products keep a
batch of vectors as the rows of one matrix product where the other operand is a matrix.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import BATCH, raw
from ..recording import defjvp
from . import primitives as P
from .helpers import align, batch_of, const, expand_value, pad, shape_of, shifted_axes
from .reductions import prod_of_others
from .shapes import flip_x, keyed


# -- reductions and scans ------------------------------------------------------------------
def _reduced(t: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    """``sum(t, axis)`` for a tangent ``t`` of ``x``, the axes moved behind the batch."""
    nb = BATCH.axes
    if not nb:
        return P.sum(t, axis=axis, keepdims=keepdims)
    return P.sum(t, axis=shifted_axes(axis, len(shape_of(x)), nb), keepdims=keepdims)


Tangents = tuple[Any, ...]


def _sum_jvp(ts: Tangents, ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return _reduced(ts[0], x, axis, keepdims)


def _prod_jvp(ts: Tangents, ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    if not (raw(x) == 0).any():
        others = expand_value(ans, x, axis, keepdims) / x
    else:
        others = prod_of_others(x, axis)  # exact with zeros (see ``reductions``)
    return _reduced(ts[0] * others, x, axis, keepdims)


def _extreme_jvp(ts: Tangents, ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    hit = raw(x) == raw(expand_value(ans, x, axis, keepdims))
    share = hit / np.sum(hit, axis=axis, keepdims=True)  # tied extremes share it
    return _reduced(ts[0] * const(share, x), x, axis, keepdims)


def _cumsum_jvp(ts: Tangents, ans: Any, x: Any, axis: int, include_initial: bool = False) -> Any:
    t = ts[0]
    nb = BATCH.axes
    ax = shifted_axes(axis, len(shape_of(t)) - nb, nb)  # (x is not kept: t's rank tells)
    return P.cumulative_sum(t, axis=ax, include_initial=include_initial)


defjvp(P.sum, _sum_jvp)
defjvp(P.prod, _prod_jvp)
defjvp(P.max, _extreme_jvp)
defjvp(P.min, _extreme_jvp)
defjvp(P.cumulative_sum, _cumsum_jvp)


# -- shapes, copies and indexing -----------------------------------------------------------
def _permute_jvp(ts: Tangents, ans: Any, x: Any, axes: tuple[int, ...]) -> Any:
    t = ts[0]
    nb = BATCH.axes
    ndim = len(shape_of(t)) - nb
    return P.permute_dims(t, axes=tuple(range(nb)) + tuple(nb + int(a) % ndim for a in axes))


def _index_update_jvp(
    ts: tuple[Any, ...], ans: Any, x: Any, v: Any, key: Any, lead: int = 0
) -> Any:
    tx, tv = ts
    nb = BATCH.axes
    if tv is not None:  # v broadcasts against x[key]: pad its tangent to that rank
        tv = pad(tv, len(P.indexed_shape(shape_of(x), key, lead)))
    if tx is None:
        batch = shape_of(tv)[:nb] if nb else ()
        tx = np.zeros(batch + shape_of(x), dtype=np.result_type(raw(tv)))
    return keyed(P.index_update, (tx, 0.0 if tv is None else tv), key, lead + nb)


def _concat_jvp(ts: Tangents, ans: Any, *xs: Any, axis: int | None = 0) -> Any:
    nb = BATCH.axes
    like = next(t for t in ts if t is not None)
    batch, dtype = batch_of(like), np.result_type(raw(like))
    pieces = [
        np.zeros(batch + shape_of(x), dtype=dtype) if t is None else t for t, x in zip(ts, xs)
    ]
    if axis is None:
        flat = [P.reshape(p, shape=(*batch, -1)) for p in pieces]
        return P.concat(*flat, axis=nb)
    return P.concat(*pieces, axis=nb + axis % len(shape_of(xs[0])))


def _stack_jvp(ts: Tangents, ans: Any, *xs: Any, axis: int = 0) -> Any:
    nb = BATCH.axes
    like = next(t for t in ts if t is not None)  # (stacked arrays share one shape)
    zeros = np.zeros(shape_of(like), dtype=np.result_type(raw(like)))
    pieces = [zeros if t is None else t for t in ts]
    return P.stack(*pieces, axis=nb + axis % (len(shape_of(like)) - nb + 1))


defjvp(P.reshape, lambda ts, ans, x, shape: P.reshape(ts[0], shape=batch_of(ts[0]) + tuple(shape)))
defjvp(P.permute_dims, _permute_jvp)
defjvp(P.matrix_transpose, lambda ts, ans, x: P.matrix_transpose(ts[0]))
defjvp(P.broadcast_to, lambda ts, ans, x, shape: align(ts[0], tuple(shape)))
defjvp(P.flip, lambda ts, ans, x, axis=None: flip_x(ts[0], ans, x, axis))  # (self-adjoint)
defjvp(P.astype, lambda ts, ans, x, dtype: P.astype(ts[0], dtype=dtype))
defjvp(
    P.getitem,
    lambda ts, ans, x, key, lead=0: keyed(P.getitem, (ts[0],), key, lead + BATCH.axes),
)
defjvp(
    P.scatter,
    lambda ts, ans, g, key, shape, lead=0: keyed(
        P.scatter, (ts[0],), key, lead + BATCH.axes, shape=batch_of(ts[0]) + tuple(shape)
    ),
)
defjvp(P.index_update, _index_update_jvp)
defjvp(P.concat, _concat_jvp)
defjvp(P.stack, _stack_jvp)


# -- matrix products -----------------------------------------------------------------------
def _left(prim: Any, t: Any, x: Any, y: Any) -> Any:
    """``prim(t, y)`` per batch element, ``t`` the tangent of ``x`` (both ``matmul`` and the
    products by a transpose, whose operands are at least 2-D)."""
    nb = BATCH.axes
    xd, yd = len(shape_of(x)), len(shape_of(y))
    if not nb or yd == 1 or (xd == 1 and yd == 2):
        return prim(t, y)  # numpy lines the batch up (a batch of rows: one product)
    if xd == 1:  # (k,) @ (..., k, m): each row a (1, k) matrix in front of y's stack
        tshape = shape_of(t)
        rows = P.reshape(t, shape=tshape[:nb] + (1,) * (yd - 2) + (1, tshape[-1]))
        out = prim(rows, y)
        return P.reshape(out, shape=shape_of(out)[:-2] + shape_of(out)[-1:])
    return prim(pad(t, max(xd, yd)), y)


def _right(prim: Any, x: Any, t: Any, y: Any, nt: Any) -> Any:
    """``prim(x, t)`` per batch element, ``t`` the tangent of ``y``; ``nt`` is the product
    by a transpose that takes a batch of vectors as rows (``matmul_nt`` for ``matmul``)."""
    nb = BATCH.axes
    xd, yd = len(shape_of(x)), len(shape_of(y))
    if not nb or (xd == 1 and yd >= 2):
        return prim(x, t)
    if yd == 1:
        if xd == 1:  # a dot product per row
            return P.matmul(t, x)
        if xd == 2:  # (n, k) @ (k,): the rows times x's transpose, one product
            tshape = shape_of(t)
            out = nt(P.reshape(t, shape=(-1, tshape[-1])) if nb > 1 else t, x)
            return out if nb == 1 else P.reshape(out, shape=tshape[:-1] + shape_of(out)[-1:])
        tshape = shape_of(t)
        cols = P.reshape(t, shape=tshape[:nb] + (1,) * (xd - 2) + (tshape[-1], 1))
        out = prim(x, cols)
        return P.reshape(out, shape=shape_of(out)[:-1])
    return prim(x, pad(t, max(xd, yd)))


def _product(prim: Any) -> Any:
    def jvp(ts: Tangents, ans: Any, x: Any, y: Any) -> Any:
        tx, ty = ts
        out = None if tx is None else _left(prim, tx, x, y)
        if ty is None:
            return out
        term = _right(prim, x, ty, y, P.matmul_nt)
        return term if out is None else out + term

    return jvp


defjvp(P.matmul, _product(P.matmul))
defjvp(P.matmul_nt, _product(P.matmul_nt))
defjvp(P.matmul_tn, _product(P.matmul_tn))
