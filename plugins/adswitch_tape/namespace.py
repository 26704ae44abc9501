"""The Array API namespace of the tape (``xp = ad.array_namespace(traced)``).

Functions take tracers, numpy arrays and Python scalars alike (numpy arrays and scalars
are constants). Differentiable functions are the primitives (``rules.primitives``) or
compositions of them (``xp.shapes``, ``xp.indexing``, ``xp.reductions``); functions
whose derivative is zero everywhere it exists (comparisons, ``sign``, ``floor``,
``argmax``...) return plain numpy results of the concrete values. Creation functions
(``zeros``, ``ones``, ``full``, ``empty``, ``eye``, the ``*_like`` ones, ``asarray`` of
Python data) return *fresh buffers*: tracers without history, so that writing traced
values into them (``buf[i] = v``) is differentiated; as outputs they come back as numpy.

A name the standard defines that the tape does not provide (``linalg``, ``fft``,
``cumulative_prod``...) raises :class:`UnsupportedFunctionError` naming it -- an
:class:`~adswitch.errors.UnsupportedError` that is also an ``AttributeError``, so
``hasattr(xp, name)`` stays False.

Example:
    >>> import numpy as np, adswitch as ad
    >>> def f(x):
    ...     xp = ad.array_namespace(x)
    ...     return xp.sum(xp.sin(x) * x)
    >>> ad.gradient(f, np.zeros(2), backend="tape")[0]
    array([0., 0.])
"""

from __future__ import annotations

import sys as _sys
from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError

from . import interop as _interop
from .rules import primitives as P
from .tracer import raw
from .xp.creation import (
    arange,
    asarray,
    astype,
    empty,
    empty_like,
    eye,
    from_dlpack,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from .xp.indexing import diff, repeat, roll, sort, take, take_along_axis, tile, tril, triu
from .xp.reductions import (
    cumulative_sum,
    max,
    mean,
    min,
    prod,
    std,
    sum,
    tensordot,
    var,
    vecdot,
)
from .xp.shapes import (
    broadcast_arrays,
    broadcast_to,
    concat,
    expand_dims,
    flip,
    matrix_transpose,
    meshgrid,
    moveaxis,
    permute_dims,
    reshape,
    squeeze,
    stack,
    unstack,
)

__array_api_version__ = "2023.12"

__all__ = [
    "UnsupportedFunctionError", "__array_api_version__", "__array_namespace_info__", "abs",
    "absolute", "acos", "acosh", "add", "all", "any", "arange", "arccos", "arccosh", "arcsin",
    "arcsinh", "arctan", "arctan2", "arctanh", "argmax", "argmin", "argsort", "asarray", "asin",
    "asinh", "astype", "atan", "atan2", "atanh", "bitwise_and", "bitwise_invert",
    "bitwise_left_shift", "bitwise_or", "bitwise_right_shift", "bitwise_xor", "bool",
    "broadcast_arrays", "broadcast_to", "can_cast", "ceil", "clip", "complex128", "complex64",
    "concat", "concatenate", "conj", "copysign", "cos", "cosh", "count_nonzero",
    "cumulative_sum", "diff", "divide", "e", "empty", "empty_like", "equal", "exp",
    "expand_dims", "expm1", "eye", "finfo", "flip", "float32", "float64", "floor",
    "floor_divide", "from_dlpack", "full", "full_like", "greater", "greater_equal", "hypot",
    "iinfo", "imag", "inf", "int16", "int32", "int64", "int8", "isdtype", "isfinite", "isinf",
    "isnan", "less", "less_equal", "linspace", "log", "log10", "log1p", "log2", "logaddexp",
    "logical_and", "logical_not", "logical_or", "logical_xor", "matmul", "matrix_transpose",
    "max", "maximum", "mean", "meshgrid", "min", "minimum", "moveaxis", "multiply", "nan",
    "negative", "newaxis", "nonzero", "not_equal", "ones", "ones_like", "permute_dims", "pi",
    "positive", "pow", "power", "prod", "real", "remainder", "repeat", "reshape", "result_type",
    "roll", "round", "searchsorted", "sign", "signbit", "sin", "sinh", "sort", "sqrt", "square",
    "squeeze", "stack", "std", "subtract", "sum", "take", "take_along_axis", "tan", "tanh",
    "tensordot", "tile", "tril", "triu", "trunc", "uint16", "uint32", "uint64", "uint8",
    "unique_all", "unique_counts", "unique_inverse", "unique_values", "unstack", "var",
    "vecdot", "where", "zeros", "zeros_like",
]  # fmt: skip

# -- constants and dtypes (numpy's) ------------------------------------------------------
e, pi, inf, nan, newaxis = np.e, np.pi, np.inf, np.nan, None
bool = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float32, float64, complex64, complex128 = np.float32, np.float64, np.complex64, np.complex128

# -- differentiable elementwise functions (primitives) ----------------------------------
abs, acos, acosh, asin, asinh, atan, atanh = (
    P.abs,
    P.acos,
    P.acosh,
    P.asin,
    P.asinh,
    P.atan,
    P.atanh,
)
cos, cosh, exp, expm1, log, log1p, log2, log10 = (
    P.cos,
    P.cosh,
    P.exp,
    P.expm1,
    P.log,
    P.log1p,
    P.log2,
    P.log10,
)
negative, positive, sin, sinh, sqrt, square, tan, tanh = (
    P.negative,
    P.positive,
    P.sin,
    P.sinh,
    P.sqrt,
    P.square,
    P.tan,
    P.tanh,
)
add, subtract, multiply, divide, pow = P.add, P.subtract, P.multiply, P.divide, P.pow
maximum, minimum, atan2, hypot, logaddexp = P.maximum, P.minimum, P.atan2, P.hypot, P.logaddexp
copysign, remainder, matmul = P.copysign, P.remainder, P.matmul
# numpy's spellings, for code written against numpy
arccos, arccosh, arcsin, arcsinh, arctan, arctanh, arctan2 = (
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atanh,
    atan2,
)
power, absolute, concatenate = pow, abs, concat


def real(x: Any, /) -> Any:
    """The real part: the array itself, copied (the tape differentiates real dtypes)."""
    return P.positive(x)


conj = real


def clip(x: Any, /, min: Any = None, max: Any = None) -> Any:
    """``minimum(maximum(x, min), max)``: at a bound the gradient is split (0.5 each)."""
    if min is not None:
        x = P.maximum(x, min)
    if max is not None:
        x = P.minimum(x, max)
    return x


def where(condition: Any, x1: Any, x2: Any, /) -> Any:
    """Elementwise choice; the condition carries no gradient."""
    return P.where(raw(condition), x1, x2)


# -- functions with a zero derivative: plain results of the concrete values -------------
def _plain(fn: Any) -> Any:
    def plain(*args: Any, **kw: Any) -> Any:
        return fn(*(raw(a) for a in args), **kw)

    plain.__name__ = plain.__qualname__ = getattr(fn, "__name__", "plain")
    plain.__doc__ = f"``numpy.{plain.__name__}`` of the concrete values (no gradient)."
    return plain


sign, floor, ceil, trunc, signbit = (
    _plain(np.sign),
    _plain(np.floor),
    _plain(np.ceil),
    _plain(np.trunc),
    _plain(np.signbit),
)
isfinite, isinf, isnan, floor_divide = (
    _plain(np.isfinite),
    _plain(np.isinf),
    _plain(np.isnan),
    _plain(np.floor_divide),
)
equal, not_equal, less, less_equal = (
    _plain(np.equal),
    _plain(np.not_equal),
    _plain(np.less),
    _plain(np.less_equal),
)
greater, greater_equal = _plain(np.greater), _plain(np.greater_equal)
logical_and, logical_or, logical_not, logical_xor = (
    _plain(np.logical_and),
    _plain(np.logical_or),
    _plain(np.logical_not),
    _plain(np.logical_xor),
)
bitwise_and, bitwise_or, bitwise_xor, bitwise_invert = (
    _plain(np.bitwise_and),
    _plain(np.bitwise_or),
    _plain(np.bitwise_xor),
    _plain(np.bitwise_invert),
)
bitwise_left_shift, bitwise_right_shift = (
    _plain(np.bitwise_left_shift),
    _plain(np.bitwise_right_shift),
)
argmax, argmin, argsort, nonzero = (
    _plain(np.argmax),
    _plain(np.argmin),
    _plain(np.argsort),
    _plain(np.nonzero),
)
searchsorted, count_nonzero, all, any = (
    _plain(np.searchsorted),
    _plain(np.count_nonzero),
    _plain(np.all),
    _plain(np.any),
)
unique_all, unique_counts = _plain(np.unique_all), _plain(np.unique_counts)
unique_inverse, unique_values = _plain(np.unique_inverse), _plain(np.unique_values)
result_type, can_cast, isdtype = _plain(np.result_type), _plain(np.can_cast), np.isdtype
imag = _plain(np.imag)


def round(x: Any, /) -> Any:
    """``numpy.round`` of the concrete values (no gradient)."""
    return np.round(raw(x))


def finfo(type: Any, /) -> Any:
    return np.finfo(raw(type).dtype if hasattr(type, "dtype") else type)


def iinfo(type: Any, /) -> Any:
    return np.iinfo(raw(type).dtype if hasattr(type, "dtype") else type)


def __array_namespace_info__() -> Any:
    return np.__array_namespace_info__()


def __getattr__(name: str) -> Any:
    raise UnsupportedFunctionError(
        f"tape: the Array API function `{name}` is not supported by the tape engine. "
        "Fix: express it with supported functions, or choose another engine with "
        "backend='torch' or 'jax'."
    )


class UnsupportedFunctionError(UnsupportedError, AttributeError):
    """A namespace function the tape does not provide (also an ``AttributeError``)."""


# Tracers find this module through ``__array_namespace__``, and numpy's calls on them come
# here (``interop``): attached now, so importing the namespace makes tracers whole.
_interop.attach(_sys.modules[__name__])
