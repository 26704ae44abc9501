"""The gradient rules of the elementwise primitives (one and two arguments, ``where``).

Each table of ``rules`` is filled by one verb, ``defvjp(prim, rule_x, rule_y...)``. A rule
is ``rule(g, ans, *args, **params) -> gradient for one argument``, where ``g`` is the
gradient of the output ``ans``. Rules use the primitives (``P.*``) and operators, never
raw numpy on ``g`` or on arguments: in a nested call those are tracers of the enclosing
call, and the rule is then recorded -- that is what makes any order of derivatives work.
Quantities with a zero derivative (masks, signs, counts) are computed on raw values.
At top level (plain numpy) the hottest rules write ``g * factor`` into their own fresh
temporary when arrays are large (``helpers.times``): fewer allocations, same numbers.

Non-smooth points (documented choices, each consistent with central differences):
    * ``abs`` at 0: gradient 0 (``sign(0) = 0``); ``sign``, ``floor`` and friends: 0.
    * ``maximum``/``minimum`` at ties: the gradient is split evenly between the two
      arguments (0.5 each), which is what central differences give; ``clip`` is built on
      them, so at a bound the input gets 0.5.
    * ``max``/``min`` reductions with tied extremes: split evenly among the tied elements.
    * ``prod`` with zeros: exact at any order (the product of the other elements, never
      a division by zero).
    * Infinite slopes (``sqrt`` at 0, ``x ** p`` at 0 for ``p < 1``, ``asin``/``acos`` at
      +-1, ``acosh`` at 1): the slope is +-inf
      there, and a zero seed (cotangent or tangent) contributes 0, not ``0 * inf = nan``
      (``seeded``): the Jacobian's structurally zero entries stay 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import IN_PLACE_FROM, raw
from ..recording import defvjp
from . import primitives as P
from .helpers import const, tie_weight, times, unbroadcast, unbroadcast_to
from .primitives import _tanh_grad

# -- elementwise, one argument ---------------------------------------------------------
defvjp(P.negative, lambda g, ans, x: -g)
defvjp(P.positive, lambda g, ans, x: g)
defvjp(P.abs, lambda g, ans, x: g * const(np.sign(raw(x)), x))
defvjp(P.exp, lambda g, ans, x: g * ans)
defvjp(P.expm1, lambda g, ans, x: g * (ans + 1.0))
defvjp(P.log, lambda g, ans, x: g / x)
defvjp(P.log1p, lambda g, ans, x: g / (x + 1.0))
defvjp(P.log2, lambda g, ans, x: g / (x * np.log(2.0)))
defvjp(P.log10, lambda g, ans, x: g / (x * np.log(10.0)))


def seeded(g: Any, out: Any, at: Any) -> Any:
    """``out`` (``g`` times a slope that is infinite where ``at`` is 0) with 0 where the
    seed ``g`` is 0 there: a zero cotangent or tangent contributes nothing, even times an
    infinite slope. Only those places are masked (a zero seed times a finite slope keeps
    its derivative in ``g``); the mask is on raw values, and the ``where`` is taken only
    when ``at`` has a zero, so the common case costs one ``all`` (no temporary)."""
    a = np.asarray(raw(at))
    if a.all():  # no zero (one pass, no temporary): nothing to mask
        return out
    return P.where((raw(g) == 0) & (a == 0), 0.0, out)


def _sqrt_x(g: Any, ans: Any, x: Any) -> Any:
    # (the entry keeps ans only.) An infinite slope at ans == 0: 0.5 * ans ** -1, whose
    # pow rule seeds zeros again, so every order keeps zero seeds at 0.
    if np.asarray(raw(ans)).all():
        return g * 0.5 / ans
    return seeded(g, g * (0.5 * P.pow(ans, -1.0)), ans)


defvjp(P.sqrt, _sqrt_x)
defvjp(P.square, lambda g, ans, x: times(g, 2.0 * x))


def _sin_x(g: Any, ans: Any, x: Any) -> Any:
    if type(x) is not np.ndarray:  # traced (recorded by an enclosing call), or a scalar
        return times(g, P.cos(x))
    c = np.cos(x)  # top level: the primitive's own numpy call, one call layer less
    if c.size >= IN_PLACE_FROM:
        return times(g, c)
    return g * c


defvjp(P.sin, _sin_x)
defvjp(P.cos, lambda g, ans, x: -(g * P.sin(x)))
defvjp(P.tan, lambda g, ans, x: g * (1.0 + P.square(ans)))
defvjp(P.sinh, lambda g, ans, x: g * P.cosh(x))
defvjp(P.cosh, lambda g, ans, x: g * P.sinh(x))
defvjp(
    P.tanh,
    # top level: the primitive's numpy code directly (one call layer less per entry)
    lambda g, ans, x: (
        _tanh_grad(g, ans)
        if type(g) is np.ndarray and type(ans) is np.ndarray
        else P.tanh_grad(g, ans)
    ),
)


def tanh_grad_y(gg: Any, g: Any, y: Any) -> Any:
    """``gg * g * y * -2``; for large plain arrays (top level) the products after the
    first are written into its fresh temporary (same operations, same order)."""
    if type(gg) is np.ndarray and type(g) is np.ndarray and gg.size >= IN_PLACE_FROM:
        t = gg * g
        if (
            type(y) is np.ndarray
            and t.shape == np.broadcast_shapes(t.shape, y.shape)
            and t.dtype == np.result_type(t, y)
        ):
            np.multiply(t, y, out=t)
            return np.multiply(t, -2.0, out=t)
        return t * y * -2.0
    return gg * g * y * -2.0


# (g and y have one shape, except where tanh's rule ran in a batched sweep: g is a batch)
defvjp(
    P.tanh_grad,
    lambda gg, ans, g, y: unbroadcast(P.tanh_grad(gg, y), g),
    lambda gg, ans, g, y: unbroadcast(tanh_grad_y(gg, g, y), y),
)


def _inverse_slope(g: Any, sign: float, inner: Any, at: Any) -> Any:
    """``sign * g / sqrt(inner)``; where ``at`` (``inner``'s raw value) has a 0 the slope
    is infinite: written ``g * inner ** -0.5`` there, seeded (pow's rule seeds again)."""
    if np.asarray(at).all():
        return g / P.sqrt(inner) if sign > 0 else -g / P.sqrt(inner)
    return seeded(g, g * (sign * P.pow(inner, -0.5)), at)


defvjp(
    P.asin,
    lambda g, ans, x: _inverse_slope(g, 1.0, 1.0 - P.square(x), 1.0 - np.square(raw(x))),
)
defvjp(
    P.acos,
    lambda g, ans, x: _inverse_slope(g, -1.0, 1.0 - P.square(x), 1.0 - np.square(raw(x))),
)
defvjp(P.atan, lambda g, ans, x: g / (1.0 + P.square(x)))
defvjp(P.asinh, lambda g, ans, x: g / P.sqrt(P.square(x) + 1.0))
defvjp(
    P.acosh,
    lambda g, ans, x: _inverse_slope(g, 1.0, P.square(x) - 1.0, np.square(raw(x)) - 1.0),
)
defvjp(P.atanh, lambda g, ans, x: g / (1.0 - P.square(x)))


# -- elementwise, two arguments --------------------------------------------------------
def pow_x(g: Any, ans: Any, x: Any, y: Any) -> Any:
    if isinstance(y, (int, float)):  # a Python exponent: the shape is x's, no broadcasting
        if y == 0:
            return g * 0.0
        if y < 1:  # an infinite slope at x == 0
            return seeded(g, times(g, y * P.pow(x, y - 1.0)), x)
        return times(g, 2.0 * x if y == 2 else y * P.pow(x, y - 1.0))
    return unbroadcast(seeded(g, g * y * P.pow(x, y - 1.0), x), x)


def _pow_y(g: Any, ans: Any, x: Any, y: Any) -> Any:
    # d(x**y)/dy = x**y log x; at x == 0 the limit is 0 (for y > 0), log(1) gives it.
    safe = P.where(raw(x) == 0, 1.0, x)
    return unbroadcast(g * ans * P.log(safe), y)


# (The shape test is inlined in the hottest rules: one call less per operation.)
# add/subtract: their tape entries keep the arguments' shapes only (see ``primitives``).
defvjp(
    P.add,
    lambda g, ans, xs, ys: g if g.shape == xs else unbroadcast_to(g, xs),
    lambda g, ans, xs, ys: g if g.shape == ys else unbroadcast_to(g, ys),
)
defvjp(
    P.subtract,
    lambda g, ans, xs, ys: g if g.shape == xs else unbroadcast_to(g, xs),
    lambda g, ans, xs, ys: unbroadcast_to(-g, ys),
)
defvjp(
    P.multiply,
    lambda g, ans, x, y: gy if (gy := g * y).shape == x.shape else unbroadcast(gy, x),
    lambda g, ans, x, y: gx if (gx := g * x).shape == y.shape else unbroadcast(gx, y),
)
defvjp(
    P.divide,
    lambda g, ans, x, y: unbroadcast(g / y, x),
    lambda g, ans, x, y: unbroadcast(-g * ans / y, y),
)
defvjp(P.pow, pow_x, _pow_y)
defvjp(
    P.maximum,
    lambda g, ans, x, y: unbroadcast(g * tie_weight(x, y, np.greater), x),
    lambda g, ans, x, y: unbroadcast(g * tie_weight(y, x, np.greater), y),
)
defvjp(
    P.minimum,
    lambda g, ans, x, y: unbroadcast(g * tie_weight(x, y, np.less), x),
    lambda g, ans, x, y: unbroadcast(g * tie_weight(y, x, np.less), y),
)
defvjp(
    P.atan2,
    lambda g, ans, x, y: unbroadcast(g * y / (P.square(x) + P.square(y)), x),
    lambda g, ans, x, y: unbroadcast(-g * x / (P.square(x) + P.square(y)), y),
)
defvjp(
    P.hypot,
    lambda g, ans, x, y: unbroadcast(g * x / ans, x),
    lambda g, ans, x, y: unbroadcast(g * y / ans, y),
)
defvjp(
    P.logaddexp,
    lambda g, ans, x, y: unbroadcast(g * P.exp(x - ans), x),
    lambda g, ans, x, y: unbroadcast(g * P.exp(y - ans), y),
)
defvjp(
    P.copysign,
    lambda g, ans, x, y: unbroadcast(
        g * const(np.where(np.signbit(raw(x)) == np.signbit(raw(y)), 1.0, -1.0), x), x
    ),
    lambda g, ans, x, y: unbroadcast(g * 0.0, y),
)
defvjp(
    P.remainder,
    lambda g, ans, x, y: unbroadcast(g, x),
    lambda g, ans, x, y: unbroadcast(-g * const(np.floor_divide(raw(x), raw(y)), y), y),
)
defvjp(
    P.where,
    None,
    lambda g, ans, c, x, y: unbroadcast(P.where(c, g, 0.0), x),
    lambda g, ans, c, x, y: unbroadcast(P.where(c, 0.0, g), y),
)
