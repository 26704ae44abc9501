"""Compressed Jacobians: one batched pushforward (pullback) of the colors' seeds instead
of the identity basis, decompressed straight into a ``scipy.sparse.csr_array``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adswitch import derive
from adswitch.bases import shape_of
from adswitch.call import Started, running
from adswitch.errors import UsageError
from adswitch.outputs import OutputFunction
from adswitch.sparse.coloring import color_columns, color_rows, n_colors
from adswitch.sparse.detect import sparsity as detect
from adswitch.sparse.detect import to_numpy
from adswitch.sparse.tracer import _sp

__all__ = ["SparseSetup", "setup", "sparse_jacobian"]


class SparseSetup:
    """A pattern and its coloring, for one side: ``mode`` ``"forward"`` (columns) or
    ``"reverse"`` (rows)."""

    __slots__ = ("colors", "mode", "pattern")

    def __init__(self, pattern: Any, colors: np.ndarray, mode: str) -> None:
        self.pattern, self.colors, self.mode = pattern, colors, mode


def setup(
    f: Callable[..., Any], args: Sequence[Any], sparsity: Any, mode: str, engine: Any
) -> SparseSetup:
    """Detect (``"detect"``) or take the pattern, and color the side ``mode`` asks for
    (``"auto"``: the side with fewer colors)."""
    if isinstance(sparsity, SparseSetup):
        return sparsity
    sp = _sp()
    if isinstance(sparsity, str):
        if sparsity != "detect":
            raise UsageError(f"sparsity={sparsity!r}; it is None, 'detect' or a pattern.")
        pattern = detect(f, *args)
    else:
        pattern = sp.csr_array(sparsity, dtype=bool)
        if pattern.ndim != 2:
            raise UsageError("sparsity= takes a 2-D pattern of shape (out.size, in.size).")
    have = derive.natives(engine)
    can_reverse = bool(have & {"vjp", "vjp_apply", "value_and_grad"})
    can_forward = "jvp" in have and engine.capabilities.forward
    if mode == "forward" or (mode == "auto" and not can_reverse):
        return SparseSetup(pattern, color_columns(pattern), "forward")
    if mode == "reverse" or (mode == "auto" and not can_forward):
        return SparseSetup(pattern, color_rows(pattern), "reverse")
    cols, rows = color_columns(pattern), color_rows(pattern)
    if n_colors(rows) < n_colors(cols):
        return SparseSetup(pattern, rows, "reverse")
    return SparseSetup(pattern, cols, "forward")


def sparse_jacobian(
    started: Started,
    f: Callable[..., Any],
    has_aux: bool,
    s: SparseSetup,
    dense: Callable[..., Any] | None = None,
) -> Any:
    """The Jacobian of ``f``'s one output in its one active argument, as a csr_array."""
    plan, engine = started.plan, started.engine
    active = [u for u, a in enumerate(plan.active) if a]
    if has_aux or len(active) != 1:
        raise UsageError(
            "a sparse ad.jacobian (sparsity=...) supports one differentiated array argument "
            "(mark the others ad.Const) and no has_aux in this version."
        )
    x = plan.leaves[active[0]]
    m, n = s.pattern.shape
    x_size = int(np.prod(shape_of(x)))
    if x_size != n:
        raise UsageError(
            f"the sparsity pattern has {n} columns, the differentiated argument {x_size} "
            "elements: pass the pattern of this function (shape (out.size, in.size))."
        )
    fn = OutputFunction(f, plan, False, "jacobian")
    info = derive.with_batched(started.info(f, "jacobian", ("sparse", s.mode), outputs=False), True)
    c = n_colors(s.colors)
    dtype = to_numpy(x).dtype if np.issubdtype(to_numpy(x).dtype, np.floating) else np.float64
    seed_side = n if s.mode == "forward" else m
    seeds = np.zeros((max(c, 1), seed_side), dtype=dtype)
    seeds[s.colors, np.arange(seed_side)] = 1.0
    with running(engine):
        if s.mode == "forward":
            tangents = [seeds.reshape((-1, *shape_of(x))) if a else None for a in plan.active]
            out_leaves, columns = derive.jvp(engine, fn, plan.leaves, plan.active, tangents, info)
            diffs = derive.diff_leaves(fn, out_leaves)
            _one_output(diffs, m)
            compressed = to_numpy(columns[0]).reshape(max(c, 1), m)  # (colors, m)
        else:

            def seed(diffs: Sequence[Any]) -> list[Any]:
                _one_output(diffs, m)
                return [seeds.astype(to_numpy(diffs[0]).dtype).reshape((-1, *shape_of(diffs[0])))]

            out_leaves, rows = derive.vjp_apply(engine, fn, plan.leaves, plan.active, seed, info)
            compressed = to_numpy(rows[active[0]]).reshape(max(c, 1), n)  # (colors, n)
    jac = _decompress(s, compressed)
    if dense is not None:  # check=True: the dense operator (adswitch.jacobians) to compare
        _check(started, f, s, jac, dense)
    return jac


def _one_output(diffs: Sequence[Any], m: int) -> None:
    if len(diffs) != 1 or int(np.prod(shape_of(diffs[0]))) != m:
        raise UsageError(
            f"a sparse ad.jacobian supports f returning one array of the pattern's {m} "
            f"rows; f returned {len(diffs)} differentiable array(s) of sizes "
            f"{[int(np.prod(shape_of(d))) for d in diffs]}."
        )


def _decompress(s: SparseSetup, compressed: np.ndarray) -> Any:
    """Entry (i, j) of the pattern: compressed[color[j], i] (columns) or
    compressed[color[i], j] (rows); written in the pattern's own CSR order."""
    sp = _sp()
    p = s.pattern
    rows = np.repeat(np.arange(p.shape[0]), np.diff(p.indptr))
    cols = p.indices
    if s.mode == "forward":
        data = compressed[s.colors[cols], rows]
    else:
        data = compressed[s.colors[rows], cols]
    return sp.csr_array((data, cols.copy(), p.indptr.copy()), shape=p.shape)


def _check(
    started: Started, f: Callable[..., Any], s: SparseSetup, jac: Any, dense_of: Callable[..., Any]
) -> None:
    """Debug mode: the dense Jacobian's nonzeros must lie inside the pattern."""
    dense = dense_of(started, f, "auto", False)
    active = next(u for u, a in enumerate(started.plan.active) if a)
    block = dense if not isinstance(dense, tuple) else dense[active]
    d = to_numpy(block).reshape(s.pattern.shape)
    outside = (d != 0) & ~s.pattern.toarray()
    if outside.any():
        i, j = np.argwhere(outside)[0]
        raise UsageError(
            f"the sparsity pattern misses {int(outside.sum())} nonzero(s) of the dense "
            f"Jacobian (first at row {i}, column {j}: {d[i, j]!r}). Pass the right pattern "
            "(sparsity='detect' finds one), or detect it with local=False."
        )
    if not np.allclose(jac.toarray(), d, rtol=1e-10, atol=1e-12):
        raise UsageError("the sparse Jacobian differs from the dense one (an adswitch bug).")
