"""Greedy distance-2 coloring of a sparsity pattern's columns (or rows).

Two columns that share a row must get different colors: then one pushforward of the sum
of a color's basis vectors gives each of its columns' nonzeros untouched (no other column
of that color has a nonzero in the same row). Greedy coloring in two vertex orders --
largest-first (by the number of conflicting columns) and natural -- keeps the fewer colors;
rows are colored as the columns of the transpose.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adswitch.sparse.tracer import _sp

__all__ = ["color_columns", "color_rows", "n_colors", "structurally_symmetric"]


def n_colors(colors: np.ndarray) -> int:
    return int(colors.max()) + 1 if colors.size else 0


def color_columns(pattern: Any) -> np.ndarray:
    """Per column, its color (0, 1, ...): columns sharing a row get different colors."""
    sp = _sp()
    p = sp.csr_array(pattern, dtype=np.float32)
    n = p.shape[1]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    conflicts = sp.csr_array(p.T @ p)  # (columns sharing a row: its nonzeros)
    conflicts.setdiag(0)
    conflicts.eliminate_zeros()
    indptr, indices = conflicts.indptr, conflicts.indices
    degree = np.diff(indptr)
    indptr_list, indices_list = indptr.tolist(), indices.tolist()
    # (a stable sort keeps the natural order among equal degrees)
    largest_first = np.argsort(-degree, kind="stable")
    best = _greedy(largest_first, indptr_list, indices_list, n)
    natural = np.arange(n)
    # (one order when they are the same -- every degree equal, as on a periodic grid's
    # stencil -- or when largest-first already needs no more than some row's columns)
    if n_colors(best) > _lower_bound(p) and not np.array_equal(largest_first, natural):
        colors = _greedy(natural, indptr_list, indices_list, n)
        if n_colors(colors) < n_colors(best):
            best = colors
    return best


def _lower_bound(p: Any) -> int:
    """The fewest colors any column coloring can have: the columns of one row all
    conflict."""
    return int(np.diff(p.indptr).max(initial=0))


def color_rows(pattern: Any) -> np.ndarray:
    """Per row, its color: rows sharing a column get different colors."""
    return color_columns(_sp().csr_array(pattern).T)


def structurally_symmetric(pattern: Any) -> bool:
    """Whether the pattern is square and equal to its transpose -- then its rows' colors
    are its columns' (the same greedy on the same conflicts), and coloring both sides
    once is enough (a PDE stencil's Jacobian, the Brusselator's: half the coloring time)."""
    sp = _sp()
    p = sp.csr_array(pattern, dtype=bool)
    if p.shape[0] != p.shape[1]:
        return False
    p.sum_duplicates()  # (canonical: sorted, unique; the transpose's tocsr is too)
    t = sp.csr_array(p.T)
    t.sum_duplicates()
    return bool(np.array_equal(p.indptr, t.indptr) and np.array_equal(p.indices, t.indices))


def _greedy(order: np.ndarray, indptr: list[int], indices: list[int], n: int) -> np.ndarray:
    colors = [-1] * n
    mark = [-1] * (n + 1)  # mark[c] == v: color c is taken by a neighbour of v
    for v in order.tolist():
        for w in indices[indptr[v] : indptr[v + 1]]:
            c = colors[w]
            if c >= 0:
                mark[c] = v
        c = 0
        while mark[c] == v:
            c += 1
        colors[v] = c
    return np.asarray(colors, dtype=np.int64)
