"""Runs of tied entries in sorted values, for the numpy engines' ``sort`` rule (the kink
convention: tied entries share the mean of their places' derivatives).

Re-exported by :mod:`adswitch.spec`, so plugins reach it through the contract.
"""

from __future__ import annotations

import numpy as np

__all__ = ["tied_runs"]


def tied_runs(moved: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """The runs of equal (finite) entries along the last axis of the sorted ``moved``,
    in buckets of similar lengths (at most ``log2(n)`` buckets, so the traced work is a
    few operations whatever the number of distinct run lengths). Per bucket: ``idx``
    ``(runs, width)`` flat indices into ``moved.ravel()`` (a run shorter than ``width``
    repeats its first index), ``mask`` (1 where ``idx`` is the run's own, else 0),
    ``lengths`` ``(runs,)`` the run lengths, and ``entries`` the flat indices of the
    bucket's tied entries, run after run (``idx[mask == 1]``).

    Example:
        >>> [(idx.tolist(), lengths.tolist()) for idx, _, lengths, _ in
        ...  tied_runs(np.array([1.0, 2.0, 2.0, 3.0]))]
        [([[1, 2]], [2])]
    """
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
