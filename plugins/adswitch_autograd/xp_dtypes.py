"""The Array API's data types (numpy's) and data type functions, for traced and plain arrays.

``astype`` is differentiable between floating dtypes; the inspection functions look at
a traced array's value.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .xp_support import is_traced, untraced

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

finfo, iinfo, isdtype, can_cast = np.finfo, np.iinfo, np.isdtype, np.can_cast


def astype(x: Any, dtype: Any, /, *, copy: builtins.bool = True, device: Any = None) -> Any:
    """``x`` converted to ``dtype`` (differentiable between floating dtypes)."""
    if is_traced(x):
        return x if x.dtype == dtype else x.astype(dtype)
    return np.asarray(x).astype(dtype, copy=copy)


def result_type(*arrays_and_dtypes: Any) -> Any:
    """The promoted dtype of traced or plain arrays, dtypes and scalars."""
    return np.result_type(*(untraced(a) for a in arrays_and_dtypes))
