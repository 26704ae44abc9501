"""The sparsity tracer's structural rules: indexing, in-place assignment, reshapes,
transposes, the shape functions of one array (roll, flip...) and joins (concat, stack).

Each maps the element indices the way the operation maps elements, and gathers the
operands' dependency rows by the result (no new second-derivative pairs: structure is
linear).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adswitch.sparse.rule_rows import _index, _rows, _trace_of, _val, _vals, gather
from adswitch.sparse.tracer import Tracer, _sp

__all__ = ["getitem", "join", "matrix_transpose", "permute_dims", "reshape", "setitem"]


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
