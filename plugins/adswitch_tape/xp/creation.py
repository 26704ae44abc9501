"""Array API creation functions for the tape: every result is a *fresh buffer*.

A fresh buffer is a tracer without history -- at the level of the traced array it was
made like, else at level 0 (``core.trace.FREE``) -- so writing traced values into it
(``buf[i] = v``, ``buf[...] = s``) is recorded and differentiated, and a buffer nothing
traced was written into comes back from ``f`` as a plain numpy array. ``asarray`` of a
numpy array is one too (sharing its memory, as numpy's ``asarray``; a write into it is
recorded copy-on-write, as every write on the tape), so code that converts its
constants with ``xp.asarray`` sees one namespace. Part of the namespace.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError

from ..array.conversions import carries_gradient, constant
from ..array.mutation import holds_tracer
from ..array.tracer import Tracer, raw
from ..core import FREE
from ..rules import primitives as P
from .shapes import stack

__all__ = [
    "arange", "asarray", "astype", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like",
    "linspace", "ones", "ones_like", "zeros", "zeros_like",
]  # fmt: skip


def _buffer(x: Any, value: Any) -> Tracer:
    """A traced buffer without history: at ``x``'s level when ``x`` is traced, else at
    level 0 (see ``core.trace.FREE``); writes into it are recorded at the writer's level."""
    return Tracer(value, x._trace if type(x) is Tracer else FREE, None)


def _float_default(dtype: Any) -> Any:
    return np.float64 if dtype is None else dtype


def zeros(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """A fresh buffer of zeros (``buf[i] = traced`` is differentiated)."""
    return _buffer(None, np.zeros(shape, dtype=_float_default(dtype)))


def ones(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """A fresh buffer of ones."""
    return _buffer(None, np.ones(shape, dtype=_float_default(dtype)))


def empty(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """A fresh buffer (of zeros: uninitialised memory is never handed out)."""
    return zeros(shape, dtype=dtype)


def full(shape: Any, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """A fresh buffer holding ``fill_value`` (a traced ``fill_value`` is differentiated)."""
    if type(fill_value) is Tracer:
        return P.add(zeros(shape, dtype=fill_value.dtype if dtype is None else dtype), fill_value)
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
    return _buffer(None, np.eye(n_rows, n_cols, k=k, dtype=_float_default(dtype)))


def _like_dtype(x: Any, dtype: Any) -> Any:
    return raw(x).dtype if dtype is None else dtype


def zeros_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    """A fresh buffer of zeros like ``x``."""
    return _buffer(x, np.zeros(np.shape(raw(x)), dtype=_like_dtype(x, dtype)))


def ones_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    """A fresh buffer of ones like ``x``."""
    return _buffer(x, np.ones(np.shape(raw(x)), dtype=_like_dtype(x, dtype)))


def empty_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    """A fresh buffer like ``x`` (zeros)."""
    return zeros_like(x, dtype=dtype)


def full_like(x: Any, /, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """A fresh buffer holding ``fill_value``, like ``x``."""
    if type(fill_value) is Tracer:
        return P.add(zeros_like(x, dtype=dtype), fill_value)
    return _buffer(x, np.full(np.shape(raw(x)), fill_value, dtype=_like_dtype(x, dtype)))


def arange(
    start: Any,
    /,
    stop: Any = None,
    step: Any = 1,
    *,
    dtype: Any = None,
    device: Any = None,
) -> Any:
    """A fresh buffer of evenly spaced values in ``[start, stop)``."""
    return _buffer(None, np.arange(start, stop, step, dtype=dtype))


def linspace(
    start: Any,
    stop: Any,
    /,
    num: int,
    *,
    dtype: Any = None,
    device: Any = None,
    endpoint: builtins.bool = True,
) -> Any:
    """``num`` evenly spaced values from ``start`` to ``stop``; traced end points are
    differentiated (numpy's formula: ``start + i * step``, the last one ``stop``)."""
    if not (carries_gradient(start) or carries_gradient(stop)):
        values = np.linspace(raw(start), raw(stop), num, endpoint=endpoint, dtype=dtype)
        return _buffer(None, values)
    div = num - 1 if endpoint else num
    steps = np.arange(num, dtype=np.float64 if dtype is None else dtype)
    out = start + steps * ((stop - start) / builtins.max(div, 1))
    if endpoint and num > 1:
        out = P.concat(P.getitem(out, key=slice(0, num - 1)), P.reshape(stop, shape=(1,)), axis=0)
    return out if dtype is None else astype(out, dtype)


def from_dlpack(x: Any, /, *, device: Any = None, copy: Any = None) -> Any:
    """An array of a DLPack-exporting object; a tape array stays itself (traced)."""
    if type(x) is Tracer:
        return asarray(x, copy=copy)
    return _buffer(None, np.from_dlpack(x) if copy is None else np.from_dlpack(x, copy=copy))


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: Any = None) -> Any:
    """A tape array of ``obj``: traced values (also inside nested lists) stay traced; a
    numpy array becomes a fresh buffer sharing its memory (``copy=True``: a copy)."""
    if type(obj) is Tracer:
        if dtype is not None and obj.dtype != dtype:
            if copy is False:
                raise ValueError("asarray: copy=False, but a change of dtype needs a copy")
            return astype(obj, dtype)
        if not copy:
            return obj
        if carries_gradient(obj):
            return P.positive(obj)  # a copy on the tape (differentiable)
        return _buffer(None, np.array(raw(obj), copy=True))
    if isinstance(obj, (list, tuple)) and holds_tracer(obj):
        if copy is False:
            raise ValueError("asarray: copy=False, but a sequence of arrays needs a copy")
        out = stack([asarray(o) for o in obj])
        return out if dtype is None else astype(out, dtype)
    return _buffer(None, np.array(obj, dtype=dtype, copy=copy))


def astype(x: Any, dtype: Any, /, *, copy: builtins.bool = True, device: Any = None) -> Any:
    """Cast ``x``; a cast between real floating dtypes is differentiated, a cast to an
    integer or boolean dtype has a zero derivative (a tape array without history)."""
    if type(x) is not Tracer:
        return np.asarray(x).astype(dtype, copy=builtins.bool(copy))
    if not copy and x.dtype == dtype:
        return x
    kind = np.dtype(dtype).kind
    if carries_gradient(x) and kind not in "biu":  # (those casts have a zero derivative)
        if kind == "f" and np.dtype(x.dtype).kind == "f":
            return P.astype(x, dtype=dtype)
        raise UnsupportedError(
            f"tape: astype of a traced {np.dtype(x.dtype)} array to {np.dtype(dtype)}: the "
            "tape differentiates real arrays only. Fix: keep the computation real, or "
            "choose backend='torch' or 'jax'."
        )
    return constant(np.asarray(raw(x)).astype(dtype, copy=True))
