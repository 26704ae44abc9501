"""Array API creation functions for the tape: every result is a *fresh buffer*.

A fresh buffer is a tracer without history -- at the level of the traced array it was
made like, else at level 0 (``core.trace.FREE``) -- so writing traced values into it
(``buf[i] = v``, ``buf[...] = s``) is recorded and differentiated, and a buffer nothing
traced was written into comes back from ``f`` as a plain numpy array. Part of the
namespace.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from ..core import FREE
from ..mutation import holds_tracer
from ..rules import primitives as P
from ..tracer import Tracer, raw
from .shapes import stack

__all__ = [
    "arange", "asarray", "astype", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like",
    "linspace", "ones", "ones_like", "zeros", "zeros_like",
]  # fmt: skip

arange, linspace, from_dlpack = np.arange, np.linspace, np.from_dlpack


def _buffer(x: Any, value: Any) -> Tracer:
    """A traced buffer without history: at ``x``'s level when ``x`` is traced, else at
    level 0 (see ``core.trace.FREE``); writes into it are recorded at the writer's level."""
    return Tracer(value, x._trace if type(x) is Tracer else FREE, None)


def zeros(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """A fresh buffer of zeros (``buf[i] = traced`` is differentiated)."""
    return _buffer(None, np.zeros(shape, dtype=dtype or np.float64))


def ones(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """A fresh buffer of ones."""
    return _buffer(None, np.ones(shape, dtype=dtype or np.float64))


def empty(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """A fresh buffer (of zeros: uninitialised memory is never handed out)."""
    return zeros(shape, dtype=dtype)


def full(shape: Any, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """A fresh buffer holding ``fill_value`` (a traced ``fill_value`` is differentiated)."""
    if type(fill_value) is Tracer:
        return P.add(zeros(shape, dtype=dtype or fill_value.dtype), fill_value)
    return _buffer(None, np.full(shape, fill_value, dtype=dtype))


def eye(
    n_rows: int,
    n_cols: int | None = None,
    /,
    *,
    k: int = 0,
    dtype: Any = None,
    device: Any = None,
) -> Any:
    """A fresh buffer holding the identity (ones on diagonal ``k``)."""
    return _buffer(None, np.eye(n_rows, n_cols, k=k, dtype=dtype or np.float64))


def zeros_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    """A fresh buffer of zeros like ``x``."""
    return _buffer(x, np.zeros(np.shape(raw(x)), dtype=dtype or raw(x).dtype))


def ones_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    """A fresh buffer of ones like ``x``."""
    return _buffer(x, np.ones(np.shape(raw(x)), dtype=dtype or raw(x).dtype))


def empty_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    """A fresh buffer like ``x`` (zeros)."""
    return zeros_like(x, dtype=dtype)


def full_like(x: Any, /, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """A fresh buffer holding ``fill_value``, like ``x``."""
    if type(fill_value) is Tracer:
        return P.add(zeros_like(x, dtype=dtype), fill_value)
    return _buffer(x, np.full(np.shape(raw(x)), fill_value, dtype=dtype or raw(x).dtype))


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: Any = None) -> Any:
    """An array of ``obj``; traced values (also inside nested lists) stay traced."""
    if type(obj) is Tracer:
        out = obj if dtype is None or obj.dtype == dtype else astype(obj, dtype)
        return P.positive(out) if copy and out is obj else out
    if isinstance(obj, (list, tuple)) and holds_tracer(obj):
        return stack([asarray(o, dtype=dtype) for o in obj])
    if isinstance(obj, np.ndarray) and not copy:
        return obj if dtype is None else obj.astype(dtype, copy=False)  # numpy's aliasing
    return _buffer(None, np.array(obj, dtype=dtype, copy=True))


def astype(x: Any, dtype: Any, /, *, copy: builtins.bool = True, device: Any = None) -> Any:
    """Cast ``x``; casts to integer or boolean dtypes give plain (non-traced) arrays."""
    if np.issubdtype(dtype, np.floating) and type(x) is Tracer:
        if not copy and x.dtype == dtype:
            return x
        return P.astype(x, dtype=dtype)
    return np.asarray(raw(x)).astype(dtype, copy=builtins.bool(copy))
