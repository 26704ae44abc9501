"""Array API reductions, statistics, shape manipulation and indexing for the tape.

Each function validates the standard's signature and maps it onto a few primitives (so
its gradient, of any order, comes from the primitives' rules). Part of the namespace.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import prims as P
from .mutation import read_only, setitem, view_of
from .tracer import raw


def _ndim(x: Any) -> int:
    return len(np.shape(raw(x)))


def _axes(axis: Any, ndim: int) -> tuple[int, ...] | None:
    if axis is None:
        return None
    if isinstance(axis, (tuple, list)):
        return tuple(int(a) % builtins.max(ndim, 1) for a in axis)
    return (int(axis) % builtins.max(ndim, 1),)


def _count(x: Any, axes: tuple[int, ...] | None) -> int:
    shape = np.shape(raw(x))
    return math.prod(shape) if axes is None else math.prod(shape[a] for a in axes)


# -- reductions and statistics ---------------------------------------------------------
def sum(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
    """Sum over ``axis`` (all axes when None)."""
    out = P.sum(x, axis=None if axis is None else _axes(axis, _ndim(x)), keepdims=keepdims)
    return out if dtype is None else P.astype(out, dtype=dtype)


def prod(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
    """Product over ``axis``; exact gradients also where elements are zero."""
    out = P.prod(x, axis=_axes(axis, _ndim(x)), keepdims=keepdims)
    return out if dtype is None else P.astype(out, dtype=dtype)


def max(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    """Maximum over ``axis``; tied maxima share the gradient evenly."""
    return P.max(x, axis=_axes(axis, _ndim(x)), keepdims=keepdims)


def min(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    """Minimum over ``axis``; tied minima share the gradient evenly."""
    return P.min(x, axis=_axes(axis, _ndim(x)), keepdims=keepdims)


def mean(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    """Arithmetic mean over ``axis``."""
    axes = None if axis is None else _axes(axis, _ndim(x))
    return P.sum(x, axis=axes, keepdims=keepdims) / _count(x, axes)


def var(x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Any:
    """Variance over ``axis`` with ``correction`` degrees of freedom removed."""
    axes = _axes(axis, _ndim(x))
    d = x - P.sum(x, axis=axes, keepdims=True) / _count(x, axes)
    return P.sum(d * d, axis=axes, keepdims=keepdims) / (_count(x, axes) - correction)


def std(x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Any:
    """Standard deviation: ``sqrt(var(...))``."""
    return P.sqrt(var(x, axis=axis, correction=correction, keepdims=keepdims))


def cumulative_sum(
    x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False
) -> Any:
    """Running sum along ``axis`` (required unless ``x`` is 1-d)."""
    if axis is None:
        if _ndim(x) != 1:
            raise ValueError("cumulative_sum: axis is required for arrays that are not 1-d")
        axis = 0
    out = P.cumulative_sum(x, axis=int(axis) % _ndim(x), include_initial=include_initial)
    return out if dtype is None else P.astype(out, dtype=dtype)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """``sum(x1 * x2, axis=axis)`` (real arrays)."""
    return sum(x1 * x2, axis=axis)


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Any:
    """Contraction over ``axes`` (an int, or two sequences of axes), via ``matmul``."""
    n1, n2 = _ndim(x1), _ndim(x2)
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


# -- shape manipulation ----------------------------------------------------------------
def _reshaped_view(x: Any, shape: tuple[int, ...]) -> Any:
    return view_of(
        x,
        P.reshape(x, shape=shape),
        lambda b: P.reshape(b, shape=shape),
        lambda b, v: setitem(b, Ellipsis, P.reshape(v, shape=b.shape)),
    )


def _permuted_view(x: Any, axes: tuple[int, ...]) -> Any:
    back = tuple(int(a) for a in np.argsort(axes))
    return view_of(
        x,
        P.permute_dims(x, axes=axes),
        lambda b: P.permute_dims(b, axes=axes),
        lambda b, v: setitem(b, Ellipsis, P.permute_dims(v, axes=back)),
    )


def reshape(x: Any, /, shape: Sequence[int], *, copy: bool | None = None) -> Any:
    """The same data in ``shape`` (a view, as numpy's for contiguous arrays)."""
    return _reshaped_view(x, tuple(shape))


def permute_dims(x: Any, /, axes: Sequence[int]) -> Any:
    """Reorder the axes (a view)."""
    return _permuted_view(x, tuple(int(a) for a in axes))


def matrix_transpose(x: Any, /) -> Any:
    """Swap the last two axes (a view)."""
    return view_of(
        x,
        P.matrix_transpose(x),
        P.matrix_transpose,
        lambda b, v: setitem(b, Ellipsis, P.matrix_transpose(v)),
    )


def expand_dims(x: Any, /, *, axis: int = 0) -> Any:
    """Insert an axis of length 1 at ``axis``."""
    shape = list(np.shape(raw(x)))
    shape.insert(axis if axis >= 0 else len(shape) + axis + 1, 1)
    return _reshaped_view(x, tuple(shape))


def squeeze(x: Any, /, axis: Any) -> Any:
    """Remove the length-1 axes ``axis``."""
    shape = np.shape(raw(x))
    axes = _axes(axis, len(shape)) or ()
    if builtins.any(shape[a] != 1 for a in axes):
        raise ValueError("squeeze: cannot remove an axis whose length is not 1")
    return _reshaped_view(x, tuple(n for i, n in enumerate(shape) if i not in axes))


def broadcast_to(x: Any, /, shape: Sequence[int]) -> Any:
    """Broadcast ``x`` to ``shape`` (a read-only view, as numpy's)."""
    shape = tuple(shape)
    out = P.broadcast_to(x, shape=shape)
    return view_of(x, out, lambda b: P.broadcast_to(b, shape=shape), read_only)


def broadcast_arrays(*arrays: Any) -> list[Any]:
    """Broadcast all arrays against each other."""
    shape = np.broadcast_shapes(*(np.shape(raw(a)) for a in arrays))
    return [P.broadcast_to(a, shape=shape) for a in arrays]


def concat(arrays: Sequence[Any], /, *, axis: int | None = 0) -> Any:
    """Join arrays along an existing ``axis`` (flattened first when ``axis`` is None)."""
    if axis is None:
        return P.concat(*(P.reshape(a, shape=(-1,)) for a in arrays), axis=0)
    return P.concat(*arrays, axis=int(axis))


def stack(arrays: Sequence[Any], /, *, axis: int = 0) -> Any:
    """Join arrays along a new ``axis``."""
    return P.stack(*arrays, axis=int(axis))


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    """Split ``x`` along ``axis`` into a tuple of arrays."""
    n = np.shape(raw(x))[axis]
    lead = (slice(None),) * (axis % _ndim(x))
    return tuple(x[(*lead, i)] for i in range(n))  # views, as numpy's


def flip(x: Any, /, *, axis: Any = None) -> Any:
    """Reverse the order of elements along ``axis`` (all axes when None; a view)."""
    axes = _axes(axis, _ndim(x))
    return view_of(
        x,
        P.flip(x, axis=axes),
        lambda b: P.flip(b, axis=axes),
        lambda b, v: setitem(b, Ellipsis, P.flip(v, axis=axes)),
    )


def moveaxis(x: Any, source: Any, destination: Any, /) -> Any:
    """Move axes to new positions."""
    n = _ndim(x)
    src = [int(a) % n for a in (source if isinstance(source, (tuple, list)) else (source,))]
    dst = [
        int(a) % n
        for a in (destination if isinstance(destination, (tuple, list)) else (destination,))
    ]
    order = [a for a in range(n) if a not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return _permuted_view(x, tuple(order))


def take(x: Any, indices: Any, /, *, axis: int | None = None) -> Any:
    """Elements of ``x`` at integer ``indices`` along ``axis`` (repeats accumulate)."""
    if axis is None:
        if _ndim(x) != 1:
            raise ValueError("take: axis is required for arrays that are not 1-d")
        axis = 0
    idx = np.array(raw(indices))  # a copy: the backward pass reuses it
    return P.getitem(x, key=(slice(None),) * (axis % _ndim(x)) + (idx,))


def take_along_axis(x: Any, indices: Any, /, *, axis: int = -1) -> Any:
    """``x`` picked along ``axis`` by ``indices`` of the same number of dimensions."""
    idx = np.array(raw(indices))  # a copy: the backward pass reuses it
    ndim = _ndim(x)
    axis %= ndim
    grid = np.ogrid[tuple(slice(n) for n in idx.shape)]
    key = tuple(idx if a == axis else grid[a] for a in range(ndim))
    return P.getitem(x, key=key)


def roll(x: Any, /, shift: Any, *, axis: Any = None) -> Any:
    """Shift elements circularly (over the flattened array when ``axis`` is None)."""
    if axis is None:
        flat = P.reshape(x, shape=(-1,))
        out = take(flat, np.roll(np.arange(np.shape(raw(flat))[0]), shift))
        return P.reshape(out, shape=np.shape(raw(x)))
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,) * len(_axes(axis, 1) or ())
    for ax, s in zip(_axes(axis, _ndim(x)) or (), shifts, strict=True):
        x = take(x, np.roll(np.arange(np.shape(raw(x))[ax]), s), axis=ax)
    return x


def repeat(x: Any, repeats: Any, /, *, axis: int | None = None) -> Any:
    """Repeat each element ``repeats`` times along ``axis`` (flattened when None)."""
    if axis is None:
        x, axis = P.reshape(x, shape=(-1,)), 0
    n = np.shape(raw(x))[axis]
    return take(x, np.repeat(np.arange(n), raw(repeats)), axis=axis)


def tile(x: Any, repetitions: Sequence[int], /) -> Any:
    """Repeat the whole array ``repetitions[i]`` times along each axis."""
    reps = tuple(repetitions)
    ndim = builtins.max(_ndim(x), len(reps))
    x = P.reshape(x, shape=(1,) * (ndim - _ndim(x)) + np.shape(raw(x)))
    reps = (1,) * (ndim - len(reps)) + reps
    for ax, r in enumerate(reps):
        if r != 1:
            x = take(x, np.tile(np.arange(np.shape(raw(x))[ax]), r), axis=ax)
    return x


def diff(x: Any, /, *, axis: int = -1, n: int = 1, prepend: Any = None, append: Any = None) -> Any:
    """``n``-th forward difference along ``axis``."""
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = concat(parts, axis=axis)
    lead = (slice(None),) * (axis % _ndim(x))
    for _ in range(n):
        x = P.getitem(x, key=(*lead, slice(1, None))) - P.getitem(x, key=(*lead, slice(None, -1)))
    return x


def _triangle(x: Any, k: int, lower: bool) -> Any:
    rows, cols = np.shape(raw(x))[-2:]
    mask = np.tri(rows, cols, k, dtype=bool)
    return P.where(mask if lower else ~np.tri(rows, cols, k - 1, dtype=bool), x, 0.0)


def tril(x: Any, /, *, k: int = 0) -> Any:
    """The lower triangle (elements above diagonal ``k`` zeroed)."""
    return _triangle(x, k, lower=True)


def triu(x: Any, /, *, k: int = 0) -> Any:
    """The upper triangle (elements below diagonal ``k`` zeroed)."""
    return _triangle(x, k, lower=False)


def sort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Any:
    """Sorted along ``axis``; each element's gradient follows it to its sorted place."""
    order = np.argsort(raw(x), axis=axis, stable=True)
    if descending:
        order = np.flip(order, axis=axis)
    return take_along_axis(x, order, axis=axis)


def meshgrid(*arrays: Any, indexing: str = "xy") -> list[Any]:
    """Coordinate grids from 1-d arrays."""
    n = len(arrays)
    sizes = [np.shape(raw(a))[0] for a in arrays]
    if indexing == "xy" and n > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, a in enumerate(arrays):
        shape = [1] * n
        pos = i
        if indexing == "xy" and n > 1 and i < 2:
            pos = 1 - i
        shape[pos] = np.shape(raw(a))[0]
        out.append(P.broadcast_to(P.reshape(a, shape=tuple(shape)), shape=tuple(sizes)))
    return out


__all__ = [
    "broadcast_arrays", "broadcast_to", "concat", "cumulative_sum", "diff", "expand_dims",
    "flip", "matrix_transpose", "max", "mean", "meshgrid", "min", "moveaxis", "permute_dims",
    "prod", "repeat", "reshape", "roll", "sort", "squeeze", "stack", "std", "sum", "take",
    "take_along_axis", "tensordot", "tile", "tril", "triu", "unstack", "var", "vecdot",
]  # fmt: skip
