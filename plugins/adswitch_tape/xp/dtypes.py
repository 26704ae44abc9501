"""Array API data type functions for the tape: ``finfo``, ``iinfo``, ``result_type``,
``can_cast``, ``isdtype`` and the inspection namespace -- numpy's dtypes, described as
the standard says (``finfo``'s fields are Python floats, as numpy's are not for float32).
Part of the namespace."""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..tracer import Tracer, raw

__all__ = [
    "FInfo", "IInfo", "__array_namespace_info__", "can_cast", "finfo", "iinfo", "isdtype",
    "result_type",
]  # fmt: skip


@dataclass(frozen=True)
class FInfo:
    """Machine limits of a floating dtype (``finfo``'s result)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype[Any]


@dataclass(frozen=True)
class IInfo:
    """Machine limits of an integer dtype (``iinfo``'s result)."""

    bits: int
    max: int
    min: int
    dtype: np.dtype[Any]


def _dtype(type: Any) -> Any:
    return raw(type).dtype if isinstance(type, Tracer | np.ndarray) else type


def finfo(type: Any, /) -> FInfo:
    """The limits of a floating dtype (or an array's); a complex dtype's real part's."""
    info = np.finfo(_dtype(type))
    return FInfo(
        bits=int(info.bits),
        eps=float(info.eps),
        max=float(info.max),
        min=float(info.min),
        smallest_normal=float(info.smallest_normal),
        dtype=np.dtype(info.dtype),
    )


def iinfo(type: Any, /) -> IInfo:
    """The limits of an integer dtype (or an array's)."""
    info = np.iinfo(_dtype(type))
    return IInfo(bits=int(info.bits), max=int(info.max), min=int(info.min), dtype=info.dtype)


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
