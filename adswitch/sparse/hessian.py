"""Compressed Hessians: one batched H·v over the colors' seeds instead of the identity
basis, decompressed into a symmetric ``scipy.sparse.csr_array`` (then the engine's own
sparse matrix where ``x`` is that engine's array: :mod:`.native`).

The pattern is colored once (:func:`setup_hessian`): a star coloring (:mod:`.star`, read
back by its direct rule) or a column (distance-2) coloring (each entry read from its
column's color), whichever needs fewer colors, so fewer H·v products. The products are
the second-order engine call :mod:`adswitch.second_order` makes for a dense Hessian, with
the colors' seeds in place of the basis: :mod:`adswitch.second_order` hands its gradient
function and its strategy in (this module sits below it: no import cycle).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adswitch import derive
from adswitch.bases import numpy_dtype, shape_of
from adswitch.call import Started, running
from adswitch.errors import UsageError
from adswitch.plan import CONST, Plan
from adswitch.sparse.coloring import color_columns, n_colors
from adswitch.sparse.detect import sparsity as detect
from adswitch.sparse.detect import to_numpy
from adswitch.sparse.native import native, on_host
from adswitch.sparse.star import star_coloring, star_gather, symmetric_pattern
from adswitch.sparse.tracer import _sp

__all__ = ["HessianSetup", "setup_hessian", "sparse_hessian"]

MODES = ("star", "column")


class HessianSetup:
    """A Hessian's symmetric pattern and its coloring; ``mode`` says how it is read back:
    ``"star"`` (the star rule) or ``"column"`` (entry ``(i, j)`` from ``j``'s color)."""

    __slots__ = ("colors", "key", "mode", "pattern", "take")

    def __init__(self, pattern: Any, colors: np.ndarray, mode: str) -> None:
        self.pattern, self.colors, self.mode = pattern, colors, mode
        # where each nonzero (CSR order) is read from the flat (colors, n) products
        if mode == "star":
            self.take = star_gather(pattern, colors)
        else:
            n = pattern.shape[0]
            rows = np.repeat(np.arange(n), np.diff(pattern.indptr))
            self.take = colors[pattern.indices] * n + rows
        # (the coloring is in the compiled engines' cache key: the seeds are made from it)
        self.key = (mode, n_colors(colors), hash(colors.tobytes()))


def setup_hessian(
    f: Callable[..., Any], args: Sequence[Any], sparsity: Any, started: Started | None = None
) -> HessianSetup:
    """Detect (``"detect"``: ``ad.sparsity(f, *args, of="hessian")``) or take the pattern,
    symmetrize it, and color it: star or column coloring, the one with fewer colors.

    Args:
        f: the loss.
        args: its arguments (one plain array, the others ``ad.Const``).
        sparsity: ``"detect"``, a pattern of shape ``(x.size, x.size)`` (anything
            ``scipy.sparse.csr_array`` takes), or a :class:`HessianSetup` (kept).
        started: the started call, checked first for what this version supports (one
            differentiated array argument, concrete values), before anything is detected.

    Returns:
        A :class:`HessianSetup`.

    Example:
        >>> import adswitch as ad, numpy as np
        >>> from adswitch.sparse.hessian import setup_hessian
        >>> f = lambda x: ad.array_namespace(x).sum(x[1:] * x[:-1] + x[1:] ** 3)
        >>> s = setup_hessian(f, (np.ones(6),), "detect")
        >>> s.mode, int(s.colors.max()) + 1
        ('star', 3)
        >>> g = lambda x: ad.array_namespace(x).sum(x[1:] * x[:-1])   # a zero diagonal
        >>> s = setup_hessian(g, (np.ones(6),), "detect")
        >>> s.mode, int(s.colors.max()) + 1
        ('column', 2)
    """
    if started is not None:
        _one_array_argument(started.plan)
        _concrete(started)
    if isinstance(sparsity, HessianSetup):
        return sparsity
    if isinstance(sparsity, str):
        if sparsity != "detect":
            raise UsageError(f"sparsity={sparsity!r}; it is None, 'detect' or a pattern.")
        raw = detect(f, *args, of="hessian")
    else:
        raw = sparsity
    try:
        pattern = symmetric_pattern(raw)
    except (ValueError, TypeError) as exc:
        raise UsageError(
            "sparsity= for ad.hessian takes a square 2-D pattern of shape (x.size, x.size) "
            f"(a boolean array or scipy.sparse matrix): {exc}"
        ) from exc
    star, column = star_coloring(pattern), color_columns(pattern)
    if n_colors(column) < n_colors(star):
        return HessianSetup(pattern, column, "column")
    return HessianSetup(pattern, star, "star")


def sparse_hessian(
    started: Started,
    f: Callable[..., Any],
    s: HessianSetup,
    gradient_fn: Callable[[Any, Callable[..., Any], Plan], Any],
    strategy: str,
    dense: Callable[[Started, Callable[..., Any]], Any] | None = None,
) -> Any:
    """The Hessian of ``f``'s loss in its one active array argument, as a sparse matrix.

    Args:
        started: the started (or prepared) call.
        f: the loss.
        s: the pattern and its coloring (:func:`setup_hessian`).
        gradient_fn: ``second_order.GradientFunction`` (an ``OutputFn`` of the gradient).
        strategy: ``"forward-over-reverse"`` or ``"reverse-over-reverse"``.
        dense: the dense Hessian (``second_order.run_hessian``) to check against
            (``check=True``), or ``None``.

    Returns:
        A symmetric sparse matrix of shape ``(x.size, x.size)``: a
        ``scipy.sparse.csr_array``, or the engine's own (``torch.sparse_csr_tensor``,
        jax's ``BCOO``) where ``x`` is that engine's array (:func:`.native.native`).
    """
    plan, engine = started.plan, started.engine
    position = _one_array_argument(plan)
    if started.depth:
        _concrete(started)
    x = plan.leaves[plan.active.index(True)]
    n = math.prod(shape_of(x))
    if s.pattern.shape != (n, n):
        raise UsageError(
            f"the sparsity pattern has shape {s.pattern.shape}; args[{position}] has {n} "
            f"elements: pass the Hessian pattern of this function (shape ({n}, {n}))."
        )
    c = max(n_colors(s.colors), 1)
    seeds = np.zeros((c, n), dtype=numpy_dtype(getattr(x, "dtype", None)))
    seeds[s.colors, np.arange(n)] = 1.0
    seeds = seeds.reshape((c, *shape_of(x)))
    inner = gradient_fn(engine, f, plan)
    info = started.info(f, "hessian", ("sparse hessian", strategy, s.key), outputs=False)
    info = derive.with_batched(info, True)
    with running(engine):
        if strategy == "forward-over-reverse":
            tangents = [seeds if a else None for a in plan.active]
            _, out = derive.jvp(engine, inner, plan.leaves, plan.active, tangents, info)
            products = out[0]
        else:
            _, rows = derive.vjp_apply(
                engine, inner, plan.leaves, plan.active, lambda diffs: [seeds], info
            )
            products = rows[plan.active.index(True)]
    compressed = _concrete(started, products).reshape(c, n)  # (colors, n): H @ seed_c
    hess = _decompress(s, compressed)
    if dense is not None:
        _check(started, f, s, hess, dense, position)
    return native(engine, hess, x)


def _one_array_argument(plan: Plan) -> int:
    """The position of the one differentiated argument, a single array (else a
    ``UsageError`` saying what this version supports)."""
    differentiated = [k for k, p in enumerate(plan.args) if p.kind != CONST]
    if (
        len(differentiated) != 1
        or plan.args[differentiated[0]].treedef is not None
        or sum(1 for a in plan.active if a) != 1
    ):
        raise UsageError(
            "a sparse ad.hessian (sparsity=...) supports one differentiated array argument "
            "in this version: mark the others ad.Const, or concatenate several inputs (or a "
            "tree's leaves) into one array."
        )
    return differentiated[0]


def _concrete(started: Started, value: Any = None) -> np.ndarray:
    """``value`` (default: the differentiated argument) as numpy, or the ``UsageError``
    of a sparse Hessian where it cannot be one (:func:`.native.on_host`)."""
    if value is None:
        value = started.plan.leaves[started.plan.active.index(True)]
    return on_host(value, started.depth, "ad.hessian", "sparse matrix")


def _decompress(s: HessianSetup, compressed: np.ndarray) -> Any:
    p = s.pattern
    data = compressed.reshape(-1)[s.take]
    return _sp().csr_array((data, p.indices.copy(), p.indptr.copy()), shape=p.shape)


def _check(
    started: Started,
    f: Callable[..., Any],
    s: HessianSetup,
    hess: Any,
    dense_of: Callable[[Started, Callable[..., Any]], Any],
    position: int,
) -> None:
    """``check=True``: the dense Hessian's nonzeros must lie inside the pattern, and the
    compressed one must equal it there."""
    d = to_numpy(dense_of(started, f)[position][position]).reshape(s.pattern.shape)
    outside = (d != 0) & ~s.pattern.toarray()
    if outside.any():
        where = np.argwhere(outside)
        first = ", ".join(f"({int(i)}, {int(j)})" for i, j in where[:5])
        raise UsageError(
            f"the sparsity pattern misses {len(where)} nonzero(s) of the dense Hessian of "
            f"args[{position}] (entries {first}{', ...' if len(where) > 5 else ''}; the "
            f"first is {d[tuple(where[0])]!r}). Pass the right pattern (sparsity='detect' "
            "finds one; ad.sparsity(f, x, of='hessian', local=True) detects at a point)."
        )
    scale = max(float(np.max(np.abs(d))), 1.0) if d.size else 1.0
    # (the compressed sums round differently from the dense products: the dtype's sqrt(eps))
    tol = float(np.sqrt(np.finfo(d.dtype if d.dtype.kind == "f" else np.float64).eps))
    if not np.allclose(hess.toarray(), d, rtol=tol, atol=tol * scale):
        raise UsageError(
            "the sparse Hessian differs from the dense one inside the pattern (an adswitch "
            "bug: please report it)."
        )
