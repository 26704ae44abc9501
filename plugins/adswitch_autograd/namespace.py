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

``pow`` with a traced exponent: autograd's rule for ``d/db b ** e`` is
``e * b ** where(e, e - 1, 1)`` (a guard against ``0 * inf`` at ``b == 0``), so its
derivative with respect to ``e`` -- a nested gradient, e.g. a loss on
``ad.gradient(h, e, b)[1]`` differentiated by ``e`` -- is ``b`` at ``e == 0`` instead of
``b ** -1``: a silently wrong number. ``pow(b, e)`` therefore takes its own primitive when
``e`` is traced and the result is real floating (a constant exponent keeps
``anp.power``): value ``np.power(b, e)``; ``d/db = e * pow(b, e - 1)`` and
``d/de = pow(b, e) * log(b)``, each written with this same ``pow``, so every order is
right. The only masks are at ``b == 0``, where ``b ** e`` is not smooth in ``e``: there
``d/db = 0`` where ``e == 0`` (``b ** 0`` is constant), ``d/de = 0`` where ``e >= 0``
(``0 ** e`` is 0 for ``e > 0``) and ``-inf`` for ``e < 0``; their own derivatives at those
points are those of the masks (0) and are not meaningful. For ``b < 0`` the value is nan
unless ``e`` is an integer, and every derivative with respect to ``e`` is nan (as
autograd's own ``d/de``; ``b ** e`` is real only at integer ``e``).

Inside adswitch calls the operators ``b ** e``, ``2.0 ** e`` and ``b **= e`` on traced
values take this same rule: every box autograd creates there is a ``boxes.GuardedBox``,
whose ``__pow__``/``__rpow__``/``__ipow__`` call this ``pow``. Limitation: calling
``autograd.numpy.power`` (or ``anp.float_power``) directly keeps autograd's rule; write
``xp.pow(b, e)`` or ``b ** e``.

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
from autograd.extend import defvjp, primitive
from autograd.numpy.numpy_vjps import unbroadcast_f
from autograd.tracer import getval

from . import _ns_create, _ns_manip, _ns_reduce
from ._ns_support import is_traced, unsupported

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


def pow(x1: Any, x2: Any, /) -> Any:
    """``x1 ** x2``; exact nested derivatives in a traced exponent (see the module doc).

    Example:
        >>> pow(np.asarray([2.0, 0.5]), 2.0)
        array([4.  , 0.25])
    """
    if not is_traced(x2):
        return anp.power(x1, x2)
    if isinstance(x1, (list, tuple)):  # ``[2.0, 3.0] ** e``; entries may be traced
        x1 = anp.array(x1)
    if np.result_type(getval(x1), getval(x2)).kind != "f":
        return anp.power(x1, x2)
    return _traced_pow(x1, x2)


@primitive  # type: ignore[untyped-decorator]
def _traced_pow(base: Any, exponent: Any) -> Any:
    return np.power(base, exponent)


def _base_slope(base: Any, exponent: Any) -> Any:
    # d/db b**e = e b**(e-1); b**0 is constant (also at b == 0, where e b**-1 would be
    # 0 * inf): 0 there, with a safe base so no nan leaks into the unselected branch.
    flat = (getval(base) == 0) & (getval(exponent) == 0)
    safe = where(flat, 1.0, base)
    with np.errstate(divide="ignore"):  # 0 ** (e - 1) for e < 1: inf, the right slope
        powered = _traced_pow(safe, exponent - 1.0)
    return where(flat, 0.0, exponent * powered)


def _exponent_slope(ans: Any, base: Any, exponent: Any) -> Any:
    # d/de b**e = b**e log b; 0**e is 0 for e > 0 (1 at e == 0): 0 there. For b < 0 the
    # log is nan, as is the derivative (b**e is real only at integer e).
    flat = (getval(base) == 0) & (getval(exponent) >= 0)
    safe = where(flat, 1.0, base)
    with np.errstate(invalid="ignore", divide="ignore"):
        log_base = anp.log(safe)
    return where(flat, 0.0, ans * log_base)


defvjp(
    _traced_pow,
    lambda ans, base, exponent: unbroadcast_f(base, lambda g: g * _base_slope(base, exponent)),
    lambda ans, base, exponent: unbroadcast_f(
        exponent, lambda g: g * _exponent_slope(ans, base, exponent)
    ),
)


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
