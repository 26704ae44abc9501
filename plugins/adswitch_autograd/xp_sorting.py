"""The Array API's sorting functions: ``sort`` (differentiable) and ``argsort``.

``sort`` is an indexing by the sorting order, so the gradient follows each element to
its place; ``argsort`` returns integer positions, which have no derivative.
"""

from __future__ import annotations

from typing import Any

import autograd.numpy as anp
import numpy as np

from .xp_indexing import along_axis
from .xp_support import untraced

__all__ = ["argsort", "sort"]

argsort = anp.argsort


def sort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Any:
    """Sorted along ``axis``; the gradient follows each element to its place.

    ``descending`` keeps equal elements in their original order, as the standard asks.
    """
    value = np.asarray(untraced(x))
    keys = -value if descending else value
    order = np.argsort(keys, axis=axis, kind="stable" if stable else None)
    return x[along_axis(order, axis, anp.shape(x))]
