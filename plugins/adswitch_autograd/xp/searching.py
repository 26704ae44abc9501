"""The Array API's searching functions: ``where`` (differentiable) and index finders.

``argmax``, ``argmin``, ``nonzero`` and ``searchsorted`` return integer positions, which
have no derivative: they look at a traced array's value. ``where`` is differentiable in
both branches; a branch the condition never chooses is left out of the trace altogether,
so that an overflow there (scipy's ``logsumexp`` computes ``log(sum(exp(a)))`` and
discards it) cannot turn the zero gradient it would get into ``0 * inf = NaN``.
"""

from __future__ import annotations

from typing import Any, Literal

import autograd.numpy as anp
import numpy as np

from ..mutation.writes import copy_of
from .manipulation import broadcast_to
from .support import constant, is_traced, untraced

__all__ = ["argmax", "argmin", "nonzero", "searchsorted", "where"]


def argmax(x: Any, /, *, axis: int | None = None, keepdims: bool = False) -> Any:
    """Index of the (first) maximum along ``axis`` (of the flattened array when None)."""
    return np.argmax(untraced(x), axis=axis, keepdims=keepdims)


def argmin(x: Any, /, *, axis: int | None = None, keepdims: bool = False) -> Any:
    """Index of the (first) minimum along ``axis`` (of the flattened array when None)."""
    return np.argmin(untraced(x), axis=axis, keepdims=keepdims)


def nonzero(x: Any, /) -> tuple[Any, ...]:
    """The indices of the non-zero elements, one array per axis (0-d arrays refused, as
    the standard asks)."""
    value = np.asarray(untraced(x))
    if value.ndim == 0:
        raise ValueError("nonzero: a 0-d array has no axes to index; reshape it to 1-d first")
    return np.nonzero(value)


def searchsorted(
    x1: Any,
    x2: Any,
    /,
    *,
    side: Literal["left", "right"] = "left",
    sorter: Any = None,
) -> Any:
    """Where the elements of ``x2`` would be inserted into the sorted 1-d ``x1``."""
    return np.searchsorted(untraced(x1), untraced(x2), side=side, sorter=untraced(sorter))


def where(condition: Any, x1: Any, x2: Any, /) -> Any:
    """``x1`` where ``condition`` holds, else ``x2``; differentiable in both branches (a
    branch never chosen is not traced at all)."""
    condition = untraced(condition)
    shape = np.broadcast_shapes(np.shape(condition), anp.shape(x1), anp.shape(x2))
    if (is_traced(x1) or is_traced(x2)) and np.size(condition):
        chosen = _only_branch(np.asarray(condition), x1, x2)
        if chosen is not None:
            return _as_result(chosen, shape, np.result_type(untraced(x1), untraced(x2)))
    # autograd's where rule does not sum over broadcast axes: broadcast traced inputs first.
    if is_traced(x1) and anp.shape(x1) != shape:
        x1 = broadcast_to(x1, shape)
    if is_traced(x2) and anp.shape(x2) != shape:
        x2 = broadcast_to(x2, shape)
    return anp.where(condition, x1, x2)


def _only_branch(condition: np.ndarray, x1: Any, x2: Any) -> Any:
    """The branch ``condition`` chooses everywhere, or ``None`` when it chooses both."""
    if condition.all():
        return x1
    if not condition.any():
        return x2
    return None


def _as_result(chosen: Any, shape: tuple[int, ...], dtype: Any) -> Any:
    """``chosen`` as ``where``'s result: broadcast, promoted, and a new array."""
    if not is_traced(chosen):  # the result does not depend on the traced branch
        return constant(np.array(np.broadcast_to(np.asarray(chosen, dtype), shape)), new=True)
    if anp.shape(chosen) != shape:
        chosen = broadcast_to(chosen, shape)
    if chosen.dtype != dtype:
        return chosen.astype(dtype)
    return copy_of(chosen)
