"""The Array API's linear algebra functions of the main namespace, over autograd.

``matmul``, ``matrix_transpose``, ``tensordot`` and ``vecdot``; the standard's optional
``linalg`` extension is a namespace of its own, not this module.
"""

from __future__ import annotations

from typing import Any

import autograd.numpy as anp
import numpy as np

__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]

matmul = anp.matmul


def matrix_transpose(x: Any, /) -> Any:
    """Swap the last two axes (a stack of matrices, transposed)."""
    return anp.swapaxes(x, -1, -2)


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Any:
    """Sum of products over the given axes of ``x1`` and ``x2``."""
    return anp.tensordot(x1, x2, axes=axes)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """Dot product along ``axis`` (conjugating ``x1`` for complex input)."""
    if np.iscomplexobj(x1):
        x1 = anp.conj(x1)
    return anp.sum(x1 * x2, axis=axis)
