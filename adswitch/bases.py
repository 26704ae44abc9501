"""Identity bases and the blocks of their results: how one batched primitive call becomes a
Jacobian (or Hessian) and back.

A batch of ``n`` seeds made from the identity matrix, split over several leaves (leaf
``k`` owns the rows ``offset_k .. offset_k + size_k``), pushes every basis direction
through one call; the rows of the result for a leaf, reshaped, are that leaf's block.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "Layout",
    "basis",
    "block",
    "numpy_dtype",
    "shape_of",
]


def shape_of(x: Any) -> tuple[int, ...]:
    """The shape of an array, ``()`` for a Python scalar."""
    return tuple(getattr(x, "shape", ()))


def numpy_dtype(dtype: Any) -> np.dtype[Any]:
    """The numpy dtype named like ``dtype`` (numpy's, torch's, jax's); float64 for a
    Python float's ``None``; float32 where numpy has no such type (bfloat16)."""
    if dtype is None:
        return np.dtype(np.float64)
    if isinstance(dtype, np.dtype):
        return dtype
    name = str(dtype).rsplit(".", 1)[-1]
    try:
        return np.dtype(name)
    except TypeError:
        return np.dtype(np.float32)


class Layout:
    """Where each of several arrays' elements sits in one flat vector.

    Example:
        >>> lay = Layout([np.zeros((2, 2)), 1.0])
        >>> lay.total, lay.offsets, lay.shapes
        (5, [0, 4], [(2, 2), ()])
    """

    __slots__ = ("offsets", "shapes", "sizes", "total")

    def __init__(self, arrays: Sequence[Any]) -> None:
        self.shapes = [shape_of(a) for a in arrays]
        self.sizes = [math.prod(s) for s in self.shapes]
        self.offsets = []
        total = 0
        for size in self.sizes:
            self.offsets.append(total)
            total += size
        self.total = total


def basis(arrays: Sequence[Any], layout: Layout) -> list[np.ndarray]:
    """One batch of identity seeds per array: array ``k`` gets shape
    ``(total, *shape_k)``, with ones where the row index is its own element's.

    Example:
        >>> b = basis([np.zeros(2), 3.0], Layout([np.zeros(2), 3.0]))
        >>> b[0].tolist(), b[1].tolist()
        ([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]], [0.0, 0.0, 1.0])
    """
    seeds = []
    for a, offset, size, shape in zip(arrays, layout.offsets, layout.sizes, layout.shapes):
        seed = np.zeros((layout.total, size), dtype=numpy_dtype(getattr(a, "dtype", None)))
        seed[offset : offset + size] = np.eye(size, dtype=seed.dtype)
        seeds.append(seed.reshape((layout.total, *shape)))
    return seeds


def block(
    xp: Any, batched: Any, start: int, stop: int, lead: tuple[int, ...], trail: tuple[int, ...]
) -> Any:
    """Rows ``start:stop`` of a batched result, reshaped to ``lead + trail`` (``lead`` the
    shape those rows came from, ``trail`` the shape of one result)."""
    shape = (*lead, *trail)
    rows = batched if start == 0 and stop == batched.shape[0] else batched[start:stop]
    # (each of these costs an eager dispatch on a compiled engine's arrays: skip no-ops)
    return rows if tuple(rows.shape) == shape else xp.reshape(rows, shape)
