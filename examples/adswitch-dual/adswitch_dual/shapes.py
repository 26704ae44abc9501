"""Shape functions of the namespace: the same numpy function applied to the value and to
the tangents (whose trailing axis of directions stays last), plus ``take``, ``concat`` and
``stack``. Integer and boolean arrays pass through as plain numpy.

Example:
    >>> import numpy as np
    >>> from adswitch_dual.dual import DualArray
    >>> x = DualArray(np.zeros((2, 3)), np.zeros((2, 3, 4)))
    >>> permute_dims(x, (1, 0)).tangent.shape
    (3, 2, 4)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adswitch_dual.chain import combine
from adswitch_dual.dual import DualArray, parts

__all__ = [
    "broadcast_to",
    "concat",
    "expand_dims",
    "flip",
    "matrix_transpose",
    "permute_dims",
    "reshape",
    "squeeze",
    "stack",
    "take",
]

Op = Callable[[np.ndarray], np.ndarray]


def _floating(x: Any) -> bool:
    return isinstance(x, DualArray) or np.issubdtype(np.asarray(x).dtype, np.floating)


def _both(x: Any, on_value: Op, on_tangent: Op) -> Any:
    """``on_value`` of the value, ``on_tangent`` of the tangents (plain numpy for an
    integer or boolean array)."""
    if not isinstance(x, DualArray):
        if not _floating(x):
            return on_value(np.asarray(parts(x)[0]))
        x = DualArray(np.asarray(parts(x)[0]))
    return DualArray(on_value(x.value), on_tangent(x.tangent))


def _ndim(x: Any) -> int:
    return int(np.ndim(parts(x)[0]))


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    return tuple(a % ndim for a in (axis if isinstance(axis, tuple) else (axis,)))


def reshape(x: Any, /, shape: tuple[int, ...], *, copy: bool | None = None) -> Any:
    value = np.asarray(parts(x)[0]).reshape(shape)
    return _both(x, lambda v: value, lambda t: t.reshape((*value.shape, t.shape[-1])))


def permute_dims(x: Any, /, axes: tuple[int, ...]) -> Any:
    return _both(x, lambda v: v.transpose(axes), lambda t: t.transpose((*axes, -1)))


def matrix_transpose(x: Any, /) -> Any:
    return _both(x, lambda v: np.swapaxes(v, -1, -2), lambda t: np.swapaxes(t, -2, -3))


def expand_dims(x: Any, /, *, axis: int = 0) -> Any:
    at = axis % (_ndim(x) + 1)
    return _both(x, lambda v: np.expand_dims(v, at), lambda t: np.expand_dims(t, at))


def squeeze(x: Any, /, axis: int | tuple[int, ...]) -> Any:
    ax = _axes(axis, _ndim(x))
    return _both(x, lambda v: np.squeeze(v, ax), lambda t: np.squeeze(t, ax))


def flip(x: Any, /, *, axis: Any = None) -> Any:
    ax = _axes(axis, _ndim(x))
    return _both(x, lambda v: np.flip(v, ax), lambda t: np.flip(t, ax))


def broadcast_to(x: Any, /, shape: tuple[int, ...]) -> Any:
    value, tangent = parts(x)
    out = np.broadcast_to(value, shape).copy()  # a copy: writes into it must not alias
    if tangent is None:
        return DualArray(out) if _floating(out) else out
    spread = np.broadcast_to(tangent, (*shape, tangent.shape[-1]))
    return DualArray(*combine(out, [(None, spread)]))  # combine copies the tangents too


def take(x: Any, indices: Any, /, *, axis: int | None = None) -> Any:
    index = np.asarray(parts(indices)[0])
    if axis is None:
        if _ndim(x) != 1:
            raise ValueError("take needs axis= for arrays of more than one dimension")
        axis = 0
    at = axis % _ndim(x)
    return _both(x, lambda v: np.take(v, index, at), lambda t: np.take(t, index, at))


def _join(arrays: Sequence[Any], axis: int, f: Callable[..., np.ndarray]) -> Any:
    if not any(_floating(a) for a in arrays):
        return f([np.asarray(parts(a)[0]) for a in arrays], axis)
    duals = [a if isinstance(a, DualArray) else DualArray(np.asarray(parts(a)[0])) for a in arrays]
    return DualArray(f([d.value for d in duals], axis), f([d.tangent for d in duals], axis))


def concat(arrays: Sequence[Any], /, *, axis: int | None = 0) -> Any:
    if axis is None:
        return concat([reshape(a, (-1,)) for a in arrays], axis=0)
    return _join(arrays, axis % _ndim(arrays[0]), np.concatenate)


def stack(arrays: Sequence[Any], /, *, axis: int = 0) -> Any:
    return _join(arrays, axis % (_ndim(arrays[0]) + 1), np.stack)
