"""In-place writes on tracers, recorded copy-on-write.

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
into ``MutationError`` (see ``plugin``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError

from . import prims as P
from .tracer import Tracer, raw

__all__ = ["getitem_view", "inplace", "read_only", "setitem", "sync", "view_of"]


def _plain_key(x: Tracer, key: Any) -> Any:
    """Indices carry no gradient: unwrap traced ones; lock index arrays the backward
    pass will reuse."""
    parts = key if type(key) is tuple else (key,)
    if any(type(k) is Tracer or type(k) is list for k in parts):
        # (a list is copied: the backward pass must not see later edits of it)
        parts = tuple(np.asarray(raw(k)) if type(k) is list else raw(k) for k in parts)
        key = parts if type(key) is tuple else parts[0]
    for k in parts:
        if type(k) is np.ndarray and id(k) not in x._trace.locked:
            x._trace.guard(k, "an index array of a traced `x[...]`")
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


def sync(view: Tracer) -> None:
    """Refresh ``view`` if its base was written since it was last read."""
    base = view._base
    assert base is not None
    if base._base is not None:
        sync(base)
    if base._value is not view._seen:
        fresh = view._view[0](base)
        view._value, view._trace, view._idx = fresh._value, fresh._trace, fresh._idx
        view._seen = base._value


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
        from .creation import asarray

        value = asarray(value)
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
