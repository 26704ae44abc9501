"""The sparsity tracer's aggregating rules: reductions (sum, prod, max...), ``matmul``
and the dense functions of ``linalg``.

Each ORs operand rows within groups by a 0/1 matrix (a result element depends on every
element it aggregates); the nonlinear ones also couple those elements' second derivatives.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from adswitch.sparse.rule_rows import _index, _trace_of, _union, _val, _vals
from adswitch.sparse.tracer import Tracer, _sp

__all__ = ["dense", "matmul", "reduction"]


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
