"""The blocks of a sparse Hessian of several arguments (or trees): the dense
``ad.hessian``'s layout (``adswitch.second_order``), with one sparse block per pair of
differentiated leaves cut from the flattened matrix, and the ``check=True`` comparison
with the dense Hessian, read back into the flattened matrix through the same layout.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from adswitch import trees
from adswitch.bases import Layout, numpy_dtype
from adswitch.call import Started
from adswitch.errors import UsageError
from adswitch.plan import CONST, Plan
from adswitch.results import place
from adswitch.sparse.detect import to_numpy

__all__ = ["check_dense", "laid_out", "single"]


def single(plan: Plan) -> bool:
    """One plain argument, a bare array (or float): the bare sparse matrix (the first
    version's result), not the dense layout's ``H[0][0]``."""
    plain = [p for p in plan.args if p.kind != CONST]
    return len(plain) == 1 and plain[0].treedef is None and sum(plan.active) == 1


def laid_out(plan: Plan, block: Callable[[int, int], Any]) -> tuple[Any, ...]:
    """``H[a][b]`` as the dense ``ad.hessian`` lays it out -- the tree of argument ``a``
    with each leaf replaced by the tree of argument ``b`` holding the blocks, ``None``
    where either is ``Const`` (and at a tied array's later places) -- with ``block(i, j)``
    for the ``i``-th and ``j``-th differentiated leaves. (The dense layout's twin, without
    its float conversion of scalar blocks: a sparse block stays a 1-by-1 matrix.)"""
    index = {u: i for i, u in enumerate(u for u, a in enumerate(plan.active) if a)}
    n = len(plan.leaves)

    def row_for(u: int) -> tuple[Any, ...]:
        return place(plan, [block(index[u], index[v]) if v in index else None for v in range(n)])

    rows = [row_for(u) if u in index else None for u in range(n)]
    return tuple(
        None if p.kind == CONST else entry for p, entry in zip(plan.args, place(plan, rows))
    )


class _Key:
    """A block's place in the flattened matrix: differentiated leaves ``i`` and ``j``."""

    __slots__ = ("i", "j")

    def __init__(self, i: int, j: int) -> None:
        self.i, self.j = i, j


def _flattened(plan: Plan, dense: Any, layout: Layout) -> np.ndarray:
    """The dense Hessian's blocks (in its layout) as one ``(n, n)`` numpy matrix."""
    d = np.zeros((layout.total, layout.total))
    keys = trees.flatten(laid_out(plan, _Key))[0]
    for key, value in zip(keys, trees.flatten(dense)[0]):
        if isinstance(key, _Key) and value is not None:
            r0, c0 = layout.offsets[key.i], layout.offsets[key.j]
            rows, cols = layout.sizes[key.i], layout.sizes[key.j]
            d[r0 : r0 + rows, c0 : c0 + cols] = to_numpy(value).reshape(rows, cols)
    return d


def check_dense(
    started: Started,
    f: Callable[..., Any],
    pattern: Any,
    hess: Any,
    dense_of: Callable[[Started, Callable[..., Any]], Any],
    layout: Layout,
) -> None:
    """``check=True``: the dense Hessian's nonzeros must lie inside the pattern, and the
    compressed one must equal it there.

    Args:
        started: the call.
        f: the loss.
        pattern: the symmetric pattern of the flattened Hessian.
        hess: the compressed Hessian, flattened (a ``csr_array``).
        dense_of: the dense Hessian (``second_order.run_hessian``).
        layout: the differentiated leaves' places in the flattened matrix.
    """
    d = _flattened(started.plan, dense_of(started, f), layout)
    outside = (d != 0) & ~pattern.toarray()
    if outside.any():
        where = np.argwhere(outside)
        first = ", ".join(f"({int(i)}, {int(j)})" for i, j in where[:5])
        raise UsageError(
            f"the sparsity pattern misses {len(where)} nonzero(s) of the dense Hessian "
            f"(entries {first}{', ...' if len(where) > 5 else ''} of the flattened matrix, "
            f"the differentiated leaves' elements in order; the first is "
            f"{d[tuple(where[0])]!r}). Pass the right pattern (sparsity='detect' finds one; "
            "ad.sparsity(f, *args, of='hessian', local=True) detects at a point)."
        )
    scale = max(float(np.max(np.abs(d))), 1.0) if d.size else 1.0
    # (the compressed sums round differently from the dense products: the dtype's sqrt(eps))
    plan = started.plan
    dtypes = [numpy_dtype(getattr(v, "dtype", None)) for v, a in zip(plan.leaves, plan.active) if a]
    eps = max(float(np.finfo(t if t.kind == "f" else np.float64).eps) for t in dtypes)
    tol = float(np.sqrt(eps))  # (the coarsest differentiated dtype's)
    if not np.allclose(hess.toarray(), d, rtol=tol, atol=tol * scale):
        raise UsageError(
            "the sparse Hessian differs from the dense one inside the pattern (an adswitch "
            "bug: please report it)."
        )
