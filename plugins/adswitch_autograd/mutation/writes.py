"""Writes into traced arrays, recorded: ``y[i] = v`` and ``y += v`` as numpy means them.

A write is recorded as ``buffer_write(old, index, value)`` -- a copy of the old value with
the new elements -- whose result the written box takes over in place. So every name for
that box sees the write, while every earlier read keeps the value it read (autograd saved
it by reference, and the old array is never modified): the gradient is the one finite
differences give. Live views and aliases of the written array re-read their elements
(:mod:`.views`), and a write into a view goes to the array it views, as in numpy. A
differentiated argument is written the same way; the engine copies its final value into
the caller's array after the backward pass.

Refused with ``MutationError``/``UnsupportedError`` rather than approximated:

* a write into an argument of a nested gradient call (it would change the enclosing
  call's array in the middle of its trace), or into a read-only array;
* a write that a live view in a layout adswitch cannot map would have to see (the viewed
  array is not C-contiguous, or the view belongs to a nested call);
* one fancy-indexed assignment naming an element twice (numpy keeps the last value);
* a traced index, or a value traced by a gradient call nested inside the one the written
  array belongs to (it would leak out of that call).

Fresh buffers -- the namespace's ``zeros``, ``ones``, ``empty``, ``full`` and ``*_like``
inside a trace -- are boxes with a constant root (``xp.creation``), writable the same way.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from autograd.extend import defjvp, defvjp, primitive
from autograd.numpy import numpy_wrapper as anp
from autograd.numpy.numpy_vjps import unbroadcast
from autograd.tracer import Box

from adswitch.errors import MutationError, UnsupportedError

from ..tracing.boxes import LeafBox, raw_value
from . import views

__all__ = ["buffer_write", "copy_of", "mutation_message", "write"]

_BOX_TYPES = Box.types


@primitive  # type: ignore[untyped-decorator]
def buffer_write(array: Any, index: Any, value: Any) -> Any:
    """A C-ordered copy of ``array`` with ``value`` written at ``index`` (numpy casting)."""
    out = np.array(array, copy=True, order="C")
    out[index] = value
    return out


def _vjp_array(ans: Any, array: Any, index: Any, value: Any) -> Any:
    # The overwritten elements no longer depend on the old array.
    return lambda g: buffer_write(g, index, 0.0)


def _vjp_value(ans: Any, array: Any, index: Any, value: Any) -> Any:
    meta = anp.metadata(value)

    def vjp(g: Any) -> Any:
        region = g[index]
        extra = meta[1] - anp.ndim(region)
        if extra > 0:  # numpy accepts extra leading length-1 axes on the value
            region = anp.reshape(region, (1,) * extra + tuple(anp.shape(region)))
        return unbroadcast(region, meta)

    return vjp


defvjp(buffer_write, _vjp_array, _vjp_value, argnums=(0, 2))


def _jvp_value(g: Any, ans: Any, array: Any, index: Any, value: Any) -> Any:
    # Only the written elements move with the value; numpy's assignment broadcasts it.
    return buffer_write(np.zeros(anp.shape(ans), anp.result_type(ans)), index, g)


# Forward mode: the old array's tangent with the written elements cleared, plus the
# value's tangent written into them.
defjvp(buffer_write, lambda g, ans, array, index, value: buffer_write(g, index, 0.0), _jvp_value,
       argnums=(0, 2))  # fmt: skip


@primitive  # type: ignore[untyped-decorator]
def copy_of(array: Any) -> Any:
    """A C-ordered copy (differentiable: the gradient passes through)."""
    return np.array(array, copy=True, order="C")


defvjp(copy_of, lambda ans, array: lambda g: g)
defjvp(copy_of, lambda g, ans, array: g)


def mutation_message(operation: str, why: str) -> str:
    """The explanation every refused write carries: the engine, the operation, the fix."""
    return (
        f"autograd (HIPS) via adswitch cannot differentiate the write `{operation}`: {why}. "
        "Fix: build a new array instead (`y = y + v`, `xp.where(mask, v, y)`, "
        "`xp.concat`/`xp.stack` of the pieces), or write into a fresh buffer "
        "(`buf = xp.zeros_like(x)` or `buf = xp.asarray(y, copy=True)`, then `buf[i] = v`), "
        "or use an engine that records all mutation: backend='tape'."
    )


def _refuse(operation: str, why: str) -> MutationError:
    return MutationError(mutation_message(operation, why))


def _contains_box(index: Any) -> bool:
    if type(index) in _BOX_TYPES:
        return True
    return isinstance(index, tuple) and any(type(i) in _BOX_TYPES for i in index)


def _is_fancy(index: Any) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(p, (list, np.ndarray)) for p in parts)


def _positions(raw: np.ndarray, index: Any) -> np.ndarray:
    """Flat (C-order) positions of the elements ``raw[index]`` names."""
    positions: np.ndarray = np.arange(raw.size, dtype=np.int64).reshape(raw.shape)[index]
    return positions.ravel()


def _check_index(raw: np.ndarray, index: Any, operation: str) -> None:
    """Refuse a fancy index that names an element twice (numpy keeps the last value)."""
    if _is_fancy(index):
        written = _positions(raw, index)
        if np.unique(written).size != written.size:
            raise _refuse(operation, "the index names one element more than once")


def write(
    box: Any, index: Any, value: Any, operation: str, exclude: frozenset[int] = frozenset()
) -> None:
    """Record ``box[index] = value`` and make ``box`` hold the result (see module doc).

    ``exclude``: ids of boxes that must not be refreshed (a view writing through).
    """
    raw = raw_value(box)
    if type(raw) is not np.ndarray:
        raise _refuse(operation, f"the value is a {type(raw).__name__} scalar, not an array")
    if _contains_box(index):
        raise UnsupportedError(
            f"autograd (HIPS) via adswitch cannot differentiate `{operation}` with a traced "
            "index. Fix: compute indices from plain (numpy) values."
        )
    if type(value) in _BOX_TYPES and value._trace > box._trace:
        raise _refuse(
            operation,
            "the value is traced by a gradient call nested inside the one the array belongs "
            "to, and would leak out of it; create the array inside the inner function",
        )
    if type(box) is LeafBox and not box.writable:
        raise _refuse(
            operation,
            "the argument is read-only, or belongs to a gradient call nested in another "
            "(writing it would have to change the enclosing call's array mid-trace)",
        )
    try:
        target = views.viewed(box, raw)
    except views.Unmapped:
        raise _refuse(
            operation,
            "the array is a view whose elements adswitch cannot locate in the array it views "
            "(that array is not C-contiguous, or no longer exists as a traced array)",
        ) from None
    if target is not None:
        # A view: numpy writes the array it views. Whether that one may be written is
        # checked when the write reaches it.
        _check_index(raw, index, operation)
        owner, positions = target
        content = buffer_write(box, index, value)  # the view's elements after the write
        write(owner, positions, content, operation, exclude | {id(box)})
        views.refresh(box, owner, positions)
        return
    if type(box) is not LeafBox and not raw.flags.writeable:
        raise _refuse(operation, "the array is read-only (a broadcast, or the caller's data)")
    _check_index(raw, index, operation)
    watchers = views.watchers(box, raw, exclude)
    mapped = [(other, positions) for other, positions in watchers if positions is not None]
    if len(mapped) < len(watchers):
        raise _refuse(
            operation,
            "another live array views this one in a way adswitch cannot follow (a layout "
            "that is not C-contiguous, or a view made inside a nested gradient call); finish "
            "using it before the write, or copy it (`v = v * 1.0`)",
        )
    new = buffer_write(box, index, value)
    box._value, box._node = new._value, new._node
    views.moved(box)
    for other, positions in mapped:  # numpy would show them the write: re-read it
        views.refresh(other, box, positions)
