"""The Array API's searching functions: ``where`` (differentiable) and index finders.

``argmax``, ``argmin``, ``nonzero`` and ``searchsorted`` return integer positions, which
have no derivative; ``where`` is differentiable in both branches.
"""

from __future__ import annotations

from typing import Any

import autograd.numpy as anp
import numpy as np

from .xp_manipulation import broadcast_to
from .xp_support import is_traced

__all__ = ["argmax", "argmin", "nonzero", "searchsorted", "where"]

argmax, argmin, nonzero = anp.argmax, anp.argmin, anp.nonzero
searchsorted = anp.searchsorted


def where(condition: Any, x1: Any, x2: Any, /) -> Any:
    """``x1`` where ``condition`` holds, else ``x2``; differentiable in both branches."""
    shape = np.broadcast_shapes(np.shape(condition), anp.shape(x1), anp.shape(x2))
    # autograd's where rule does not sum over broadcast axes: broadcast traced inputs first.
    if is_traced(x1) and anp.shape(x1) != shape:
        x1 = broadcast_to(x1, shape)
    if is_traced(x2) and anp.shape(x2) != shape:
        x2 = broadcast_to(x2, shape)
    return anp.where(condition, x1, x2)
