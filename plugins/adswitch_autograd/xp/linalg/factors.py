"""``linalg`` rules for the singular value and QR decompositions: ``svd`` (its singular
values, and its singular vectors packed into one array, one primitive each),
``svdvals``, ``qr``.

Each is a primitive computing numpy's value, with a VJP written in differentiable
operations; singular values have a JVP rule, the vectors and QR are pushed forward by
the exact transposition of their VJP.

Singular values: ``ds_i = u_i^T dA v_i``. Singular vectors (reduced, ``k = min(m, n)``;
Townsend's formulas, ``F_ij = 1 / (s_j^2 - s_i^2)``, ``J = U^T Ubar``, ``K = V^T Vbar``):
``Abar = U [(F o (J - J^T)) S + S (F o (K - K^T))] V^T + (I - U U^T) Ubar S^{-1} V^T + U
S^{-1} Vbar^T (I - V V^T)``. Degeneracy -- repeated singular values, and zero ones, both
to within rounding (:func:`.support.close_pairs`, :func:`.support.negligible`):

* a zero singular value has a kink (as ``abs`` at 0): its slope is 0;
* functions of repeated nonzero singular values: the first derivative in reverse mode
  of functions symmetric in them is computed; different cotangents for equal values,
  forward mode in a direction that splits them, and higher derivatives are refused;
* functions of the singular vectors at a repeated or zero singular value: refused (the
  vectors are not unique there, and their cotangent does not determine a derivative);
  a forward-mode ``jvp`` of ``svd`` there is refused even if only ``S`` is used (it
  pushes every output) -- ``svdvals`` is not;
* ``full_matrices=True`` of a non-square matrix: the extra singular vectors are not
  unique at all (refused by the namespace: use ``full_matrices=False``);
* signs: each pair ``(u_i, v_i)`` may flip together (LAPACK's choice, piecewise constant):
  differentiate sign-independent quantities (``u_i v_i^T``, ``s``).

QR (``A = Q R``, reduced; Walter and Lehmann): for ``m >= n``, ``Abar = (Qbar + Q N)
R^{-T}`` with ``N = triu(M) + tril(M^T, -1)``, ``M = Rbar R^T - Q^T Qbar``; for ``m < n``
the first ``m`` columns are factored so and the rest, ``Q^T Y``, added. ``R`` must be
invertible (full rank; refused otherwise). ``mode='complete'`` of a tall matrix has
extra, non-unique columns of ``Q`` (refused by the namespace). Signs: LAPACK's
Householder reflections fix ``R``'s diagonal signs piecewise -- they flip where a
partially reduced column's leading element crosses zero, where ``Q`` and ``R`` jump;
differentiate sign-independent quantities (``Q Q^T``, ``|R|``, ``R^T R``) where that
matters.
"""

from __future__ import annotations

import math
from typing import Any

import autograd.numpy as anp
import numpy as np
from autograd.extend import defjvp, defvjp, primitive

from ...tracing.boxes import raw_value
from .support import (
    T,
    check_tangent,
    check_values,
    close_pairs,
    diagonal,
    inverse_gaps,
    matmul,
    negligible,
    refuse,
    refuse_vectors,
    solve_right,
)

__all__ = [
    "qr_packed", "singular_slope", "singular_vectors", "svd_values", "svdvals", "unpack_qr",
    "unpack_vectors",
]  # fmt: skip


def _pack(*parts: np.ndarray) -> np.ndarray:
    batch = parts[0].shape[: parts[0].ndim - 2]
    flat = [p.reshape(*batch, math.prod(p.shape[len(batch) :])) for p in parts]
    return np.concatenate(flat, axis=-1)


def _unpack(packed: Any, shapes: list[tuple[int, ...]]) -> list[Any]:
    batch = tuple(anp.shape(packed)[:-1])
    out, start = [], 0
    for shape in shapes:
        size = math.prod(shape)
        out.append(anp.reshape(packed[..., start : start + size], batch + shape))
        start += size
    return out


def _live_pairs(s: np.ndarray) -> np.ndarray:
    """Pairs of equal singular values that are not zero (zero ones have slope 0)."""
    live = ~negligible(s)
    pairs: np.ndarray = close_pairs(s) & live[..., :, None] & live[..., None, :]
    return pairs


@primitive  # type: ignore[untyped-decorator]
def svdvals(a: Any) -> Any:
    """numpy's singular values of each matrix of a stack (descending)."""
    return np.linalg.svdvals(a)


@primitive  # type: ignore[untyped-decorator]
def svd_values(a: Any, *, full_matrices: bool = True) -> Any:
    """The singular values numpy's ``svd`` gives each matrix of a stack (which may differ
    from ``svdvals``' in the last bits)."""
    return np.linalg.svd(a, full_matrices=full_matrices)[1]


@primitive  # type: ignore[untyped-decorator]
def singular_vectors(a: Any, *, full_matrices: bool = False) -> Any:
    """numpy's ``svd`` vectors of each matrix of a stack as one array ``(..., m k + k n)``:
    ``U`` and ``Vh`` flattened (``full_matrices`` only for square matrices here)."""
    u, _, vh = np.linalg.svd(a, full_matrices=full_matrices)
    return _pack(u, vh)


def unpack_vectors(packed: Any, m: int, n: int) -> tuple[Any, Any]:
    """``(U, Vh)`` of :func:`singular_vectors`' array of ``m`` by ``n`` matrices."""
    k = min(m, n)
    u, vh = _unpack(packed, [(m, k), (k, n)])
    return u, vh


def singular_slope(a: Any, weights: Any, s: np.ndarray, name: str = "svdvals") -> Any:
    """``U diag(weights) V^T``: the gradient of ``sum(weights * s)``, ``s`` the singular
    values of ``a``, with the degeneracy rules of the module doc (zero ones: slope 0)."""
    m, n = anp.shape(a)[-2:]
    check_values(name, weights, _live_pairs(s))
    u, vh = unpack_vectors(singular_vectors(a), m, n)
    return matmul(u * (weights * ~negligible(s))[..., None, :], vh)


def _values_vjp(name: str) -> Any:
    def maker(ans: Any, a: Any, full_matrices: bool = True) -> Any:
        return lambda g: singular_slope(a, g, np.asarray(raw_value(ans)), name)

    return maker


def _values_jvp(name: str) -> Any:
    def jvp(g: Any, ans: Any, a: Any, full_matrices: bool = True) -> Any:
        m, n = anp.shape(a)[-2:]
        s = np.asarray(raw_value(ans))
        u, vh = unpack_vectors(singular_vectors(a), m, n)
        block = matmul(matmul(T(u), g), T(vh))
        check_tangent(name, block, _live_pairs(s))
        return diagonal(block) * ~negligible(s)

    return jvp


defvjp(svdvals, _values_vjp("svdvals"))
defjvp(svdvals, _values_jvp("svdvals"))
defvjp(svd_values, _values_vjp("svd"))
defjvp(svd_values, _values_jvp("svd"))


def _vectors_vjp(ans: Any, a: Any, full_matrices: bool = False) -> Any:
    m, n = anp.shape(a)[-2:]
    k = min(m, n)

    def vjp(g: Any) -> Any:
        s = svd_values(a, full_matrices=False)
        s_raw = np.asarray(raw_value(s))
        close = close_pairs(s_raw)
        if close.any() or negligible(s_raw).any():
            raise refuse_vectors("svd", "the matrix has a repeated or zero singular value")
        u, vh = unpack_vectors(ans, m, n)
        u_bar, vh_bar = unpack_vectors(g, m, n)
        v, v_bar = T(vh), T(vh_bar)
        j, kk = matmul(T(u), u_bar), matmul(T(v), v_bar)
        gaps = inverse_gaps(s * s, close)
        inner = (gaps * (j - T(j))) * s[..., None, :] + s[..., :, None] * (gaps * (kk - T(kk)))
        out = matmul(matmul(u, inner), vh)
        if m > k:  # (I - U U^T) Ubar S^{-1} V^T
            out = out + matmul((u_bar - matmul(u, j)) / s[..., None, :], vh)
        if n > k:  # U S^{-1} Vbar^T (I - V V^T)
            out = out + matmul(u / s[..., None, :], T(v_bar - matmul(v, kk)))
        return out

    return vjp


defvjp(singular_vectors, _vectors_vjp)


@primitive  # type: ignore[untyped-decorator]
def qr_packed(a: Any, *, mode: Any = "reduced") -> Any:
    """numpy's QR decomposition of each matrix of a stack as one array: ``Q`` and ``R``
    flattened (``mode='complete'`` only where it equals ``'reduced'`` here)."""
    q, r = np.linalg.qr(a, mode=mode)
    return _pack(q, r)


def unpack_qr(packed: Any, m: int, n: int) -> tuple[Any, Any]:
    """``(Q, R)`` of :func:`qr_packed`'s array of ``m`` by ``n`` matrices (reduced)."""
    k = min(m, n)
    q, r = _unpack(packed, [(m, k), (k, n)])
    return q, r


def _qr_square_vjp(q: Any, r: Any, q_bar: Any, r_bar: Any) -> Any:
    """The cotangent of ``A = Q R`` for ``R`` square (``m >= n``)."""
    if negligible(np.abs(np.diagonal(np.asarray(raw_value(r)), axis1=-2, axis2=-1))).any():
        raise refuse(
            "qr",
            "the matrix does not have full column rank (R has a zero on its diagonal)",
            "differentiate QR of a full-rank matrix",
        )
    m = matmul(r, T(r_bar)) - matmul(T(q_bar), q)  # M^T in the module doc's terms
    n = anp.tril(m) + anp.triu(T(m), 1)
    return solve_right(q_bar + matmul(q, n), T(r))


def _qr_vjp(ans: Any, a: Any, mode: str = "reduced") -> Any:
    m, n = anp.shape(a)[-2:]

    def vjp(g: Any) -> Any:
        q, r = unpack_qr(ans, m, n)
        q_bar, r_bar = unpack_qr(g, m, n)
        if m >= n:
            return _qr_square_vjp(q, r, q_bar, r_bar)
        # A = [X | Y]: X = Q U is factored, R = [U | Q^T Y]
        y = a[..., :, m:]
        v_bar = r_bar[..., :, m:]
        x_bar = _qr_square_vjp(q, r[..., :, :m], q_bar + matmul(y, T(v_bar)), r_bar[..., :, :m])
        return anp.concatenate([x_bar, matmul(q, v_bar)], axis=-1)

    return vjp


defvjp(qr_packed, _qr_vjp)
