"""Compressed Jacobians: one batched pushforward (pullback) of the colors' seeds instead
of the identity basis, decompressed straight into a ``scipy.sparse.csr_array`` (then
per block the engine's own sparse matrix for its arrays' inputs: :mod:`.native`).

Several differentiated arguments (or trees) and tree outputs share one flattened matrix --
rows: the floating output leaves' elements, columns: the differentiated leaves', each in
C order, leaf after leaf -- colored and compressed as one; its blocks are then cut out
into the dense ``ad.jacobian``'s layout.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adswitch import derive, trees
from adswitch.bases import Layout, numpy_dtype
from adswitch.call import Started, running
from adswitch.errors import UsageError
from adswitch.outputs import OutputFunction, Outputs
from adswitch.plan import CONST, Plan
from adswitch.results import place
from adswitch.sparse.coloring import (
    color_columns,
    color_rows,
    n_colors,
    structurally_symmetric,
)
from adswitch.sparse.detect import sparsity as detect
from adswitch.sparse.detect import to_numpy
from adswitch.sparse.native import native
from adswitch.sparse.traced import refuse, refuse_check, refuse_layout, refuse_unserved
from adswitch.sparse.tracer import _sp

__all__ = ["SparseSetup", "joined", "refuse_traced", "setup", "split_seeds", "sparse_jacobian"]


class SparseSetup:
    """A pattern and its coloring, for one side: ``mode`` ``"forward"`` (columns) or
    ``"reverse"`` (rows)."""

    __slots__ = ("colors", "mode", "pattern", "seeds", "take")

    def __init__(self, pattern: Any, colors: np.ndarray, mode: str) -> None:
        self.pattern, self.colors, self.mode = pattern, colors, mode
        m, n = pattern.shape
        # kept for every call: the seeds (one row per color) and, per stored entry of the
        # pattern (CSR order), where it is read from the flat (colors, m) pushforwards --
        # entry (i, j) is compressed[color[j], i] -- or (colors, n) pullbacks:
        # compressed[color[i], j]
        c = max(n_colors(colors), 1)
        self.seeds = np.zeros((c, n if mode == "forward" else m))
        self.seeds[colors, np.arange(self.seeds.shape[1])] = 1.0
        rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(pattern.indptr))
        cols = pattern.indices.astype(np.int64)
        if mode == "forward":
            self.take = colors[cols] * m + rows
        else:
            self.take = colors[rows] * n + cols


def setup(
    f: Callable[..., Any],
    args: Sequence[Any],
    sparsity: Any,
    mode: str,
    engine: Any,
    has_aux: bool = False,
) -> SparseSetup:
    """Detect (``"detect"``: the pattern of ``y``, with ``has_aux`` the first of ``f``'s
    ``(y, aux)``) or take the pattern, and color the side ``mode`` asks for (``"auto"``:
    the side with fewer colors)."""
    if isinstance(sparsity, SparseSetup):
        return sparsity
    sp = _sp()
    if isinstance(sparsity, str):
        if sparsity != "detect":
            raise UsageError(f"sparsity={sparsity!r}; it is None, 'detect' or a pattern.")
        pattern = detect(f, *args, has_aux=has_aux)
    else:
        pattern = sp.csr_array(sparsity, dtype=bool).copy()  # (never the caller's arrays)
        if pattern.ndim != 2:
            raise UsageError("sparsity= takes a 2-D pattern of shape (out.size, in.size).")
        # canonical: no stored False (the coloring ignores them), no duplicates (each
        # would be read once more), sorted columns (the engines' sparse formats say so)
        pattern.eliminate_zeros()
        pattern.sum_duplicates()
    have = derive.natives(engine)
    can_reverse = bool(have & {"vjp", "vjp_apply", "value_and_grad"})
    can_forward = "jvp" in have and engine.capabilities.forward
    if mode == "forward" or (mode == "auto" and not can_reverse):
        return SparseSetup(pattern, color_columns(pattern), "forward")
    if mode == "reverse" or (mode == "auto" and not can_forward):
        return SparseSetup(pattern, color_rows(pattern), "reverse")
    cols = color_columns(pattern)
    rows = cols if structurally_symmetric(pattern) else color_rows(pattern)
    # on a tie, the cheaper side: forward, unless the engine says its forward mode costs
    # more than a reverse pass (torch's is a double backward: 1.75 vs 1.25 ms on the
    # Brusselator N = 32, where the tape's forward mode is twice as fast as its reverse)
    slow_forward = engine.capabilities.second_order == "reverse-over-reverse"
    if n_colors(rows) < n_colors(cols) or (slow_forward and n_colors(rows) == n_colors(cols)):
        return SparseSetup(pattern, rows, "reverse")
    return SparseSetup(pattern, cols, "forward")


def sparse_jacobian(
    started: Started,
    f: Callable[..., Any],
    has_aux: bool,
    s: SparseSetup,
    dense: Callable[..., Any] | None = None,
) -> Any:
    """The Jacobian of ``f`` from the compressed seeds of ``s``, in sparse blocks.

    Args:
        started: the started call (its plan says which leaves are differentiated).
        f: the function.
        has_aux: ``f`` returns ``(y, aux)``: ``y`` is differentiated, and the call returns
            ``(jacobian, aux)``, aux as ``f`` made it (as the dense ``ad.jacobian`` does).
        s: the pattern of the flattened Jacobian (rows: the floating output leaves' elements,
            columns: the differentiated leaves', each in C order) and its coloring.
        dense: with ``check=True``, the dense operator to compare with.

    Returns:
        One differentiated array argument and one array output: a sparse matrix. Else the
        layout of the dense ``ad.jacobian``, each block a sparse matrix of shape
        ``(out_leaf.size, in_leaf.size)``: a ``scipy.sparse.csr_array``, or the engine's
        own (``torch.sparse_csr_tensor``, jax's ``BCOO``) where the block's input leaf is
        that engine's array (:func:`.native.native`). With ``has_aux``: ``(that, aux)``.
        Under an engine's compiler (``jax.jit``), one bare array in and out only: the
        engine's sparse matrix gathered from the traced pushforwards (:mod:`.traced`).

    Example:
        >>> import adswitch as ad, numpy as np
        >>> jac = ad.jacobian(lambda a, b: a * b, np.ones(2), np.full(2, 3.0), sparsity="detect")
        >>> jac[1].toarray().tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    plan, engine = started.plan, started.engine
    active = [u for u, a in enumerate(plan.active) if a]
    under_trace = refuse_traced(started)
    if under_trace and dense is not None:
        raise refuse_check()
    in_layout = Layout([plan.leaves[u] for u in active])
    m, n = s.pattern.shape
    if in_layout.total != n:
        raise UsageError(
            f"the sparsity pattern has shape {(m, n)}, {n} column(s); the differentiated "
            f"argument(s) have {in_layout.total} element(s): pass the pattern of this function, "
            f"of shape (out.size, {in_layout.total}) (ad.sparsity(f, *args) gives it)."
        )
    fn = OutputFunction(f, plan, has_aux, "jacobian")
    key = ("sparse", s.mode, has_aux)
    info = derive.with_batched(started.info(f, "jacobian", key, outputs=has_aux), True)
    seeds = s.seeds
    c = seeds.shape[0]
    with running(engine):
        if s.mode == "forward":
            split = iter(split_seeds(seeds, [plan.leaves[u] for u in active], in_layout))
            tangents = [next(split) if a else None for a in plan.active]
            out_leaves, columns = derive.jvp(engine, fn, plan.leaves, plan.active, tangents, info)
            out_layout = _rows_checked(derive.diff_leaves(fn, out_leaves), s, in_layout)
            parts = columns
        else:

            def seed(diffs: Sequence[Any]) -> list[Any]:
                return split_seeds(seeds, diffs, _rows_checked(diffs, s, in_layout))

            out_leaves, rows = derive.vjp_apply(engine, fn, plan.leaves, plan.active, seed, info)
            out_layout = Layout(derive.diff_leaves(fn, out_leaves))
            parts = [rows[u] for u in active]
    layout = fn.outputs()
    if under_trace and not _single(plan, layout, active):
        raise refuse_layout()
    if dense is None and _single(plan, layout, active):
        # the engine's own decompression, where it has one (``sparse_gather``): the
        # pushforwards stay on its device, gathered there into the result's values --
        # under a trace, the traced values gathered with the pattern's indices as constants
        out = gathered(engine, parts, s, plan.leaves[active[0]])
        if out is not None:
            return (out, fn.output(out_leaves)[1]) if has_aux else out
        if under_trace:  # (the host path cannot read traced values)
            raise refuse_unserved(engine)
    sizes = out_layout.sizes if s.mode == "forward" else in_layout.sizes
    jac = _decompress(s, joined(parts, sizes, c))  # (colors, m) or (colors, n)
    if dense is not None:  # check=True: the dense operator (adswitch.jacobians) to compare
        d = dense(started, f, "auto", has_aux)
        where = (_keys(plan, layout, active), out_layout, in_layout)
        _check(started, s, jac, d[0] if has_aux else d, where)
    if _single(plan, layout, active):
        out = native(engine, jac, plan.leaves[active[0]])
    else:
        out = _blocks(started, layout, active, (out_layout, in_layout), jac)
    # (aux rebuilt from the primal outputs, as the dense ad.jacobian returns it)
    return (out, fn.output(out_leaves)[1]) if has_aux else out


def split_seeds(seeds: np.ndarray, arrays: Sequence[Any], layout: Layout) -> list[np.ndarray]:
    """The compressed seeds cut into one batch per array (in its dtype, when floating)."""
    out = []
    for a, start, size, shape in zip(arrays, layout.offsets, layout.sizes, layout.shapes):
        dtype = numpy_dtype(getattr(a, "dtype", None))
        dtype = dtype if np.issubdtype(dtype, np.floating) else np.dtype(np.float64)
        out.append(seeds[:, start : start + size].astype(dtype).reshape((-1, *shape)))
    return out


def joined(parts: Sequence[Any], sizes: Sequence[int], c: int) -> np.ndarray:
    """Batched per-leaf results, each ``(c, *leaf.shape)``, as one ``(c, total)`` numpy
    matrix; a leaf nothing depends on may come back ``None`` (zeros)."""
    blocks = [
        np.zeros((c, k)) if p is None else to_numpy(p).reshape(c, k) for p, k in zip(parts, sizes)
    ]
    return np.concatenate(blocks, axis=1) if blocks else np.zeros((c, 0))


def _rows_checked(diffs: Sequence[Any], s: SparseSetup, in_layout: Layout) -> Layout:
    out_layout = Layout(diffs)
    m, n = s.pattern.shape
    if out_layout.total != m:
        raise UsageError(
            f"the sparsity pattern has shape {(m, n)}; f's flattened Jacobian has shape "
            f"{(out_layout.total, in_layout.total)} (rows: the {out_layout.total} element(s) of "
            f"its {len(diffs)} floating output leaf(s), columns: the differentiated "
            "arguments' elements). Pass the pattern of this function (ad.sparsity(f, *args))."
        )
    return out_layout


def _single(plan: Plan, layout: Outputs, active: list[int]) -> bool:
    """One plain argument, a bare array (or float), and one array output: the bare
    csr_array (as in the first slice), not the dense layout's tuple."""
    plain = [p for p in plan.args if p.kind != CONST]
    return (
        len(active) == 1
        and len(plain) == 1
        and plain[0].treedef is None
        and layout.y_def is None
        and layout.diff_positions == (0,)
    )


class _Key:
    """A block's place in the flattened matrix: output leaf ``k``, differentiated leaf ``a``."""

    __slots__ = ("a", "k")

    def __init__(self, k: int, a: int) -> None:
        self.k, self.a = k, a


def _laid_out(
    plan: Plan, layout: Outputs, active: list[int], block: Callable[[int, int], Any]
) -> Any:
    """The dense ``ad.jacobian``'s layout, with ``block(k, a)`` for output leaf ``k`` and
    differentiated leaf ``a``."""
    entries: list[Any] = [None] * layout.n_y
    for k, position in enumerate(layout.diff_positions):
        per_leaf: list[Any] = [None] * len(plan.leaves)
        for a, u in enumerate(active):
            per_leaf[u] = block(k, a)
        entries[position] = place(plan, per_leaf)
    return trees.unflatten(layout.y_def, entries)


def _keys(plan: Plan, layout: Outputs, active: list[int]) -> Any:
    return _laid_out(plan, layout, active, _Key)


def _blocks(
    started: Started, layout: Outputs, active: list[int], where: tuple[Layout, Layout], jac: Any
) -> Any:
    sp, plan, (out_layout, in_layout) = _sp(), started.plan, where

    def block(k: int, a: int) -> Any:
        r0, c0 = out_layout.offsets[k], in_layout.offsets[a]
        piece = jac[r0 : r0 + out_layout.sizes[k], c0 : c0 + in_layout.sizes[a]]
        return native(started.engine, sp.csr_array(piece), plan.leaves[active[a]])

    return _laid_out(plan, layout, active, block)


def _decompress(s: SparseSetup, compressed: np.ndarray) -> Any:
    """Entry (i, j) of the pattern: compressed[color[j], i] (columns) or
    compressed[color[i], j] (rows) (``s.take``); written in the pattern's own CSR order."""
    p = s.pattern
    data = compressed.reshape(-1)[s.take]
    return _sp().csr_array((data, p.indices.copy(), p.indptr.copy()), shape=p.shape)


def gathered(engine: Any, parts: Sequence[Any], s: Any, like: Any) -> Any:
    """The one-block sparse result decompressed by the engine (its optional
    ``sparse_gather`` hook, ``adswitch.spec.Backend``), or ``None``: the host path.

    Args:
        engine: the engine that computed ``parts``.
        parts: its batched results, one leaf: ``(colors, *shape)`` (``None``: nothing
            depends on the inputs -- the host path makes the zeros).
        s: the setup (:class:`SparseSetup` or a Hessian's), with ``pattern`` (canonical
            CSR: sorted, unique columns per row) and ``take``.
        like: the differentiated input leaf (the engine's array: else ``None``).
    """
    hook = getattr(engine, "sparse_gather", None)
    if hook is None or len(parts) != 1 or parts[0] is None or not engine.owns(like):
        return None
    p = s.pattern
    shape = (int(p.shape[0]), int(p.shape[1]))
    return hook(parts[0], s.take, p.indptr, p.indices, shape, like)


def _check(
    started: Started, s: SparseSetup, jac: Any, dense: Any, where: tuple[Any, Layout, Layout]
) -> None:
    """Debug mode: the dense Jacobian's nonzeros must lie inside the pattern. ``where``:
    the dense layout with a :class:`_Key` per block, and the output and input layouts."""
    keys, out_layout, in_layout = where
    d = np.zeros(s.pattern.shape)
    for key, value in zip(trees.flatten(keys)[0], trees.flatten(dense)[0]):
        if isinstance(key, _Key) and value is not None:  # (the flattened matrix's block)
            r0, size_k = out_layout.offsets[key.k], out_layout.sizes[key.k]
            c0, size_a = in_layout.offsets[key.a], in_layout.sizes[key.a]
            d[r0 : r0 + size_k, c0 : c0 + size_a] = to_numpy(value).reshape(size_k, size_a)
    # (an approximate engine's -- fd's -- differences differ with the seeds, and leave
    # round-off where the derivative is 0: its declared accuracy bounds both)
    accuracy = getattr(started.engine.capabilities, "accuracy", None) or 0.0
    noise = accuracy * max(1.0, float(np.abs(d).max(initial=0.0)))
    outside = (np.abs(d) > noise) & ~s.pattern.toarray()
    if outside.any():
        i, j = np.argwhere(outside)[0]
        raise UsageError(
            f"the sparsity pattern misses {int(outside.sum())} nonzero(s) of the dense "
            f"Jacobian (first at row {i}, column {j} of the flattened matrix: {d[i, j]!r}). "
            "Pass the right pattern (sparsity='detect' finds one), or detect it with "
            "local=False."
        )
    if not np.allclose(jac.toarray(), d, rtol=max(1e-10, accuracy), atol=max(1e-12, accuracy)):
        raise UsageError("the sparse Jacobian differs from the dense one (an adswitch bug).")


def refuse_traced(started: Started) -> bool:
    """A sparse Jacobian where it cannot be one (:func:`.traced.refuse`): a ``UsageError``
    before anything runs. Returns whether the differentiated leaves are traced (the
    engine's ``sparse_gather`` then decompresses them, as :mod:`.traced` says)."""
    return refuse(started)
