"""The Array API's creation functions over autograd.

Inside an adswitch trace, the floating arrays ``zeros``, ``ones``, ``empty``, ``full``,
their ``*_like`` forms and ``asarray(..., copy=True)`` make are fresh buffers
(:func:`.writes.fresh`): ``buf[i] = traced`` is recorded instead of failing. Outside a
trace they are plain numpy arrays. ``eye``, ``arange``, ``linspace`` make constants.
"""

from __future__ import annotations

from typing import Any

import autograd.numpy as anp
import numpy as np

from .boxes import tracing
from .writes import copy_of, fresh
from .xp_dtypes import astype
from .xp_manipulation import broadcast_to
from .xp_support import is_traced, unsupported, untraced

__all__ = [
    "arange",
    "asarray",
    "empty",
    "empty_like",
    "eye",
    "from_dlpack",
    "full",
    "full_like",
    "linspace",
    "meshgrid",
    "ones",
    "ones_like",
    "tril",
    "triu",
    "zeros",
    "zeros_like",
]

tril, triu = anp.tril, anp.triu
from_dlpack = unsupported("from_dlpack", np.from_dlpack)


def _dtype_of(x: Any, dtype: Any) -> Any:
    return np.result_type(untraced(x)) if dtype is None else dtype


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: Any = None) -> Any:
    """An array from ``obj``; traced values (also inside lists) stay traced.

    ``copy=True`` of a traced value gives a writable copy (gradients flow through it).

    Example:
        >>> asarray([1.0, 2.0], dtype=np.float32)
        array([1., 2.], dtype=float32)
    """
    if is_traced(obj):
        if dtype is not None and obj.dtype != dtype:
            obj = astype(obj, dtype)
        return copy_of(obj) if copy else obj
    if isinstance(obj, (list, tuple)) and _contains_traced(obj):
        result = anp.array(obj)
        return result if dtype is None else astype(result, dtype)
    array = np.asarray(obj, dtype=dtype, copy=copy)
    return fresh(array) if copy else array


def _contains_traced(obj: Any) -> bool:
    if isinstance(obj, (list, tuple)):
        return any(_contains_traced(item) for item in obj)
    return is_traced(obj)


def full(shape: Any, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """An array of ``shape`` filled with ``fill_value`` (which may be traced)."""
    if not is_traced(fill_value):
        return fresh(np.full(shape, fill_value, dtype=dtype))
    dtype = _dtype_of(fill_value, dtype)
    if tracing():
        buffer = fresh(np.zeros(shape, dtype=dtype))
        buffer[...] = fill_value
        return buffer
    # Traced by autograd directly (no adswitch trace): an immutable broadcast.
    return broadcast_to(fill_value, shape) + np.zeros(shape, dtype=dtype)


def full_like(x: Any, /, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """Like ``x`` (shape, and dtype unless given), filled with ``fill_value``."""
    return full(anp.shape(x), fill_value, dtype=_dtype_of(x, dtype))


def zeros(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """Zeros (a writable buffer inside a trace)."""
    return fresh(np.zeros(shape, dtype=dtype))


def ones(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """Ones (a writable buffer inside a trace)."""
    return fresh(np.ones(shape, dtype=dtype))


def empty(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """An uninitialised array (a writable buffer inside a trace)."""
    return fresh(np.empty(shape, dtype=dtype))


def zeros_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    """Zeros shaped like ``x``: constant values, writable inside a trace."""
    return fresh(np.zeros(anp.shape(x), dtype=_dtype_of(x, dtype)))


def ones_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    """Ones shaped like ``x``: constant values, writable inside a trace."""
    return fresh(np.ones(anp.shape(x), dtype=_dtype_of(x, dtype)))


def empty_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    """An uninitialised array shaped like ``x``, writable inside a trace."""
    return fresh(np.empty(anp.shape(x), dtype=_dtype_of(x, dtype)))


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None,
        device: Any = None) -> Any:  # fmt: skip
    """The identity-like constant matrix."""
    return np.eye(n_rows, n_cols, k=k, dtype=dtype)


def arange(start: Any, /, stop: Any = None, step: Any = 1, *, dtype: Any = None,
           device: Any = None) -> Any:  # fmt: skip
    """Evenly spaced constants."""
    return np.arange(start, stop, step, dtype=dtype)


def linspace(start: Any, stop: Any, /, num: int, *, dtype: Any = None, device: Any = None,
             endpoint: bool = True) -> Any:  # fmt: skip
    """``num`` evenly spaced constants from ``start`` to ``stop``."""
    return np.linspace(start, stop, num, dtype=dtype, endpoint=endpoint)


def meshgrid(*arrays: Any, indexing: str = "xy") -> list[Any]:
    """Coordinate grids (of plain or traced 1-d arrays)."""
    ndim = len(arrays)
    if indexing == "xy" and ndim > 1:
        shape = [len(a) for a in arrays]
        shape[0], shape[1] = shape[1], shape[0]
    else:
        shape = [len(a) for a in arrays]
    grids = []
    for i, a in enumerate(arrays):
        axis = (1 - i if i < 2 else i) if indexing == "xy" and ndim > 1 else i
        view = [1] * ndim
        view[axis] = len(a)
        grids.append(broadcast_to(anp.reshape(a, view), shape) + np.zeros(shape, a.dtype))
    return grids
