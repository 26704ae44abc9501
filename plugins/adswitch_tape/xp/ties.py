"""Tied entries of ``sort`` share their derivative (adswitch's kink convention).

Where ``sort``'s input has equal entries, sorting is not differentiable: which tied input
goes to which tied place is arbitrary, so a plain gather gives tied inputs different,
order-dependent gradients. The convention (the README's table) is the symmetric limit:
every tied entry gets the mean of the cotangents at the tied sorted positions (forward:
every tied place gets the mean of the tied tangents). ``share_ties`` rewrites the tied
places of the sorted ``y`` as ``y0 + (m - m0)``: ``m`` the runs' means of ``y`` (traced),
``y0`` and ``m0`` the values as constants -- so the value is ``y`` exactly and the
derivative the mean. It is composed of primitives (gather, sum, concat), so reverse,
forward, batched and nested sweeps go through it; untied runs are left as they are.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adswitch.spec import tied_runs

from ..array.tracer import raw
from ..rules import primitives as P

__all__ = ["share_ties"]


def share_ties(y: Any, axis: int) -> Any:
    """The sorted traced ``y`` (sorted along ``axis``) with its tied entries sharing
    their derivative (module doc); ``y`` itself when nothing is tied."""
    value = np.asarray(raw(y))
    if value.ndim == 0:
        return y
    axis %= value.ndim
    moved = np.moveaxis(value, axis, -1)
    runs = tied_runs(moved)
    if not runs:
        return y
    value_flat = moved.ravel()
    order = (*[a for a in range(value.ndim) if a != axis], axis)
    flat = P.reshape(P.permute_dims(y, axes=order), shape=(value.size,))
    pieces, index, offset = [flat], np.arange(value.size), value.size
    for idx, mask, lengths, entries in runs:
        tied = P.multiply(P.getitem(flat, key=(idx,)), mask)  # (runs, width)
        means = P.divide(P.sum(tied, axis=1), lengths.astype(value.dtype))  # (runs,)
        run_of = np.repeat(np.arange(idx.shape[0]), lengths)
        mean = P.getitem(means, key=(run_of,))  # each tied entry's run mean
        pieces.append(P.add(value_flat[entries], P.subtract(mean, raw(mean))))
        index[entries] = offset + np.arange(entries.size)
        offset += entries.size
    out = P.getitem(P.concat(*pieces, axis=0), key=(index,))
    back = tuple(int(i) for i in np.argsort(order))
    return P.permute_dims(P.reshape(out, shape=moved.shape), axes=back)
