"""The Array API's sorting functions: ``sort`` (differentiable) and ``argsort``.

``sort`` is an indexing by the sorting order, so the gradient follows each element to
its place (tied elements share theirs, :mod:`.kinks`); ``argsort`` returns integer
positions, which have no derivative. Both are stable by default, descending included:
equal elements keep their original order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .indexing import along_axis
from .kinks import share_ties
from .support import is_traced, untraced

__all__ = ["argsort", "sort"]


def argsort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Any:
    """The permutation that sorts ``x`` along ``axis`` (of a traced array's value).

    Example:
        >>> argsort(np.asarray([1.0, 3.0, 1.0]), descending=True)
        array([1, 0, 2])
    """
    value = np.asarray(untraced(x))
    if not descending:
        return np.argsort(value, axis=axis, kind="stable" if stable else None)
    # The ascending order of the reversed array, reversed: descending, and equal elements
    # stay in their original order.
    flipped = np.flip(value, axis=axis)
    order = np.flip(np.argsort(flipped, axis=axis, kind="stable"), axis=axis)
    return value.shape[axis] - 1 - order


def sort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Any:
    """Sorted along ``axis``; the gradient follows each element to its place, and tied
    elements share the mean of their places' gradients (the kink convention)."""
    value = np.asarray(untraced(x))
    order = argsort(value, axis=axis, descending=descending, stable=stable)
    out = x[along_axis(order, axis, value.shape)]
    return share_ties(out, axis) if is_traced(x) and value.ndim else out
