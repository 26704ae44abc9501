"""Array API reductions, statistics and contractions for the tape (sum, mean, var, tensordot).

Each function validates the standard's signature and maps it onto a few primitives (so
its gradient, of any order, comes from the primitives' rules). Part of the namespace.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..array.tracer import raw
from ..rules import primitives as P
from .axes import axes_of, count, ndim_of
from .elementwise import conj

__all__ = [
    "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "tensordot", "var", "vecdot",
]  # fmt: skip


def sum(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
    """Sum over ``axis`` (all axes when None)."""
    out = P.sum(x, axis=None if axis is None else axes_of(axis, ndim_of(x)), keepdims=keepdims)
    return out if dtype is None else P.astype(out, dtype=dtype)


def prod(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
    """Product over ``axis``; exact gradients also where elements are zero."""
    out = P.prod(x, axis=axes_of(axis, ndim_of(x)), keepdims=keepdims)
    return out if dtype is None else P.astype(out, dtype=dtype)


def max(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    """Maximum over ``axis``; tied maxima share the gradient evenly."""
    return P.max(x, axis=axes_of(axis, ndim_of(x)), keepdims=keepdims)


def min(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    """Minimum over ``axis``; tied minima share the gradient evenly."""
    return P.min(x, axis=axes_of(axis, ndim_of(x)), keepdims=keepdims)


def mean(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    """Arithmetic mean over ``axis``."""
    axes = None if axis is None else axes_of(axis, ndim_of(x))
    return P.sum(x, axis=axes, keepdims=keepdims) / count(x, axes)


def var(x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Any:
    """Variance over ``axis`` with ``correction`` degrees of freedom removed."""
    axes = axes_of(axis, ndim_of(x))
    d = x - P.sum(x, axis=axes, keepdims=True) / count(x, axes)
    return P.sum(d * d, axis=axes, keepdims=keepdims) / (count(x, axes) - correction)


def std(x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Any:
    """Standard deviation: ``sqrt(var(...))``."""
    return P.sqrt(var(x, axis=axis, correction=correction, keepdims=keepdims))


def cumulative_sum(
    x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False
) -> Any:
    """Running sum along ``axis`` (required unless ``x`` is 1-d)."""
    if axis is None:
        if ndim_of(x) != 1:
            raise ValueError("cumulative_sum: axis is required for arrays that are not 1-d")
        axis = 0
    out = P.cumulative_sum(x, axis=int(axis) % ndim_of(x), include_initial=include_initial)
    return out if dtype is None else P.astype(out, dtype=dtype)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """``sum(conj(x1) * x2, axis=axis)`` over broadcast arrays whose ``axis`` has one
    length, in their result dtype (numpy's sum would widen small integers)."""
    s1, s2 = np.shape(raw(x1)), np.shape(raw(x2))
    shape = np.broadcast_shapes(s1, s2)
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"vecdot: axis {axis} is out of range for shapes {s1} and {s2}")
    ax = axis % len(shape)
    n1, n2 = _length(s1, ax - len(shape)), _length(s2, ax - len(shape))
    if n1 != n2:
        raise ValueError(
            f"vecdot: the contracted axis has length {n1} in x1 (shape {s1}) and {n2} in "
            f"x2 (shape {s2}); they must be equal (it is not broadcast)"
        )
    product = (conj(x1) if np.iscomplexobj(raw(x1)) else x1) * x2
    out = P.sum(product, axis=(ax,))
    dtype = raw(product).dtype
    return out if raw(out).dtype == dtype else P.astype(out, dtype=dtype)


def _length(shape: tuple[int, ...], axis: int) -> int | None:
    """The length of a negative ``axis`` of ``shape``, or None where it has no such axis."""
    return shape[axis] if -len(shape) <= axis else None


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Any:
    """Contraction over ``axes`` (an int, or two sequences of axes), via ``matmul``."""
    n1, n2 = ndim_of(x1), ndim_of(x2)
    if isinstance(axes, int):
        a1, a2 = list(range(n1 - axes, n1)), list(range(axes))
    else:
        a1, a2 = [a % n1 for a in axes[0]], [a % n2 for a in axes[1]]
    free1 = [a for a in range(n1) if a not in a1]
    free2 = [a for a in range(n2) if a not in a2]
    s1, s2 = np.shape(raw(x1)), np.shape(raw(x2))
    k = math.prod(s1[a] for a in a1)
    left = P.reshape(P.permute_dims(x1, axes=tuple(free1 + a1)), shape=(-1, k))
    right = P.reshape(P.permute_dims(x2, axes=tuple(a2 + free2)), shape=(k, -1))
    out_shape = tuple(s1[a] for a in free1) + tuple(s2[a] for a in free2)
    return P.reshape(P.matmul(left, right), shape=out_shape)
