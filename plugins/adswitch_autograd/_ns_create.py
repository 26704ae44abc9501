"""The Array API's creation functions and conversions over autograd.

Inside an adswitch trace, floating arrays made here are fresh buffers
(:class:`~adswitch_autograd.buffers.BufferBox`): ``buf[i] = traced`` is recorded instead
of failing. Outside a trace they are plain numpy arrays.
"""

from __future__ import annotations

from typing import Any

import autograd.numpy as anp
import numpy as np

from ._ns_support import is_traced
from .boxes import tracing
from .writes import copy_of, fresh

__all__ = [
    "asarray",
    "astype",
    "empty",
    "empty_like",
    "full",
    "full_like",
    "ones",
    "ones_like",
    "zeros",
    "zeros_like",
]


def _untraced(value: Any) -> Any:
    while is_traced(value):
        value = value._value
    return value


def _dtype_of(x: Any, dtype: Any) -> Any:
    return np.result_type(_untraced(x)) if dtype is None else dtype


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


def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    """``x`` converted to ``dtype`` (differentiable between floating dtypes)."""
    if is_traced(x):
        return x if x.dtype == dtype else x.astype(dtype)
    return np.asarray(x).astype(dtype, copy=copy)


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
    from ._ns_manip import broadcast_to

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
