"""``sort`` and ``argsort``: each element's tangent follows it to its sorted place, and
tied elements share the mean of their tangents (adswitch's kink convention: the sorted
values are symmetric in tied inputs, so that is the limit of the central difference)."""

from __future__ import annotations

from typing import Any

import numpy as np

from adswitch_dual.dual import DualArray, parts

__all__ = ["argsort", "sort"]


def _order(value: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    if not descending:
        return np.argsort(value, axis=axis, kind="stable")
    # Stable descending: reverse, sort stably ascending by the negated order, map back.
    flipped = np.flip(value, axis=axis)
    order = np.argsort(flipped, axis=axis, kind="stable")
    return np.flip(value.shape[axis] - 1 - order, axis=axis)


def argsort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Any:
    """Indices that sort ``x`` along ``axis`` (plain integers: no tangent)."""
    value = np.asarray(parts(x)[0])
    return _order(value, axis % value.ndim, descending)


def sort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Any:
    """``x`` sorted along ``axis``; tied entries share the mean of their tangents."""
    value, tangent = parts(x)
    value = np.asarray(value)
    at = axis % value.ndim
    order = _order(value, at, descending)
    out = np.take_along_axis(value, order, axis=at)
    if not isinstance(x, DualArray) or tangent is None:
        return out
    moved = np.take_along_axis(tangent, order[..., None], axis=at)
    return DualArray(out, _share_ties(np.moveaxis(out, at, -1), np.moveaxis(moved, at, -2), at))


def _share_ties(rows: np.ndarray, tangents: np.ndarray, axis: int) -> np.ndarray:
    """The tangents of sorted ``rows`` (sorted along the last axis; tangents carry the
    direction axis after it) with every run of equal finite values given its mean."""
    n = rows.shape[-1]
    flat = rows.reshape(-1, n)
    same = (flat[:, 1:] == flat[:, :-1]) & np.isfinite(flat[:, 1:])
    if not same.any():
        return np.moveaxis(tangents, -2, axis)
    starts = np.concatenate([np.ones((flat.shape[0], 1), bool), ~same], axis=1)
    runs = np.cumsum(starts.ravel()) - 1  # one id per run, over all rows
    width = tangents.shape[-1]
    per_entry = tangents.reshape(-1, width)
    sums = np.zeros((int(runs[-1]) + 1, width), dtype=tangents.dtype)
    np.add.at(sums, runs, per_entry)
    counts = np.bincount(runs).astype(tangents.dtype)
    shared = (sums / counts[:, None])[runs].reshape(tangents.shape)
    return np.moveaxis(shared, -2, axis)
