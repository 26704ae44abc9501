"""The dual engine's Array API namespace (what ``ad.array_namespace`` returns inside ``f``).

It covers the common subset of the standard: elementwise math, arithmetic, comparisons,
reductions with ``axis``/``keepdims``, matmul, shape functions, ``take``, ``where``,
creation functions and ``astype``. Floating arrays made here are ``DualArray`` s (so
traced values can be written into them); integer and boolean arrays are plain numpy.
Any other name raises ``UnsupportedError`` naming the function.

Example:
    >>> import numpy as np
    >>> from adswitch_dual import namespace as xp
    >>> from adswitch_dual.dual import DualArray
    >>> x = DualArray(np.array([0.0, 1.0]), np.eye(2))
    >>> xp.sum(xp.sin(x)).tangent.round(3).tolist()
    [1.0, 0.54]
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError
from adswitch_dual.dual import DualArray, binary, combine, matmul, parts, power, unary

__array_api_version__ = "2023.12"

e, pi, inf, nan, newaxis = np.e, np.pi, np.inf, np.nan, None
bool = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, float32, float64 = np.uint8, np.float32, np.float64
finfo, iinfo, isdtype = np.finfo, np.iinfo, np.isdtype
pow = power
matmul = matmul  # re-exported: the namespace is this module


def _unary(f: Any, df: Any) -> Callable[[Any], DualArray]:
    def function(x: Any) -> DualArray:
        return unary(x, f, df)

    function.__name__ = f.__name__
    return function


# Elementwise functions: _unary(numpy function, derivative as a function of (value, output)).
exp = _unary(np.exp, lambda v, o: o)
expm1 = _unary(np.expm1, lambda v, o: o + 1.0)
log = _unary(np.log, lambda v, o: 1.0 / v)
log1p = _unary(np.log1p, lambda v, o: 1.0 / (1.0 + v))
log2 = _unary(np.log2, lambda v, o: 1.0 / (v * np.log(2.0)))
log10 = _unary(np.log10, lambda v, o: 1.0 / (v * np.log(10.0)))
sqrt = _unary(np.sqrt, lambda v, o: 0.5 / o)
square = _unary(np.square, lambda v, o: 2.0 * v)
sin = _unary(np.sin, lambda v, o: np.cos(v))
cos = _unary(np.cos, lambda v, o: -np.sin(v))
tan = _unary(np.tan, lambda v, o: 1.0 + o * o)
asin = _unary(np.arcsin, lambda v, o: 1.0 / np.sqrt(1.0 - v * v))
acos = _unary(np.arccos, lambda v, o: -1.0 / np.sqrt(1.0 - v * v))
atan = _unary(np.arctan, lambda v, o: 1.0 / (1.0 + v * v))
sinh = _unary(np.sinh, lambda v, o: np.cosh(v))
cosh = _unary(np.cosh, lambda v, o: np.sinh(v))
tanh = _unary(np.tanh, lambda v, o: 1.0 - o * o)
asinh = _unary(np.arcsinh, lambda v, o: 1.0 / np.sqrt(v * v + 1.0))
acosh = _unary(np.arccosh, lambda v, o: 1.0 / np.sqrt(v * v - 1.0))
atanh = _unary(np.arctanh, lambda v, o: 1.0 / (1.0 - v * v))
abs = _unary(np.abs, lambda v, o: np.sign(v))  # 0 at 0, like the other engines
negative = _unary(np.negative, lambda v, o: -1.0)
positive = _unary(np.positive, lambda v, o: 1.0)
# Piecewise constant: derivative 0 wherever it exists.
sign = _unary(np.sign, lambda v, o: 0.0)
floor = _unary(np.floor, lambda v, o: 0.0)
ceil = _unary(np.ceil, lambda v, o: 0.0)
round = _unary(np.round, lambda v, o: 0.0)
trunc = _unary(np.trunc, lambda v, o: 0.0)


def add(a: Any, b: Any) -> DualArray:
    return binary(a, b, np.add, None, None)


def subtract(a: Any, b: Any) -> DualArray:
    return binary(a, b, np.subtract, None, lambda a, b, o: -1.0)


def multiply(a: Any, b: Any) -> DualArray:
    return binary(a, b, np.multiply, lambda a, b, o: b, lambda a, b, o: a)


def divide(a: Any, b: Any) -> DualArray:
    return binary(a, b, np.divide, lambda a, b, o: 1.0 / b, lambda a, b, o: -o / b)


def _tie(a: Any, b: Any) -> Any:
    # Ties share the derivative equally (the subgradient's midpoint).
    return (a > b) + 0.5 * (a == b)


def maximum(a: Any, b: Any) -> DualArray:
    return binary(a, b, np.maximum, lambda a, b, o: _tie(a, b), lambda a, b, o: _tie(b, a))


def minimum(a: Any, b: Any) -> DualArray:
    return binary(a, b, np.minimum, lambda a, b, o: _tie(b, a), lambda a, b, o: _tie(a, b))


def logaddexp(a: Any, b: Any) -> DualArray:
    return binary(a, b, np.logaddexp, lambda a, b, o: np.exp(a - o), lambda a, b, o: np.exp(b - o))


def atan2(a: Any, b: Any) -> DualArray:
    return binary(
        a,
        b,
        np.arctan2,
        lambda a, b, o: b / (a * a + b * b),
        lambda a, b, o: -a / (a * a + b * b),
    )


def hypot(a: Any, b: Any) -> DualArray:
    return binary(a, b, np.hypot, lambda a, b, o: a / o, lambda a, b, o: b / o)


def clip(x: Any, /, min: Any = None, max: Any = None) -> DualArray:
    out = x if isinstance(x, DualArray) else asarray(x)
    out = out if min is None else maximum(out, min)
    return out if max is None else minimum(out, max)


def where(condition: Any, a: Any, b: Any) -> DualArray:
    cond = np.asarray(parts(condition)[0], dtype=np.bool_)
    av, at = parts(a)
    bv, bt = parts(b)
    return combine(np.where(cond, av, bv), [(cond, at), (~cond, bt)])


# --- comparisons and predicates: plain numpy results --------------------------------
def _plain(f: Any) -> Any:
    def function(*args: Any, **kwargs: Any) -> Any:
        return f(*(parts(a)[0] for a in args), **kwargs)

    function.__name__ = f.__name__
    return function


equal, not_equal = _plain(np.equal), _plain(np.not_equal)
less, less_equal = _plain(np.less), _plain(np.less_equal)
greater, greater_equal = _plain(np.greater), _plain(np.greater_equal)
isnan, isinf, isfinite = _plain(np.isnan), _plain(np.isinf), _plain(np.isfinite)
argmax, argmin, nonzero = _plain(np.argmax), _plain(np.argmin), _plain(np.nonzero)
all, any = _plain(np.all), _plain(np.any)


# --- reductions -----------------------------------------------------------------------
def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return tuple(a % ndim if ndim else a for a in axes)


def sum(
    x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: builtins.bool = False
) -> DualArray:
    value, tangent = parts(x)
    value = np.asarray(value)
    ax = _axes(axis, value.ndim)
    out = np.sum(value, axis=ax, keepdims=keepdims, dtype=dtype)
    return combine(
        out, [(None, None if tangent is None else np.sum(tangent, axis=ax, keepdims=keepdims))]
    )


def mean(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> DualArray:
    value = np.asarray(parts(x)[0])
    count = int(np.prod([value.shape[a] for a in _axes(axis, value.ndim)]))
    return sum(x, axis=axis, keepdims=keepdims) / count


def prod(
    x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: builtins.bool = False
) -> DualArray:
    value, tangent = parts(x)
    value = np.asarray(value)
    ax = _axes(axis, value.ndim)
    out = np.prod(value, axis=ax, keepdims=keepdims)
    if tangent is None:
        return DualArray(out)
    # d prod / d x_i = product of the others, from exclusive prefix and suffix
    # products: exact where some x_i are 0 (dividing prod by x_i is not).
    keep = [a for a in range(value.ndim) if a not in ax]
    moved = np.transpose(value, keep + list(ax)).reshape([value.shape[a] for a in keep] + [-1])
    ones = np.ones_like(moved[..., :1])
    left = np.cumprod(np.concatenate([ones, moved[..., :-1]], -1), -1)
    right = np.cumprod(np.concatenate([ones, moved[..., :0:-1]], -1), -1)[..., ::-1]
    tmoved = np.transpose(tangent, [*keep, *ax, value.ndim])
    tmoved = tmoved.reshape((*moved.shape, tangent.shape[-1]))
    total = np.sum((left * right)[..., None] * tmoved, axis=-2)
    return combine(out, [(None, total.reshape((*np.shape(out), tangent.shape[-1])))])


def _extreme(x: Any, axis: Any, keepdims: builtins.bool, f: Any) -> DualArray:
    value, tangent = parts(x)
    value = np.asarray(value)
    ax = _axes(axis, value.ndim)
    top = f(value, axis=ax, keepdims=True)
    out = top if keepdims else np.squeeze(top, ax)
    if tangent is None:
        return DualArray(out)
    hits = value == top  # ties share the derivative equally
    weights = hits / np.sum(hits, axis=ax, keepdims=True)
    return combine(out, [(None, np.sum(weights[..., None] * tangent, axis=ax, keepdims=keepdims))])


def max(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> DualArray:
    return _extreme(x, axis, keepdims, np.max)


def min(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> DualArray:
    return _extreme(x, axis, keepdims, np.min)


def var(
    x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: builtins.bool = False
) -> DualArray:
    value = np.asarray(parts(x)[0])
    count = int(np.prod([value.shape[a] for a in _axes(axis, value.ndim)]))
    deviation = x - mean(x, axis=axis, keepdims=True)
    return sum(deviation * deviation, axis=axis, keepdims=keepdims) / (count - correction)


def std(
    x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: builtins.bool = False
) -> DualArray:
    return sqrt(var(x, axis=axis, correction=correction, keepdims=keepdims))


def cumulative_sum(
    x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: builtins.bool = False
) -> DualArray:
    value, tangent = parts(x)
    value = np.asarray(value)
    if axis is None:
        if value.ndim != 1:
            raise ValueError("cumulative_sum needs axis= for arrays of more than one dimension")
        axis = 0
    axis %= value.ndim
    out = np.cumulative_sum(value, axis=axis, include_initial=include_initial)
    t = (
        None
        if tangent is None
        else np.cumulative_sum(tangent, axis=axis, include_initial=include_initial)
    )
    return combine(out, [(None, t)])


def vecdot(a: Any, b: Any, /, *, axis: int = -1) -> DualArray:
    return sum(a * b, axis=axis)


# --- shapes: the same numpy function on the value and on the tangent -------------------
def _both(x: Any, on_value: Any, on_tangent: Any) -> DualArray:
    x = x if isinstance(x, DualArray) else asarray(x)
    return DualArray(on_value(x.value), on_tangent(x.tangent))


def reshape(x: Any, /, shape: tuple[int, ...], *, copy: builtins.bool | None = None) -> DualArray:
    value = np.asarray(parts(x)[0]).reshape(shape)
    return _both(x, lambda v: value, lambda t: t.reshape((*value.shape, t.shape[-1])))


def permute_dims(x: Any, /, axes: tuple[int, ...]) -> DualArray:
    return _both(x, lambda v: v.transpose(axes), lambda t: t.transpose((*axes, -1)))


def matrix_transpose(x: Any, /) -> DualArray:
    return _both(x, lambda v: np.swapaxes(v, -1, -2), lambda t: np.swapaxes(t, -2, -3))


def expand_dims(x: Any, /, *, axis: int = 0) -> DualArray:
    at = axis % (np.ndim(parts(x)[0]) + 1)
    return _both(x, lambda v: np.expand_dims(v, at), lambda t: np.expand_dims(t, at))


def squeeze(x: Any, /, axis: int | tuple[int, ...]) -> DualArray:
    ax = _axes(axis, np.ndim(parts(x)[0]))
    return _both(x, lambda v: np.squeeze(v, ax), lambda t: np.squeeze(t, ax))


def flip(x: Any, /, *, axis: Any = None) -> DualArray:
    ax = _axes(axis, np.ndim(parts(x)[0]))
    return _both(x, lambda v: np.flip(v, ax), lambda t: np.flip(t, ax))


def broadcast_to(x: Any, /, shape: tuple[int, ...]) -> DualArray:
    x = x if isinstance(x, DualArray) else asarray(x)
    target = (*shape, x.tangent.shape[-1])
    return combine(
        np.broadcast_to(x.value, shape).copy(), [(None, np.broadcast_to(x.tangent, target))]
    )


def take(x: Any, indices: Any, /, *, axis: int | None = None) -> DualArray:
    x = x if isinstance(x, DualArray) else asarray(x)
    index = np.asarray(parts(indices)[0])
    if axis is None:
        if x.ndim != 1:
            raise ValueError("take needs axis= for arrays of more than one dimension")
        axis = 0
    axis %= x.ndim
    return DualArray(np.take(x.value, index, axis), np.take(x.tangent, index, axis))


def _join(arrays: Any, axis: int, ndim_out: int, f: Any) -> DualArray:
    duals = [a if isinstance(a, DualArray) else asarray(a) for a in arrays]
    at = axis % ndim_out
    return DualArray(f([d.value for d in duals], at), f([d.tangent for d in duals], at))


def concat(arrays: Any, /, *, axis: int | None = 0) -> DualArray:
    if axis is None:
        return concat([reshape(a, (-1,)) for a in arrays], axis=0)
    return _join(arrays, axis, np.ndim(parts(arrays[0])[0]), np.concatenate)


def stack(arrays: Any, /, *, axis: int = 0) -> DualArray:
    return _join(arrays, axis, np.ndim(parts(arrays[0])[0]) + 1, np.stack)


# --- creation: floating results are DualArrays (constants), so traced values fit in ----
def _made(array: np.ndarray) -> Any:
    return DualArray(array) if np.issubdtype(array.dtype, np.floating) else array


def asarray(
    obj: Any, /, *, dtype: Any = None, device: Any = None, copy: builtins.bool | None = None
) -> Any:
    if isinstance(obj, DualArray):
        return obj if dtype is None else astype(obj, dtype)
    return _made(np.array(obj, dtype=dtype, copy=copy))


def astype(x: Any, dtype: Any, /, *, copy: builtins.bool = True, device: Any = None) -> Any:
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
