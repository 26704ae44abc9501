"""adswitch's kink convention where HIPS autograd's own rules differ from it.

At a point where a function is not differentiable, adswitch's derivative is the limit of
the symmetric difference quotient (the README's table). autograd already gives it for
``abs``, ``sign``, ``maximum``/``minimum`` (ties share half and half), the ``max``/``min``
reductions, ``where``, ``sqrt`` and ``pow``; what differs is taken here, in the plugin's
namespace only (autograd's own functions are left as they are):

* ``clip`` at a bound: autograd's ``clip`` gives ``x`` slope 0 there; here it is
  ``minimum(maximum(x, min), max)``, so ``x`` and the bound share the slope (1/2 each,
  the bound's half when it is differentiated).
* ``sort``'s tied entries: a gather by one permutation gives them different,
  order-dependent gradients; here each gets the mean of the cotangents at the tied
  sorted places (:func:`share_ties`).

Both are composed of autograd's primitives, so forward mode and nested derivatives go
through them.
"""

from __future__ import annotations

from typing import Any

import autograd.numpy as anp
import numpy as np

from adswitch.spec import tied_runs

from .xp_support import untraced

__all__ = ["clip_shared", "share_ties"]


def clip_shared(x: Any, lo: Any, hi: Any) -> Any:
    """``clip(x, lo, hi)`` (either bound may be ``None``) whose slope at a bound is
    shared by ``x`` and the bound: ``maximum``/``minimum`` split ties half and half."""
    if lo is not None:
        x = anp.maximum(x, lo)
    if hi is not None:
        x = anp.minimum(x, hi)
    return x


def share_ties(y: Any, axis: int) -> Any:
    """The traced ``y``, sorted along ``axis``, with its tied entries sharing their
    derivative: each tied place is ``y0 + (m - m0)``, ``m`` its run's mean of ``y`` and
    ``y0``, ``m0`` the values as constants -- the value is ``y``'s exactly, the
    derivative the run's mean. ``y`` itself when nothing is tied."""
    value = np.asarray(untraced(y))
    if value.ndim == 0:
        return y
    axis %= value.ndim
    moved = np.moveaxis(value, axis, -1)
    runs = tied_runs(moved)
    if not runs:
        return y
    flat = anp.reshape(anp.moveaxis(y, axis, -1), (value.size,))
    value_flat = moved.ravel()
    pieces, index, offset = [flat], np.arange(value.size), value.size
    for idx, mask, lengths, entries in runs:
        means = anp.sum(flat[idx] * mask, axis=1) / lengths.astype(value.dtype)  # (runs,)
        mean = means[np.repeat(np.arange(idx.shape[0]), lengths)]  # per tied entry
        pieces.append(value_flat[entries] + (mean - untraced(mean)))
        index[entries] = offset + np.arange(entries.size)
        offset += entries.size
    out = anp.concatenate(pieces, axis=0)[index]
    return anp.moveaxis(anp.reshape(out, moved.shape), -1, axis)
