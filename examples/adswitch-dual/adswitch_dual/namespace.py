"""The dual engine's Array API namespace: what ``ad.array_namespace`` returns inside ``f``.

It covers the common subset of the standard: elementwise math (from the rules in
:mod:`adswitch_dual.rules`), arithmetic, comparisons, reductions with ``axis``/``keepdims``
(:mod:`adswitch_dual.reductions`), matmul, shape functions, ``take``, ``where``
(:mod:`adswitch_dual.shapes`), creation functions and ``astype``
(:mod:`adswitch_dual.creation`). Any other name raises ``UnsupportedError`` naming the
function. The plugin hands this module to adswitch through ``Backend.namespace``.

Example:
    >>> import numpy as np
    >>> from adswitch_dual import namespace as xp
    >>> from adswitch_dual.dual import DualArray
    >>> x = DualArray(np.array([0.0, 1.0]), np.eye(2))
    >>> xp.sum(xp.sin(x)).tangent.round(3).tolist()
    [1.0, 0.54]
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError
from adswitch.spec import array_methods
from adswitch_dual import chain
from adswitch_dual.creation import (
    arange,
    asarray,
    astype,
    empty,
    empty_like,
    eye,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from adswitch_dual.dual import DualArray, parts
from adswitch_dual.reductions import (
    cumulative_sum,
    max,
    mean,
    min,
    prod,
    std,
    sum,
    var,
    vecdot,
)
from adswitch_dual.rules import BINARY, PLAIN, UNARY
from adswitch_dual.shapes import (
    broadcast_to,
    concat,
    expand_dims,
    flip,
    matrix_transpose,
    permute_dims,
    reshape,
    squeeze,
    stack,
    take,
)
from adswitch_dual.sorting import argsort, sort

__array_api_version__ = "2023.12"

e, pi, inf, nan, newaxis = np.e, np.pi, np.inf, np.nan, None
bool = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, float32, float64 = np.uint8, np.float32, np.float64
finfo, iinfo, isdtype = np.finfo, np.iinfo, np.isdtype


def _elementwise(name: str) -> Callable[[Any], DualArray]:
    f, df = UNARY[name]

    def function(x: Any, /) -> DualArray:
        return DualArray(*chain.unary(parts(x), f, df))

    function.__name__ = function.__qualname__ = name
    return function


def _broadcasting(name: str) -> Callable[[Any, Any], DualArray]:
    f, da, db = BINARY[name]

    def function(a: Any, b: Any, /) -> DualArray:
        return DualArray(*chain.binary(parts(a), parts(b), f, da, db))

    function.__name__ = function.__qualname__ = name
    return function


def _plain(name: str) -> Callable[..., Any]:
    f = PLAIN[name]

    def function(*args: Any) -> Any:
        return f(*(parts(a)[0] for a in args))

    function.__name__ = function.__qualname__ = name
    return function


exp, expm1, log, log1p = map(_elementwise, ("exp", "expm1", "log", "log1p"))
log2, log10, sqrt, square = map(_elementwise, ("log2", "log10", "sqrt", "square"))
sin, cos, tan, asin, acos, atan = map(_elementwise, ("sin", "cos", "tan", "asin", "acos", "atan"))
sinh, cosh, tanh = map(_elementwise, ("sinh", "cosh", "tanh"))
asinh, acosh, atanh = map(_elementwise, ("asinh", "acosh", "atanh"))
abs, negative, positive = map(_elementwise, ("abs", "negative", "positive"))
sign, floor, ceil, round, trunc = map(_elementwise, ("sign", "floor", "ceil", "round", "trunc"))

add, subtract, multiply, divide = map(_broadcasting, ("add", "subtract", "multiply", "divide"))
pow, maximum, minimum = map(_broadcasting, ("pow", "maximum", "minimum"))
logaddexp, atan2, hypot = map(_broadcasting, ("logaddexp", "atan2", "hypot"))

equal, not_equal = _plain("equal"), _plain("not_equal")
less, less_equal = _plain("less"), _plain("less_equal")
greater, greater_equal = _plain("greater"), _plain("greater_equal")
isnan, isinf, isfinite = _plain("isnan"), _plain("isinf"), _plain("isfinite")


def _values_only(f: Callable[..., Any]) -> Callable[..., Any]:
    def function(x: Any, /, **kwargs: Any) -> Any:
        return f(parts(x)[0], **kwargs)

    function.__name__ = function.__qualname__ = f.__name__
    return function


# Integer and boolean results: no derivative.
argmax, argmin = _values_only(np.argmax), _values_only(np.argmin)
nonzero, all, any = _values_only(np.nonzero), _values_only(np.all), _values_only(np.any)


def clip(x: Any, /, min: Any = None, max: Any = None) -> DualArray:
    out = x if isinstance(x, DualArray) else asarray(x)
    out = out if min is None else maximum(out, min)
    return out if max is None else minimum(out, max)


def where(condition: Any, a: Any, b: Any, /) -> DualArray:
    cond = np.asarray(parts(condition)[0], dtype=np.bool_)
    (av, at), (bv, bt) = parts(a), parts(b)
    return DualArray(*chain.combine(np.where(cond, av, bv), [(cond, at), (~cond, bt)]))


def matmul(a: Any, b: Any, /) -> DualArray:
    return DualArray(*chain.matmul(parts(a), parts(b)))


__all__ = [
    # creation
    "arange", "asarray", "astype", "empty", "empty_like", "eye", "full", "full_like",
    "linspace", "ones", "ones_like", "zeros", "zeros_like",
    # elementwise and arithmetic
    "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "square", "sin", "cos", "tan",
    "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "abs",
    "negative", "positive", "sign", "floor", "ceil", "round", "trunc", "add", "subtract",
    "multiply", "divide", "pow", "maximum", "minimum", "logaddexp", "atan2", "hypot",
    "clip", "where", "matmul",
    # comparisons, predicates, searches
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "isnan",
    "isinf", "isfinite", "argmax", "argmin", "nonzero", "all", "any",
    # reductions
    "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var", "vecdot",
    # shapes
    "broadcast_to", "concat", "expand_dims", "flip", "matrix_transpose", "permute_dims",
    "reshape", "squeeze", "stack", "take", "sort", "argsort",
    # constants and dtypes
    "e", "pi", "inf", "nan", "newaxis", "bool", "int8", "int16", "int32", "int64", "uint8",
    "float32", "float64", "finfo", "iinfo", "isdtype",
]  # fmt: skip


class _MissingFunction(UnsupportedError, AttributeError):
    """Also an ``AttributeError``, so that ``hasattr(xp, name)`` keeps working."""


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise _MissingFunction(
        f"dual engine: the Array API function {name!r} is not implemented by the example "
        "dual-number engine; write it from the supported functions or use another engine "
        "(backend='tape')."
    )


def _attach_methods() -> None:
    """Dual numbers get the habitual array methods (``x.sum()``, ``x.reshape(...)``), each
    this namespace's function of the same meaning, and an error naming the ``xp``
    function for any other name (the adapter kit's ``array_methods``)."""
    for name, method in array_methods(sys.modules[__name__], "dual engine").items():
        if name == "__getattr__" or not hasattr(DualArray, name):
            setattr(DualArray, name, method)


_attach_methods()
