"""Reductions of the namespace (``sum``, ``mean``, ``prod``, ``max``, ``min``, ``var``,
``std``, ``cumulative_sum``, ``vecdot``), with ``axis`` and ``keepdims``.

A reduction over the value's axes is the same reduction of the tangents (whose trailing
axis of directions is never reduced), weighted where the function is not linear.

Example:
    >>> import numpy as np
    >>> from adswitch_dual.dual import DualArray
    >>> x = DualArray(np.array([2.0, 3.0]), np.eye(2))
    >>> prod(x).tangent.tolist()
    [3.0, 2.0]
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from adswitch_dual.chain import combine, unary
from adswitch_dual.dual import DualArray, parts
from adswitch_dual.rules import UNARY

__all__ = ["cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var", "vecdot"]


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return tuple(a % ndim if ndim else a for a in axes)


def _count(value: np.ndarray, axis: Any) -> int:
    return int(np.prod([value.shape[a] for a in _axes(axis, value.ndim)]))


def sum(
    x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: builtins.bool = False
) -> DualArray:
    value, tangent = parts(x)
    value = np.asarray(value)
    ax = _axes(axis, value.ndim)
    out = np.sum(value, axis=ax, keepdims=keepdims, dtype=dtype)
    summed = None if tangent is None else np.sum(tangent, axis=ax, keepdims=keepdims)
    return DualArray(*combine(out, [(None, summed)]))


def mean(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> DualArray:
    count = _count(np.asarray(parts(x)[0]), axis)
    return sum(x, axis=axis, keepdims=keepdims) / count


def prod(
    x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: builtins.bool = False
) -> DualArray:
    value, tangent = parts(x)
    value = np.asarray(value)
    ax = _axes(axis, value.ndim)
    out = np.prod(value, axis=ax, keepdims=keepdims)
    if tangent is None:
        return DualArray(out)
    # d prod / d x_i = product of the others, from exclusive prefix and suffix
    # products: exact where some x_i are 0 (dividing prod by x_i is not).
    keep = [a for a in range(value.ndim) if a not in ax]
    moved = np.transpose(value, keep + list(ax)).reshape([value.shape[a] for a in keep] + [-1])
    ones = np.ones_like(moved[..., :1])
    left = np.cumprod(np.concatenate([ones, moved[..., :-1]], -1), -1)
    right = np.cumprod(np.concatenate([ones, moved[..., :0:-1]], -1), -1)[..., ::-1]
    tmoved = np.transpose(tangent, [*keep, *ax, value.ndim])
    tmoved = tmoved.reshape((*moved.shape, tangent.shape[-1]))
    total = np.sum((left * right)[..., None] * tmoved, axis=-2)
    return DualArray(*combine(out, [(None, total.reshape((*np.shape(out), tangent.shape[-1])))]))


def _extreme(x: Any, axis: Any, keepdims: builtins.bool, f: Any) -> DualArray:
    value, tangent = parts(x)
    value = np.asarray(value)
    ax = _axes(axis, value.ndim)
    top = f(value, axis=ax, keepdims=True)
    out = top if keepdims else np.squeeze(top, ax)
    if tangent is None:
        return DualArray(out)
    hits = value == top  # ties share the derivative equally
    weights = hits / np.sum(hits, axis=ax, keepdims=True)
    summed = np.sum(weights[..., None] * tangent, axis=ax, keepdims=keepdims)
    return DualArray(*combine(out, [(None, summed)]))


def max(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> DualArray:
    return _extreme(x, axis, keepdims, np.max)


def min(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> DualArray:
    return _extreme(x, axis, keepdims, np.min)


def var(
    x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: builtins.bool = False
) -> DualArray:
    count = _count(np.asarray(parts(x)[0]), axis)
    deviation = x - mean(x, axis=axis, keepdims=True)
    return sum(deviation * deviation, axis=axis, keepdims=keepdims) / (count - correction)


def std(
    x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: builtins.bool = False
) -> DualArray:
    variance = var(x, axis=axis, correction=correction, keepdims=keepdims)
    return DualArray(*unary(parts(variance), *UNARY["sqrt"]))


def cumulative_sum(
    x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: builtins.bool = False
) -> DualArray:
    value, tangent = parts(x)
    value = np.asarray(value)
    if axis is None:
        if value.ndim != 1:
            raise ValueError("cumulative_sum needs axis= for arrays of more than one dimension")
        axis = 0
    axis %= value.ndim
    out = np.cumulative_sum(value, axis=axis, include_initial=include_initial)
    t = (
        None
        if tangent is None
        else np.cumulative_sum(tangent, axis=axis, include_initial=include_initial)
    )
    return DualArray(*combine(out, [(None, t)]))


def vecdot(a: Any, b: Any, /, *, axis: int = -1) -> DualArray:
    return sum(a * b, axis=axis)
