"""The gradient rules: one flat table, filled by one verb, ``defvjp(prim, rule_x, rule_y...)``.

A rule is ``rule(g, ans, *args, **params) -> gradient for one argument``, where ``g`` is the
gradient of the output ``ans``. Rules use the primitives (``P.*``) and operators, never
raw numpy on ``g`` or on arguments: in a nested call those are tracers of the enclosing
call, and the rule is then recorded -- that is what makes any order of derivatives work.
Quantities with a zero derivative (masks, signs, counts) are computed on raw values.
At top level (plain numpy) the hottest rules write ``g * factor`` into their own fresh
temporary when arrays are large (``_times``): fewer allocations, same numbers.

Non-smooth points (documented choices, each consistent with central differences):
    * ``abs`` at 0: gradient 0 (``sign(0) = 0``); ``sign``, ``floor`` and friends: 0.
    * ``maximum``/``minimum`` at ties: the gradient is split evenly between the two
      arguments (0.5 each), which is what central differences give; ``clip`` is built on
      them, so at a bound the input gets 0.5.
    * ``max``/``min`` reductions with tied extremes: split evenly among the tied elements.
    * ``prod`` with zeros: exact at any order (the product of the other elements, never
      a division by zero).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import prims as P
from .core import IN_PLACE_FROM
from .primitive import defvjp, defvjp_variadic
from .prims import _tanh_grad
from .tracer import Tracer, raw

__all__ = ["unbroadcast", "unbroadcast_to"]


def _shape(x: Any) -> tuple[int, ...]:
    try:
        return x.shape  # type: ignore[no-any-return]
    except AttributeError:  # a Python scalar
        return ()


def unbroadcast(g: Any, x: Any) -> Any:
    """Sum ``g`` over the axes along which ``x`` was broadcast, giving ``x``'s shape."""
    try:
        if g.shape == x.shape:  # the common case: no broadcasting happened
            return g
    except AttributeError:  # a Python scalar
        pass
    shape, gshape = _shape(x), _shape(g)
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    if lead:
        g = P.sum(g, axis=tuple(range(lead)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and gshape[lead + i] != 1)
    if axes:
        g = P.sum(g, axis=axes, keepdims=True)
    return g


def unbroadcast_to(g: Any, shape: tuple[int, ...]) -> Any:
    """:func:`unbroadcast` to a shape (the rules of ``add``/``subtract``, whose tape
    entries keep their arguments' shapes, not their values)."""
    gshape = _shape(g)
    if gshape == shape:
        return g
    if (
        type(g) is np.ndarray
        and len(gshape) == 2
        and shape == gshape[1:]
        and g.size >= IN_PLACE_FROM
        and g.dtype in _BLAS_DTYPES
        and g.flags.c_contiguous
    ):  # top level, a bias's gradient (rows summed): BLAS's vector-matrix product
        return np.ones(gshape[0], dtype=g.dtype) @ g  # is twice as fast as add.reduce
    lead = len(gshape) - len(shape)
    if lead:
        g = P.sum(g, axis=tuple(range(lead)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and gshape[lead + i] != 1)
    if axes:
        g = P.sum(g, axis=axes, keepdims=True)
    return g


_BLAS_DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64)})


# Below IN_PLACE_FROM elements numpy's temporaries cost less than the checks that avoid
# them; above, a fresh temporary of a large array costs page faults (measured: tanh's rule
# on 128 x 256 float64 is 10x faster written into one temporary).


def _times(g: Any, factor: Any) -> Any:
    """``g * factor`` for a fresh ``factor`` of ``g``'s shape; for large plain arrays (top
    level) written into ``factor``'s memory."""
    if (
        type(factor) is np.ndarray
        and factor.size >= IN_PLACE_FROM
        and type(g) is np.ndarray
        and factor.shape == g.shape
        and factor.dtype == g.dtype
    ):
        return np.multiply(factor, g, out=factor)
    return g * factor


def _const(values: Any, like: Any) -> Any:
    """A constant weight array in the dtype of ``like`` (so float32 stays float32)."""
    return np.asarray(values, dtype=np.result_type(raw(like)))


def _expand(g: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    """Bring a reduction's gradient (or value) back to a shape broadcastable to ``x``."""
    if keepdims or axis is None:
        return g
    ndim = len(_shape(x))
    axes = (axis,) if isinstance(axis, int) else axis
    shape = list(_shape(x))
    for a in axes:
        shape[a % ndim] = 1
    return P.reshape(g, shape=tuple(shape))


# -- elementwise, one argument ---------------------------------------------------------
defvjp(P.negative, lambda g, ans, x: -g)
defvjp(P.positive, lambda g, ans, x: g)
defvjp(P.abs, lambda g, ans, x: g * _const(np.sign(raw(x)), x))
defvjp(P.exp, lambda g, ans, x: g * ans)
defvjp(P.expm1, lambda g, ans, x: g * (ans + 1.0))
defvjp(P.log, lambda g, ans, x: g / x)
defvjp(P.log1p, lambda g, ans, x: g / (x + 1.0))
defvjp(P.log2, lambda g, ans, x: g / (x * np.log(2.0)))
defvjp(P.log10, lambda g, ans, x: g / (x * np.log(10.0)))
defvjp(P.sqrt, lambda g, ans, x: g * 0.5 / ans)
defvjp(P.square, lambda g, ans, x: _times(g, 2.0 * x))


def _sin_x(g: Any, ans: Any, x: Any) -> Any:
    if type(x) is not np.ndarray:  # traced (recorded by an enclosing call), or a scalar
        return _times(g, P.cos(x))
    c = np.cos(x)  # top level: the primitive's own numpy call, one call layer less
    if c.size >= IN_PLACE_FROM:
        return _times(g, c)
    return g * c


defvjp(P.sin, _sin_x)
defvjp(P.cos, lambda g, ans, x: -(g * P.sin(x)))
defvjp(P.tan, lambda g, ans, x: g * (1.0 + P.square(ans)))
defvjp(P.sinh, lambda g, ans, x: g * P.cosh(x))
defvjp(P.cosh, lambda g, ans, x: g * P.sinh(x))
defvjp(
    P.tanh,
    # top level: the primitive's numpy code directly (one call layer less per entry)
    lambda g, ans, x: (
        _tanh_grad(g, ans)
        if type(g) is np.ndarray and type(ans) is np.ndarray
        else P.tanh_grad(g, ans)
    ),
)


def _tanh_grad_y(gg: Any, ans: Any, g: Any, y: Any) -> Any:
    """``gg * g * y * -2``; for large plain arrays (top level) the products after the
    first are written into its fresh temporary (same operations, same order)."""
    if type(gg) is np.ndarray and type(g) is np.ndarray and gg.size >= IN_PLACE_FROM:
        t = gg * g
        if (
            type(y) is np.ndarray
            and t.shape == np.broadcast_shapes(t.shape, y.shape)
            and t.dtype == np.result_type(t, y)
        ):
            np.multiply(t, y, out=t)
            return np.multiply(t, -2.0, out=t)
        return t * y * -2.0
    return gg * g * y * -2.0


defvjp(P.tanh_grad, lambda gg, ans, g, y: P.tanh_grad(gg, y), _tanh_grad_y)
defvjp(P.asin, lambda g, ans, x: g / P.sqrt(1.0 - P.square(x)))
defvjp(P.acos, lambda g, ans, x: -g / P.sqrt(1.0 - P.square(x)))
defvjp(P.atan, lambda g, ans, x: g / (1.0 + P.square(x)))
defvjp(P.asinh, lambda g, ans, x: g / P.sqrt(P.square(x) + 1.0))
defvjp(P.acosh, lambda g, ans, x: g / P.sqrt(P.square(x) - 1.0))
defvjp(P.atanh, lambda g, ans, x: g / (1.0 - P.square(x)))


# -- elementwise, two arguments --------------------------------------------------------
def _pow_x(g: Any, ans: Any, x: Any, y: Any) -> Any:
    if isinstance(y, (int, float)):  # a Python exponent: the shape is x's, no broadcasting
        if y == 0:
            return g * 0.0
        return _times(g, 2.0 * x if y == 2 else y * P.pow(x, y - 1.0))
    return unbroadcast(g * y * P.pow(x, y - 1.0), x)


def _pow_y(g: Any, ans: Any, x: Any, y: Any) -> Any:
    # d(x**y)/dy = x**y log x; at x == 0 the limit is 0 (for y > 0), log(1) gives it.
    safe = P.where(raw(x) == 0, 1.0, x)
    return unbroadcast(g * ans * P.log(safe), y)


def _ties(x: Any, y: Any, wins: Any) -> Any:
    """Weight of ``x`` in maximum/minimum: 1 where it wins, 0.5 at ties, else 0."""
    rx, ry = raw(x), raw(y)
    return _const(np.where(wins(rx, ry), 1.0, np.where(rx == ry, 0.5, 0.0)), x)


# (The shape test is inlined in the hottest rules: one call less per operation.)
# add/subtract: their tape entries keep the arguments' shapes only (see ``prims``).
defvjp(
    P.add,
    lambda g, ans, xs, ys: g if g.shape == xs else unbroadcast_to(g, xs),
    lambda g, ans, xs, ys: g if g.shape == ys else unbroadcast_to(g, ys),
)
defvjp(
    P.subtract,
    lambda g, ans, xs, ys: g if g.shape == xs else unbroadcast_to(g, xs),
    lambda g, ans, xs, ys: unbroadcast_to(-g, ys),
)
defvjp(
    P.multiply,
    lambda g, ans, x, y: gy if (gy := g * y).shape == x.shape else unbroadcast(gy, x),
    lambda g, ans, x, y: gx if (gx := g * x).shape == y.shape else unbroadcast(gx, y),
)
defvjp(
    P.divide,
    lambda g, ans, x, y: unbroadcast(g / y, x),
    lambda g, ans, x, y: unbroadcast(-g * ans / y, y),
)
defvjp(P.pow, _pow_x, _pow_y)
defvjp(
    P.maximum,
    lambda g, ans, x, y: unbroadcast(g * _ties(x, y, np.greater), x),
    lambda g, ans, x, y: unbroadcast(g * _ties(y, x, np.greater), y),
)
defvjp(
    P.minimum,
    lambda g, ans, x, y: unbroadcast(g * _ties(x, y, np.less), x),
    lambda g, ans, x, y: unbroadcast(g * _ties(y, x, np.less), y),
)
defvjp(
    P.atan2,
    lambda g, ans, x, y: unbroadcast(g * y / (P.square(x) + P.square(y)), x),
    lambda g, ans, x, y: unbroadcast(-g * x / (P.square(x) + P.square(y)), y),
)
defvjp(
    P.hypot,
    lambda g, ans, x, y: unbroadcast(g * x / ans, x),
    lambda g, ans, x, y: unbroadcast(g * y / ans, y),
)
defvjp(
    P.logaddexp,
    lambda g, ans, x, y: unbroadcast(g * P.exp(x - ans), x),
    lambda g, ans, x, y: unbroadcast(g * P.exp(y - ans), y),
)
defvjp(
    P.copysign,
    lambda g, ans, x, y: unbroadcast(
        g * _const(np.where(np.signbit(raw(x)) == np.signbit(raw(y)), 1.0, -1.0), x), x
    ),
    lambda g, ans, x, y: unbroadcast(g * 0.0, y),
)
defvjp(
    P.remainder,
    lambda g, ans, x, y: unbroadcast(g, x),
    lambda g, ans, x, y: unbroadcast(-g * _const(np.floor_divide(raw(x), raw(y)), y), y),
)
defvjp(
    P.where,
    None,
    lambda g, ans, c, x, y: unbroadcast(P.where(c, g, 0.0), x),
    lambda g, ans, c, x, y: unbroadcast(P.where(c, 0.0, g), y),
)


# -- matmul: vectors, matrices, batches --------------------------------------------------
def _col(v: Any) -> Any:
    """``v[..., None]``: a trailing axis of length 1."""
    return P.reshape(v, shape=(*_shape(v), 1))


def _uncol(v: Any) -> Any:
    """``v[..., 0]``."""
    return P.getitem(v, key=(Ellipsis, 0))


def _matmul_x(g: Any, ans: Any, x: Any, y: Any) -> Any:
    xd, yd = len(_shape(x)), len(_shape(y))
    if xd == 1 and yd == 1:
        return g * y
    if xd == 1:  # (k,) @ (..., k, m) -> (..., m)
        return unbroadcast(_uncol(P.matmul(y, _col(g))), x)
    if yd == 1:  # (..., n, k) @ (k,) -> (..., n)
        return unbroadcast(_col(g) * y, x)
    if type(g) is np.ndarray and type(y) is np.ndarray and g.shape[-1] == 1:
        # top level, (..., n, k) @ (..., k, 1): an outer product, which a broadcast
        # multiply computes twice as fast as matmul -- the same products, bit for bit
        return unbroadcast(np.multiply(g, y.swapaxes(-1, -2)), x)
    return unbroadcast(P.matmul_nt(g, y), x)


def _matmul_y(g: Any, ans: Any, x: Any, y: Any) -> Any:
    xd, yd = len(_shape(x)), len(_shape(y))
    if xd == 1 and yd == 1:
        return g * x
    if xd == 1:
        return unbroadcast(_col(x) * P.reshape(g, shape=(*_shape(g)[:-1], 1, -1)), y)
    if yd == 1:
        return unbroadcast(_uncol(P.matmul(P.matrix_transpose(x), _col(g))), y)
    if type(g) is np.ndarray and type(x) is np.ndarray and g.shape[-2] == 1:
        # top level, (..., 1, k) @ (..., k, m): an outer product (see ``_matmul_x``)
        return unbroadcast(np.multiply(x.swapaxes(-1, -2), g), y)
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
        ge = g if keepdims or axis is None else _expand(g, x, axis, keepdims)
        return np.zeros(x.shape, dtype=ge.dtype) + ge
    ge = _expand(g, x, axis, keepdims)
    if type(ge) is Tracer:
        return P.broadcast_to(ge, shape=_shape(x))
    # Plain arrays: a fresh array costs less than np.broadcast_to's Python wrapper, and the
    # gradient handed back must be its own writeable array anyway.
    dtype = ge.dtype if type(ge) is np.ndarray else np.result_type(ge)
    return np.zeros(_shape(x), dtype=dtype) + ge


def _prod_x(g: Any, ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    ge = _expand(g, x, axis, keepdims)
    if not (raw(x) == 0).any():
        return ge * _expand(ans, x, axis, keepdims) / x
    return ge * _prod_of_others(x, axis)


def _prod_of_others(x: Any, axis: Any) -> Any:
    """For each element, the product of the *other* elements of its reduced slice --
    exact with zeros and differentiable again (prod/x is neither): a slice of n
    elements becomes n rows, each with its own element replaced by 1, multiplied out.
    O(n^2) memory, used only when the slice holds a zero."""
    shape = _shape(x)
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
    hit = raw(x) == raw(_expand(ans, x, axis, keepdims))
    share = hit / np.sum(hit, axis=axis, keepdims=True)
    return _expand(g, x, axis, keepdims) * _const(share, x)


def _cumsum_x(g: Any, ans: Any, x: Any, axis: int, include_initial: bool = False) -> Any:
    if include_initial:
        key = (slice(None),) * (axis % len(_shape(g))) + (slice(1, None),)
        g = P.getitem(g, key=key)
    return P.flip(P.cumulative_sum(P.flip(g, axis=axis), axis=axis), axis=axis)


defvjp(P.sum, _sum_x)
defvjp(P.prod, _prod_x)
defvjp(P.max, _extreme_x)
defvjp(P.min, _extreme_x)
defvjp(P.cumulative_sum, _cumsum_x)


# -- shapes, copies and indexing -------------------------------------------------------
def _concat_k(k: int, g: Any, ans: Any, *xs: Any, axis: int | None) -> Any:
    if axis is None:
        start = int(sum(np.size(raw(x)) for x in xs[:k]))
        piece = P.getitem(g, key=slice(start, start + np.size(raw(xs[k]))))
        return P.reshape(piece, shape=_shape(xs[k]))
    ax = axis % len(_shape(g))
    start = int(sum(_shape(x)[ax] for x in xs[:k]))
    key = (slice(None),) * ax + (slice(start, start + _shape(xs[k])[ax]),)
    return P.getitem(g, key=key)


def _stack_k(k: int, g: Any, ans: Any, *xs: Any, axis: int) -> Any:
    return P.getitem(g, key=(slice(None),) * (axis % len(_shape(g))) + (k,))


defvjp(P.reshape, lambda g, ans, x, shape: P.reshape(g, shape=_shape(x)))
defvjp(
    P.permute_dims,
    lambda g, ans, x, axes: P.permute_dims(g, axes=tuple(int(a) for a in np.argsort(axes))),
)
defvjp(P.matrix_transpose, lambda g, ans, x: P.matrix_transpose(g))
defvjp(P.broadcast_to, lambda g, ans, x, shape: unbroadcast(g, x))
defvjp(P.flip, lambda g, ans, x, axis=None: P.flip(g, axis=axis))
defvjp(P.astype, lambda g, ans, x, dtype: P.astype(g, dtype=raw(x).dtype))
defvjp(P.getitem, lambda g, ans, x, key: P.scatter(g, key=key, shape=_shape(x)))
defvjp(P.scatter, lambda g, ans, x, key, shape: P.getitem(g, key=key))
defvjp(
    P.index_update,
    lambda g, ans, x, v, key: P.index_update(g, 0.0, key=key),
    lambda g, ans, x, v, key: unbroadcast(P.getitem(g, key=key), v),
)
defvjp_variadic(P.concat, _concat_k)
defvjp_variadic(P.stack, _stack_k)
