"""Compressed Hessians (issue 22), the ``sparse`` family's second part:
``ad.hessian(f, x, sparsity=...)`` gives the dense Hessian's numbers in a
``scipy.sparse.csr_array`` on every engine that nests, in both modes. References: closed
forms (``scipy.optimize.rosen_hess`` for the chained Rosenbrock function; finite
differences of second order are too noisy where the Hessian is 0); the colors against
the known optima (tridiagonal: 3; a symmetric arrowhead: 2). Engines without nesting
refuse, as declared.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adswitch as ad
from adswitch.errors import UsageError

from .case import Case, arr, pos
from .checks_sparse import Sparse

F = "sparse"
NESTED = ("nested",)


def _xp(*xs: Any) -> Any:
    return ad.array_namespace(*xs)


def _rosen(x: Any) -> Any:  # the chained Rosenbrock function: a tridiagonal Hessian
    xp = _xp(x)
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _rosen_hessian(x: Any) -> tuple[Any, ...]:
    from scipy.optimize import rosen_hess

    return ((rosen_hess(np.asarray(x)),),)


def _tridiag_loss(x: Any) -> Any:  # couplings of neighbours only
    xp = _xp(x)
    return xp.sum(xp.sin(x[1:] * x[:-1])) + xp.sum(xp.exp(x) * x)


def _arrow_loss(x: Any) -> Any:  # x[0] couples with every element: an arrowhead Hessian
    xp = _xp(x)
    return xp.sum(xp.cos(x) * x[0]) + xp.sum(x[1:] ** 3)


def _tridiag_hessian(x: Any) -> tuple[Any, ...]:
    """The closed form: ``f = sum_i sin(x_i x_{i+1}) + sum_i x_i exp(x_i)``."""
    x = np.asarray(x)
    a, b = x[:-1], x[1:]
    s, c = np.sin(a * b), np.cos(a * b)
    h = np.diag(np.exp(x) * (x + 2.0))
    h[np.arange(a.size), np.arange(a.size)] += -s * b**2
    h[np.arange(1, x.size), np.arange(1, x.size)] += -s * a**2
    off = c - s * a * b
    h[np.arange(a.size), np.arange(1, x.size)] = off
    h[np.arange(1, x.size), np.arange(a.size)] = off
    return ((h,),)


def _arrow_hessian(x: Any) -> tuple[Any, ...]:
    """The closed form: ``f = x0 sum_i cos(x_i) + sum_{i>0} x_i^3``."""
    x = np.asarray(x)
    h = np.diag(np.concatenate([[0.0], -np.cos(x[1:]) * x[0] + 6.0 * x[1:]]))
    h[0, 1:] = h[1:, 0] = -np.sin(x[1:])
    h[0, 0] = -2.0 * np.sin(x[0]) - x[0] * np.cos(x[0])
    return ((h,),)


K = 3  # _several: t["w"] couples with y[:K]


def _several(x: Any, y: Any, c: Any, t: dict[str, Any]) -> Any:
    """Partially separable, over two arrays, a Const and a dict:
    ``sum_i (x_i - y_i)^2 x_{i+1} + sum_k c_k w_k^2 y_k + x_0 sum_j sin z_j``."""
    xp = _xp(x)
    chain = xp.sum((x[:-1] - y[:-1]) ** 2 * x[1:])
    return chain + xp.sum(c * t["w"] ** 2 * y[:K]) + x[0] * xp.sum(xp.sin(t["z"]))


def _several_flat(x: Any, y: Any, c: Any, w: Any, z: Any) -> np.ndarray:
    """The closed form of ``_several``'s Hessian, flattened (x, y, w, z)."""
    n, m = x.size, x.size - 1
    ix, iy, iw, iz = 0, n, 2 * n, 2 * n + K
    h = np.zeros((iz + z.size, iz + z.size))
    i = np.arange(m)
    r = x[:-1] - y[:-1]
    for a, b, v in [
        (ix + i, ix + i, 2 * x[1:]),
        (iy + i, iy + i, 2 * x[1:]),
        (ix + i, ix + i + 1, 2 * r),
        (ix + i, iy + i, -2 * x[1:]),
        (iy + i, ix + i + 1, -2 * r),
        (iw + np.arange(K), iw + np.arange(K), 2 * c * y[:K]),
        (iw + np.arange(K), iy + np.arange(K), 2 * c * w),
        (np.full(z.size, ix), iz + np.arange(z.size), np.cos(z)),
        (iz + np.arange(z.size), iz + np.arange(z.size), -np.sin(z) * x[0]),
    ]:
        h[a, b] += v
        off = a != b  # (the symmetric entries, off the diagonal)
        h[b[off], a[off]] += v[off]
    return h


def _several_hessian(x: Any, y: Any, c: Any, t: dict[str, Any]) -> tuple[Any, ...]:
    """The closed form in the dense ``ad.hessian``'s layout: ``H[a][b]`` the tree of
    argument ``a`` with each leaf replaced by the tuple of every argument's tree."""
    leaves = {"x": x, "y": y, "w": t["w"], "z": t["z"]}
    h = _several_flat(x, y, c, t["w"], t["z"])
    starts = np.cumsum([0] + [v.size for v in leaves.values()])
    at = dict(zip(leaves, starts[:-1]))

    def row(a: str) -> tuple[Any, ...]:
        def blk(b: str) -> Any:
            ra, rb = leaves[a].size, leaves[b].size
            return h[at[a] : at[a] + ra, at[b] : at[b] + rb].copy()

        return (blk("x"), blk("y"), None, {"w": blk("w"), "z": blk("z")})

    return (row("x"), row("y"), None, {"w": row("w"), "z": row("z")})


def _several_args(w_first: bool = False) -> tuple[Any, ...]:
    w, z = pos(1081, K), pos(1082, 2)
    t = {"w": w, "z": z} if w_first else {"z": z, "w": w}  # (blocks placed by key)
    return (pos(1078, 5), arr(1079, 5), ad.Const(pos(1080, K)), t)


def _w_first() -> tuple[Any, ...]:
    """As a given pattern is laid out: a dict's leaves flatten in its key order."""
    return _several_args(True)


def _several_wrong(x: Any, y: Any, c: Any, t: dict[str, Any]) -> Any:
    """``_several``'s pattern without its x-z coupling (x_0 with each z_j)."""
    p = _several_flat(x, y, c, t["w"], t["z"]) != 0
    iz = 2 * x.size + K
    p[0, iz:] = p[iz:, 0] = False
    return p


def _several_flat_pattern(x: Any, y: Any, c: Any, t: dict[str, Any]) -> Any:
    return _several_flat(x, y, c, t["w"], t["z"]) != 0


def _pair_loss(pair: tuple[Any, Any], s: Any) -> Any:  # a tuple tree and a 0-d array
    xp = _xp(pair[0])
    return xp.sum(pair[0] ** 2 * pair[1]) + s**3 * pair[1][0]


def _pair_hessian(pair: tuple[Any, Any], s: Any) -> tuple[Any, ...]:
    """``sum a^2 b + s^3 b_0``: H[0] holds the rows of ``a`` and ``b``, H[1] that of ``s``."""
    a, b = pair
    n = a.size
    bs = np.zeros(n)
    bs[0] = 3 * s**2  # d2 / db_0 ds
    row_a = ((np.diag(2 * b), np.diag(2 * a)), np.zeros(n))
    row_b = ((np.diag(2 * a), np.zeros((n, n))), bs)
    row_s = ((np.zeros(n), bs), np.asarray(6 * s * b[0]))
    return ((row_a, row_b), row_s)


def _rosen_aux(x: Any) -> Any:  # the loss first, aux after it: ignored, as the dense one
    return _rosen(x), {"first": x[0] - 1.0, "tag": "aux"}


def _hessian(name: str, what: str, fn: Any, make: Any, sparse: Sparse, **kw: Any) -> Case:
    # (second derivatives: an engine without nesting refuses, as declared)
    return Case(
        f"{F}.{name}", F, what, fn, make, entry="hessian", sparse=sparse, requires=NESTED, **kw
    )


CASES = [
    _hessian(
        "hessian_rosenbrock",
        "the chained Rosenbrock Hessian (tridiagonal) against scipy.optimize.rosen_hess",
        _rosen,
        lambda: (pos(1070, 8),),
        Sparse(columns=3),
        closed_form=_rosen_hessian,
    ),
    _hessian(
        "hessian_tridiagonal",
        "a tridiagonal Hessian (neighbour couplings), against its closed form",
        _tridiag_loss,
        lambda: (pos(1071, 7),),
        Sparse(columns=3),
        closed_form=_tridiag_hessian,
    ),
    _hessian(
        "hessian_arrowhead",
        "an arrowhead Hessian (x[0] couples with all): 2 colors, against its closed form",
        _arrow_loss,
        lambda: (pos(1072, 6),),
        Sparse(columns=2),
        closed_form=_arrow_hessian,
    ),
    _hessian(
        "hessian_several_args",
        "two arrays, a Const and a dict ('z' before 'w'): blocks in the dense layout, "
        "against the closed form",
        _several,
        _several_args,
        Sparse(),
        closed_form=_several_hessian,
    ),
    _hessian(
        "hessian_several_given_pattern",
        "the same with the flattened matrix's pattern given (x, y, then the dict's leaves in "
        "its key order)",
        _several,
        _w_first,
        Sparse(sparsity=_several_flat_pattern),
        closed_form=_several_hessian,
    ),
    _hessian(
        "hessian_tuple_tree",
        "a tuple tree and a 0-d argument: 1-by-n and 1-by-1 sparse blocks, closed form",
        _pair_loss,
        lambda: ((pos(1083, 3), pos(1084, 3)), np.asarray(0.8)),
        Sparse(),
        closed_form=_pair_hessian,
    ),
    _hessian(
        "hessian_aux",
        "f returns (loss, aux): aux ignored as by the dense ad.hessian (scipy.optimize)",
        _rosen_aux,
        lambda: (pos(1085, 6),),
        Sparse(columns=3),
        closed_form=_rosen_hessian,
    ),
    _hessian(
        "hessian_several_wrong_pattern",
        "a pattern of several arguments missing a cross-argument coupling: check=True refuses",
        _several,
        _w_first,
        Sparse(sparsity=_several_wrong),
        raises=UsageError,
    ),
    _hessian(
        "hessian_wrong_pattern",
        "a Hessian pattern missing nonzeros: check=True refuses",
        _rosen,
        lambda: (pos(1073, 5),),
        Sparse(sparsity=np.eye(5, dtype=bool)),
        raises=UsageError,
    ),
]
