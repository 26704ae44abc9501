"""The Array API's ``finfo``/``iinfo`` results for numpy dtypes, for namespaces over numpy.

Re-exported by :mod:`adswitch.spec`: the tape's and the autograd engine's namespaces
describe numpy's dtypes as the standard says (fields are Python numbers, as numpy's are
not for float32).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["FInfo", "IInfo", "numpy_finfo", "numpy_iinfo"]


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


def numpy_finfo(dtype: Any) -> FInfo:
    """The limits of a numpy floating dtype; a complex dtype's real part's.

    Example:
        >>> numpy_finfo(np.float32).eps == float(np.finfo(np.float32).eps)
        True
    """
    info = np.finfo(dtype)
    return FInfo(
        bits=int(info.bits),
        eps=float(info.eps),
        max=float(info.max),
        min=float(info.min),
        smallest_normal=float(info.smallest_normal),
        dtype=np.dtype(info.dtype),
    )


def numpy_iinfo(dtype: Any) -> IInfo:
    """The limits of a numpy integer dtype."""
    info = np.iinfo(dtype)
    return IInfo(bits=int(info.bits), max=int(info.max), min=int(info.min), dtype=info.dtype)
