"""The tangent rules of the elementwise primitives (one and two arguments, ``where``).

A tangent rule is ``jvp(ts, ans, *args, **params)``: ``ts`` holds one tangent per
argument (``None`` for a constant), each of shape ``batch + arg.shape``; it returns the
output's tangent, of shape ``batch + ans.shape`` (``helpers.align`` broadcasts a
tangent to the output's shape, batch axes kept in front). Like gradient rules they are
written with primitives, so that an enclosing call records them.

The Jacobian of a one-argument elementwise function is diagonal, so its tangent rule
*is* its gradient rule applied to the tangent: those are taken from the gradient table
(``elementwise``). Non-smooth points get the gradient rules' choices.

The rules of ``multiply``, ``add``, ``subtract`` and ``negative`` write into a tangent the
forward sweep donated (``core.DONATED``: its last reader, nothing else holds it) and
into their own fresh temporaries, where the result has that array's shape and dtype:
the same ufuncs on the same operands, so the same numbers, with fewer large temporaries.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import DONATED, IN_PLACE_FROM, raw
from ..recording import PRIMS, defjvp
from . import elementwise as E
from . import primitives as P
from .helpers import align, broadcast_shape, const, shape_of, tie_weight

_DIAGONAL = (
    P.positive, P.abs, P.exp, P.expm1, P.log, P.log1p, P.log2, P.log10, P.sqrt,
    P.square, P.sin, P.cos, P.tan, P.sinh, P.cosh, P.tanh, P.asin, P.acos, P.atan, P.asinh,
    P.acosh, P.atanh,
)  # fmt: skip


def _diagonal(prim: Any) -> None:
    rule = PRIMS[prim].rules[0]
    assert rule is not None
    defjvp(prim, lambda ts, ans, x: rule(ts[0], ans, x))


for _prim in _DIAGONAL:
    _diagonal(_prim)


def _into(t: Any, other: Any) -> bool:
    """Whether ``t`` op ``other`` may be written into ``t``'s memory: ``t`` was donated
    to the running rule, ``other`` is a plain array or Python number, and the result
    has ``t``'s shape and dtype."""
    if id(t) not in DONATED.ids:
        return False
    if type(other) is np.ndarray:
        if other.shape != t.shape and np.broadcast_shapes(t.shape, other.shape) != t.shape:
            return False
    elif type(other) is not float and type(other) is not int:
        return False
    return bool(np.result_type(t, other) == t.dtype)


def _times(t: Any, other: Any) -> Any:
    """``t * other``, into ``t``'s memory where :func:`_into` allows it."""
    if _into(t, other):
        return np.multiply(t, other, out=t)
    return t * other


def _fresh_sum(a: Any, b: Any) -> Any:
    """``a + b`` for a fresh (or donated) ``a``: into ``a``'s memory when both are large
    plain arrays of one shape and ``a``'s dtype is the sum's."""
    if (
        type(a) is np.ndarray
        and type(b) is np.ndarray
        and a.size >= IN_PLACE_FROM
        and a.shape == b.shape
        and a.dtype == np.result_type(a, b)
    ):
        return np.add(a, b, out=a)
    return a + b


def _negative_jvp(ts: tuple[Any, ...], ans: Any, x: Any) -> Any:
    t = ts[0]
    if id(t) in DONATED.ids:  # (a donated tangent is a plain array)
        return np.negative(t, out=t)
    return -t


def _shape(x: Any, y: Any) -> tuple[int, ...]:
    """The shape of an elementwise result of ``x`` and ``y`` (values)."""
    xs, ys = shape_of(x), shape_of(y)
    return xs if xs == ys else broadcast_shape(xs, ys)


def _sum(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else a + b


def _binary(dx: Any, dy: Any) -> Any:
    """The tangent rule ``dx(tx, x, y, ans) + dy(ty, x, y, ans)`` of a two-argument
    elementwise primitive. Where an argument has the output's shape, numpy's
    broadcasting lines its tangent up with the output's, batch axes included; a
    tangent of a broadcast argument is first broadcast to the output's shape."""

    def jvp(ts: tuple[Any, ...], ans: Any, x: Any, y: Any) -> Any:
        tx, ty = ts
        xs, ys = shape_of(x), shape_of(y)
        if xs != ys:
            shape = _shape(x, y)
            if tx is not None and xs != shape:
                tx = align(tx, shape)
            if ty is not None and ys != shape:
                ty = align(ty, shape)
        out = None if tx is None else dx(tx, x, y, ans)
        return out if ty is None else _sum(out, dy(ty, x, y, ans))

    return jvp


def _add_jvp(ts: tuple[Any, ...], ans: Any, xs: Any, ys: Any) -> Any:
    """``add``'s entries keep the shapes of the arguments, not their values."""
    tx, ty = ts
    shape = xs if xs == ys else broadcast_shape(xs, ys)
    if ty is None:
        return align(tx, shape)
    if tx is None:
        return align(ty, shape)
    a, b = align(tx, shape), align(ty, shape)
    if _into(a, b):
        return np.add(a, b, out=a)
    if _into(b, a):
        return np.add(a, b, out=b)
    return a + b


def _subtract_jvp(ts: tuple[Any, ...], ans: Any, xs: Any, ys: Any) -> Any:
    tx, ty = ts
    shape = xs if xs == ys else broadcast_shape(xs, ys)
    if ty is None:
        return align(tx, shape)
    if tx is None:
        b = align(ty, shape)
        return np.negative(b, out=b) if id(b) in DONATED.ids else -b
    a, b = align(tx, shape), align(ty, shape)
    if _into(a, b):
        return np.subtract(a, b, out=a)
    if _into(b, a):
        return np.subtract(a, b, out=b)
    return a - b


def _multiply_jvp(ts: tuple[Any, ...], ans: Any, x: Any, y: Any) -> Any:
    tx, ty = ts
    xs, ys = shape_of(x), shape_of(y)
    if xs != ys:
        shape = _shape(x, y)
        if tx is not None and xs != shape:
            tx = align(tx, shape)
        if ty is not None and ys != shape:
            ty = align(ty, shape)
    if ty is None:
        return _times(tx, y)
    if tx is None:
        return _times(ty, x)
    return _fresh_sum(_times(tx, y), _times(ty, x))


def _pow_dy(ty: Any, x: Any, y: Any, ans: Any) -> Any:
    safe = P.where(raw(x) == 0, 1.0, x)  # (the limit at x == 0, as the gradient rule)
    return ty * (ans * P.log(safe))


_pow_general = _binary(lambda tx, x, y, ans: E.seeded(tx, tx * (y * P.pow(x, y - 1.0)), x), _pow_dy)


def _pow_jvp(ts: tuple[Any, ...], ans: Any, x: Any, y: Any) -> Any:
    if ts[0] is not None and isinstance(y, (int, float)):  # a Python exponent: x's shape
        return E.pow_x(ts[0], ans, x, y)
    return _pow_general(ts, ans, x, y)


def _copysign_jvp(ts: tuple[Any, ...], ans: Any, x: Any, y: Any) -> Any:
    tx, ty = ts
    shape = _shape(x, y)
    if tx is None:
        return align(ty, shape) * 0.0
    sign = const(np.where(np.signbit(raw(x)) == np.signbit(raw(y)), 1.0, -1.0), x)
    return align(tx, shape) * sign


def _tanh_grad_jvp(ts: tuple[Any, ...], ans: Any, g: Any, y: Any) -> Any:
    """``tanh_grad(g, y) = g * (1 - y**2)``."""
    tg, ty = ts
    shape = _shape(g, y)
    out = None if tg is None else P.tanh_grad(align(tg, shape), y)
    return out if ty is None else _sum(out, E.tanh_grad_y(align(ty, shape), g, y))


def _where_jvp(ts: tuple[Any, ...], ans: Any, c: Any, x: Any, y: Any) -> Any:
    _, tx, ty = ts
    shape = broadcast_shape(shape_of(c), shape_of(x), shape_of(y))
    a = 0.0 if tx is None else align(tx, shape)
    b = 0.0 if ty is None else align(ty, shape)
    return P.where(c, a, b)


defjvp(P.negative, _negative_jvp)
defjvp(P.add, _add_jvp)
defjvp(P.subtract, _subtract_jvp)
defjvp(P.multiply, _multiply_jvp)
defjvp(
    P.divide,
    _binary(lambda tx, x, y, ans: tx / y, lambda ty, x, y, ans: ty * -(ans / y)),
)
defjvp(P.pow, _pow_jvp)
defjvp(
    P.maximum,
    _binary(
        lambda tx, x, y, ans: tx * tie_weight(x, y, np.greater),
        lambda ty, x, y, ans: ty * tie_weight(y, x, np.greater),
    ),
)
defjvp(
    P.minimum,
    _binary(
        lambda tx, x, y, ans: tx * tie_weight(x, y, np.less),
        lambda ty, x, y, ans: ty * tie_weight(y, x, np.less),
    ),
)
defjvp(
    P.atan2,
    _binary(
        lambda tx, x, y, ans: tx * (y / (P.square(x) + P.square(y))),
        lambda ty, x, y, ans: ty * -(x / (P.square(x) + P.square(y))),
    ),
)
defjvp(
    P.hypot,
    _binary(lambda tx, x, y, ans: tx * (x / ans), lambda ty, x, y, ans: ty * (y / ans)),
)
defjvp(
    P.logaddexp,
    _binary(
        lambda tx, x, y, ans: tx * P.exp(x - ans),
        lambda ty, x, y, ans: ty * P.exp(y - ans),
    ),
)
defjvp(P.copysign, _copysign_jvp)
defjvp(
    P.remainder,
    _binary(
        lambda tx, x, y, ans: tx,
        lambda ty, x, y, ans: -ty * const(np.floor_divide(raw(x), raw(y)), y),
    ),
)
defjvp(P.tanh_grad, _tanh_grad_jvp)
defjvp(P.where, _where_jvp)
