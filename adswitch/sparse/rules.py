"""The rules of the sparsity tracer: how each operation maps its operands' dependency
rows to its result's (see :mod:`adswitch.sparse.tracer`).

Everything reduces to three row operations on a ``(size, n)`` boolean CSR matrix
(:mod:`adswitch.sparse.rule_rows`): gather rows by an index array (indexing, reshape,
roll, broadcasting: :mod:`adswitch.sparse.rules_structure`), OR row-aligned matrices
(the elementwise ops, here), and aggregate rows by a 0/1 matrix (reductions, matmul,
linalg: :mod:`adswitch.sparse.rules_reduce`). Values, when they ride along
(``local=True``), are computed by numpy beside the rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adswitch.sparse.rule_rows import _rows, _trace_of, _union, _vals
from adswitch.sparse.tracer import Tracer

__all__ = ["BINARY", "UNARY", "elementwise", "where"]


def elementwise(xs: Sequence[Any], value_fn: Callable[..., Any] | None, kind: str) -> Any:
    """An elementwise op of ``xs`` (broadcast): ``kind`` is ``"linear"`` (each result
    element depends on its operands' elements, no second derivative), ``"nonlinear"``
    (and its second derivatives couple them), ``"product"`` (a bilinear product of two:
    only cross pairs), or ``"none"`` (a zero derivative: comparisons, sign, floor)."""
    trace = _trace_of(*xs)
    assert trace is not None
    shape = tuple(np.broadcast_shapes(*[tuple(getattr(x, "shape", ())) for x in xs]))
    size = math.prod(shape)
    values = _vals(trace, xs)
    value = None if values is None or value_fn is None else np.asarray(value_fn(*values))
    if kind == "none":
        return Tracer(trace, shape, trace.empty(size), value)
    parts = [_rows(x, shape, trace) for x in xs]
    deps = _union(parts, size, trace)
    if kind == "nonlinear":
        trace.interact(deps)
    elif kind == "product" and parts[0] is not None and parts[1] is not None:
        trace.interact(parts[0], parts[1])
    return Tracer(trace, shape, deps, value)


def _lift(fn: Callable[..., Any], kind: str) -> Callable[..., Any]:
    def rule(*xs: Any) -> Any:
        if not any(isinstance(x, Tracer) for x in xs):
            return fn(*xs)
        return elementwise(xs, fn, kind)

    return rule


LINEAR_UNARY = ("negative", "positive", "real", "conj", "abs")
NONLINEAR_UNARY = (
    "exp",
    "expm1",
    "log",
    "log1p",
    "log2",
    "log10",
    "sqrt",
    "square",
    "sin",
    "cos",
    "tan",
    "sinh",
    "cosh",
    "tanh",
    "asin",
    "acos",
    "atan",
    "asinh",
    "acosh",
    "atanh",
    "reciprocal",
    "cbrt",
    "sinc",
    "erf",
)
ZERO_UNARY = (
    "sign",
    "floor",
    "ceil",
    "round",
    "trunc",
    "isnan",
    "isinf",
    "isfinite",
    "logical_not",
    "signbit",
)
UNARY: dict[str, Callable[..., Any]] = {}
for _n in LINEAR_UNARY:
    UNARY[_n] = _lift(getattr(np, _n), "linear")
for _n in NONLINEAR_UNARY:
    _np = {
        "asin": "arcsin",
        "acos": "arccos",
        "atan": "arctan",
        "asinh": "arcsinh",
        "acosh": "arccosh",
        "atanh": "arctanh",
    }.get(_n, _n)
    UNARY[_n] = _lift(getattr(np, _np, np.exp), "nonlinear")
for _n in ZERO_UNARY:
    UNARY[_n] = _lift(getattr(np, _n), "none")

BINARY: dict[str, Callable[..., Any]] = {
    "add": _lift(np.add, "linear"),
    "sub": _lift(np.subtract, "linear"),
    "subtract": _lift(np.subtract, "linear"),
    "mul": _lift(np.multiply, "product"),
    "multiply": _lift(np.multiply, "product"),
    "truediv": _lift(np.divide, "nonlinear"),
    "divide": _lift(np.divide, "nonlinear"),
    "pow": _lift(np.power, "nonlinear"),
    "atan2": _lift(np.arctan2, "nonlinear"),
    "hypot": _lift(np.hypot, "nonlinear"),
    "logaddexp": _lift(np.logaddexp, "nonlinear"),
    "maximum": _lift(np.maximum, "linear"),  # (piecewise linear: either operand's element)
    "minimum": _lift(np.minimum, "linear"),
    "copysign": _lift(np.copysign, "linear"),
    "floordiv": _lift(np.floor_divide, "none"),
    "mod": _lift(np.mod, "linear"),
    "remainder": _lift(np.remainder, "linear"),
}
for _n, _f in (
    ("lt", np.less),
    ("le", np.less_equal),
    ("gt", np.greater),
    ("ge", np.greater_equal),
    ("eq", np.equal),
    ("ne", np.not_equal),
    ("and", np.logical_and),
    ("or", np.logical_or),
    ("xor", np.logical_xor),
):
    BINARY[_n] = _lift(_f, "none")
for _n, _f in (
    ("less", np.less),
    ("less_equal", np.less_equal),
    ("greater", np.greater),
    ("greater_equal", np.greater_equal),
    ("equal", np.equal),
    ("not_equal", np.not_equal),
    ("logical_and", np.logical_and),
    ("logical_or", np.logical_or),
    ("logical_xor", np.logical_xor),
):
    BINARY[_n] = _lift(_f, "none")


def _divmod_linear(a: Any, b: Any) -> Any:  # (x // c has a zero derivative)
    return elementwise((a, b), np.floor_divide, "none")


def where(cond: Any, a: Any, b: Any) -> Any:
    """The union of both branches (valid whichever is taken), at every point."""
    if not isinstance(a, Tracer) and not isinstance(b, Tracer):
        if isinstance(cond, Tracer):
            return elementwise((cond, a, b), np.where, "none")
        return np.where(cond, a, b)
    trace = _trace_of(a, b)
    assert trace is not None
    shape = tuple(np.broadcast_shapes(*[tuple(getattr(x, "shape", ())) for x in (cond, a, b)]))
    deps = _union([_rows(a, shape, trace), _rows(b, shape, trace)], math.prod(shape), trace)
    values = _vals(trace, (cond, a, b))
    value = None if values is None else np.where(*values)
    return Tracer(trace, shape, deps, value)
