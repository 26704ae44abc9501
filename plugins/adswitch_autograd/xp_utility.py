"""The Array API's utility functions: ``all``, ``any`` and ``diff``."""

from __future__ import annotations

from typing import Any

import autograd.numpy as anp

from .xp_manipulation import concat

__all__ = ["all", "any", "diff"]

all, any = anp.all, anp.any


def diff(x: Any, /, *, axis: int = -1, n: int = 1, prepend: Any = None, append: Any = None) -> Any:
    """``n``-th forward difference along ``axis``, after optional ``prepend``/``append``."""
    pieces = [p for p in (prepend, x, append) if p is not None]
    if len(pieces) > 1:
        x = concat(pieces, axis=axis)
    return anp.diff(x, n=n, axis=axis)
