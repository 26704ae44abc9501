"""Elementwise math, arithmetic with broadcasting, numerically delicate functions, dtypes."""

from __future__ import annotations

from typing import Any

import numpy as np

import adswitch as ad

from .case import Case, arr, pos
from .describe import exact, got_expected

F = "basics"


def _exp_log(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.exp(x) * 0.1 + xp.log(x) + xp.log1p(x) + xp.expm1(x) * 0.5 + xp.sqrt(x))


def _trig(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.sin(x) * xp.cos(x) + xp.tan(x) + xp.asin(x) + xp.acos(x) * 0.5 + xp.atan(x))


def _hyperbolic(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.tanh(x) + xp.sinh(x) * 0.3 + xp.cosh(x) * 0.2)


def _abs_sign_square(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.abs(x) * xp.sign(x) * 0.5 + xp.square(x) + xp.abs(x))


def _pow(x: Any, y: Any) -> Any:
    xp = ad.array_namespace(x, y)
    return xp.sum(xp.pow(x, y) + x**2.5 + 2.0**x + x**-1 + xp.pow(y, x) * 0.1)


def _max_min_clip(x: Any, y: Any) -> Any:
    xp = ad.array_namespace(x, y)
    return xp.sum(xp.maximum(x, y) * 2.0 + xp.minimum(x, y) + xp.clip(x, -0.5, 0.5) ** 2)


def _where(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.where(x > 0, x**2, -3.0 * x) + xp.where(x < 0.5, xp.sin(x), x))


def _logaddexp(x: Any, y: Any) -> Any:
    xp = ad.array_namespace(x, y)
    return xp.sum(xp.logaddexp(x, y))


def _arithmetic(x: Any, y: Any) -> Any:
    xp = ad.array_namespace(x, y)
    z = (2.0 + x) * (y - 1.5) / (x + 3.0) - 1.0 / y + (-x) + 3.0 - y * 0.5 + x / 4.0
    return xp.sum(z**2)


def _broadcast(row: Any, col: Any, mat: Any) -> Any:
    xp = ad.array_namespace(row, col, mat)
    # (3,1) with (1,4), then (4,) against (3,4) on both sides of each operator.
    return xp.sum((col * row + mat) ** 2) + xp.sum(row[0, :] * mat) + xp.sum(mat / (2.0 + col))


_CONST = np.array([0.5, -1.0, 2.0])
_CONST_MAT = np.array([[1.0, 0.5, -0.25], [0.0, 2.0, 1.0]])


def _numpy_constants(x: Any) -> Any:
    xp = ad.array_namespace(x)
    # numpy arrays on the left and on the right of traced values: constants either way.
    return xp.sum(_CONST * x + x * _CONST) + xp.sum(_CONST_MAT @ x) + xp.sum((_CONST - x) ** 2)


def _scalar_inputs(a: float, x: Any) -> Any:
    xp = ad.array_namespace(x)
    return a * xp.sin(x) + a**2 * x + xp.exp(x * a)


def _softmax_xent(logits: Any) -> Any:
    xp = ad.array_namespace(logits)
    shifted = logits - xp.max(logits, axis=1, keepdims=True)
    probs = xp.exp(shifted) / xp.sum(xp.exp(shifted), axis=1, keepdims=True)
    return -xp.sum(xp.log(probs[:, 0]))


def _logsumexp_big(x: Any) -> Any:
    xp = ad.array_namespace(x)
    m = xp.max(x)
    return m + xp.log(xp.sum(xp.exp(x - m)))


def _log1p_tiny(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.log1p(x) * 1e9 + xp.expm1(x) * 1e9)


def _logaddexp_big(x: Any, y: Any) -> Any:
    xp = ad.array_namespace(x, y)
    return xp.sum(xp.logaddexp(x, y))


def _high_frequency(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.sin(x * 1e4))


def _mlp32(w: Any, x: Any) -> Any:
    xp = ad.array_namespace(w, x)
    return xp.mean(xp.tanh(x @ w) ** 2)


def _creation(x: Any) -> Any:
    xp = ad.array_namespace(x)
    ones = xp.ones(x.shape, dtype=x.dtype)
    full = xp.full(x.shape, 2.0, dtype=x.dtype)
    y = xp.asarray(3.0, dtype=x.dtype) * x + xp.zeros_like(x) + ones * full
    return xp.sum(y * xp.ones_like(x) * x) + xp.sum(xp.astype(x, x.dtype) ** 3)


def _max_tied(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.max(x) + xp.sum(xp.max(x, axis=1))


def _check_max_ties(grads: Any, x: Any) -> str | None:
    g = grads[0]
    if not isinstance(g, np.ndarray) or g.shape != x.shape:
        return f"expected a gradient array of shape {x.shape}, got {type(g).__name__}"
    # Each max spreads a unit weight over its own tied maxima: rows not holding the global
    # max sum to 1, the whole gradient to 1 + rows, nothing negative or off the maxima.
    on_max = (x == x.max()) | (x == x.max(axis=1, keepdims=True))
    plain_rows = ~(x == x.max()).any(axis=1)
    if (g < -1e-12).any() or np.abs(g[~on_max]).max(initial=0.0) > 1e-12:
        return f"weight outside the (tied) maxima or negative: {g.tolist()}"
    if not np.allclose(g[plain_rows].sum(axis=1), 1.0, rtol=1e-12):
        return f"a row's max does not carry a unit weight: {g.tolist()}"
    if not np.isclose(g.sum(), 1.0 + x.shape[0], rtol=1e-12):
        return f"the gradient sums to {g.sum()}, expected {1 + x.shape[0]}: {g.tolist()}"
    return None


def _kink_abs(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(xp.abs(x) + xp.maximum(x, xp.zeros_like(x)))


def _check_kink(grads: Any, x: Any) -> str | None:
    g = grads[0]
    if not isinstance(g, np.ndarray) or g.shape != x.shape:
        return f"expected a gradient array of shape {x.shape}, got {type(g).__name__}"
    smooth = x != 0
    expect = np.sign(x) + (x > 0)
    if not np.allclose(g[smooth], expect[smooth], rtol=1e-12, atol=1e-12):
        return f"away from the kinks: {got_expected(g[smooth], expect[smooth])}"
    at_zero = g[~smooth]
    # d|x| in [-1, 1] plus d relu in [0, 1]: the subdifferential sum is [-1, 2].
    if not ((at_zero >= -1 - 1e-12) & (at_zero <= 2 + 1e-12)).all():
        return f"at x = 0: got {exact(at_zero)}, outside the subdifferential [-1, 2]"
    return None


def _half(x: Any) -> Any:
    xp = ad.array_namespace(x)
    return xp.sum(x * x * 0.5)


def _methods(x: Any, y: Any) -> Any:
    """The array methods numpy, torch and jax arrays share, on traced arrays (issue 12)."""
    return (x.reshape(3, 2).T * y).sum() + (x * x).mean(axis=0) + x.T.sum() * 0.5


CASES = [
    Case(
        "basics.exp_log",
        F,
        "exp, log, log1p, expm1, sqrt on positive inputs: the elementwise rules",
        _exp_log,
        lambda: (pos(1, 5),),
    ),
    Case(
        "basics.trig",
        F,
        "sin, cos, tan, asin, acos, atan (the standard's names)",
        _trig,
        lambda: (arr(2, 5, lo=-0.8, hi=0.8),),
    ),
    Case(
        "basics.hyperbolic",
        F,
        "tanh, sinh, cosh on a 2-d input: the hyperbolic rules",
        _hyperbolic,
        lambda: (arr(3, 2, 3),),
    ),
    Case(
        "basics.abs_sign_square",
        F,
        "abs, sign (zero derivative), square away from 0",
        _abs_sign_square,
        lambda: (np.array([-1.5, -0.3, 0.4, 2.0]),),
    ),
    Case(
        "basics.pow",
        F,
        "pow with array and scalar exponents and bases: both operands' gradients",
        _pow,
        lambda: (pos(4, 4), pos(5, 4)),
    ),
    Case(
        "basics.max_min_clip",
        F,
        "maximum, minimum, clip away from ties: gradient routed to the selected operand",
        _max_min_clip,
        lambda: (np.array([-1.0, 0.2, 0.9, -0.1]), np.array([0.5, -0.4, 1.3, -0.7])),
    ),
    Case(
        "basics.where",
        F,
        "where with comparisons (plain boolean masks): both branches",
        _where,
        lambda: (np.array([-1.2, -0.3, 0.25, 0.8, 1.7]),),
    ),
    Case(
        "basics.logaddexp",
        F,
        "logaddexp of moderate values",
        _logaddexp,
        lambda: (arr(6, 5), arr(7, 5)),
    ),
    Case(
        "basics.arithmetic",
        F,
        "+ - * / ** and unary minus with Python scalars on either side (reflected operators)",
        _arithmetic,
        lambda: (pos(8, 4), pos(9, 4)),
    ),
    Case(
        "basics.broadcast_both_ways",
        F,
        "broadcasting (3,1)x(1,4) and (4,) vs (3,4): gradients summed back to each input's shape",
        _broadcast,
        lambda: (arr(10, 1, 4), arr(11, 3, 1), arr(12, 3, 4)),
    ),
    Case(
        "basics.numpy_constants",
        F,
        "numpy arrays mixed into traced expressions on the left and right are constants",
        _numpy_constants,
        lambda: (arr(13, 3),),
        requires=("numpy_operands",),
    ),
    Case(
        "basics.scalar_and_0d",
        F,
        "a Python float and a 0-d array as arguments: float "
        "gradient for the float, 0-d array for the array",
        _scalar_inputs,
        lambda: (0.7, np.array(0.4)),
    ),
    Case(
        "basics.softmax_xent",
        F,
        "stable softmax cross-entropy (max subtracted) on large "
        "logits: no NaN from the max's gradient",
        _softmax_xent,
        lambda: (arr(14, 3, 4, lo=-50, hi=50),),
    ),
    Case(
        "basics.logsumexp_large",
        F,
        "logsumexp of values near 1000 (a naive exp overflows): softmax weights",
        _logsumexp_big,
        lambda: (np.array([1000.0, 999.0, 1001.5, 998.0]),),
        closed_form=lambda x: (np.exp(x - x.max()) / np.exp(x - x.max()).sum(),),
    ),
    Case(
        "basics.log1p_near_zero",
        F,
        "log1p and expm1 at 1e-10: exact derivatives near 0, not log(1 + x)",
        _log1p_tiny,
        lambda: (np.array([1e-10, -3e-11, 2e-12]),),
        closed_form=lambda x: (1e9 / (1 + x) + 1e9 * np.exp(x),),
    ),
    Case(
        "basics.logaddexp_large",
        F,
        "logaddexp at 1000 and 1000.5: no overflow to NaN",
        _logaddexp_big,
        lambda: (np.array([1000.0, -1000.0]), np.array([1000.5, -999.0])),
    ),
    Case(
        "basics.float64_precision",
        F,
        "sin(1e4 x) at x ~ 1: float64 in must be computed in float64 (float32 would be off "
        "by ~1e-3, jax's default)",
        _high_frequency,
        lambda: (np.array([1.0, 1.2345, 0.5]),),
        closed_form=lambda x: (1e4 * np.cos(1e4 * x),),
    ),
    Case(
        "basics.float32",
        F,
        "float32 inputs: float32 gradients within float32 tolerance (no silent float64 or float16)",
        _mlp32,
        lambda: (arr(15, 4, 3, dtype=np.float32), arr(16, 5, 4, dtype=np.float32)),
        requires=("float32",),
    ),
    Case(
        "basics.creation",
        F,
        "ones, full, zeros_like, ones_like, asarray, astype inside f: "
        "constants that do not break the graph",
        _creation,
        lambda: (arr(17, 2, 3),),
    ),
    Case(
        "basics.max_ties",
        F,
        "max over tied maxima (global and per row): any convex split of the unit weight, "
        "never double-counted or lost",
        _max_tied,
        lambda: (np.array([[2.0, 2.0, 1.0], [0.5, 3.0, 3.0]]),),
        check=_check_max_ties,
        requires=("kinks",),
    ),
    Case(
        "basics.kinks",
        F,
        "abs and relu exactly at 0: any subgradient, documented; exact elsewhere (never NaN)",
        _kink_abs,
        lambda: (np.array([-1.0, 0.0, 0.0, 2.0]),),
        check=_check_kink,
        requires=("kinks",),
    ),
    Case(
        "basics.float16",
        F,
        "float16 inputs: float16 gradients on engines that declare float16, an "
        "UnsupportedError before f runs on the others (never a silent float64 result)",
        _half,
        lambda: (arr(17, 5, dtype=np.float16),),
        closed_form=lambda x: (x.copy(),),
        requires=("float16",),
    ),
    Case(
        "basics.array_methods",
        F,
        "x.reshape(...).T, x.sum(), x.mean(axis=0), x.T on traced arrays: the methods "
        "numpy, torch and jax arrays share",
        _methods,
        lambda: (arr(18, 6), arr(19, 2, 3)),
    ),
]
