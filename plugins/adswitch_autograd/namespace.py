"""An Array API namespace over ``autograd.numpy``, for autograd's traced arrays.

``ArrayBox.__array_namespace__`` returns ``autograd.numpy``, which has numpy's names
(``concatenate``, ``transpose``, ``arcsin``...) rather than the standard's. This module
is what ``ad.array_namespace(x)`` returns for a traced ``x`` under the ``"autograd"``
engine: the standard's names, each mapped onto an autograd-differentiable primitive (or
a composition of them). Functions autograd cannot differentiate raise
``UnsupportedError`` naming the function when given a traced array, and work as numpy
does on plain arrays. Every function also accepts plain numpy arrays and Python scalars,
which are constants.

Non-smooth points follow autograd: ``abs``'s and ``sign``'s derivative at 0 is 0;
``max``/``min`` reductions share the gradient equally among tied maxima; ``maximum``/
``minimum`` split it half and half on ties; ``clip`` passes the gradient where the value
is strictly inside the bounds... and at the bounds themselves when the value equals them.

Example:
    >>> import numpy as np
    >>> import adswitch_autograd.namespace as xp
    >>> xp.concat([xp.asarray([1.0]), xp.ones(2)])
    array([1., 1., 1.])
"""

from __future__ import annotations

import math
from typing import Any

import autograd.numpy as anp
import numpy as np

from ._ns_manip import (
    broadcast_arrays,
    concat,
    cumulative_sum,
    expand_dims,
    flip,
    matrix_transpose,
    moveaxis,
    permute_dims,
    repeat,
    reshape,
    roll,
    squeeze,
    stack,
    take,
    tensordot,
    tile,
    unstack,
    vecdot,
)
from ._ns_support import is_traced, unsupported

__array_api_version__ = "2023.12"

# ---- constants and dtypes -------------------------------------------------------------
e, pi, inf, nan, newaxis = math.e, math.pi, math.inf, math.nan, None
bool = np.bool_  # noqa: A001 - the standard's name
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float32, float64 = np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128

# ---- elementwise: autograd primitives under the standard's names ----------------------
abs = anp.abs  # noqa: A001
acos, acosh, asin, asinh = anp.arccos, anp.arccosh, anp.arcsin, anp.arcsinh
atan, atan2, atanh = anp.arctan, anp.arctan2, anp.arctanh
add, subtract, multiply, divide = anp.add, anp.subtract, anp.multiply, anp.true_divide
negative, pow, remainder = anp.negative, anp.power, anp.remainder  # noqa: A001
cos, cosh, sin, sinh, tan, tanh = anp.cos, anp.cosh, anp.sin, anp.sinh, anp.tan, anp.tanh
exp, expm1, log, log1p, log2, log10 = anp.exp, anp.expm1, anp.log, anp.log1p, anp.log2, anp.log10
sqrt, square, hypot, logaddexp = anp.sqrt, anp.square, anp.hypot, anp.logaddexp
maximum, minimum = anp.maximum, anp.minimum
conj, real, imag = anp.conj, anp.real, anp.imag
# Piecewise constant: derivative 0 almost everywhere, which autograd returns.
sign, floor, ceil, trunc, round = anp.sign, anp.floor, anp.ceil, anp.trunc, anp.round  # noqa: A001
floor_divide = anp.floor_divide
equal, not_equal, less, less_equal = anp.equal, anp.not_equal, anp.less, anp.less_equal
greater, greater_equal = anp.greater, anp.greater_equal
isfinite, isinf, isnan = anp.isfinite, anp.isinf, anp.isnan
logical_and, logical_or, logical_xor = anp.logical_and, anp.logical_or, anp.logical_xor
logical_not = anp.logical_not
bitwise_and, bitwise_or, bitwise_xor = np.bitwise_and, np.bitwise_or, np.bitwise_xor
bitwise_invert, bitwise_left_shift, bitwise_right_shift = np.invert, np.left_shift, np.right_shift
copysign = unsupported("copysign", np.copysign)
signbit = unsupported("signbit", np.signbit, differentiable_result=False)
nextafter = unsupported("nextafter", np.nextafter)

# ---- linear algebra and reductions -----------------------------------------------------
matmul = anp.matmul
sum, prod, max, min = anp.sum, anp.prod, anp.max, anp.min  # noqa: A001
all, any = anp.all, anp.any  # noqa: A001
argmax, argmin, argsort, nonzero = anp.argmax, anp.argmin, anp.argsort, anp.nonzero
searchsorted = anp.searchsorted
broadcast_to, tril, triu = anp.broadcast_to, anp.tril, anp.triu
cumulative_prod = unsupported("cumulative_prod", np.cumprod)
take_along_axis = unsupported("take_along_axis", np.take_along_axis)
unique_values = unsupported("unique_values", np.unique_values)
unique_all = unsupported("unique_all", np.unique_all)
unique_counts = unsupported("unique_counts", np.unique_counts)
unique_inverse = unsupported("unique_inverse", np.unique_inverse)
from_dlpack = unsupported("from_dlpack", np.from_dlpack)


def positive(x: Any, /) -> Any:
    """``+x``; a traced array is immutable, so it is its own copy."""
    return x if is_traced(x) else np.positive(x)


def mean(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    """Arithmetic mean over ``axis``."""
    return anp.mean(x, axis=axis, keepdims=keepdims)


def var(x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Any:
    """Variance with ``correction`` degrees of freedom subtracted from the count.

    Example:
        >>> var(np.asarray([1.0, 3.0]), correction=1)
        np.float64(2.0)
    """
    centred = x - anp.mean(x, axis=axis, keepdims=True)
    count = np.prod([anp.shape(x)[a] for a in _axes(axis, anp.ndim(x))], dtype=np.int64)
    squares = anp.sum(centred * centred, axis=axis, keepdims=keepdims)
    return squares / (float(count) - correction)


def std(x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Any:
    """Standard deviation: ``sqrt(var(...))``."""
    return anp.sqrt(var(x, axis=axis, correction=correction, keepdims=keepdims))


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        return (axis,)
    return tuple(axis)


def where(condition: Any, x1: Any, x2: Any, /) -> Any:
    """``x1`` where ``condition`` holds, else ``x2``; differentiable in both branches."""
    return anp.where(condition, x1, x2)


def clip(x: Any, /, min: Any = None, max: Any = None) -> Any:  # noqa: A002
    """Clamp ``x`` into ``[min, max]``; either bound may be ``None`` or a (traced) array."""
    if is_traced(min) or is_traced(max):
        if min is not None:
            x = anp.where(x < min, min, x)
        if max is not None:
            x = anp.where(x > max, max, x)
        return x
    if min is None and max is None:
        return x
    return anp.clip(x, min, max)


def sort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Any:
    """Sorted copy along ``axis`` (the gradient follows each element to its place)."""
    result = anp.sort(x, axis=axis, kind="stable" if stable else None)
    return flip(result, axis=axis) if descending else result


def diff(x: Any, /, *, axis: int = -1, n: int = 1, prepend: Any = None, append: Any = None) -> Any:
    """``n``-th forward difference along ``axis``, after optional ``prepend``/``append``."""
    pieces = [p for p in (prepend, x, append) if p is not None]
    if len(pieces) > 1:
        x = concat(pieces, axis=axis)
    return anp.diff(x, n=n, axis=axis)


# ---- creation ------------------------------------------------------------------------


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: Any = None) -> Any:
    """An array from ``obj``; traced values (also inside lists) stay traced."""
    if is_traced(obj):
        return obj if dtype is None or obj.dtype == dtype else astype(obj, dtype)
    if isinstance(obj, (list, tuple)) and _contains_traced(obj):
        result = anp.array(obj)
        return result if dtype is None else astype(result, dtype)
    return np.asarray(obj, dtype=dtype, copy=copy)


def _contains_traced(obj: Any) -> Any:
    if isinstance(obj, (list, tuple)):
        return builtins_any(_contains_traced(item) for item in obj)
    return is_traced(obj)


def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    """``x`` converted to ``dtype`` (differentiable between floating dtypes)."""
    if is_traced(x):
        return x if x.dtype == dtype else x.astype(dtype)
    return np.asarray(x).astype(dtype, copy=copy)


def full(shape: Any, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """An array of ``shape`` filled with ``fill_value`` (which may be traced)."""
    if is_traced(fill_value):
        return anp.broadcast_to(fill_value, shape) + np.zeros(shape, dtype=dtype)
    return np.full(shape, fill_value, dtype=dtype)


def full_like(x: Any, /, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """Like ``x`` (shape, and dtype unless given), filled with ``fill_value``."""
    dtype = x.dtype if dtype is None else dtype
    return full(anp.shape(x), fill_value, dtype=dtype)


def zeros(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """Zeros (a constant numpy array)."""
    return np.zeros(shape, dtype=dtype)


def ones(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """Ones (a constant numpy array)."""
    return np.ones(shape, dtype=dtype)


def empty(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """An uninitialised constant array."""
    return np.empty(shape, dtype=dtype)


def zeros_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    """Zeros shaped like ``x`` (a constant numpy array, even for a traced ``x``)."""
    return np.zeros(anp.shape(x), dtype=x.dtype if dtype is None else dtype)


def ones_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    """Ones shaped like ``x`` (a constant numpy array)."""
    return np.ones(anp.shape(x), dtype=x.dtype if dtype is None else dtype)


def empty_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    """An uninitialised constant array shaped like ``x``."""
    return np.empty(anp.shape(x), dtype=x.dtype if dtype is None else dtype)


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None,
        device: Any = None) -> Any:  # fmt: skip
    """The identity-like constant matrix."""
    return np.eye(n_rows, n_cols, k=k, dtype=dtype)


def arange(start: Any, /, stop: Any = None, step: Any = 1, *, dtype: Any = None,
           device: Any = None) -> Any:  # fmt: skip
    """Evenly spaced constants."""
    return np.arange(start, stop, step, dtype=dtype)


def linspace(start: Any, stop: Any, /, num: int, *, dtype: Any = None, device: Any = None,
             endpoint: bool = True) -> Any:  # fmt: skip
    """``num`` evenly spaced constants from ``start`` to ``stop``."""
    return np.linspace(start, stop, num, dtype=dtype, endpoint=endpoint)


def meshgrid(*arrays: Any, indexing: str = "xy") -> list[Any]:
    """Coordinate grids (of plain or traced 1-d arrays)."""
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
        grids.append(anp.broadcast_to(anp.reshape(a, view), shape) + np.zeros(shape, a.dtype))
    return grids


# ---- data types ----------------------------------------------------------------------
finfo, iinfo, isdtype, can_cast = np.finfo, np.iinfo, np.isdtype, np.can_cast


def result_type(*arrays_and_dtypes: Any) -> Any:
    """The promoted dtype of traced or plain arrays, dtypes and scalars."""
    return np.result_type(*(_untraced(a) for a in arrays_and_dtypes))


def _untraced(value: Any) -> Any:
    while is_traced(value):
        value = value._value
    return value


def __array_namespace_info__() -> Any:
    """The inspection object of the underlying numpy namespace (CPU only)."""
    return np.__array_namespace_info__()


builtins_any = __builtins__["any"] if isinstance(__builtins__, dict) else __builtins__.any

__all__ = [
    name for name in dir() if not name.startswith("_") and name not in {"anp", "np", "math", "Any"}
]
__all__ += ["__array_namespace_info__", "__array_api_version__"]
__all__ += [  # re-exported from the manipulation module
    "broadcast_arrays", "concat", "cumulative_sum", "expand_dims", "flip", "matrix_transpose",
    "moveaxis", "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "take",
    "tensordot", "tile", "unstack", "vecdot",
]  # fmt: skip
