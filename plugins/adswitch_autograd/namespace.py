"""An Array API namespace over ``autograd.numpy``, for autograd's traced arrays.

``ArrayBox.__array_namespace__`` returns ``autograd.numpy``, which has numpy's names
(``concatenate``, ``transpose``, ``arcsin``...) rather than the standard's. This module
is what ``ad.array_namespace(x)`` returns for a traced ``x`` under the ``"autograd"``
engine: the standard's names, each mapped onto an autograd-differentiable primitive (or
a composition of them). Functions autograd cannot differentiate raise
``UnsupportedError`` naming the function when given a traced array, and work as numpy
does on plain arrays. Every function also accepts plain numpy arrays and Python scalars,
which are constants. Inside an adswitch trace the creation functions (``zeros``,
``ones``, ``empty``, ``full``, their ``*_like`` forms, ``asarray(..., copy=True)``) return
traced arrays that may be written (``buf[i] = v``; see ``writes.py``).

Non-smooth points follow autograd: ``abs``'s and ``sign``'s derivative at 0 is 0;
``max``/``min`` reductions share the gradient equally among tied maxima; ``maximum``/
``minimum`` split it half and half on ties; ``clip`` passes the gradient where the value
is strictly inside the bounds and 0 where it is clipped or sits on a bound. ``prod`` is
exact at zero elements (autograd's own rule gives ``nan`` there).

``pow`` (and ``**`` on traced values inside adswitch calls) is exact for nested
derivatives in a traced exponent, where autograd's own rule is not (see :mod:`.power`).

Example:
    >>> import numpy as np
    >>> import adswitch_autograd.namespace as xp
    >>> xp.concat([xp.asarray([1.0]), xp.ones(2)])
    array([1., 1., 1.])
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import autograd.numpy as anp
import numpy as np

from . import _ns_create, _ns_manip, _ns_reduce
from ._ns_support import is_traced, unsupported
from .power import pow as pow

__array_api_version__ = "2023.12"

# ---- constants and dtypes -------------------------------------------------------------
e, pi, inf, nan, newaxis = math.e, math.pi, math.inf, math.nan, None
bool = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float32, float64 = np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128

# ---- manipulation and linear algebra (built on indexing where autograd lacks a rule) ----
broadcast_arrays = _ns_manip.broadcast_arrays
concat = _ns_manip.concat
cumulative_sum = _ns_reduce.cumulative_sum
expand_dims = _ns_manip.expand_dims
flip = _ns_manip.flip
matrix_transpose = _ns_manip.matrix_transpose
moveaxis = _ns_manip.moveaxis
permute_dims = _ns_manip.permute_dims
repeat = _ns_manip.repeat
reshape = _ns_manip.reshape
roll = _ns_manip.roll
squeeze = _ns_manip.squeeze
stack = _ns_manip.stack
take = _ns_manip.take
tensordot = _ns_manip.tensordot
tile = _ns_manip.tile
unstack = _ns_manip.unstack
vecdot = _ns_manip.vecdot
broadcast_to = _ns_manip.broadcast_to
where = _ns_manip.where
sort = _ns_manip.sort
take_along_axis = _ns_manip.take_along_axis
cumulative_prod = _ns_reduce.cumulative_prod
copysign = _ns_manip.copysign

# ---- elementwise: autograd primitives under the standard's names ----------------------
abs = anp.abs
acos, acosh, asin, asinh = anp.arccos, anp.arccosh, anp.arcsin, anp.arcsinh
atan, atan2, atanh = anp.arctan, anp.arctan2, anp.arctanh
add, subtract, multiply, divide = anp.add, anp.subtract, anp.multiply, anp.true_divide
negative, remainder = anp.negative, anp.remainder
cos, cosh, sin, sinh, tan, tanh = anp.cos, anp.cosh, anp.sin, anp.sinh, anp.tan, anp.tanh
exp, expm1, log, log1p, log2, log10 = anp.exp, anp.expm1, anp.log, anp.log1p, anp.log2, anp.log10
sqrt, square, hypot, logaddexp = anp.sqrt, anp.square, anp.hypot, anp.logaddexp
maximum, minimum = anp.maximum, anp.minimum
conj, real, imag = anp.conj, anp.real, anp.imag
# Piecewise constant: derivative 0 almost everywhere, which autograd returns.
sign, floor, ceil, trunc, round = anp.sign, anp.floor, anp.ceil, anp.trunc, anp.round
floor_divide = anp.floor_divide
equal, not_equal, less, less_equal = anp.equal, anp.not_equal, anp.less, anp.less_equal
greater, greater_equal = anp.greater, anp.greater_equal
isfinite, isinf, isnan = anp.isfinite, anp.isinf, anp.isnan
logical_and, logical_or, logical_xor = anp.logical_and, anp.logical_or, anp.logical_xor
logical_not = anp.logical_not
bitwise_and, bitwise_or, bitwise_xor = np.bitwise_and, np.bitwise_or, np.bitwise_xor
bitwise_invert, bitwise_left_shift, bitwise_right_shift = np.invert, np.left_shift, np.right_shift
signbit = unsupported("signbit", np.signbit, differentiable_result=False)
nextafter = unsupported("nextafter", np.nextafter)

# ---- linear algebra and reductions -----------------------------------------------------
matmul = anp.matmul
sum, max, min = anp.sum, anp.max, anp.min
prod = _ns_reduce.prod
all, any = anp.all, anp.any
argmax, argmin, argsort, nonzero = anp.argmax, anp.argmin, anp.argsort, anp.nonzero
searchsorted = anp.searchsorted
tril, triu = anp.tril, anp.triu
unique_values = unsupported("unique_values", np.unique_values)
unique_all = unsupported("unique_all", np.unique_all)
unique_counts = unsupported("unique_counts", np.unique_counts)
unique_inverse = unsupported("unique_inverse", np.unique_inverse)
from_dlpack = unsupported("from_dlpack", np.from_dlpack)


def positive(x: Any, /) -> Any:
    """``+x``; a traced array is immutable, so it is its own copy."""
    return x if is_traced(x) else np.positive(x)


def mean(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Any:
    """Arithmetic mean over ``axis``."""
    return anp.mean(x, axis=axis, keepdims=keepdims)


def var(
    x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: builtins.bool = False
) -> Any:
    """Variance with ``correction`` degrees of freedom subtracted from the count.

    Example:
        >>> var(np.asarray([1.0, 3.0]), correction=1)
        np.float64(2.0)
    """
    centred = x - anp.mean(x, axis=axis, keepdims=True)
    count = np.prod([anp.shape(x)[a] for a in _axes(axis, anp.ndim(x))], dtype=np.int64)
    squares = anp.sum(centred * centred, axis=axis, keepdims=keepdims)
    return squares / (float(count) - correction)


def std(
    x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: builtins.bool = False
) -> Any:
    """Standard deviation: ``sqrt(var(...))``."""
    return anp.sqrt(var(x, axis=axis, correction=correction, keepdims=keepdims))


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        return (axis,)
    return tuple(axis)


def clip(x: Any, /, min: Any = None, max: Any = None) -> Any:
    """Clamp ``x`` into ``[min, max]``; either bound may be ``None`` or a (traced) array."""
    if is_traced(min) or is_traced(max):
        if min is not None:
            x = where(x < min, min, x)
        if max is not None:
            x = where(x > max, max, x)
        return x
    if min is None and max is None:
        return x
    return anp.clip(x, min, max)


def diff(x: Any, /, *, axis: int = -1, n: int = 1, prepend: Any = None, append: Any = None) -> Any:
    """``n``-th forward difference along ``axis``, after optional ``prepend``/``append``."""
    pieces = [p for p in (prepend, x, append) if p is not None]
    if len(pieces) > 1:
        x = concat(pieces, axis=axis)
    return anp.diff(x, n=n, axis=axis)


# ---- creation: inside a trace, floating arrays are writable buffers (buffers.py) --------
asarray = _ns_create.asarray
astype = _ns_create.astype
full, full_like = _ns_create.full, _ns_create.full_like
zeros, ones, empty = _ns_create.zeros, _ns_create.ones, _ns_create.empty
zeros_like, ones_like, empty_like = (
    _ns_create.zeros_like,
    _ns_create.ones_like,
    _ns_create.empty_like,
)


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None,
        device: Any = None) -> Any:  # fmt: skip
    """The identity-like constant matrix."""
    return np.eye(n_rows, n_cols, k=k, dtype=dtype)


def arange(start: Any, /, stop: Any = None, step: Any = 1, *, dtype: Any = None,
           device: Any = None) -> Any:  # fmt: skip
    """Evenly spaced constants."""
    return np.arange(start, stop, step, dtype=dtype)


def linspace(start: Any, stop: Any, /, num: int, *, dtype: Any = None, device: Any = None,
             endpoint: builtins.bool = True) -> Any:  # fmt: skip
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
        grids.append(broadcast_to(anp.reshape(a, view), shape) + np.zeros(shape, a.dtype))
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
