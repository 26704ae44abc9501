"""The gradient rules of the reductions and scans: sum, prod, max, min, cumulative_sum.

Non-smooth points are documented in ``elementwise`` (tied extremes share the gradient;
``prod`` with zeros is exact at any order).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import BATCH, Tracer, raw
from ..recording import defvjp
from . import primitives as P
from .helpers import batch_of, const, expand, expand_value, shape_of, shifted_axes


def _sum_x(g: Any, ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    if type(g) is np.ndarray and type(x) is np.ndarray:  # top level: the common case
        if BATCH.axes:
            ge = expand(g, x, axis, keepdims)
            return np.zeros(g.shape[: BATCH.axes] + x.shape, dtype=ge.dtype) + ge
        ge = g if keepdims or axis is None else expand(g, x, axis, keepdims)
        return np.zeros(x.shape, dtype=ge.dtype) + ge
    ge = expand(g, x, axis, keepdims)
    shape = batch_of(g) + shape_of(x)
    if type(ge) is Tracer:
        return P.broadcast_to(ge, shape=shape)
    # Plain arrays: a fresh array costs less than np.broadcast_to's Python wrapper, and the
    # gradient handed back must be its own writeable array anyway.
    dtype = ge.dtype if type(ge) is np.ndarray else np.result_type(ge)
    return np.zeros(shape, dtype=dtype) + ge


def _prod_x(g: Any, ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    ge = expand(g, x, axis, keepdims)
    if not (raw(x) == 0).any():
        return ge * expand_value(ans, x, axis, keepdims) / x
    return ge * prod_of_others(x, axis)


def prod_of_others(x: Any, axis: Any) -> Any:
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
    hit = raw(x) == raw(expand_value(ans, x, axis, keepdims))
    share = hit / np.sum(hit, axis=axis, keepdims=True)
    return expand(g, x, axis, keepdims) * const(share, x)


def _cumsum_x(g: Any, ans: Any, x: Any, axis: int, include_initial: bool = False) -> Any:
    nb = BATCH.axes
    ax = shifted_axes(axis, len(shape_of(g)) - nb, nb)  # (x is not kept: g's rank tells)
    if include_initial:
        g = P.getitem(g, key=(slice(None),) * ax + (slice(1, None),))
    return P.flip(P.cumulative_sum(P.flip(g, axis=ax), axis=ax), axis=ax)


defvjp(P.sum, _sum_x)
defvjp(P.prod, _prod_x)
defvjp(P.max, _extreme_x)
defvjp(P.min, _extreme_x)
defvjp(P.cumulative_sum, _cumsum_x)
