"""The Array API's manipulation functions over autograd primitives.

Where autograd's own function has no derivative (``flip``) or handles only part of the
standard's signature (``repeat`` with per-element counts, ``broadcast_to`` adding leading
axes), the function is built from indexing or reshapes, whose derivatives autograd does
have.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import autograd.numpy as anp
import numpy as np

from .indexing import index_along

__all__ = [
    "broadcast_arrays",
    "broadcast_to",
    "concat",
    "expand_dims",
    "flip",
    "moveaxis",
    "permute_dims",
    "repeat",
    "reshape",
    "roll",
    "squeeze",
    "stack",
    "tile",
    "unstack",
]


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


def moveaxis(x: Any, source: Any, destination: Any, /) -> Any:
    """Move axes of ``x`` to new positions."""
    return anp.moveaxis(x, source, destination)


def expand_dims(x: Any, /, axis: int = 0) -> Any:
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
    """Shift elements cyclically along ``axis`` (over the flattened array when ``None``);
    several axes are rolled one at a time (autograd's rule takes one integer shift)."""
    if axis is None or isinstance(axis, int):
        return anp.roll(x, shift, axis=axis)
    for a, s in zip(axis, np.broadcast_to(shift, (len(axis),)), strict=True):
        x = anp.roll(x, int(s), axis=a)
    return x


def repeat(x: Any, repeats: Any, /, *, axis: int | None = None) -> Any:
    """Repeat each element ``repeats`` times (an int, or one count per element)."""
    if axis is None:
        x, axis = anp.ravel(x), 0
    length = anp.shape(x)[axis]
    positions = np.repeat(np.arange(length), np.asarray(repeats))
    return x[index_along(axis, anp.ndim(x), positions)]


def tile(x: Any, repetitions: Sequence[int], /) -> Any:
    """``x`` repeated as whole blocks along each axis."""
    return anp.tile(x, tuple(repetitions))


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    """Split ``x`` along ``axis`` into a tuple of arrays of one less dimension."""
    ndim = anp.ndim(x)
    return tuple(x[index_along(axis, ndim, i)] for i in range(anp.shape(x)[axis]))


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
