"""What the fused gradient (``fused``) calls besides the rules: the sweep's accumulation, and
the two hottest rules writing their large temporaries into the call's arena.

Each computes exactly what the code it stands for computes, with the same numpy calls in
the same order: :func:`accumulate` is ``core.sweep``'s ``old + g`` (in place when nothing
else holds ``old``), :func:`tanh_rule` is ``tanh``'s rule (``rules.primitives._tanh_grad``),
:func:`matmul_x_rule` is ``matmul``'s rule for its first argument in 2-D
(``_matmul_nt``; ``unbroadcast`` is the identity there) -- only the temporary comes from
the arena instead of a fresh allocation. Anything else falls back to the rule itself.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ..core import BATCH, IN_PLACE_FROM
from .arena import Arena

__all__ = ["accumulate", "matmul_x_rule", "tanh_rule"]


def _exclusive() -> int:
    """``sys.getrefcount`` of ``old`` in :func:`accumulate` when only the generated
    function's local holds it (measured, as it varies across Pythons)."""

    def probe(old: Any) -> int:
        return sys.getrefcount(old)

    def caller() -> int:
        local = np.empty(1)
        return probe(local)

    return caller()


_EXCLUSIVE = _exclusive()


def accumulate(old: Any, gk: Any) -> Any:
    """``old + gk``, in place when ``old`` is a large array nothing else refers to (as
    ``core.sweep._added_in_place``: the same numbers, one temporary less)."""
    if (
        type(old) is np.ndarray
        and type(gk) is np.ndarray
        and old.size >= IN_PLACE_FROM
        and old.base is None
        and old.shape == np.broadcast_shapes(old.shape, gk.shape)
        and old.dtype == np.result_type(old, gk)
        and old.flags.writeable
        and sys.getrefcount(old) == _EXCLUSIVE
    ):
        np.add(old, gk, out=old)
        return old
    return old + gk


def tanh_rule(rule: Any) -> Any:
    """``tanh``'s rule with its large temporary in the arena (``_tanh_grad``'s calls)."""

    def pooled(arena: Arena, g: Any, ans: Any, x: Any) -> Any:
        if (
            type(g) is np.ndarray
            and type(ans) is np.ndarray
            and g.shape == ans.shape
            and ans.size >= IN_PLACE_FROM
            and np.result_type(g, ans) == ans.dtype
        ):
            t = arena.take(ans.shape, ans.dtype)
            np.multiply(ans, ans, out=t)
            np.subtract(1.0, t, out=t)
            return np.multiply(t, g, out=t)
        return rule(g, ans, x)

    return pooled


def matmul_x_rule(rule: Any) -> Any:
    """``matmul``'s rule for its first argument, 2-D by 2-D, into the arena
    (``_matmul_nt``'s calls; ``unbroadcast`` is the identity there)."""

    def pooled(arena: Arena, g: Any, ans: Any, x: Any, y: Any) -> Any:
        if (
            not BATCH.axes
            and type(g) is np.ndarray
            and type(y) is np.ndarray
            and g.ndim == 2
            and y.ndim == 2
            and g.dtype == y.dtype
            and np.shape(x) == (g.shape[0], y.shape[0])
            and g.shape[0] * y.shape[0] >= IN_PLACE_FROM
        ):
            out = arena.take((g.shape[0], y.shape[0]), g.dtype)
            if g.shape[-1] == 1:  # an outer product, as _matmul_nt computes it
                return np.multiply(g, np.swapaxes(y, -1, -2), out=out)
            return np.matmul(g, np.swapaxes(y, -1, -2), out=out)
        return rule(g, ans, x, y)

    return pooled
