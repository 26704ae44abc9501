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
    # (the degrees only: how many other columns share a row with each)
    conflicts = sp.csr_array(p.T @ p)
    degree = np.diff(conflicts.indptr) - (conflicts.diagonal() != 0)
    by_column = sp.csc_array(p)
    by_column.sort_indices()
    indptr, rows = by_column.indptr.tolist(), by_column.indices.tolist()
    n_rows = p.shape[0]
    # (a stable sort keeps the natural order among equal degrees)
    largest_first = np.argsort(-degree, kind="stable")
    best = _greedy(largest_first, indptr, rows, n_rows, n)
    natural = np.arange(n)
    # (one order when they are the same -- every degree equal, as on a periodic grid's
    # stencil -- or when largest-first already needs no more than some row's columns)
    if n_colors(best) > _lower_bound(p) and not np.array_equal(largest_first, natural):
        colors = _greedy(natural, indptr, rows, n_rows, n)
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


def _greedy(
    order: np.ndarray, indptr: list[int], rows: list[int], n_rows: int, n: int
) -> np.ndarray:
    """Greedy distance-2 coloring of the columns in ``order``: each takes the smallest
    color no column sharing one of its ``rows`` has yet. Read through the rows (a bit
    mask of the colors each row holds: a column's rows, not its up to ``rows x columns``
    conflicting columns), which colors exactly as the conflict graph's greedy does."""
    colors = [0] * n  # 1 << color
    held = [0] * n_rows  # the colors of the columns colored so far, per row
    for v in order.tolist():
        mine = rows[indptr[v] : indptr[v + 1]]
        taken = 0
        for r in mine:
            taken |= held[r]
        bit = ~taken & (taken + 1)  # (the lowest color not taken)
        colors[v] = bit
        for r in mine:
            held[r] |= bit
    return np.asarray([bit.bit_length() - 1 for bit in colors], dtype=np.int64)
