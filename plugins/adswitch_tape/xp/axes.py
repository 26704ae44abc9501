"""The namespace's argument conventions: an array's number of axes, an ``axis`` argument
as a tuple of non-negative axes, and the number of elements reduced over them."""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from ..tracer import raw

__all__ = ["axes_of", "count", "ndim_of"]


def ndim_of(x: Any) -> int:
    return len(np.shape(raw(x)))


def axes_of(axis: Any, ndim: int) -> tuple[int, ...] | None:
    if axis is None:
        return None
    if isinstance(axis, (tuple, list)):
        return tuple(int(a) % builtins.max(ndim, 1) for a in axis)
    return (int(axis) % builtins.max(ndim, 1),)


def count(x: Any, axes: tuple[int, ...] | None) -> int:
    shape = np.shape(raw(x))
    return math.prod(shape) if axes is None else math.prod(shape[a] for a in axes)
