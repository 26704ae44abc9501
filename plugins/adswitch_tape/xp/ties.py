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

from ..rules import primitives as P
from ..tracer import raw

__all__ = ["share_ties"]


def tied_runs(moved: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """The runs of equal (finite) entries along the last axis of the sorted ``moved``,
    in buckets of similar lengths (at most ``log2(n)`` buckets, so the traced work is a
    few operations whatever the number of distinct run lengths). Per bucket: ``idx``
    ``(runs, width)`` flat indices into ``moved.ravel()`` (a run shorter than ``width``
    repeats its first index), ``mask`` (1 where ``idx`` is the run's own, else 0),
    ``lengths`` ``(runs,)`` the run lengths, and ``entries`` the flat indices of the
    bucket's tied entries, run after run (``idx[mask == 1]``)."""
    same = moved[..., 1:] == moved[..., :-1]  # nan != nan: a run of its own
    same &= np.isfinite(moved[..., 1:])  # infinite ties: y0 + (m - m0) would be nan
    if not same.any():
        return []
    starts = np.ones(moved.shape, dtype=bool)
    starts[..., 1:] = ~same
    first = np.flatnonzero(starts.ravel())  # every run's first flat index, in order
    lengths = np.diff(np.append(first, starts.size))
    tied = lengths >= 2
    first, lengths = first[tied], lengths[tied]
    bucket = np.ceil(np.log2(lengths)).astype(np.int64)  # width 2 ** bucket >= length
    plans = []
    for b in np.unique(bucket):
        sel = bucket == b
        f, k = first[sel], lengths[sel]
        width = int(k.max())
        cols = np.arange(width)
        mine = cols < k[:, None]
        idx = np.where(mine, f[:, None] + cols, f[:, None])
        plans.append((idx, mine.astype(moved.dtype), k, idx[mine]))
    return plans


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
