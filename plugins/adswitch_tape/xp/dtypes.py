"""Array API data type functions for the tape: ``finfo``, ``iinfo``, ``result_type``,
``can_cast``, ``isdtype`` and the inspection namespace -- numpy's dtypes, described as
the standard says (``finfo``'s fields are Python floats, as numpy's are not for float32).
Part of the namespace."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from adswitch.spec import FInfo, IInfo, numpy_finfo, numpy_iinfo

from ..array.tracer import Tracer, raw

__all__ = [
    "FInfo", "IInfo", "__array_namespace_info__", "can_cast", "finfo", "iinfo", "isdtype",
    "result_type",
]  # fmt: skip


def _dtype(type: Any) -> Any:
    return raw(type).dtype if isinstance(type, Tracer | np.ndarray) else type


def finfo(type: Any, /) -> FInfo:
    """The limits of a floating dtype (or an array's); a complex dtype's real part's."""
    return numpy_finfo(_dtype(type))


def iinfo(type: Any, /) -> IInfo:
    """The limits of an integer dtype (or an array's)."""
    return numpy_iinfo(_dtype(type))


def result_type(*arrays_and_dtypes: Any) -> Any:
    """The dtype the standard's promotion gives (numpy's, of the concrete dtypes)."""
    return np.result_type(*(raw(a) for a in arrays_and_dtypes))


def can_cast(from_: Any, to: Any, /) -> builtins.bool:
    """Whether ``from_`` (a dtype or an array) casts to ``to`` by the standard's rules."""
    return builtins.bool(np.can_cast(_dtype(from_), to))


isdtype = np.isdtype


def __array_namespace_info__() -> Any:
    """The inspection namespace: numpy's (the tape computes on numpy, on the CPU)."""
    return np.__array_namespace_info__()
