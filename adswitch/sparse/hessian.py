"""Compressed Hessians: one batched H·v over the colors' seeds instead of the identity
basis, decompressed into a symmetric ``scipy.sparse.csr_array`` (then per block the
engine's own sparse matrix where its input is that engine's array: :mod:`.native`).

Several differentiated arguments (or trees) share one flattened Hessian -- rows and
columns: the differentiated leaves' elements, each in C order, leaf after leaf (the order
of ``ad.sparsity(..., of="hessian")``) -- colored and compressed as one; its blocks are
then cut out into the dense ``ad.hessian``'s layout (:mod:`.hessian_blocks`).

The pattern is colored once (:func:`setup_hessian`): a star coloring (:mod:`.star`, read
back by its direct rule) or a column (distance-2) coloring (each entry read from its
column's color), whichever needs fewer colors, so fewer H·v products. The products are
the second-order engine call :mod:`adswitch.second_order` makes for a dense Hessian, with
the colors' seeds in place of the basis: :mod:`adswitch.second_order` hands its gradient
function and its strategy in (this module sits below it: no import cycle).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adswitch import derive
from adswitch.bases import Layout
from adswitch.call import Started, running
from adswitch.errors import UsageError
from adswitch.plan import Plan
from adswitch.sparse.coloring import color_columns, n_colors
from adswitch.sparse.compressed import gathered, joined, split_seeds
from adswitch.sparse.detect import sparsity as detect
from adswitch.sparse.hessian_blocks import check_dense, laid_out, single
from adswitch.sparse.native import native, on_host, traced
from adswitch.sparse.seeds import record, seeds_of
from adswitch.sparse.star import star_coloring, star_gather, symmetric_pattern
from adswitch.sparse.traced import refuse_check, serves_traced
from adswitch.sparse.tracer import _sp

__all__ = ["HessianSetup", "setup_hessian", "sparse_hessian"]

MODES = ("star", "column")


class HessianSetup:
    """A Hessian's symmetric pattern and its coloring; ``mode`` says how it is read back:
    ``"star"`` (the star rule) or ``"column"`` (entry ``(i, j)`` from ``j``'s color)."""

    __slots__ = ("colors", "key", "mode", "pattern", "seeds", "take")

    def __init__(self, pattern: Any, colors: np.ndarray, mode: str) -> None:
        self.pattern, self.colors, self.mode = pattern, colors, mode
        # the colors' seeds, one row per color (made once: a prepared call's every call)
        n = pattern.shape[0]
        self.seeds = np.zeros((max(n_colors(colors), 1), n))
        self.seeds[colors, np.arange(n)] = 1.0
        # where each nonzero (CSR order) is read from the flat (colors, n) products
        if mode == "star":
            self.take = star_gather(pattern, colors)
        else:
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
        f: the loss (or a tuple/dict holding it first, as for the dense ``ad.hessian``).
        args: its arguments: plain arrays or trees of them, and ``ad.Const`` ones.
        sparsity: ``"detect"``, a pattern of shape ``(n, n)`` with ``n`` the differentiated
            leaves' elements in all (anything ``scipy.sparse.csr_array`` takes), or a
            :class:`HessianSetup` (kept).
        started: the started call, checked first for concrete values (a sparse matrix is
            built on the host), before anything is detected.

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
        _refuse_traced(started)
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
            "sparsity= for ad.hessian takes a square 2-D pattern of shape (n, n), n the "
            "differentiated elements in all (a boolean array or scipy.sparse matrix; "
            f"ad.sparsity(f, *args, of='hessian') gives it): {exc}"
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
    """The Hessian of ``f``'s loss in its differentiated arguments, in sparse blocks.

    Args:
        started: the started (or prepared) call.
        f: the loss (aux outputs after it are ignored, as by the dense ``ad.hessian``).
        s: the pattern of the flattened Hessian and its coloring (:func:`setup_hessian`).
        gradient_fn: ``second_order.GradientFunction`` (an ``OutputFn`` of the gradient).
        strategy: ``"forward-over-reverse"`` or ``"reverse-over-reverse"``.
        dense: the dense Hessian (``second_order.run_hessian``) to check against
            (``check=True``), or ``None``.

    Returns:
        One plain argument, a bare array: a symmetric sparse matrix of shape
        ``(x.size, x.size)``. Else the dense ``ad.hessian``'s layout (``H[a][b]``,
        ``None`` where either argument is ``Const``; trees of trees for tree arguments),
        each block a sparse matrix of shape ``(leaf_a.size, leaf_b.size)``. Each is a
        ``scipy.sparse.csr_array``, or the engine's own (``torch.sparse_csr_tensor``,
        jax's ``BCOO``) where the block's column leaf is that engine's array
        (:func:`.native.native`).

    Example:
        >>> import adswitch as ad, numpy as np
        >>> f = lambda x, y: ad.array_namespace(x).sum(x * y ** 2)
        >>> H = ad.hessian(f, np.ones(2), np.full(2, 3.0), sparsity="detect")
        >>> H[0][1].toarray().tolist()
        [[6.0, 0.0], [0.0, 6.0]]
    """
    plan, engine = started.plan, started.engine
    if started.depth:
        _refuse_traced(started)
    if dense is not None and _refuse_traced(started):  # (check=True reads dense values)
        raise refuse_check("ad.hessian")
    active = [u for u, a in enumerate(plan.active) if a]
    inputs = [plan.leaves[u] for u in active]
    layout = Layout(inputs)
    n = layout.total
    if s.pattern.shape != (n, n):
        raise UsageError(
            f"the sparsity pattern has shape {s.pattern.shape}; the differentiated "
            f"argument(s) have {n} element(s): pass the Hessian pattern of this function, of "
            f"shape ({n}, {n}) (ad.sparsity(f, *args, of='hessian') gives it)."
        )
    record(started.prepared, s)  # (a prepared call's shortcut passes its seeds in)
    seeds = seeds_of(s)
    c = seeds.shape[0]
    per_leaf = split_seeds(seeds, inputs, layout)
    inner = gradient_fn(engine, f, plan)
    info = started.info(f, "hessian", ("sparse hessian", strategy, s.key), outputs=False)
    info = derive.with_batched(info, True)
    with running(engine):
        if strategy == "forward-over-reverse":
            it = iter(per_leaf)
            tangents = [next(it) if a else None for a in plan.active]
            _, products = derive.jvp(engine, inner, plan.leaves, plan.active, tangents, info)
        else:
            _, rows = derive.vjp_apply(
                engine, inner, plan.leaves, plan.active, lambda diffs: per_leaf, info
            )
            products = [rows[u] for u in active]
    if dense is None and not started.depth and single(plan):
        # the engine's own decompression, where it has one (``sparse_gather``; a traced
        # product gathered in the trace, or None: the host path below refuses it)
        out = gathered(engine, products, s, inputs[0])
        if out is not None:
            return out
    # (read on the host: a prepared call's leaves are checked only here, under jax.jit)
    host = [
        None if p is None else on_host(p, started.depth, "ad.hessian", "sparse matrix")
        for p in products
    ]
    compressed = joined(host, layout.sizes, c)  # (colors, n): H @ seed_c
    hess = _decompress(s, compressed)
    if dense is not None:
        check_dense(started, f, s.pattern, hess, dense, layout)
    if single(plan):
        return native(engine, hess, inputs[0])
    sp = _sp()

    def block(i: int, j: int) -> Any:
        r0, c0 = layout.offsets[i], layout.offsets[j]
        piece = hess[r0 : r0 + layout.sizes[i], c0 : c0 + layout.sizes[j]]
        return native(engine, sp.csr_array(piece), inputs[j])

    return laid_out(plan, block)


def _refuse_traced(started: Started) -> bool:
    """The ``UsageError`` of a sparse Hessian where its leaves cannot be read on the host
    (:func:`.native.on_host`), before anything runs; else whether they are traced.

    Traced (inside ``jax.jit``...), one plain bare array on an engine that decompresses
    traced products (:func:`.traced.serves_traced`) is served as the Jacobian is: the
    products gathered in the trace (``check=True`` is refused in :func:`sparse_hessian`).
    """
    plan = started.plan
    leaves = [leaf for leaf, a in zip(plan.leaves, plan.active) if a]
    if not started.depth and serves_traced(started.engine) and single(plan):
        return any(traced(leaf) for leaf in leaves)
    for leaf in leaves:
        on_host(leaf, started.depth, "ad.hessian", "sparse matrix")
    return False


def _decompress(s: HessianSetup, compressed: np.ndarray) -> Any:
    p = s.pattern
    data = compressed.reshape(-1)[s.take]
    return _sp().csr_array((data, p.indices.copy(), p.indptr.copy()), shape=p.shape)
