"""Creating arrays in the namespace: floating results are ``DualArray`` s with zero tangents
(constants), so that traced values can be written into them; integer and boolean arrays
stay plain numpy.

Example:
    >>> import numpy as np
    >>> from adswitch_dual.dual import DualArray, tangent_width
    >>> with tangent_width(2):
    ...     buf = zeros((3,))
    ...     buf[0] = DualArray(np.array(5.0), np.array([1.0, 0.0]))
    >>> buf.tangent.tolist()
    [[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]]
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from adswitch_dual.dual import DualArray, parts

__all__ = [
    "arange",
    "asarray",
    "astype",
    "empty",
    "empty_like",
    "eye",
    "full",
    "full_like",
    "linspace",
    "ones",
    "ones_like",
    "zeros",
    "zeros_like",
]


def _made(array: np.ndarray) -> Any:
    return DualArray(array) if np.issubdtype(array.dtype, np.floating) else array


def asarray(
    obj: Any, /, *, dtype: Any = None, device: Any = None, copy: builtins.bool | None = None
) -> Any:
    """``obj`` as an array of the namespace (a dual array is returned as it is)."""
    if isinstance(obj, DualArray):
        return obj if dtype is None else astype(obj, dtype)
    return _made(np.array(obj, dtype=dtype, copy=copy))


def astype(x: Any, dtype: Any, /, *, copy: builtins.bool = True, device: Any = None) -> Any:
    """``x`` in ``dtype``; converting a dual array to an integer dtype drops its tangent
    (the derivative of a rounding is 0 wherever it exists)."""
    if not isinstance(x, DualArray):
        return _made(np.asarray(x).astype(dtype, copy=copy))
    if not np.issubdtype(np.dtype(dtype), np.floating):
        return x.value.astype(dtype)
    return DualArray(x.value.astype(dtype), x.tangent.astype(dtype))


def zeros(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    return _made(np.zeros(shape, dtype=dtype or np.float64))


def ones(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    return _made(np.ones(shape, dtype=dtype or np.float64))


def empty(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    return zeros(shape, dtype=dtype)


def full(shape: Any, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    return _made(np.full(shape, fill_value, dtype=dtype))


def zeros_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    return _made(np.zeros_like(parts(x)[0], dtype=dtype))


def ones_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    return _made(np.ones_like(parts(x)[0], dtype=dtype))


def empty_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    return zeros_like(x, dtype=dtype)


def full_like(x: Any, /, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    return _made(np.full_like(parts(x)[0], fill_value, dtype=dtype))


def arange(*args: Any, dtype: Any = None, device: Any = None, **kwargs: Any) -> Any:
    return _made(np.arange(*args, dtype=dtype, **kwargs))


def linspace(*args: Any, dtype: Any = None, device: Any = None, **kwargs: Any) -> Any:
    return _made(np.linspace(*args, dtype=dtype, **kwargs))


def eye(*args: Any, dtype: Any = None, device: Any = None, **kwargs: Any) -> Any:
    return _made(np.eye(*args, dtype=dtype, **kwargs))
