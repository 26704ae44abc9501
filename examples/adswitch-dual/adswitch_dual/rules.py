"""The derivative rules, on plain numpy values: the math of the engine, with no dual numbers.

Everything here is a formula. :data:`UNARY` and :data:`BINARY` map an Array API name to
the numpy function and its partial derivatives. :mod:`adswitch_dual.chain` applies them
to tangents; the namespace (:mod:`adswitch_dual.namespace`) and the operators of the dual
type (:mod:`adswitch_dual.dual`) turn them into what users call.

Example:
    >>> import numpy as np
    >>> f, df = UNARY["sin"]
    >>> value = np.array([0.0, np.pi])
    >>> df(value, f(value)).round(3).tolist()
    [1.0, -1.0]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["BINARY", "PLAIN", "UFUNC_NAMES", "UNARY", "Derivative", "Partial"]

Derivative = Callable[[Any, Any], Any]
"""``df(value, out)``: the derivative of an elementwise function at ``value``, given its
result ``out`` (``exp``'s derivative is its result)."""

Partial = Callable[[Any, Any, Any], Any] | None
"""``da(a, b, out)``: a partial derivative of a binary function; ``None`` means 1."""


def _tie(a: Any, b: Any) -> Any:
    # Ties share the derivative equally (the subgradient's midpoint).
    return (a > b) + 0.5 * (a == b)


UNARY: dict[str, tuple[Callable[[Any], Any], Derivative]] = {
    "exp": (np.exp, lambda v, o: o),
    "expm1": (np.expm1, lambda v, o: o + 1.0),
    "log": (np.log, lambda v, o: 1.0 / v),
    "log1p": (np.log1p, lambda v, o: 1.0 / (1.0 + v)),
    "log2": (np.log2, lambda v, o: 1.0 / (v * np.log(2.0))),
    "log10": (np.log10, lambda v, o: 1.0 / (v * np.log(10.0))),
    "sqrt": (np.sqrt, lambda v, o: 0.5 / o),
    "square": (np.square, lambda v, o: 2.0 * v),
    "sin": (np.sin, lambda v, o: np.cos(v)),
    "cos": (np.cos, lambda v, o: -np.sin(v)),
    "tan": (np.tan, lambda v, o: 1.0 + o * o),
    "asin": (np.arcsin, lambda v, o: 1.0 / np.sqrt(1.0 - v * v)),
    "acos": (np.arccos, lambda v, o: -1.0 / np.sqrt(1.0 - v * v)),
    "atan": (np.arctan, lambda v, o: 1.0 / (1.0 + v * v)),
    "sinh": (np.sinh, lambda v, o: np.cosh(v)),
    "cosh": (np.cosh, lambda v, o: np.sinh(v)),
    "tanh": (np.tanh, lambda v, o: 1.0 - o * o),
    "asinh": (np.arcsinh, lambda v, o: 1.0 / np.sqrt(v * v + 1.0)),
    "acosh": (np.arccosh, lambda v, o: 1.0 / np.sqrt(v * v - 1.0)),
    "atanh": (np.arctanh, lambda v, o: 1.0 / (1.0 - v * v)),
    "abs": (np.abs, lambda v, o: np.sign(v)),  # 0 at 0, like the other engines
    "negative": (np.negative, lambda v, o: -1.0),
    "positive": (np.positive, lambda v, o: 1.0),
    # Piecewise constant: derivative 0 wherever it exists.
    "sign": (np.sign, lambda v, o: 0.0),
    "floor": (np.floor, lambda v, o: 0.0),
    "ceil": (np.ceil, lambda v, o: 0.0),
    "round": (np.round, lambda v, o: 0.0),
    "trunc": (np.trunc, lambda v, o: 0.0),
}
"""Elementwise functions: name -> ``(numpy function, derivative)``."""


def _pow_base(a: Any, b: Any) -> Any:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.asarray(b) == 0, 0.0, b * np.power(a, b - 1))


BINARY: dict[str, tuple[Callable[[Any, Any], Any], Partial, Partial]] = {
    "add": (np.add, None, None),
    "subtract": (np.subtract, None, lambda a, b, o: -1.0),
    "multiply": (np.multiply, lambda a, b, o: b, lambda a, b, o: a),
    "divide": (np.divide, lambda a, b, o: 1.0 / b, lambda a, b, o: -o / b),
    # The partial in the exponent (log(a) * out) is only evaluated when it is traced.
    # a ** 0 is constant: its partial in a is 0 at a = 0 too (not 0 * inf).
    "pow": (np.power, lambda a, b, o: _pow_base(a, b), lambda a, b, o: np.log(a) * o),
    "maximum": (np.maximum, lambda a, b, o: _tie(a, b), lambda a, b, o: _tie(b, a)),
    "minimum": (np.minimum, lambda a, b, o: _tie(b, a), lambda a, b, o: _tie(a, b)),
    "logaddexp": (np.logaddexp, lambda a, b, o: np.exp(a - o), lambda a, b, o: np.exp(b - o)),
    "atan2": (
        np.arctan2,
        lambda a, b, o: b / (a * a + b * b),
        lambda a, b, o: -a / (a * a + b * b),
    ),
    "hypot": (np.hypot, lambda a, b, o: a / o, lambda a, b, o: b / o),
}
"""Broadcasting binary functions: name -> ``(numpy function, partial in a, partial in b)``."""

PLAIN: dict[str, Callable[..., Any]] = {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
}
"""Comparisons and predicates: no derivative, computed on the values (boolean results)."""

UFUNC_NAMES = {
    "absolute": "abs",
    "true_divide": "divide",
    "power": "pow",
    "arcsin": "asin",
    "arccos": "acos",
    "arctan": "atan",
    "arctan2": "atan2",
    "arcsinh": "asinh",
    "arccosh": "acosh",
    "arctanh": "atanh",
    "rint": "round",
}
"""numpy's ufunc names that differ from the Array API's."""
