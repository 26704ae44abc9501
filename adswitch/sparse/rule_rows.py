"""The row operations every sparsity-tracer rule is built from (see
:mod:`adswitch.sparse.tracer`): a result's dependency rows are a ``(size, n)`` boolean CSR
matrix, made by gathering an operand's rows by an index array, OR-ing row-aligned
matrices, or broadcasting an operand's rows to a shape.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from adswitch.sparse.tracer import Trace, Tracer

__all__ = ["gather"]


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
