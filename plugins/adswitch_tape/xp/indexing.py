"""Array API selection and rearrangement for the tape: take, roll, repeat, tile, sort, diff,
tril/triu -- each a gather (``getitem``) or a mask (``where``) of the primitives -- and
``argsort`` (a zero derivative).

Index arrays are copied (the backward pass reuses them). Part of the namespace.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..array.tracer import Tracer, raw
from ..rules import primitives as P
from .axes import axes_of, like_inputs, ndim_of
from .shapes import concat
from .ties import share_ties

__all__ = [
    "argsort", "diff", "repeat", "roll", "sort", "take", "take_along_axis", "tile", "tril", "triu",
]  # fmt: skip


def take(x: Any, indices: Any, /, *, axis: int | None = None) -> Any:
    """Elements of ``x`` at integer ``indices`` along ``axis`` (repeats accumulate)."""
    if axis is None:
        if ndim_of(x) != 1:
            raise ValueError("take: axis is required for arrays that are not 1-d")
        axis = 0
    idx = np.array(raw(indices))  # a copy: the backward pass reuses it
    return P.getitem(x, key=(slice(None),) * (axis % ndim_of(x)) + (idx,))


def take_along_axis(x: Any, indices: Any, /, *, axis: int = -1) -> Any:
    """``x`` picked along ``axis`` by ``indices`` of the same number of dimensions."""
    idx = np.array(raw(indices))  # a copy: the backward pass reuses it
    ndim = ndim_of(x)
    axis %= ndim
    grid = np.ogrid[tuple(slice(n) for n in idx.shape)]
    key = tuple(idx if a == axis else grid[a] for a in range(ndim))
    return P.getitem(x, key=key)


def roll(x: Any, /, shift: Any, *, axis: Any = None) -> Any:
    """Shift elements circularly (over the flattened array when ``axis`` is None)."""
    if axis is None:
        flat = P.reshape(x, shape=(-1,))
        out = take(flat, np.roll(np.arange(np.shape(raw(flat))[0]), shift))
        return P.reshape(out, shape=np.shape(raw(x)))
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,) * len(axes_of(axis, 1) or ())
    for ax, s in zip(axes_of(axis, ndim_of(x)) or (), shifts, strict=True):
        x = take(x, np.roll(np.arange(np.shape(raw(x))[ax]), s), axis=ax)
    return x


def repeat(x: Any, repeats: Any, /, *, axis: int | None = None) -> Any:
    """Repeat each element ``repeats`` times along ``axis`` (flattened when None)."""
    if axis is None:
        x, axis = P.reshape(x, shape=(-1,)), 0
    n = np.shape(raw(x))[axis]
    return take(x, np.repeat(np.arange(n), raw(repeats)), axis=axis)


def tile(x: Any, repetitions: Sequence[int], /) -> Any:
    """Repeat the whole array ``repetitions[i]`` times along each axis."""
    reps = tuple(repetitions)
    ndim = builtins.max(ndim_of(x), len(reps))
    x = P.reshape(x, shape=(1,) * (ndim - ndim_of(x)) + np.shape(raw(x)))
    reps = (1,) * (ndim - len(reps)) + reps
    for ax, r in enumerate(reps):
        if r != 1:
            x = take(x, np.tile(np.arange(np.shape(raw(x))[ax]), r), axis=ax)
    return x


def diff(x: Any, /, *, axis: int = -1, n: int = 1, prepend: Any = None, append: Any = None) -> Any:
    """``n``-th forward difference along ``axis``."""
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = concat(parts, axis=axis)
    lead = (slice(None),) * (axis % ndim_of(x))
    for _ in range(n):
        x = P.getitem(x, key=(*lead, slice(1, None))) - P.getitem(x, key=(*lead, slice(None, -1)))
    return x


def _triangle(x: Any, k: int, lower: bool) -> Any:
    rows, cols = np.shape(raw(x))[-2:]
    mask = np.tri(rows, cols, k, dtype=bool)
    zero = np.zeros((), dtype=raw(x).dtype)  # (0.0 would promote an integer array)
    return P.where(mask if lower else ~np.tri(rows, cols, k - 1, dtype=bool), x, zero)


def tril(x: Any, /, *, k: int = 0) -> Any:
    """The lower triangle (elements above diagonal ``k`` zeroed)."""
    return _triangle(x, k, lower=True)


def triu(x: Any, /, *, k: int = 0) -> Any:
    """The upper triangle (elements below diagonal ``k`` zeroed)."""
    return _triangle(x, k, lower=False)


def _order(x: Any, axis: int, descending: bool) -> np.ndarray:
    """The stable sorting permutation along ``axis``; descending keeps equal elements in
    their original order too (the ascending order of the reversed array, reversed)."""
    values = raw(x)
    if not descending:
        return np.argsort(values, axis=axis, stable=True)
    n = np.shape(values)[axis]
    backwards = np.argsort(np.flip(values, axis=axis), axis=axis, stable=True)
    order: np.ndarray = (n - 1) - np.flip(backwards, axis=axis)
    return order


def argsort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Any:
    """The indices that sort ``x`` along ``axis`` (stable; a zero derivative)."""
    return like_inputs(_order(x, axis, descending), type(x) is Tracer)


def sort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Any:
    """Sorted along ``axis``; each element's gradient follows it to its sorted place, and
    tied elements share the mean of their places' gradients (the kink convention)."""
    out = take_along_axis(x, _order(x, axis, descending), axis=axis)
    return share_ties(out, axis) if type(x) is Tracer else out
