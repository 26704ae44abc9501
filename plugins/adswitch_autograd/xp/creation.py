"""The Array API's creation functions over autograd.

Inside an adswitch trace every floating array these functions make is a traced array
(:func:`.support.constant`), so that code asking for the namespace of its arrays sees
the engine's only: ``zeros``, ``ones``, ``empty``, ``full``, their ``*_like`` forms,
``eye``, ``arange``, ``linspace`` and ``asarray`` of new data make writable buffers
(``buf[i] = traced`` is recorded, see :mod:`.writes`); ``asarray``/``from_dlpack`` of an
existing numpy array share its memory read-only (a write is refused rather than made
into a copy numpy would not make). Outside a trace they are plain numpy arrays.
"""

from __future__ import annotations

from typing import Any, Literal

import autograd.numpy as anp
import numpy as np

from ..mutation.writes import copy_of
from ..tracing.boxes import tracing
from .dtypes import astype
from .manipulation import broadcast_to, concat
from .support import check_device, constant, is_traced, untraced

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


def _dtype_of(x: Any, dtype: Any) -> Any:
    return np.result_type(untraced(x)) if dtype is None else dtype


def _new(array: Any) -> Any:
    return constant(np.asarray(array), new=True)


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: Any = None) -> Any:
    """An array from ``obj``; traced values (also inside lists) stay traced.

    ``copy=True`` of a traced value gives a writable copy (gradients flow through it);
    ``copy=False`` refuses to convert a dtype (that needs a copy), as the standard asks.

    Example:
        >>> asarray([1.0, 2.0], dtype=np.float32)
        array([1., 2.], dtype=float32)
    """
    check_device(device)
    if is_traced(obj):
        if dtype is not None and obj.dtype != dtype:
            if copy is False:
                raise ValueError("asarray: copy=False, but converting the dtype needs a copy")
            return astype(obj, dtype)
        return copy_of(obj) if copy else obj
    if isinstance(obj, (list, tuple)) and _contains_traced(obj):
        if copy is False:
            raise ValueError("asarray: copy=False, but a list of arrays needs a copy")
        result = anp.array(obj)
        return result if dtype is None else astype(result, dtype)
    array = np.asarray(obj, dtype=dtype, copy=copy)
    if copy or not isinstance(obj, np.ndarray) or not np.may_share_memory(array, obj):
        return _new(array)  # new memory: a buffer that may be written
    return constant(array)


def _contains_traced(obj: Any) -> bool:
    if isinstance(obj, (list, tuple)):
        return any(_contains_traced(item) for item in obj)
    return is_traced(obj)


def from_dlpack(x: Any, /, *, device: Any = None, copy: Any = None) -> Any:
    """An array of a DLPack-exporting object; the engine's own arrays stay themselves."""
    check_device(device)
    if is_traced(x):
        return asarray(x, copy=copy)
    array = np.from_dlpack(x, copy=copy)
    return _new(array) if copy else constant(array)


def tril(x: Any, /, *, k: int = 0) -> Any:
    """The lower triangle (elements above diagonal ``k`` zeroed), of each matrix of a stack."""
    return anp.tril(x, k=k)


def triu(x: Any, /, *, k: int = 0) -> Any:
    """The upper triangle (elements below diagonal ``k`` zeroed), of each matrix of a stack."""
    return anp.triu(x, k=k)


def full(shape: Any, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """An array of ``shape`` filled with ``fill_value`` (which may be traced)."""
    check_device(device)
    if not is_traced(fill_value):
        return _new(np.full(shape, fill_value, dtype=dtype))
    dtype = _dtype_of(fill_value, dtype)
    if tracing():
        buffer = _new(np.zeros(shape, dtype=dtype))
        buffer[...] = fill_value
        return buffer
    # Traced by autograd directly (no adswitch trace): an immutable broadcast.
    return broadcast_to(fill_value, shape) + np.zeros(shape, dtype=dtype)


def full_like(x: Any, /, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """Like ``x`` (shape, and dtype unless given), filled with ``fill_value``."""
    return full(anp.shape(x), fill_value, dtype=_dtype_of(x, dtype), device=device)


def zeros(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """Zeros (a writable buffer inside a trace)."""
    check_device(device)
    return _new(np.zeros(shape, dtype=dtype))


def ones(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """Ones (a writable buffer inside a trace)."""
    check_device(device)
    return _new(np.ones(shape, dtype=dtype))


def empty(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """An uninitialised array (a writable buffer inside a trace)."""
    check_device(device)
    return _new(np.empty(shape, dtype=dtype))


def zeros_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    """Zeros shaped like ``x``: constant values, writable inside a trace."""
    check_device(device)
    return _new(np.zeros(anp.shape(x), dtype=_dtype_of(x, dtype)))


def ones_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    """Ones shaped like ``x``: constant values, writable inside a trace."""
    check_device(device)
    return _new(np.ones(anp.shape(x), dtype=_dtype_of(x, dtype)))


def empty_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    """An uninitialised array shaped like ``x``, writable inside a trace."""
    check_device(device)
    return _new(np.empty(anp.shape(x), dtype=_dtype_of(x, dtype)))


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None,
        device: Any = None) -> Any:  # fmt: skip
    """The identity-like matrix (a writable buffer inside a trace)."""
    check_device(device)
    return _new(np.eye(n_rows, n_cols, k=k, dtype=dtype))


def arange(start: Any, /, stop: Any = None, step: Any = 1, *, dtype: Any = None,
           device: Any = None) -> Any:  # fmt: skip
    """Evenly spaced values; traced end points or step give ``start + i * step``, which is
    differentiable in them (the number of values is their concrete values')."""
    check_device(device)
    if not (is_traced(start) or is_traced(stop) or is_traced(step)):
        return _new(np.arange(start, stop, step, dtype=dtype))
    if stop is None:
        start, stop = 0.0, start
    count = np.arange(untraced(start), untraced(stop), untraced(step)).size
    result = start + np.arange(count, dtype=np.result_type(untraced(start))) * step
    return result if dtype is None else astype(result, dtype)


def linspace(start: Any, stop: Any, /, num: int, *, dtype: Any = None, device: Any = None,
             endpoint: bool = True) -> Any:  # fmt: skip
    """``num`` evenly spaced values from ``start`` to ``stop``; differentiable in traced
    end points (value ``i`` is ``start + i * (stop - start) / (num - 1)``, the last one
    ``stop`` itself when ``endpoint``)."""
    check_device(device)
    if not (is_traced(start) or is_traced(stop)):
        return _new(np.linspace(start, stop, num, dtype=dtype, endpoint=endpoint))
    divisions = (num - 1 if endpoint else num) or 1
    steps = np.arange(num, dtype=np.result_type(untraced(start), untraced(stop), 1.0))
    result = start + steps * ((stop - start) / divisions)
    if endpoint and num > 1:
        result = concat([result[:-1], anp.reshape(stop, (1,))])
    return result if dtype is None else astype(result, dtype)


def meshgrid(*arrays: Any, indexing: Literal["xy", "ij"] = "xy") -> list[Any]:
    """Coordinate grids (of plain or traced 1-d arrays)."""
    if not any(is_traced(a) for a in arrays):
        return [_new(g) for g in np.meshgrid(*arrays, indexing=indexing)]
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
