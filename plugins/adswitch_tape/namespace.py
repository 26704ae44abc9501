"""The Array API namespace of the tape (``xp = ad.array_namespace(traced)``).

Functions take tape arrays, numpy arrays and Python scalars alike (numpy arrays and
scalars are constants), and return tape arrays when given one, so code that asks for the
namespace of its results (``array_api_compat.array_namespace``) sees this one.
Differentiable functions are the primitives (``rules.primitives``) or compositions of
them (``xp.shapes``, ``xp.indexing``, ``xp.reductions``, ``xp.linalg``); functions whose
derivative is zero everywhere it exists (comparisons, ``sign``, ``floor``, ``argmax``...:
``xp.elementwise``, ``xp.searching``) compute numpy's result on the concrete values, as a
tape array without history. Creation functions (``zeros``, ``ones``, ``full``,
``empty``, ``eye``, the ``*_like`` ones, ``asarray`` of numpy arrays and Python data)
return *fresh buffers*: tracers without history, so that writing traced values into
them (``buf[i] = v``) is differentiated; as outputs they come back as numpy.

The extensions are sub-namespaces: ``xp.linalg`` (``xp/linalg.py``: differentiated
where it composes of primitives, numpy's on constants otherwise) and ``xp.fft``
(constants only: the tape differentiates real arrays); beyond the standard,
``xp.special`` (``xp/special.py``: ``expit``, ``logit``..., composed of primitives),
where scipy's special functions look for them. A name the standard defines
that the tape does not provide (``cumulative_prod``, ``nextafter``...) raises
:class:`UnsupportedFunctionError` naming it -- an
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

from adswitch.spec import MissingFunctionError, missing_function

from .array import interop as _interop
from .array import methods as _methods
from .rules import primitives as P
from .xp import fft, linalg, special
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
from .xp.dtypes import (
    __array_namespace_info__,
    can_cast,
    finfo,
    iinfo,
    isdtype,
    result_type,
)
from .xp.elementwise import (
    bitwise_and,
    bitwise_invert,
    bitwise_left_shift,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    ceil,
    clip,
    conj,
    equal,
    floor,
    floor_divide,
    greater,
    greater_equal,
    imag,
    isfinite,
    isinf,
    isnan,
    less,
    less_equal,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    not_equal,
    real,
    round,
    sign,
    signbit,
    trunc,
    where,
)
from .xp.indexing import (
    argsort,
    diff,
    repeat,
    roll,
    sort,
    take,
    take_along_axis,
    tile,
    tril,
    triu,
)
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
from .xp.searching import (
    all,
    any,
    argmax,
    argmin,
    count_nonzero,
    nonzero,
    searchsorted,
    unique_all,
    unique_counts,
    unique_inverse,
    unique_values,
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
    "concat", "concatenate", "conj", "copysign", "cos", "cosh", "count_nonzero", "cumulative_sum",
    "diff", "divide", "e", "empty", "empty_like", "equal", "exp", "expand_dims", "expm1", "eye",
    "fft", "finfo", "flip", "float32", "float64", "floor", "floor_divide", "from_dlpack", "full",
    "full_like", "greater", "greater_equal", "hypot", "iinfo", "imag", "inf", "int16", "int32",
    "int64", "int8", "isdtype", "isfinite", "isinf", "isnan", "less", "less_equal", "linalg",
    "linspace", "log", "log10", "log1p", "log2", "logaddexp", "logical_and", "logical_not",
    "logical_or", "logical_xor", "matmul", "matrix_transpose", "max", "maximum", "mean", "meshgrid",
    "min", "minimum", "moveaxis", "multiply", "nan", "negative", "newaxis", "nonzero", "not_equal",
    "ones", "ones_like", "permute_dims", "pi", "positive", "pow", "power", "prod", "real",
    "remainder", "repeat", "reshape", "result_type", "roll", "round", "searchsorted", "sign",
    "signbit", "sin", "sinh", "sort", "special", "sqrt", "square", "squeeze", "stack", "std",
    "subtract", "sum", "take", "take_along_axis", "tan", "tanh", "tensordot", "tile", "tril",
    "triu", "trunc",
    "uint16", "uint32", "uint64", "uint8", "unique_all", "unique_counts", "unique_inverse",
    "unique_values", "unstack", "var", "vecdot", "where", "zeros", "zeros_like",
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


def __getattr__(name: str) -> Any:
    # numpy's spellings the standard renames get the standard's name (adswitch.numpy_names)
    raise missing_function(
        "tape",
        name,
        otherwise="The tape does not provide it. Fix: express it with supported "
        "functions, or choose another engine with backend='torch' or 'jax'.",
    )


# A namespace function the tape does not provide (also an ``AttributeError``): the front
# end's class, so every engine's namespace raises the same one.
UnsupportedFunctionError = MissingFunctionError


# Tracers find this module through ``__array_namespace__``, and numpy's calls on them come
# here (``array.interop``): attached now, so importing the namespace makes tracers whole.
_interop.attach(_sys.modules[__name__])
_methods.attach(_sys.modules[__name__])  # x.sum(), x.reshape(...): the functions above
