"""The rules of the sparsity tracer: how each operation maps its operands' dependency
rows to its result's (see :mod:`adswitch.sparse.tracer`).

Everything reduces to three row operations on a ``(size, n)`` boolean CSR matrix: gather
rows by an index array (indexing, reshape, roll, broadcasting), OR row-aligned matrices
(elementwise ops), and aggregate rows by a 0/1 matrix (reductions, matmul). Values, when
they ride along (``local=True``), are computed by numpy beside the rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adswitch.sparse.tracer import Trace, Tracer, _sp

__all__ = ["BINARY", "UNARY", "getitem", "permute_dims", "setitem"]


def _index(shape: tuple[int, ...]) -> np.ndarray:
    return np.arange(math.prod(shape), dtype=np.int64).reshape(shape)


def _trace_of(*xs: Any) -> Trace | None:
    for x in xs:
        if isinstance(x, Tracer):
            return x.trace
    return None


def _val(x: Any) -> Any:
    return x.value if isinstance(x, Tracer) else x


def _vals(trace: Trace, xs: Sequence[Any]) -> list[Any] | None:
    """The values of ``xs`` when they ride along, else ``None``."""
    return [np.asarray(_val(x)) for x in xs] if trace.local else None


def gather(t: Tracer, idx: np.ndarray, value: Any = None) -> Tracer:
    """Element ``e`` of the result depends on what element ``idx[e]`` of ``t`` does."""
    flat = idx.reshape(-1)
    if flat.size == t.size and np.array_equal(flat, np.arange(t.size)):
        deps = t.deps
    else:
        deps = t.deps[flat] if flat.size else t.trace.empty(0)
    return Tracer(t.trace, idx.shape, deps, value)


def _rows(x: Any, shape: tuple[int, ...], trace: Trace) -> Any:
    """``x``'s rows broadcast to ``shape`` (``None`` for a constant: it depends on nothing)."""
    if not isinstance(x, Tracer):
        return None
    if x.shape == shape:
        return x.deps
    idx = np.broadcast_to(_index(x.shape), shape)
    return x.deps[idx.reshape(-1)]


def _union(parts: Sequence[Any], rows: int, trace: Trace) -> Any:
    found = [p for p in parts if p is not None]
    if not found:
        return trace.empty(rows)
    out = found[0]
    for p in found[1:]:
        out = out + p  # (boolean sparse: OR)
    return out


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


# -- structure: indexing, shapes -------------------------------------------------------------
def _key_values(key: Any) -> Any:
    if isinstance(key, tuple):
        return tuple(_key_values(k) for k in key)
    if isinstance(key, Tracer):
        return np.asarray(key._concrete("an index taken from"))
    return key


def getitem(t: Tracer, key: Any) -> Tracer:
    key = _key_values(key)
    value = None if t.value is None else np.asarray(t.value[key])
    return gather(t, np.asarray(_index(t.shape)[key]), value)


def setitem(t: Tracer, key: Any, v: Any) -> None:
    """``t[key] = v`` in place: the rows at ``key`` are replaced by ``v``'s."""
    key = _key_values(key)
    sp = _sp()
    idx = np.asarray(_index(t.shape)[key]).reshape(-1)
    target_shape = np.asarray(_index(t.shape)[key]).shape
    keep = np.ones(t.size, dtype=bool)
    keep[idx] = False
    diag = sp.diags_array(keep.astype(np.float32), format="csr")
    deps = (diag @ t.deps.astype(np.float32)).astype(bool)
    rows = _rows(v, tuple(target_shape), t.trace)
    if rows is not None and idx.size:
        place = sp.csr_array(
            (np.ones(idx.size, np.float32), (idx, np.arange(idx.size))), shape=(t.size, idx.size)
        )
        deps = (deps + (place @ rows.astype(np.float32)).astype(bool)).astype(bool)
    deps.eliminate_zeros()
    t.deps = deps
    if t.value is not None:
        t.value = np.array(t.value)
        t.value[key] = _val(v)


def reshape(t: Any, shape: Sequence[int], copy: Any = None) -> Any:
    if not isinstance(t, Tracer):
        return np.reshape(t, tuple(shape))
    value = None if t.value is None else np.reshape(t.value, tuple(shape))
    return gather(t, _index(t.shape).reshape(tuple(shape)), value)


def permute_dims(t: Any, axes: Sequence[int]) -> Any:
    if not isinstance(t, Tracer):
        return np.transpose(t, tuple(axes))
    value = None if t.value is None else np.transpose(t.value, tuple(axes))
    return gather(t, np.transpose(_index(t.shape), tuple(axes)), value)


def matrix_transpose(t: Any) -> Any:
    axes = (*range(t.ndim - 2), t.ndim - 1, t.ndim - 2)
    return permute_dims(t, axes)


def _structural(np_fn: Callable[..., Any]) -> Callable[..., Any]:
    """A shape function of one array (roll, flip, broadcast_to, squeeze...): applied to the
    element indices, it says which element each result element is."""

    def rule(t: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(t, Tracer):
            return np_fn(t, *args, **kwargs)
        value = None if t.value is None else np_fn(t.value, *args, **kwargs)
        return gather(t, np.asarray(np_fn(_index(t.shape), *args, **kwargs)), value)

    return rule


def join(np_fn: Callable[..., Any], arrays: Sequence[Any], **kwargs: Any) -> Any:
    """concat/stack: the operands' rows, stacked, gathered by the joined indices."""
    trace = _trace_of(*arrays)
    if trace is None:
        return np_fn(list(arrays), **kwargs)
    sp = _sp()
    blocks, indices, offset = [], [], 0
    for a in arrays:
        shape = tuple(getattr(a, "shape", np.shape(a)))
        size = math.prod(shape)
        blocks.append(a.deps if isinstance(a, Tracer) else trace.empty(size))
        indices.append(_index(shape) + offset)
        offset += size
    stacked = sp.vstack(blocks, format="csr") if blocks else trace.empty(0)
    idx = np.asarray(np_fn(indices, **kwargs))
    values = _vals(trace, arrays)
    value = None if values is None else np_fn(values, **kwargs)
    return Tracer(trace, idx.shape, stacked[idx.reshape(-1)], value)


def _aggregate(t: Tracer, groups: np.ndarray, n_out: int) -> Any:
    """Rows of ``t`` OR-ed within each group (``groups[e]``: the result row of element e)."""
    sp = _sp()
    agg = sp.csr_array(
        (np.ones(t.size, np.float32), (groups.reshape(-1), np.arange(t.size))),
        shape=(n_out, t.size),
    )
    out = (agg @ t.deps.astype(np.float32)).astype(bool)
    return out


def _axes(t: Any, axis: Any) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(t.ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(a % t.ndim for a in axes)


def reduction(np_fn: Callable[..., Any], kind: str) -> Callable[..., Any]:
    """sum/mean (linear), prod (products of the elements), max/min (one of them)."""

    def rule(t: Any, /, *, axis: Any = None, keepdims: bool = False, **kwargs: Any) -> Any:
        if not isinstance(t, Tracer):
            return np_fn(t, axis=axis, keepdims=keepdims, **kwargs)
        axes = _axes(t, axis)
        kept = tuple(1 if d in axes else s for d, s in enumerate(t.shape))
        groups = np.broadcast_to(_index(kept), t.shape)
        deps = _aggregate(t, groups, math.prod(kept))
        if kind == "nonlinear":
            t.trace.interact(deps)
        shape = kept if keepdims else tuple(s for d, s in enumerate(t.shape) if d not in axes)
        value = None
        if t.value is not None:
            value = np.asarray(np_fn(t.value, axis=axis, keepdims=keepdims, **kwargs))
        return Tracer(t.trace, shape, deps, value)

    return rule


def matmul(a: Any, b: Any) -> Any:
    """``a @ b``: result ``[..., i, j]`` depends on row ``i`` of ``a`` and column ``j`` of
    ``b`` (dense coupling over the contracted axis), bilinearly."""
    trace = _trace_of(a, b)
    if trace is None:
        return np.matmul(a, b)
    ia = _index(np.shape(a) if not isinstance(a, Tracer) else a.shape)
    ib = _index(np.shape(b) if not isinstance(b, Tracer) else b.shape)
    va = np.zeros(ia.shape) if not trace.local else np.asarray(_val(a), dtype=float)
    vb = np.zeros(ib.shape) if not trace.local else np.asarray(_val(b), dtype=float)
    out_shape = np.matmul(np.zeros(ia.shape), np.zeros(ib.shape)).shape
    parts: list[Any] = []
    # (a 1-D operand is promoted as matmul does: a row vector on the left, a column on the
    # right; the element indices are placed the same way)
    ia2 = ia[None, :] if ia.ndim == 1 else ia
    ib2 = ib[:, None] if ib.ndim == 1 else ib
    full = tuple(np.broadcast_shapes(ia2.shape[:-2], ib2.shape[:-2]))
    m, k, n = ia2.shape[-2], ia2.shape[-1], ib2.shape[-1]
    for x, idx, side in ((a, ia2, "a"), (b, ib2, "b")):
        if not isinstance(x, Tracer):
            parts.append(None)
            continue
        idx = np.broadcast_to(idx, (*full, *idx.shape[-2:]))
        # group g = (batch, i, j) gets, from a, elements (batch, i, :); from b, (batch, :, j)
        if side == "a":
            src = np.broadcast_to(idx[..., :, None, :], (*full, m, n, k))
        else:
            src = np.broadcast_to(np.swapaxes(idx, -1, -2)[..., None, :, :], (*full, m, n, k))
        groups = np.broadcast_to(_index((*full, m, n))[..., None], src.shape)
        sp = _sp()
        agg = sp.csr_array(
            (np.ones(src.size, np.float32), (groups.reshape(-1), src.reshape(-1))),
            shape=(math.prod((*full, m, n)), x.size),
        )
        parts.append((agg @ x.deps.astype(np.float32)).astype(bool))
    deps = _union(parts, math.prod(out_shape), trace)
    if parts[0] is not None and parts[1] is not None:
        trace.interact(parts[0], parts[1])
    value = np.matmul(va, vb) if trace.local else None
    return Tracer(trace, out_shape, deps, value)


def dense(np_fn: Callable[..., Any], kind: str = "nonlinear") -> Callable[..., Any]:
    """A function whose every result element may depend on every operand element
    (``linalg``): dense coupling."""

    def rule(*xs: Any, **kwargs: Any) -> Any:
        trace = _trace_of(*xs)
        if trace is None:
            return np_fn(*xs, **kwargs)
        probe = np_fn(*[_probe(x) for x in xs], **kwargs)
        values = _vals(trace, xs)
        value = None if values is None else np_fn(*values, **kwargs)
        outs = probe if isinstance(probe, tuple) else (probe,)
        total = _union(
            [
                x.deps.sum(axis=0, keepdims=True).astype(bool) if isinstance(x, Tracer) else None
                for x in xs
            ],
            1,
            trace,
        )
        total = _sp().csr_array(total)
        trace.interact(total)
        res = []
        for k, o in enumerate(outs):
            shape = np.shape(o)
            rows = total[np.zeros(math.prod(shape), dtype=np.int64)]
            v = None if value is None else (value[k] if isinstance(probe, tuple) else value)
            res.append(Tracer(trace, shape, rows, v))
        return tuple(res) if isinstance(probe, tuple) else res[0]

    return rule


def _probe(x: Any) -> Any:
    """A regular stand-in of ``x``'s shape (symmetric positive definite where square), to
    learn the shapes of a dense function's results."""
    if not isinstance(x, Tracer):
        return x
    shape = x.shape
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        n = shape[-1]
        return np.broadcast_to(n * np.eye(n) + np.ones((n, n)), shape).copy()
    return np.ones(shape)
