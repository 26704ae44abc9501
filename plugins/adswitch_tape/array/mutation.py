"""In-place writes on tracers, recorded copy-on-write, and numpy-style views.

``x[key] = v``, ``x += y`` (and ``-=``, ``*=``, ``/=``, ``**=``, ``@=``) never modify a value
the tape has saved: the write computes a new value (a copy of the old one with the
write applied: primitive ``index_update``, or the operator's result) and rebinds the
tracer object to it. Every reference to the same tracer object sees the write, and every
operation recorded earlier keeps the value it read -- so the gradient is the one finite
differences give: each read sees the value at the time of the read (seed 003).

Views: where numpy returns a view -- basic indexing ``x[1:3]``, ``x.T``, ``reshape``,
``permute_dims``, ``matrix_transpose``, ``expand_dims``, ``squeeze``, ``flip``,
``moveaxis``, ``broadcast_to`` (read-only, as in numpy) -- the result remembers its base:
writes into it go through to the base, and a read of it after a write into the base
sees the new values, so the traced program computes what the plain numpy one does.

Plain numpy arrays are never traced; writes into them are numpy's own. The engine
locks (``flags.writeable = False``) every numpy array that a recorded operation saved
for the backward pass, until the call ends, and translates numpy's read-only error
into ``MutationError`` (see ``engine``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError

from ..core import FREE, Tracer, raw, sync
from ..rules import primitives as P

__all__ = [
    "broadcast_view", "flipped_view", "getitem_view", "holds_tracer", "inplace",
    "permuted_view", "read_only", "reshaped_view", "setitem", "transposed_view", "view_of",
]  # fmt: skip


def _plain_key(x: Tracer, key: Any) -> Any:
    """Indices carry no gradient: unwrap traced ones; lock index arrays the backward
    pass will reuse."""
    parts = key if type(key) is tuple else (key,)
    if any(type(k) is Tracer or type(k) is list for k in parts):
        # (a list is copied: the backward pass must not see later edits of it)
        parts = tuple(np.asarray(raw(k)) if type(k) is list else raw(k) for k in parts)
        key = parts if type(key) is tuple else parts[0]
    trace = x._trace
    for j, k in enumerate(parts):
        if type(k) is np.ndarray and id(k) not in trace.locked:
            kept = trace.guard(k, "an index array of a traced `x[...]`")
            if kept is not k:  # a private copy (an array numpy could not unlock again)
                parts = (*parts[:j], kept, *parts[j + 1 :])
                key = parts if type(key) is tuple else kept
    return key


def view_of(base: Any, out: Any, derive: Any, put: Any) -> Any:
    """Mark ``out`` (``= derive(base)``) as a view of ``base``; ``put(base, view)`` writes
    a changed view back. A no-op unless both are tracers."""
    if type(out) is Tracer and type(base) is Tracer:
        out._base = base
        out._view = (derive, put)
        out._seen = base._value
    return out


def read_only(base: Any, view: Any) -> None:
    """The ``put`` of views numpy makes read-only (``broadcast_to``)."""
    raise ValueError("assignment destination is read-only (a broadcast_to result, as in numpy)")


def getitem_view(x: Tracer, key: Any) -> Any:
    """``x[key]``; for a basic key the result is a view of ``x`` (see module doc)."""
    key = _plain_key(x, key)
    out = P.getitem(x, key=key)
    if not P.is_basic_key(key):
        return out
    return view_of(x, out, lambda b: P.getitem(b, key=key), lambda b, v: setitem(b, key, v))


def reshaped_view(x: Any, shape: tuple[int, ...]) -> Any:
    """``reshape(x, shape)``, a view of ``x``."""
    return view_of(
        x,
        P.reshape(x, shape=shape),
        lambda b: P.reshape(b, shape=shape),
        lambda b, v: setitem(b, Ellipsis, P.reshape(v, shape=b.shape)),
    )


def permuted_view(x: Any, axes: tuple[int, ...]) -> Any:
    """``permute_dims(x, axes)``, a view of ``x``."""
    back = tuple(int(a) for a in np.argsort(axes))
    return view_of(
        x,
        P.permute_dims(x, axes=axes),
        lambda b: P.permute_dims(b, axes=axes),
        lambda b, v: setitem(b, Ellipsis, P.permute_dims(v, axes=back)),
    )


def transposed_view(x: Any) -> Any:
    """``matrix_transpose(x)``, a view of ``x``."""
    return view_of(
        x,
        P.matrix_transpose(x),
        P.matrix_transpose,
        lambda b, v: setitem(b, Ellipsis, P.matrix_transpose(v)),
    )


def flipped_view(x: Any, axes: tuple[int, ...] | None) -> Any:
    """``flip(x, axis=axes)``, a view of ``x``."""
    return view_of(
        x,
        P.flip(x, axis=axes),
        lambda b: P.flip(b, axis=axes),
        lambda b, v: setitem(b, Ellipsis, P.flip(v, axis=axes)),
    )


def broadcast_view(x: Any, shape: tuple[int, ...]) -> Any:
    """``broadcast_to(x, shape)``, a read-only view of ``x`` (as numpy's)."""
    out = P.broadcast_to(x, shape=shape)
    return view_of(x, out, lambda b: P.broadcast_to(b, shape=shape), read_only)


def _rebind(x: Tracer, new: Any) -> None:
    """Make the tracer object ``x`` hold ``new`` (a tracer) and write through to its base."""
    base = x._base
    if base is not None:
        x._view[1](base, new)  # raises before any change for a read-only view
    x._value, x._trace, x._idx = new._value, new._trace, new._idx
    if base is not None:
        x._seen = base._value


def setitem(x: Tracer, key: Any, value: Any) -> None:
    """``x[key] = value``, recorded."""
    if x._base is not None:
        sync(x)
    key = _plain_key(x, key)
    if isinstance(value, (list, tuple)):  # x[0:2] = [t0, t1]: assemble the traced pieces
        value = _assembled(value)
    if type(value) is Tracer and not P.is_basic_key(key):
        hits = np.zeros(x.shape, dtype=np.intp)
        np.add.at(hits, key, 1)
        if hits.size and hits.max() > 1:
            raise UnsupportedError(
                "tape: `x[idx] = traced_value` with repeated indices in idx: only the last "
                "write survives, and which one numpy keeps is not specified. Fix: use unique "
                "indices (np.unique) or combine the values first."
            )
    _rebind(x, P.index_update(x, value, key=key))


def holds_tracer(obj: Any) -> bool:
    """Whether ``obj`` is a tracer or a (nested) list or tuple holding one."""
    if type(obj) is Tracer:
        return True
    return isinstance(obj, (list, tuple)) and any(holds_tracer(o) for o in obj)


def _assembled(obj: Any) -> Any:
    """``xp.asarray(obj)`` for the value of a write (``x[0:2] = [t0, t1]``): a (nested)
    list or tuple holding tracers is stacked (recorded); one without is a fresh buffer."""
    if type(obj) is Tracer or isinstance(obj, np.ndarray):
        return obj
    if isinstance(obj, (list, tuple)) and holds_tracer(obj):
        return P.stack(*(_assembled(o) for o in obj), axis=0)
    return Tracer(np.array(obj, copy=True), FREE, None)


def inplace(x: Tracer, op: Any, other: Any) -> Tracer:
    """``x op= other``, recorded: the tracer keeps its identity, shape and dtype."""
    if x._base is not None:
        sync(x)
    new = op(x, other)
    if new.shape != x.shape:
        raise ValueError(
            f"non-broadcastable output operand with shape {x.shape} doesn't match the "
            f"broadcast shape {new.shape}"
        )
    if new.dtype != x.dtype:
        new = P.astype(new, dtype=x.dtype)
    _rebind(x, new)
    return x
