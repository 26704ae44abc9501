"""The Array API's statistical functions (sums, products, extrema, moments) over autograd.

autograd's own ``prod`` rule divides by the input (``nan`` at a zero element) and its
``cumprod`` has no rule at all; both are built here from multiplications instead, exact
at zeros. ``max``/``min`` share the gradient equally among tied maxima (autograd's rule).
"""

from __future__ import annotations

from typing import Any

import autograd.numpy as anp
import numpy as np

from .indexing import index_along
from .support import is_traced, untraced

__all__ = [
    "cumulative_prod",
    "cumulative_sum",
    "max",
    "mean",
    "min",
    "prod",
    "std",
    "sum",
    "var",
]


def sum(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
    """Sum over ``axis``; small integers widen as the standard says (numpy's rule).

    A traced ``x`` is converted to ``dtype`` first, so the gradient comes back in ``x``'s
    own dtype.
    """
    if is_traced(x):
        if dtype is not None and x.dtype != dtype:
            x = x.astype(dtype)
        return anp.sum(x, axis=_axis(axis), keepdims=keepdims)
    return np.sum(x, axis=_axis(axis), dtype=dtype, keepdims=keepdims)


def max(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    """Maximum over ``axis``; tied maxima share the gradient equally."""
    return anp.max(x, axis=_axis(axis), keepdims=keepdims)


def min(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    """Minimum over ``axis``; tied minima share the gradient equally."""
    return anp.min(x, axis=_axis(axis), keepdims=keepdims)


def _axis(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


def cumulative_sum(
    x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False
) -> Any:
    """Running sums along ``axis`` (may be ``None`` only for 1-d ``x``)."""
    ndim = anp.ndim(x)
    if axis is None:
        if ndim != 1:
            raise ValueError("cumulative_sum: axis=None needs a 1-d array; pass axis=")
        axis = 0
    result = anp.cumsum(x, axis=axis)
    if include_initial:
        shape = list(anp.shape(x))
        shape[axis % ndim] = 1
        result = anp.concatenate([np.zeros(shape, dtype=result.dtype), result], axis=axis)
    if dtype is not None and result.dtype != dtype:
        result = result.astype(dtype)
    return result


def cumulative_prod(
    x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False
) -> Any:
    """Running products along ``axis``; exact derivatives also through zeros and signs
    (one multiplication per step, not ``exp(cumsum(log))``)."""
    ndim = anp.ndim(x)
    if axis is None:
        if ndim != 1:
            raise ValueError("cumulative_prod: axis=None needs a 1-d array; pass axis=")
        axis = 0
    axis %= ndim
    pieces = [x[index_along(axis, ndim, slice(0, 1))]]
    for i in range(1, anp.shape(x)[axis]):
        pieces.append(pieces[-1] * x[index_along(axis, ndim, slice(i, i + 1))])
    if include_initial:
        shape = list(anp.shape(x))
        shape[axis] = 1
        pieces.insert(0, np.ones(shape, dtype=np.asarray(untraced(x)).dtype))
    result = anp.concatenate(pieces, axis=axis)
    if dtype is not None and result.dtype != dtype:
        result = result.astype(dtype)
    return result


def prod(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
    """Product over ``axis``, with exact derivatives also where elements are zero.

    autograd's own rule divides (``g * prod / x``), which gives ``nan`` at a zero element;
    here the product is a balanced tree of multiplications, whose derivatives are exact
    to any order.
    """
    if not is_traced(x):
        return np.prod(x, axis=axis, dtype=dtype, keepdims=keepdims)
    ndim = anp.ndim(x)
    shape = tuple(anp.shape(x))
    if axis is None:
        axes = tuple(range(ndim))
    else:
        axes = tuple(a % ndim for a in ((axis,) if isinstance(axis, int) else axis))
    kept = [d for d in range(ndim) if d not in axes]
    kept_shape = [shape[d] for d in kept]
    count = int(np.prod([shape[d] for d in axes], dtype=np.int64))
    if count == 0:
        result: Any = np.ones(kept_shape, dtype=np.asarray(untraced(x)).dtype)
    else:
        y = anp.transpose(x, kept + list(axes)) if ndim else x
        y = anp.reshape(y, (*kept_shape, count))
        while anp.shape(y)[-1] > 1:
            if anp.shape(y)[-1] % 2:
                one = np.ones((*kept_shape, 1), dtype=np.asarray(untraced(x)).dtype)
                y = anp.concatenate([y, one], axis=-1)
            y = y[..., 0::2] * y[..., 1::2]
        # numpy's prod returns a scalar or a new array, never a view of a temporary
        result = y[0] if not kept_shape else y[..., 0] + 0.0
    if keepdims:
        result = anp.reshape(result, tuple(1 if d in axes else shape[d] for d in range(ndim)))
    if dtype is not None and result.dtype != dtype:
        result = result.astype(dtype)
    return result


def mean(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    """Arithmetic mean over ``axis``."""
    return anp.mean(x, axis=axis, keepdims=keepdims)


def var(x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Any:
    """Variance with ``correction`` degrees of freedom subtracted from the count.

    Example:
        >>> var(np.asarray([1.0, 3.0]), correction=1)
        np.float64(2.0)
    """
    centred = x - anp.mean(x, axis=axis, keepdims=True)
    count = np.prod([anp.shape(x)[a] for a in _axes(axis, anp.ndim(x))], dtype=np.int64)
    squares = anp.sum(centred * centred, axis=axis, keepdims=keepdims)
    return squares / (float(count) - correction)


def std(x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Any:
    """Standard deviation: ``sqrt(var(...))``."""
    return anp.sqrt(var(x, axis=axis, correction=correction, keepdims=keepdims))


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        return (axis,)
    return tuple(axis)
