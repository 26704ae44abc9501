"""Array API shape manipulation for the tape: reshape, transpose, broadcast, join, split.

Where numpy returns a view (``reshape``, ``permute_dims``, ``flip``...), so does this
(see ``array.mutation``). Part of the namespace.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..array.mutation import (
    broadcast_view,
    flipped_view,
    permuted_view,
    reshaped_view,
    transposed_view,
)
from ..array.tracer import raw
from ..rules import primitives as P
from .axes import axes_of, ndim_of

__all__ = [
    "broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "matrix_transpose",
    "meshgrid", "moveaxis", "permute_dims", "reshape", "squeeze", "stack", "unstack",
]  # fmt: skip


def reshape(x: Any, /, shape: Sequence[int], *, copy: bool | None = None) -> Any:
    """The same data in ``shape`` (a view, as numpy's for contiguous arrays)."""
    return reshaped_view(x, tuple(shape))


def permute_dims(x: Any, /, axes: Sequence[int]) -> Any:
    """Reorder the axes (a view)."""
    return permuted_view(x, tuple(int(a) for a in axes))


def matrix_transpose(x: Any, /) -> Any:
    """Swap the last two axes (a view)."""
    return transposed_view(x)


def expand_dims(x: Any, /, axis: int = 0) -> Any:
    """Insert an axis of length 1 at ``axis`` (in ``[-ndim - 1, ndim]``)."""
    shape = list(np.shape(raw(x)))
    if not -len(shape) - 1 <= axis <= len(shape):
        raise IndexError(f"expand_dims: axis {axis} is out of range for {len(shape)} axes")
    shape.insert(axis if axis >= 0 else len(shape) + axis + 1, 1)
    return reshaped_view(x, tuple(shape))


def squeeze(x: Any, /, axis: Any) -> Any:
    """Remove the length-1 axes ``axis``."""
    shape = np.shape(raw(x))
    axes = axes_of(axis, len(shape)) or ()
    if builtins.any(shape[a] != 1 for a in axes):
        raise ValueError("squeeze: cannot remove an axis whose length is not 1")
    return reshaped_view(x, tuple(n for i, n in enumerate(shape) if i not in axes))


def broadcast_to(x: Any, /, shape: Sequence[int]) -> Any:
    """Broadcast ``x`` to ``shape`` (a read-only view, as numpy's)."""
    return broadcast_view(x, tuple(shape))


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
    lead = (slice(None),) * (axis % ndim_of(x))
    return tuple(x[(*lead, i)] for i in range(n))  # views, as numpy's


def flip(x: Any, /, *, axis: Any = None) -> Any:
    """Reverse the order of elements along ``axis`` (all axes when None; a view)."""
    return flipped_view(x, axes_of(axis, ndim_of(x)))


def moveaxis(x: Any, source: Any, destination: Any, /) -> Any:
    """Move axes to new positions."""
    n = ndim_of(x)
    src = [int(a) % n for a in (source if isinstance(source, (tuple, list)) else (source,))]
    dst = [
        int(a) % n
        for a in (destination if isinstance(destination, (tuple, list)) else (destination,))
    ]
    order = [a for a in range(n) if a not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return permuted_view(x, tuple(order))


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
