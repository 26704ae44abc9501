"""Array API searching, truth tests and sets for the tape: ``argmax``, ``nonzero``,
``searchsorted``, ``all``/``any``, ``count_nonzero``, ``unique_*``.

All have a zero derivative: numpy's results on the concrete values, as tape arrays
without history when an argument is a tape array (see ``axes.like_inputs``). Part of
the namespace.
"""

from __future__ import annotations

import builtins
from typing import Any, Literal

import numpy as np

from ..array.tracer import Tracer, raw
from .axes import like_inputs

__all__ = [
    "all", "any", "argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "unique_all",
    "unique_counts", "unique_inverse", "unique_values",
]  # fmt: skip


def _tape(x: Any) -> builtins.bool:
    return type(x) is Tracer


def argmax(x: Any, /, *, axis: int | None = None, keepdims: builtins.bool = False) -> Any:
    """Index of the (first) maximum along ``axis`` (of the flattened array when None)."""
    return like_inputs(np.argmax(raw(x), axis=axis, keepdims=keepdims), _tape(x))


def argmin(x: Any, /, *, axis: int | None = None, keepdims: builtins.bool = False) -> Any:
    """Index of the (first) minimum along ``axis`` (of the flattened array when None)."""
    return like_inputs(np.argmin(raw(x), axis=axis, keepdims=keepdims), _tape(x))


def nonzero(x: Any, /) -> tuple[Any, ...]:
    """The indices of the non-zero elements, one array per axis."""
    return like_inputs(np.nonzero(raw(x)), _tape(x))  # type: ignore[no-any-return]


def searchsorted(
    x1: Any,
    x2: Any,
    /,
    *,
    side: Literal["left", "right"] = "left",
    sorter: Any = None,
) -> Any:
    """Where the elements of ``x2`` would be inserted into the sorted 1-d ``x1``."""
    out = np.searchsorted(raw(x1), raw(x2), side=side, sorter=raw(sorter))
    return like_inputs(out, _tape(x1) or _tape(x2) or _tape(sorter))


def all(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Any:
    """Whether every element along ``axis`` is true (non-zero)."""
    return like_inputs(np.all(raw(x), axis=_axis(axis), keepdims=keepdims), _tape(x))


def any(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Any:
    """Whether some element along ``axis`` is true (non-zero)."""
    return like_inputs(np.any(raw(x), axis=_axis(axis), keepdims=keepdims), _tape(x))


def count_nonzero(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Any:
    """The number of non-zero elements along ``axis``."""
    out = np.count_nonzero(raw(x), axis=_axis(axis), keepdims=keepdims)
    return like_inputs(out, _tape(x))


def _axis(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


def unique_all(x: Any, /) -> Any:
    """Unique values with first indices, inverse indices and counts."""
    return like_inputs(np.unique_all(raw(x)), _tape(x))


def unique_counts(x: Any, /) -> Any:
    """Unique values and their counts."""
    return like_inputs(np.unique_counts(raw(x)), _tape(x))


def unique_inverse(x: Any, /) -> Any:
    """Unique values and the inverse indices that rebuild ``x``."""
    return like_inputs(np.unique_inverse(raw(x)), _tape(x))


def unique_values(x: Any, /) -> Any:
    """The unique values."""
    return like_inputs(np.unique_values(raw(x)), _tape(x))
