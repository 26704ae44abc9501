"""The Array API's element-wise functions: autograd primitives under the standard's names.

Non-smooth points follow autograd: ``abs``'s and ``sign``'s derivative at 0 is 0;
``maximum``/``minimum`` split the gradient half and half on ties; ``clip`` passes it
where the value is strictly inside the bounds, 0 where it is clipped, and half of it
where it sits on a bound (the bound, if differentiated, gets the other half; :mod:`.kinks`).
``pow`` is exact for nested derivatives in a traced exponent (:mod:`.power`).
Functions autograd cannot differentiate (``nextafter``) raise ``UnsupportedError`` when
given a traced array.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import autograd.numpy as anp
import numpy as np

from ..mutation.writes import copy_of
from .kinks import acos, acosh, asin, clip_shared, sqrt  # zero seeds at infinite slopes
from .power import pow
from .support import constant, is_traced, unsupported, untraced

__all__ = [
    "abs",
    "acos",
    "acosh",
    "add",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitwise_and",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "ceil",
    "clip",
    "conj",
    "copysign",
    "cos",
    "cosh",
    "divide",
    "equal",
    "exp",
    "expm1",
    "floor",
    "floor_divide",
    "greater",
    "greater_equal",
    "hypot",
    "imag",
    "isfinite",
    "isinf",
    "isnan",
    "less",
    "less_equal",
    "log",
    "log1p",
    "log2",
    "log10",
    "logaddexp",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "multiply",
    "negative",
    "nextafter",
    "not_equal",
    "positive",
    "pow",
    "real",
    "remainder",
    "round",
    "sign",
    "signbit",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "subtract",
    "tan",
    "tanh",
    "trunc",
]

abs = anp.abs
asinh = anp.arcsinh
atan, atan2, atanh = anp.arctan, anp.arctan2, anp.arctanh
add, subtract, multiply, divide = anp.add, anp.subtract, anp.multiply, anp.true_divide
negative, remainder = anp.negative, anp.remainder
cos, cosh, sin, sinh, tan, tanh = anp.cos, anp.cosh, anp.sin, anp.sinh, anp.tan, anp.tanh
exp, expm1, log, log1p, log2, log10 = anp.exp, anp.expm1, anp.log, anp.log1p, anp.log2, anp.log10
square, hypot, logaddexp = anp.square, anp.hypot, anp.logaddexp
maximum, minimum = anp.maximum, anp.minimum
conj, real, imag = anp.conj, anp.real, anp.imag


def _constant_unary(name: str, function: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A piecewise constant function (derivative 0 almost everywhere): on a traced
    array, numpy's value as a constant of the engine's array type."""

    def piecewise(x: Any, /) -> Any:
        if is_traced(x):
            return constant(np.asarray(function(untraced(x))), new=True)
        return function(x)

    piecewise.__name__ = piecewise.__qualname__ = name
    piecewise.__doc__ = f"numpy's ``{name}``; its derivative is 0 (a constant)."
    return piecewise


sign, floor = _constant_unary("sign", np.sign), _constant_unary("floor", np.floor)
ceil, trunc = _constant_unary("ceil", np.ceil), _constant_unary("trunc", np.trunc)
round = _constant_unary("round", np.round)


def floor_divide(x1: Any, x2: Any, /) -> Any:
    """numpy's ``floor_divide``; its derivative is 0 (a constant of the engine's type)."""
    if is_traced(x1) or is_traced(x2):
        return constant(np.asarray(np.floor_divide(untraced(x1), untraced(x2))), new=True)
    return np.floor_divide(x1, x2)


equal, not_equal, less, less_equal = anp.equal, anp.not_equal, anp.less, anp.less_equal
greater, greater_equal = anp.greater, anp.greater_equal
isfinite, isinf, isnan = anp.isfinite, anp.isinf, anp.isnan
logical_and, logical_or, logical_xor = anp.logical_and, anp.logical_or, anp.logical_xor
logical_not = anp.logical_not
bitwise_and, bitwise_or, bitwise_xor = np.bitwise_and, np.bitwise_or, np.bitwise_xor
bitwise_invert, bitwise_left_shift, bitwise_right_shift = np.invert, np.left_shift, np.right_shift
signbit = unsupported("signbit", np.signbit, differentiable_result=False)
nextafter = unsupported("nextafter", np.nextafter)


def positive(x: Any, /) -> Any:
    """``+x``: a new array, as numpy's (traced arrays can be written, so it is a copy)."""
    return copy_of(x) if is_traced(x) else np.positive(x)


def clip(x: Any, /, min: Any = None, max: Any = None) -> Any:
    """Clamp ``x`` into ``[min, max]``; either bound may be ``None`` or a (traced) array."""
    if is_traced(x) or is_traced(min) or is_traced(max):
        return clip_shared(x, min, max)  # the slope at a bound shared (the convention)
    if min is None and max is None:
        return x
    return anp.clip(x, min, max)


def copysign(x1: Any, x2: Any, /) -> Any:
    """``|x1|`` with the sign of ``x2``; differentiable in ``x1`` (``x2``'s derivative is 0;
    at ``x1 == 0`` the derivative is 0, as ``abs``'s)."""
    if not is_traced(x1):
        return np.copysign(x1, untraced(x2))
    dtype = np.result_type(untraced(x1), untraced(x2))
    sign = np.where(np.signbit(np.asarray(untraced(x2))), -1, 1).astype(dtype)
    return anp.abs(x1) * sign
