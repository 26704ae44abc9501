"""The Array API's manipulation and linear-algebra functions over autograd primitives.

Where autograd's own function has no derivative (``take``, ``flip``) or handles only part
of the standard's signature (``repeat`` with per-element counts), the function is built
from indexing, whose derivative autograd does have.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import autograd.numpy as anp
import numpy as np

from ._ns_support import is_traced

__all__ = [
    "broadcast_arrays",
    "broadcast_to",
    "concat",
    "expand_dims",
    "flip",
    "matrix_transpose",
    "moveaxis",
    "permute_dims",
    "repeat",
    "reshape",
    "roll",
    "squeeze",
    "sort",
    "stack",
    "take",
    "take_along_axis",
    "tensordot",
    "tile",
    "unstack",
    "vecdot",
    "where",
]


def _index_along(axis: int, ndim: int, index: Any) -> tuple[Any, ...]:
    axis = axis % ndim
    return (slice(None),) * axis + (index,)


def concat(arrays: Sequence[Any], /, *, axis: int | None = 0) -> Any:
    """Join arrays along an existing axis (``axis=None``: flatten them first).

    Example:
        >>> concat([np.ones(2), np.zeros(1)])
        array([1., 1., 0.])
    """
    if axis is None:
        return anp.concatenate([anp.ravel(a) for a in arrays], axis=0)
    return anp.concatenate(list(arrays), axis=axis)


def stack(arrays: Sequence[Any], /, *, axis: int = 0) -> Any:
    """Join arrays of one shape along a new axis."""
    return anp.stack(list(arrays), axis=axis)


def reshape(x: Any, /, shape: Sequence[int], *, copy: bool | None = None) -> Any:
    """``x`` with a new shape (same elements, C order)."""
    return anp.reshape(x, tuple(shape))


def permute_dims(x: Any, /, axes: Sequence[int]) -> Any:
    """``x`` with its axes reordered."""
    return anp.transpose(x, tuple(axes))


def matrix_transpose(x: Any, /) -> Any:
    """Swap the last two axes (a stack of matrices, transposed)."""
    return anp.swapaxes(x, -1, -2)


def moveaxis(x: Any, source: Any, destination: Any, /) -> Any:
    """Move axes of ``x`` to new positions."""
    return anp.moveaxis(x, source, destination)


def expand_dims(x: Any, /, *, axis: int = 0) -> Any:
    """Insert a length-1 axis at ``axis``."""
    return anp.expand_dims(x, axis)


def squeeze(x: Any, /, axis: int | tuple[int, ...]) -> Any:
    """Remove the given length-1 axes (numpy raises for an axis whose length is not 1)."""
    return anp.squeeze(x, axis=axis)


def flip(x: Any, /, *, axis: int | tuple[int, ...] | None = None) -> Any:
    """Reverse the order of elements along ``axis`` (all axes when ``None``)."""
    ndim = anp.ndim(x)
    axes = range(ndim) if axis is None else (axis,) if isinstance(axis, int) else axis
    index = [slice(None)] * ndim
    for a in axes:
        index[a % ndim] = slice(None, None, -1)
    return x[tuple(index)]


def roll(x: Any, /, shift: Any, *, axis: Any = None) -> Any:
    """Shift elements cyclically along ``axis`` (over the flattened array when ``None``)."""
    return anp.roll(x, shift, axis=axis)


def take(x: Any, indices: Any, /, *, axis: int | None = None) -> Any:
    """Elements of ``x`` at integer ``indices`` along ``axis`` (gradients of repeats add up)."""
    indices = np.asarray(indices)
    if axis is None:
        if anp.ndim(x) != 1:
            raise ValueError("take: axis=None needs a 1-d array; pass axis= for this one")
        axis = 0
    return x[_index_along(axis, anp.ndim(x), indices)]


def repeat(x: Any, repeats: Any, /, *, axis: int | None = None) -> Any:
    """Repeat each element ``repeats`` times (an int, or one count per element)."""
    if axis is None:
        x, axis = anp.ravel(x), 0
    length = anp.shape(x)[axis]
    positions = np.repeat(np.arange(length), np.asarray(repeats))
    return x[_index_along(axis, anp.ndim(x), positions)]


def tile(x: Any, repetitions: Sequence[int], /) -> Any:
    """``x`` repeated as whole blocks along each axis."""
    return anp.tile(x, tuple(repetitions))


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    """Split ``x`` along ``axis`` into a tuple of arrays of one less dimension."""
    ndim = anp.ndim(x)
    return tuple(x[_index_along(axis, ndim, i)] for i in range(anp.shape(x)[axis]))


def broadcast_to(x: Any, /, shape: Sequence[int]) -> Any:
    """``x`` broadcast to ``shape`` (the gradient sums over the broadcast axes)."""
    shape = tuple(shape)
    extra = len(shape) - anp.ndim(x)
    if extra > 0:
        # autograd's broadcast_to rule cannot add leading axes; reshape adds them first.
        x = anp.reshape(x, (1,) * extra + tuple(anp.shape(x)))
    return anp.broadcast_to(x, shape)


def broadcast_arrays(*arrays: Any) -> list[Any]:
    """The arrays broadcast against each other to one shape."""
    shape = np.broadcast_shapes(*(anp.shape(a) for a in arrays))
    return [broadcast_to(a, shape) for a in arrays]


def where(condition: Any, x1: Any, x2: Any, /) -> Any:
    """``x1`` where ``condition`` holds, else ``x2``; differentiable in both branches."""
    shape = np.broadcast_shapes(np.shape(condition), anp.shape(x1), anp.shape(x2))
    # autograd's where rule does not sum over broadcast axes: broadcast traced inputs first.
    if is_traced(x1) and anp.shape(x1) != shape:
        x1 = broadcast_to(x1, shape)
    if is_traced(x2) and anp.shape(x2) != shape:
        x2 = broadcast_to(x2, shape)
    return anp.where(condition, x1, x2)


def _along_axis(indices: Any, axis: int, shape: Sequence[int]) -> tuple[Any, ...]:
    """The fancy index that picks ``indices`` along ``axis`` (``take_along_axis``'s)."""
    ndim = len(shape)
    axis %= ndim
    index: list[Any] = []
    for d in range(ndim):
        if d == axis:
            index.append(indices)
        else:
            view = [1] * ndim
            view[d] = shape[d]
            index.append(np.arange(shape[d]).reshape(view))
    return tuple(index)


def take_along_axis(x: Any, indices: Any, /, *, axis: int = -1) -> Any:
    """Elements of ``x`` at ``indices`` matched along ``axis`` (as ``np.take_along_axis``)."""
    return x[_along_axis(np.asarray(indices), axis, anp.shape(x))]


def sort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Any:
    """Sorted along ``axis``; the gradient follows each element to its place.

    ``descending`` keeps equal elements in their original order, as the standard asks.
    """
    value = _untraced(x)
    keys = -value if descending else value
    order = np.argsort(keys, axis=axis, kind="stable" if stable else None)
    return x[_along_axis(order, axis, anp.shape(x))]


def copysign(x1: Any, x2: Any, /) -> Any:
    """``|x1|`` with the sign of ``x2``; differentiable in ``x1`` (``x2``'s derivative is 0)."""
    return anp.abs(x1) * np.where(np.signbit(_untraced(x2)), -1.0, 1.0)


def _untraced(value: Any) -> Any:
    while is_traced(value):
        value = value._value
    return np.asarray(value)


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Any:
    """Sum of products over the given axes of ``x1`` and ``x2``."""
    return anp.tensordot(x1, x2, axes=axes)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """Dot product along ``axis`` (conjugating ``x1`` for complex input)."""
    if np.iscomplexobj(x1):
        x1 = anp.conj(x1)
    return anp.sum(x1 * x2, axis=axis)
