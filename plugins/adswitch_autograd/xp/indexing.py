"""The Array API's indexing functions (``take``, ``take_along_axis``), built on indexing.

autograd's own ``take`` has no derivative; indexing does (repeated positions add their
gradients up), so these functions build the index and apply it. The index builders are
shared with the sections that pick elements the same way (``repeat``, ``sort``,
``cumulative_prod``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import autograd.numpy as anp
import numpy as np

__all__ = ["take", "take_along_axis"]


def index_along(axis: int, ndim: int, index: Any) -> tuple[Any, ...]:
    """The index that applies ``index`` along ``axis`` of an ``ndim``-d array.

    Example:
        >>> index_along(-1, 2, 0)
        (slice(None, None, None), 0)
    """
    axis = axis % ndim
    return (slice(None),) * axis + (index,)


def along_axis(indices: Any, axis: int, shape: Sequence[int]) -> tuple[Any, ...]:
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


def take(x: Any, indices: Any, /, *, axis: int | None = None) -> Any:
    """Elements of ``x`` at integer ``indices`` along ``axis`` (gradients of repeats add up)."""
    indices = np.asarray(indices)
    if axis is None:
        if anp.ndim(x) != 1:
            raise ValueError("take: axis=None needs a 1-d array; pass axis= for this one")
        axis = 0
    return x[index_along(axis, anp.ndim(x), indices)]


def take_along_axis(x: Any, indices: Any, /, *, axis: int = -1) -> Any:
    """Elements of ``x`` at ``indices`` matched along ``axis`` (as ``np.take_along_axis``)."""
    return x[along_axis(np.asarray(indices), axis, anp.shape(x))]
