"""``linalg`` rules for the singular value and QR decompositions: ``svd``, ``svdvals``,
``qr``.

Each is a primitive computing numpy's value (a decomposition packed into one flat array,
so that autograd sees one output), with a VJP written in differentiable operations;
forward mode pushes tangents through the exact transposition of that VJP, which refuses
wherever the VJP would have to check a traced cotangent.

SVD (reduced, ``k = min(m, n)``; Townsend's formulas): with ``F_ij = 1 / (s_j^2 - s_i^2)``,
``Abar = U [(F o (J - J^T)) S + diag(Sbar) + S (F o (K - K^T))] V^T + (I - U U^T) Ubar
S^{-1} V^T + U S^{-1} Vbar^T (I - V V^T)``, ``J = U^T Ubar``, ``K = V^T Vbar``.
Degeneracy:

* repeated singular values (to within rounding): their singular vectors are any common
  rotation; only a basis-independent function has a derivative, and the VJP checks that
  its cotangent's rotation part (``(J - J^T + K - K^T)`` within the block) vanishes, and
  that equal singular values get equal cotangents -- else ``UnsupportedError``;
* a zero singular value has a kink (as ``abs`` at 0): its own cotangent contributes 0,
  and where ``m != n`` the ``S^{-1}`` terms must meet a zero cotangent component, else
  the derivative is infinite: refused;
* ``full_matrices=True`` of a non-square matrix: the extra singular vectors are not
  unique at all (refused by the namespace: use ``full_matrices=False``);
* signs: each pair ``(u_i, v_i)`` may flip together (LAPACK's choice, piecewise constant):
  differentiate sign-independent quantities (``u_i v_i^T``, ``s``).

``svdvals``: ``U diag(sbar) V^T`` with the same rules for repeated and zero values.

QR (``A = Q R``, reduced; Walter and Lehmann): for ``m >= n``, ``Abar = (Qbar + Q N)
R^{-T}`` with ``N = triu(M) + tril(M^T, -1)``, ``M = R Rbar^T - Q^T Qbar``; for ``m < n``
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

from .boxes import raw_value
from .linalg_support import (
    T,
    check_rotation,
    check_tangent,
    check_values,
    close_pairs,
    diag_matrix,
    inverse_gaps,
    matmul,
    refuse,
    solve_right,
    spread,
)
from .xp_support import is_traced

__all__ = ["qr_packed", "singular_slope", "svd_packed", "svdvals", "unpack_qr", "unpack_svd"]


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


@primitive  # type: ignore[untyped-decorator]
def svd_packed(a: Any, *, full_matrices: bool = False) -> Any:
    """numpy's SVD of each matrix of a stack as one array ``(..., m k + k + k n)``: ``U``,
    ``S`` and ``Vh`` flattened (``full_matrices`` only for square matrices here)."""
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    return _pack(u, s[..., None, :], vh)


def unpack_svd(packed: Any, m: int, n: int) -> tuple[Any, Any, Any]:
    """``(U, S, Vh)`` of :func:`svd_packed`'s array of ``m`` by ``n`` matrices."""
    k = min(m, n)
    u, s, vh = _unpack(packed, [(m, k), (k,), (k, n)])
    return u, s, vh


def _svd_vjp(ans: Any, a: Any, full_matrices: bool = False) -> Any:
    m, n = anp.shape(a)[-2:]
    k = min(m, n)

    def vjp(g: Any) -> Any:
        u, s, vh = unpack_svd(ans, m, n)
        u_bar, s_bar, vh_bar = unpack_svd(g, m, n)
        v, v_bar = T(vh), T(vh_bar)
        j, kk = matmul(T(u), u_bar), matmul(T(v), v_bar)
        s_raw = np.asarray(raw_value(s))
        close = close_pairs(s_raw)
        nonzero = s_raw != 0
        # zero singular values: their U and V columns rotate independently
        zeros = close & ~nonzero[..., :, None] & ~nonzero[..., None, :]
        if close.any() and is_traced(g):
            raise refuse("svd", "it has a repeated singular value, and the cotangent is "
                         "traced", "differentiate basis-independent quantities")  # fmt: skip
        check_values("svd", s_bar, close & ~zeros)
        check_rotation("svd", (j - T(j)) + (kk - T(kk)), close & ~zeros)
        check_rotation("svd", j - T(j), zeros)
        check_rotation("svd", kk - T(kk), zeros)
        gaps = inverse_gaps(s * s, close)
        inner = (
            (gaps * (j - T(j))) * s[..., None, :]
            + diag_matrix(s_bar * nonzero)
            + s[..., :, None] * (gaps * (kk - T(kk)))
        )
        out = matmul(matmul(u, inner), vh)
        inverse = anp.where(nonzero, 1.0, 0.0) / anp.where(nonzero, s, 1.0)
        if m > k:
            rest = u_bar - matmul(u, j)  # (I - U U^T) Ubar
            _check_finite("svd", rest, nonzero, g)
            out = out + matmul(rest * inverse[..., None, :], vh)
        if n > k:
            rest = v_bar - matmul(v, kk)  # (I - V V^T) Vbar
            _check_finite("svd", rest, nonzero, g)
            out = out + matmul(u * inverse[..., None, :], T(rest))
        return out

    return vjp


def _check_finite(name: str, rest: Any, nonzero: np.ndarray, g: Any) -> None:
    """A zero singular value's ``S^{-1}`` term must meet a zero cotangent component."""
    if nonzero.all():
        return
    zero_columns = np.broadcast_to(~nonzero[..., None, :], np.shape(raw_value(rest)))
    if is_traced(g) or spread(rest, zero_columns, g):
        raise refuse(
            name,
            "a singular value is zero, and the loss depends on the singular vector beyond "
            "the matrix's range (an infinite derivative)",
            "differentiate quantities of the nonzero singular values only, or move away "
            "from the rank-deficient matrix",
        )


defvjp(svd_packed, _svd_vjp)


def singular_slope(a: Any, weights: Any, name: str = "svdvals") -> Any:
    """``U diag(weights) V^T``: the gradient of ``sum(weights * svdvals(a))``, with the
    degeneracy rules of the module doc (zero singular values contribute 0)."""
    m, n = anp.shape(a)[-2:]
    u, s, vh = unpack_svd(svd_packed(a), m, n)
    s_raw = np.asarray(raw_value(s))
    nonzero = s_raw != 0
    check_values(name, weights, close_pairs(s_raw) & nonzero[..., :, None] & nonzero[..., None, :])
    return matmul(u * (weights * (s_raw != 0))[..., None, :], vh)


@primitive  # type: ignore[untyped-decorator]
def svdvals(a: Any) -> Any:
    """numpy's singular values of each matrix of a stack (descending; differentiable)."""
    return np.linalg.svdvals(a)


def _svdvals_jvp(g: Any, ans: Any, a: Any) -> Any:
    m, n = anp.shape(a)[-2:]
    u, _, vh = unpack_svd(svd_packed(a), m, n)
    block = matmul(matmul(T(u), g), T(vh))
    s_raw = np.asarray(raw_value(ans))
    check_tangent("svdvals", block, close_pairs(s_raw))
    return anp.diagonal(block, axis1=-2, axis2=-1) * (s_raw != 0)


defvjp(svdvals, lambda ans, a: lambda g: singular_slope(a, g))
defjvp(svdvals, _svdvals_jvp)


@primitive  # type: ignore[untyped-decorator]
def qr_packed(a: Any, *, mode: str = "reduced") -> Any:
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
    if not np.all(np.diagonal(np.asarray(raw_value(r)), axis1=-2, axis2=-1)):
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
