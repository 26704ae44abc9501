"""Symmetric (star) coloring of a Hessian's pattern, and its direct decompression.

A star coloring (Gebremedhin, Manne and Pothen, "What color is your Jacobian?", SIAM
Review 2005) colors the adjacency graph of the pattern (vertex ``i``: variable ``i``; an
edge: an off-diagonal nonzero) so that adjacent vertices differ (distance-1) and every
path on four vertices uses at least three colors. Then, for each nonzero ``H[i, j]``,
``j``'s color is unique among the columns of row ``i`` or ``i``'s among those of row
``j`` (else ``k - i - j - l`` would be a two-colored path): one H·v per color, seeded with
the sum of its basis vectors, gives every nonzero directly. A star coloring needs at most
as many colors as a column (distance-2) coloring, often far fewer (an arrowhead: 2 vs n).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adswitch.sparse.coloring import n_colors
from adswitch.sparse.tracer import _sp

__all__ = ["decompress_star", "is_star", "star_coloring", "star_gather", "symmetric_pattern"]


def symmetric_pattern(pattern: Any) -> Any:
    """``pattern`` OR its transpose, as a sorted boolean csr_array (a Hessian's pattern is
    symmetric; a user's half-given one is completed)."""
    sp = _sp()
    p = sp.csr_array(pattern, dtype=bool)
    if p.ndim != 2 or p.shape[0] != p.shape[1]:
        raise ValueError(f"a Hessian pattern is square; got shape {p.shape}")
    out = sp.csr_array(p + p.T, dtype=bool)
    out.eliminate_zeros()  # (explicit False entries are no nonzeros)
    out.sort_indices()
    return out


def star_coloring(pattern: Any) -> np.ndarray:
    """Per variable, its color (0, 1, ...): a star coloring of the symmetric ``pattern``.

    Greedy in two vertex orders -- largest-first (by degree) and natural -- keeping the
    one with fewer colors.

    Args:
        pattern: a square, symmetric boolean pattern (:func:`symmetric_pattern`).

    Returns:
        An ``int64`` array of length ``n``.

    Example:
        >>> import numpy as np
        >>> from adswitch.sparse.star import star_coloring
        >>> arrow = np.eye(5, dtype=bool); arrow[0, :] = arrow[:, 0] = True
        >>> star_coloring(arrow).tolist()
        [0, 1, 1, 1, 1]
    """
    p = _sp().csr_array(pattern, dtype=bool, copy=True)  # (the caller's keeps its diagonal)
    n = p.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    p.setdiag(False)
    p.eliminate_zeros()
    indptr, indices = p.indptr.tolist(), p.indices.tolist()
    adj = [indices[indptr[v] : indptr[v + 1]] for v in range(n)]
    degree = np.diff(p.indptr)
    best: np.ndarray | None = None
    # (a stable sort keeps the natural order among equal degrees)
    for order in (np.argsort(-degree, kind="stable"), np.arange(n)):
        colors = _greedy_star(order.tolist(), adj, n)
        if best is None or n_colors(colors) < n_colors(best):
            best = colors
    assert best is not None
    return best


def _greedy_star(order: list[int], adj: list[list[int]], n: int) -> np.ndarray:
    """Give each vertex, in ``order``, the least color that makes no two-colored edge and
    no two-colored path on four vertices among the colored ones."""
    colors = [-1] * n
    # seen[x][c]: how many colored neighbours of x have color c (kept as vertices are
    # colored, so the four-vertex check below costs O(1) instead of a scan of adj[x])
    seen: list[dict[int, int]] = [{} for _ in range(n)]
    for v in order:
        forbidden: set[int] = set()
        by_color: dict[int, list[int]] = {}
        for w in adj[v]:
            cw = colors[w]
            if cw < 0:
                continue
            forbidden.add(cw)  # distance-1
            by_color.setdefault(cw, []).append(w)
            # v - w - x - y with color(y) == color(w) (y != w; v is not colored yet):
            # v may not take color(x)
            for x in adj[w]:
                cx = colors[x]
                if cx >= 0 and x != v and seen[x].get(cw, 0) >= 2:
                    forbidden.add(cx)
        # u - v - w - x with color(u) == color(w): v may not take color(x)
        for same in by_color.values():
            if len(same) < 2:
                continue
            for w in same:
                for x in adj[w]:
                    if x != v and colors[x] >= 0:
                        forbidden.add(colors[x])
        c = 0
        while c in forbidden:
            c += 1
        colors[v] = c
        for u in adj[v]:
            seen[u][c] = seen[u].get(c, 0) + 1
    return np.asarray(colors, dtype=np.int64)


def star_gather(pattern: Any, colors: np.ndarray) -> np.ndarray:
    """Where each nonzero of ``pattern`` (in its CSR order) is read from the compressed
    ``(colors, n)`` products, as flat indices: ``H[i, j]`` from ``(color[j], i)`` where
    ``j``'s color is unique in row ``i``, else from ``(color[i], j)`` (the star coloring's
    guarantee). Computed once per coloring; :func:`decompress_star` applies it."""
    p = _sp().csr_array(pattern, dtype=bool)
    n = p.shape[0]
    rows, cols = _entries(p)
    direct = _per_row(p, colors)[rows, colors[cols]] == 1
    take: np.ndarray = np.where(direct, colors[cols] * n + rows, colors[rows] * n + cols)
    return take


def decompress_star(pattern: Any, colors: np.ndarray, compressed: np.ndarray) -> Any:
    """The Hessian on ``pattern`` from ``compressed[c] = H @ (sum of color c's basis
    vectors)``, read by :func:`star_gather`'s rule.

    Args:
        pattern: the symmetric boolean csr_array the coloring was made for.
        colors: its star coloring.
        compressed: ``(colors, n)``, one H·v per color.

    Returns:
        A ``scipy.sparse.csr_array`` in the pattern's CSR order (symmetric).

    Example:
        >>> import numpy as np
        >>> from adswitch.sparse.star import decompress_star, star_coloring
        >>> H = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 4.0], [0.0, 4.0, 5.0]])
        >>> c = star_coloring(H != 0)
        >>> seeds = np.eye(c.max() + 1)[c]                   # (n, colors)
        >>> decompress_star(H != 0, c, (H @ seeds).T).toarray().tolist() == H.tolist()
        True
    """
    p = _sp().csr_array(pattern, dtype=bool)
    data = np.asarray(compressed).reshape(-1)[star_gather(p, colors)]
    return _sp().csr_array((data, p.indices.copy(), p.indptr.copy()), shape=p.shape)


def _entries(p: Any) -> tuple[np.ndarray, np.ndarray]:
    """Row and column of each stored entry of a CSR pattern, in its order."""
    return np.repeat(np.arange(p.shape[0]), np.diff(p.indptr)), p.indices


def _per_row(p: Any, colors: np.ndarray) -> np.ndarray:
    """``out[i, c]``: how many columns of row ``i`` of ``p`` have color ``c``."""
    sp = _sp()
    n = p.shape[0]
    one_hot = sp.csr_array(
        (np.ones(n), (np.arange(n), colors)), shape=(n, max(n_colors(colors), 1))
    )
    return np.asarray((sp.csr_array(p, dtype=np.float64) @ one_hot).toarray())


def is_star(pattern: Any, colors: np.ndarray) -> bool:
    """Whether ``colors`` is distance-1 on ``pattern`` and every nonzero is directly
    recoverable (what :func:`star_gather` relies on: a check of a coloring from outside)."""
    p = _sp().csr_array(pattern, dtype=bool)
    rows, cols = _entries(p)
    per_row = _per_row(p, colors)
    off = rows != cols
    ok_i = per_row[rows, colors[cols]] == 1
    ok_j = per_row[cols, colors[rows]] == 1
    distance1 = bool(np.all(colors[rows[off]] != colors[cols[off]]))
    return distance1 and bool(np.all(ok_i | ok_j))
