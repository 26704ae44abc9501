"""The Array API's data types (numpy's) and data type functions, for traced and plain arrays.

``astype`` is differentiable between floating dtypes; the inspection functions look at
a traced array's value, and describe dtypes as the standard says (``finfo``'s fields are
Python numbers, as numpy's are not for float32).
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from adswitch.spec import FInfo, IInfo, numpy_finfo, numpy_iinfo

from ..mutation.writes import copy_of
from .support import check_device, is_traced, untraced

__all__ = [
    "astype",
    "bool",
    "can_cast",
    "complex64",
    "complex128",
    "finfo",
    "float32",
    "float64",
    "iinfo",
    "int8",
    "int16",
    "int32",
    "int64",
    "isdtype",
    "result_type",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
]

bool = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float32, float64 = np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128

isdtype = np.isdtype


def _dtype_of(type_or_array: Any) -> Any:
    value = untraced(type_or_array)
    return value.dtype if isinstance(value, (np.ndarray, np.generic)) else value


def finfo(type: Any, /) -> FInfo:
    """The limits of a floating dtype (or an array's); a complex dtype's real part's.

    Example:
        >>> finfo(float32).eps == float(np.finfo(np.float32).eps)
        True
    """
    return numpy_finfo(_dtype_of(type))


def iinfo(type: Any, /) -> IInfo:
    """The limits of an integer dtype (or an array's)."""
    return numpy_iinfo(_dtype_of(type))


def can_cast(from_: Any, to: Any, /) -> builtins.bool:
    """Whether ``from_`` (a dtype or an array) casts to ``to`` by the standard's rules."""
    return builtins.bool(np.can_cast(_dtype_of(from_), to))


def astype(x: Any, dtype: Any, /, *, copy: builtins.bool = True, device: Any = None) -> Any:
    """``x`` converted to ``dtype`` (differentiable between floating dtypes).

    ``copy=True`` always gives a new array -- a traced one too, since the engine's traced
    arrays can be written (``y[i] = v``); ``copy=False`` returns ``x`` itself when its
    dtype is already ``dtype``. A traced array cast to an integer or boolean dtype is a
    numpy array: it has no derivative, and autograd's boxes of integers cannot index.
    """
    check_device(device)
    if is_traced(x):
        if x.dtype == dtype:
            return copy_of(x) if copy else x
        if np.dtype(dtype).kind not in "fc":
            return np.asarray(untraced(x)).astype(dtype)
        return x.astype(dtype)
    return np.asarray(x).astype(dtype, copy=copy)


def result_type(*arrays_and_dtypes: Any) -> Any:
    """The promoted dtype of traced or plain arrays, dtypes and scalars."""
    return np.result_type(*(untraced(a) for a in arrays_and_dtypes))
