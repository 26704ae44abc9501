"""Helpers of the gradient rules: shapes, undoing broadcasting, products that reuse memory.

Every rule table uses these for what a gradient's shape must become (``unbroadcast``,
``expand``, ``shape_of``). Like the rules, they use the primitives (``P.*``) on
gradients, so that they are recorded when an enclosing differentiation is active.

Batches: in a batched sweep (``core.BATCH.axes`` leading axes on every cotangent, see
``core.sweep``) a cotangent ``g`` has shape ``batch + ans.shape`` and a rule returns
``batch + x.shape``; in a batched forward sweep a tangent has ``batch + x.shape`` and a
tangent rule returns ``batch + ans.shape``. The helpers that take a cotangent or a
tangent read the batch themselves (``unbroadcast``, ``unbroadcast_to``, ``expand``,
``batch_of``, ``align``, ``pad``); values the tape saved (``ans``, the arguments) never
carry one (``expand_value``). Their unbatched paths are the ones they had before batches
existed: a shape test decides before the batch is read.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import BATCH, IN_PLACE_FROM, raw
from . import primitives as P

__all__ = [
    "align", "batch_of", "broadcast_shape", "const", "expand", "expand_value", "pad",
    "shape_of", "shifted_axes", "tie_weight", "times", "unbroadcast", "unbroadcast_to",
]  # fmt: skip


def shape_of(x: Any) -> tuple[int, ...]:
    try:
        return x.shape  # type: ignore[no-any-return]
    except AttributeError:  # a Python scalar
        return ()


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """``np.broadcast_shapes`` with the cases of elementwise operations taken first:
    equal shapes and scalars (``np.broadcast_shapes`` builds arrays: microseconds)."""
    out = shapes[0]
    for shape in shapes[1:]:
        if shape != out and shape:
            out = shape if not out else np.broadcast_shapes(out, shape)
    return out


def batch_of(g: Any) -> tuple[int, ...]:
    """The batch part of the cotangent ``g``'s shape (``()`` outside a batched sweep)."""
    nb = BATCH.axes
    return shape_of(g)[:nb] if nb else ()


def shifted_axes(axis: Any, ndim: int, nb: int) -> Any:
    """A reduction's or a scan's ``axis`` of an ``ndim``-d value, made non-negative and
    moved behind ``nb`` leading batch axes (``None``: every axis of the value)."""
    if axis is None:
        return tuple(range(nb, nb + ndim))
    if isinstance(axis, (int, np.integer)):
        return nb + int(axis) % ndim
    return tuple(nb + int(a) % ndim for a in axis)


def unbroadcast(g: Any, x: Any) -> Any:
    """Sum the cotangent ``g`` over the axes along which ``x`` was broadcast, giving
    ``batch + x.shape``."""
    try:
        if g.shape == x.shape:  # the common case: no broadcasting happened (and no batch)
            return g
    except AttributeError:  # a Python scalar
        pass
    return unbroadcast_to(g, shape_of(x))


def unbroadcast_to(g: Any, shape: tuple[int, ...]) -> Any:
    """Sum the cotangent ``g`` down to ``batch + shape`` (the rules of ``add``/``subtract``
    call it directly: their tape entries keep their arguments' shapes, not their values)."""
    gshape = shape_of(g)
    if gshape == shape:  # (never with a batch: g has the batch axes in front)
        return g
    nb = BATCH.axes
    if nb:
        return _unbroadcast_batched(g, gshape, shape, nb)
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


def _unbroadcast_batched(g: Any, gshape: tuple[int, ...], shape: tuple[int, ...], nb: int) -> Any:
    """``unbroadcast_to`` with ``nb`` leading batch axes, which are kept."""
    lead = len(gshape) - nb - len(shape)
    if lead:
        g = P.sum(g, axis=tuple(range(nb, nb + lead)))
    axes = tuple(nb + i for i, n in enumerate(shape) if n == 1 and gshape[nb + lead + i] != 1)
    if axes:
        g = P.sum(g, axis=axes, keepdims=True)
    return g


_BLAS_DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64)})


# Below IN_PLACE_FROM elements numpy's temporaries cost less than the checks that avoid
# them; above, a fresh temporary of a large array costs page faults (measured: tanh's rule
# on 128 x 256 float64 is 10x faster written into one temporary).
def times(g: Any, factor: Any) -> Any:
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


def align(t: Any, shape: tuple[int, ...]) -> Any:
    """The tangent ``t`` (``batch`` + a shape that broadcasts to ``shape``) broadcast to
    exactly ``batch + shape``, the tangent of an elementwise result."""
    tshape = shape_of(t)
    nb = BATCH.axes
    if not nb:
        return t if tshape == shape else P.broadcast_to(t, shape=shape)
    if tshape[nb:] == shape:
        return t
    return P.broadcast_to(pad(t, len(shape)), shape=tshape[:nb] + shape)


def pad(t: Any, rank: int) -> Any:
    """The tangent or cotangent ``t`` with axes of length 1 inserted behind its batch axes
    until its own rank (the rank after the batch) is ``rank``: numpy broadcasting then
    lines it up with unbatched values of that rank."""
    nb = BATCH.axes
    tshape = shape_of(t)
    missing = rank - (len(tshape) - nb)
    if missing <= 0 or not nb:
        return t
    return P.reshape(t, shape=tshape[:nb] + (1,) * missing + tshape[nb:])


def tie_weight(x: Any, y: Any, wins: Any) -> Any:
    """Weight of ``x`` in maximum/minimum: 1 where it wins, 0.5 at ties, else 0."""
    rx, ry = raw(x), raw(y)
    return const(np.where(wins(rx, ry), 1.0, np.where(rx == ry, 0.5, 0.0)), x)


def const(values: Any, like: Any) -> Any:
    """A constant weight array in the dtype of ``like`` (so float32 stays float32)."""
    return np.asarray(values, dtype=np.result_type(raw(like)))


def expand(g: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    """Bring a reduction's cotangent back to a shape broadcastable to ``batch + x.shape``."""
    nb = BATCH.axes
    if not nb:
        return expand_value(g, x, axis, keepdims)
    if keepdims:  # batch + x's rank already: broadcasts as it is
        return g
    shape = list(shape_of(x))
    ndim = len(shape)
    axes = range(ndim) if axis is None else (axis,) if isinstance(axis, int) else axis
    for a in axes:
        shape[a % ndim] = 1
    return P.reshape(g, shape=shape_of(g)[:nb] + tuple(shape))


def expand_value(v: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    """Bring a reduction's value (``ans``, never batched) back to a shape broadcastable
    to ``x``."""
    if keepdims or axis is None:
        return v
    ndim = len(shape_of(x))
    axes = (axis,) if isinstance(axis, int) else axis
    shape = list(shape_of(x))
    for a in axes:
        shape[a % ndim] = 1
    return P.reshape(v, shape=tuple(shape))
