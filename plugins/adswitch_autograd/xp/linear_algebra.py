"""The Array API's linear algebra functions of the main namespace, over autograd.

``matmul``, ``matrix_transpose``, ``tensordot`` and ``vecdot``; the standard's optional
``linalg`` extension is a namespace of its own (:mod:`.linalg`).
"""

from __future__ import annotations

from typing import Any

import autograd.numpy as anp
import numpy as np

from .support import untraced

__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]

matmul = anp.matmul


def matrix_transpose(x: Any, /) -> Any:
    """Swap the last two axes (a stack of matrices, transposed)."""
    if np.ndim(untraced(x)) < 2:
        raise ValueError("matrix_transpose needs an array of at least 2 dimensions")
    return anp.swapaxes(x, -1, -2)


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Any:
    """Sum of products over the given axes of ``x1`` and ``x2``."""
    return anp.tensordot(x1, x2, axes=axes)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """``sum(conj(x1) * x2, axis=axis)`` over broadcast arrays whose ``axis`` has one
    length, in their result dtype (numpy's sum would widen small integers).

    Example:
        >>> vecdot(np.asarray([[1, 2], [3, 4]], dtype=np.uint8), np.asarray([1, 1], np.uint8))
        array([3, 7], dtype=uint8)
    """
    s1, s2 = np.shape(untraced(x1)), np.shape(untraced(x2))
    shape = np.broadcast_shapes(s1, s2)
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"vecdot: axis {axis} is out of range for shapes {s1} and {s2}")
    back = axis - len(shape) if axis >= 0 else axis  # counted from the last axis
    n1 = s1[back] if -len(s1) <= back else None
    n2 = s2[back] if -len(s2) <= back else None
    if n1 is None or n1 != n2:
        raise ValueError(
            f"vecdot: the contracted axis has length {n1} in x1 (shape {s1}) and {n2} in "
            f"x2 (shape {s2}); both must have it, with one length (it is not broadcast)"
        )
    if np.iscomplexobj(untraced(x1)):
        x1 = anp.conj(x1)
    dtype = np.result_type(untraced(x1), untraced(x2))
    return anp.sum(x1 * x2, axis=axis, dtype=dtype if dtype.kind in "biu" else None)
