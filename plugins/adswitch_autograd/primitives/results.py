"""Results in the form the engine contract promises: the leaf's kind, shape and dtype,
concrete outside the call, owned by the caller.

Owned means no two results are one array, and none is an array the caller passed in
(a cotangent or tangent): autograd's rules happily return their input (``x + y`` gives
both leaves the cotangent itself), and a caller writing into one result must not change
another, nor its own input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import autograd.numpy as anp
import numpy as np
from autograd.core import vspace
from autograd.tracer import Box

from adswitch.errors import MutationError

from ..mutation.writes import copy_of
from ..tracing.boxes import raw_value

__all__ = [
    "TO_NUMPY",
    "as_leaf_gradient",
    "concrete",
    "match_dtype",
    "ones_like",
    "owned",
    "stack",
]

_BOX_TYPES = Box.types

TO_NUMPY = (
    "autograd (HIPS): f converted a traced value to a numpy array (np.asarray(x), "
    "np.array(x), or `numpy_array[...] = traced`), which autograd cannot differentiate "
    "through: numpy makes an array of traced objects. Fix: keep traced values in arrays "
    "built by the namespace -- xp.asarray(x), a traced buffer from `xp.zeros_like(x)` "
    "(then `buf[i] = value`), or `xp.stack`/`xp.concat` of the pieces -- where "
    "`xp = ad.array_namespace(x)`; use xp functions, not numpy's."
)


def concrete(value: Any, level: int) -> Any:
    """``value`` without the boxes of ``level`` and above; at depth > 0 what is left is
    the enclosing trace's box."""
    while type(value) in _BOX_TYPES and value._trace >= level:
        value = value._value
    return value


def ones_like(value: Any) -> Any:
    """The cotangent ``1`` of a scalar loss, as an array autograd's rules accept."""
    if type(value) is np.float64:
        return np.ones((), np.float64)
    return vspace(value).ones()


def as_leaf_gradient(grad: Any, leaf: Any) -> Any:
    """Give ``grad`` the leaf's kind, shape and dtype; zeros when the leaf was unused."""
    if type(grad) in _BOX_TYPES:
        # Depth > 0 and the gradient depends on an enclosing trace: it must stay traced.
        return match_dtype(grad, leaf)
    if isinstance(leaf, np.ndarray):
        if grad is None:
            return np.zeros_like(leaf)
        if (
            type(grad) is not np.ndarray
            or grad.dtype != leaf.dtype
            or grad.shape != leaf.shape
            or not grad.flags.writeable
            or grad.base is not None
        ):
            # Scalars, broadcast views and read-only results become fresh arrays the
            # caller may write into.
            grad = _fresh(grad, leaf)
        return grad
    if isinstance(leaf, float) and type(leaf) is not np.float64:
        return 0.0 if grad is None else float(grad)
    if grad is None:
        return vspace(leaf).zeros()
    if type(leaf) in _BOX_TYPES:
        return match_dtype(grad, leaf)
    # numpy scalar leaves (np.float32, np.float64): keep the scalar type.
    return type(leaf)(grad) if np.ndim(grad) == 0 else grad


def _fresh(grad: Any, leaf: Any) -> np.ndarray:
    """``grad`` as a new array of the leaf's shape and dtype."""
    try:
        return np.array(np.broadcast_to(grad, np.shape(leaf)), dtype=np.result_type(leaf))
    except (TypeError, ValueError) as exc:
        if getattr(getattr(grad, "dtype", None), "kind", "") != "O":
            raise
        # An object array: f put traced values into a numpy array (``np.asarray(x)`` of a
        # traced x makes an array of boxes), and autograd carried that array as one value
        # -- numpy raises "setting an array element with a sequence" here, after f.
        raise MutationError(TO_NUMPY) from exc


def match_dtype(grad: Any, leaf: Any) -> Any:
    """Keep a (possibly traced) gradient as it is, but in the leaf's floating dtype."""
    dtype = getattr(raw_value(leaf), "dtype", None)
    if dtype is not None and getattr(grad, "dtype", dtype) != dtype:
        grad = grad.astype(dtype)
    return grad


def owned(results: list[Any], inputs: Sequence[Any] = ()) -> list[Any]:
    """``results`` with every array that repeats an earlier one, or is (a view of) one of
    ``inputs``, replaced by a copy."""
    taken = {id(value) for value in inputs if value is not None}
    taken.update(
        id(value.base) for value in inputs if type(value) is np.ndarray and value.base is not None
    )
    for k, value in enumerate(results):
        if type(value) is np.ndarray:
            if id(value) in taken or (value.base is not None and id(value.base) in taken):
                value = results[k] = value.copy()
        elif type(value) in _BOX_TYPES:
            if id(value) in taken and type(raw_value(value)) is np.ndarray:
                # a traced array written later by the enclosing call must not move another
                value = results[k] = copy_of(value)
        else:
            continue
        taken.add(id(value))
    return results


def stack(rows: Sequence[Any], like: Any) -> Any:
    """Per batch entry one result for the value ``like`` (``None``: zero), stacked along
    a new leading axis in ``like``'s shape and dtype: numpy, or traced when any entry is.

    Stacking makes a new array, so the entries need no copies of their own.
    """
    raw = raw_value(like)
    traced = any(type(row) in _BOX_TYPES for row in rows)
    if isinstance(raw, float):  # Python floats (and np.float64): a 1-d float64 array
        values = [0.0 if row is None else row for row in rows]
        return anp.stack(values) if traced else np.asarray(values, dtype=np.float64)
    shape, dtype = np.shape(raw), np.result_type(raw)
    if not rows:
        return np.zeros((0, *shape), dtype)
    zero = None
    fixed = []
    for row in rows:
        if row is None:
            if zero is None:
                zero = np.zeros(shape, dtype)
            row = zero
        elif type(row) is np.ndarray:
            if row.shape != shape:
                row = np.broadcast_to(row, shape)
            if row.dtype != dtype:
                row = _fresh(row, raw)
        elif type(row) in _BOX_TYPES:
            row = match_dtype(row, like)
        else:
            row = np.broadcast_to(np.asarray(row, dtype), shape)
        fixed.append(row)
    return anp.stack(fixed) if traced else np.stack(fixed)
