"""Array API elementwise functions for the tape that are not primitives: those with a zero
derivative (comparisons, logic, bitwise, rounding, ``sign``, ``isnan``...), the complex
parts, ``clip`` and ``where``.

Zero-derivative functions compute numpy's result on the concrete values; given a tape
array they return one (without history, see ``conversions.constant``), given numpy
arrays or scalars numpy's result. Part of the namespace.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError

from ..array.conversions import carries_gradient
from ..array.tracer import Tracer, raw
from ..rules import primitives as P
from .axes import like_inputs, unwrapped

__all__ = [
    "bitwise_and", "bitwise_invert", "bitwise_left_shift", "bitwise_or", "bitwise_right_shift",
    "bitwise_xor", "ceil", "clip", "conj", "equal", "floor", "floor_divide", "greater",
    "greater_equal", "imag", "isfinite", "isinf", "isnan", "less", "less_equal", "logical_and",
    "logical_not", "logical_or", "logical_xor", "not_equal", "real", "round", "sign", "signbit",
    "trunc", "where",
]  # fmt: skip


def _unary(fn: Callable[[Any], Any], name: str) -> Callable[[Any], Any]:
    def zero_derivative(x: Any, /) -> Any:
        return like_inputs(fn(raw(x)), type(x) is Tracer)

    zero_derivative.__name__ = zero_derivative.__qualname__ = name
    zero_derivative.__doc__ = f"``numpy.{fn.__name__}`` of the values (a zero derivative)."
    return zero_derivative


def _binary(fn: Callable[[Any, Any], Any], name: str) -> Callable[[Any, Any], Any]:
    def zero_derivative(x1: Any, x2: Any, /) -> Any:
        tape, (v1, v2) = unwrapped(x1, x2)
        return like_inputs(fn(v1, v2), tape)

    zero_derivative.__name__ = zero_derivative.__qualname__ = name
    zero_derivative.__doc__ = f"``numpy.{fn.__name__}`` of the values (a zero derivative)."
    return zero_derivative


sign, floor, ceil, trunc = (
    _unary(np.sign, "sign"),
    _unary(np.floor, "floor"),
    _unary(np.ceil, "ceil"),
    _unary(np.trunc, "trunc"),
)
round, signbit, isfinite, isinf, isnan = (
    _unary(np.round, "round"),
    _unary(np.signbit, "signbit"),
    _unary(np.isfinite, "isfinite"),
    _unary(np.isinf, "isinf"),
    _unary(np.isnan, "isnan"),
)
logical_not, bitwise_invert = (
    _unary(np.logical_not, "logical_not"),
    _unary(np.invert, "bitwise_invert"),
)
equal, not_equal, less, less_equal = (
    _binary(np.equal, "equal"),
    _binary(np.not_equal, "not_equal"),
    _binary(np.less, "less"),
    _binary(np.less_equal, "less_equal"),
)
greater, greater_equal, floor_divide = (
    _binary(np.greater, "greater"),
    _binary(np.greater_equal, "greater_equal"),
    _binary(np.floor_divide, "floor_divide"),
)
logical_and, logical_or, logical_xor = (
    _binary(np.logical_and, "logical_and"),
    _binary(np.logical_or, "logical_or"),
    _binary(np.logical_xor, "logical_xor"),
)
bitwise_and, bitwise_or, bitwise_xor = (
    _binary(np.bitwise_and, "bitwise_and"),
    _binary(np.bitwise_or, "bitwise_or"),
    _binary(np.bitwise_xor, "bitwise_xor"),
)
bitwise_left_shift, bitwise_right_shift = (
    _binary(np.left_shift, "bitwise_left_shift"),
    _binary(np.right_shift, "bitwise_right_shift"),
)


# -- complex parts: the tape differentiates real arrays ----------------------------------
def _complex_part(fn: Callable[[Any], Any], name: str, x: Any) -> Any:
    """``fn`` (``np.real``...) of a complex array that carries no gradient."""
    if carries_gradient(x):
        raise UnsupportedError(
            f"tape: {name}() of a complex array that carries a gradient: the tape "
            "differentiates real arrays only. Fix: keep the computation real (pairs of "
            "real arrays for real and imaginary parts), or choose backend='torch' or 'jax'."
        )
    return like_inputs(fn(raw(x)), type(x) is Tracer)


def _is_complex(x: Any) -> bool:
    return np.iscomplexobj(raw(x))


def real(x: Any, /) -> Any:
    """The real part: of a real array, the array itself (a copy, differentiable)."""
    return _complex_part(np.real, "real", x) if _is_complex(x) else P.positive(x)


def imag(x: Any, /) -> Any:
    """The imaginary part: of a real array, zeros (a zero derivative)."""
    if _is_complex(x):
        return _complex_part(np.imag, "imag", x)
    return like_inputs(np.zeros_like(raw(x)), type(x) is Tracer)


def conj(x: Any, /) -> Any:
    """The complex conjugate: of a real array, the array itself (a copy, differentiable)."""
    return _complex_part(np.conj, "conj", x) if _is_complex(x) else P.positive(x)


def clip(x: Any, /, min: Any = None, max: Any = None) -> Any:
    """``minimum(maximum(x, min), max)`` in ``x``'s dtype: at a bound the gradient is split
    (0.5 each); where ``min > max`` the result is ``max``, as numpy's."""
    dtype = raw(x).dtype
    if min is not None:
        x = P.maximum(x, _bound(min, dtype))
    if max is not None:
        x = P.minimum(x, _bound(max, dtype))
    return x if x.dtype == dtype else P.astype(x, dtype=dtype)


def _bound(bound: Any, dtype: Any) -> Any:
    """A Python int bound of an integer array, in its dtype (brought into its range: numpy
    refuses an out-of-range Python int, and a bound beyond the range clips nothing)."""
    if type(bound) is int and np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return np.asarray(builtins.min(builtins.max(bound, info.min), info.max), dtype=dtype)
    return bound


def where(condition: Any, x1: Any, x2: Any, /) -> Any:
    """Elementwise choice; the condition carries no gradient.

    Where ``condition`` picks the same side everywhere, the other side enters by value
    only: it would receive a zero gradient anyway, and not propagating that zero keeps an
    overflow on the side not taken from turning it into NaN (``0 * inf``; scipy's
    ``logsumexp`` computes the naive ``log(sum(exp(a)))`` beside the stable one and
    chooses the stable one with ``where``).
    """
    cond = raw(condition)
    tape = builtins.any(type(a) is Tracer for a in (condition, x1, x2))
    if np.all(cond):
        x2 = raw(x2)
    elif not np.any(cond):
        x1 = raw(x1)
    return like_inputs(P.where(cond, x1, x2), tape)
