"""The Array API's utility functions: ``all``, ``any`` and ``diff``.

``all`` and ``any`` give booleans, which have no derivative: they look at a traced
array's value.
"""

from __future__ import annotations

import builtins
from typing import Any

import autograd.numpy as anp
import numpy as np

from .manipulation import concat
from .support import untraced

__all__ = ["all", "any", "diff"]


def all(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Any:
    """Whether every element along ``axis`` is true (non-zero)."""
    return np.all(untraced(x), axis=_axis(axis), keepdims=keepdims)


def any(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Any:
    """Whether some element along ``axis`` is true (non-zero)."""
    return np.any(untraced(x), axis=_axis(axis), keepdims=keepdims)


def _axis(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


def diff(x: Any, /, *, axis: int = -1, n: int = 1, prepend: Any = None, append: Any = None) -> Any:
    """``n``-th forward difference along ``axis``, after optional ``prepend``/``append``."""
    pieces = [p for p in (prepend, x, append) if p is not None]
    if len(pieces) > 1:
        x = concat(pieces, axis=axis)
    return anp.diff(x, n=n, axis=axis)
