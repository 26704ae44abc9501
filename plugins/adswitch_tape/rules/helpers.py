"""Helpers of the gradient rules: shapes, undoing broadcasting, products that reuse memory.

Every rule table uses these for what a gradient's shape must become (``unbroadcast``,
``expand``, ``shape_of``), so a change to how rules see shapes -- a leading batch axis
of cotangents, say -- is made here. Like the rules, they use the primitives (``P.*``) on
gradients, so that they are recorded when an enclosing differentiation is active.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import IN_PLACE_FROM, raw
from . import primitives as P

__all__ = ["const", "expand", "shape_of", "times", "unbroadcast", "unbroadcast_to"]


def shape_of(x: Any) -> tuple[int, ...]:
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
    return unbroadcast_to(g, shape_of(x))


def unbroadcast_to(g: Any, shape: tuple[int, ...]) -> Any:
    """Sum ``g`` down to ``shape`` (the rules of ``add``/``subtract`` call it directly:
    their tape entries keep their arguments' shapes, not their values)."""
    gshape = shape_of(g)
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


def const(values: Any, like: Any) -> Any:
    """A constant weight array in the dtype of ``like`` (so float32 stays float32)."""
    return np.asarray(values, dtype=np.result_type(raw(like)))


def expand(g: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    """Bring a reduction's gradient (or value) back to a shape broadcastable to ``x``."""
    if keepdims or axis is None:
        return g
    ndim = len(shape_of(x))
    axes = (axis,) if isinstance(axis, int) else axis
    shape = list(shape_of(x))
    for a in axes:
        shape[a % ndim] = 1
    return P.reshape(g, shape=tuple(shape))
