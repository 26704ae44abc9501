"""Gradient and tangent rules of the factorizations: ``cholesky``, ``eigh``, ``qr``, ``svd``.

Rules as in ``matrix_solvers`` (batch-aware, written with primitives). The packed
outputs (see ``matrix_primitives``) are taken apart with ``part``; a cotangent arrives
packed the same way, zeros in the parts the function did not use.

Conventions and degeneracy:

* ``cholesky``, ``eigh`` read the lower triangle of their argument (numpy's); the
  gradient is the derivative of exactly that function: ``2 tril(G, -1) + diag(G)`` for
  ``G`` the symmetric gradient jax and torch return. The two agree on every matrix made
  symmetric inside ``f`` (``A = B @ B.T``, ``(B + B.T) / 2``).
* ``cholesky``: defined for positive-definite matrices only (numpy raises otherwise).
* ``eigh``: eigenvalues are differentiable where they are distinct; the eigenvector
  terms of a pair of equal eigenvalues (numerically: closer than 16 n eps |w|_max) are
  set to 0. That is exact for every function of the eigenvectors that depends on a
  repeated eigenvalue's eigenspace only through its projector (``V_c V_c^T``) -- the
  only well-posed ones there -- and for symmetric functions of the eigenvalues; for
  others no derivative exists and the rule returns that convention's value.
* ``qr``: ``m >= n`` (the namespace composes ``m < n``); needs ``R`` regular (full
  column rank), a :class:`~.matrix_helpers.SingularMatrixError` otherwise. numpy's
  (Householder) signs: only quantities invariant under ``Q -> Q D, R -> D R``
  (``D`` diagonal, entries +-1) are the same on every engine.
* ``svd`` (reduced): for a pair of equal singular values, the term of the rotation the
  pair's ``U`` and ``V`` columns share is set to 0 (what a function that depends on them
  only through ``U_c V_c^T``, ``U_c U_c^T`` or ``V_c V_c^T`` sees: exact for those, the
  well-posed ones) and the rest is kept (so the polar factor ``U V^T`` of an orthogonal
  matrix has its derivative); the terms of a zero singular value (the ``(I - U U^T)`` /
  ``(I - V V^T)`` terms of non-square matrices, and pairs of zeros) are set to 0. Signs
  are numpy's: only quantities invariant under flipping a pair ``(u_i, v_i)`` are the
  same on every engine. The gradient of the
  singular values alone (``U diag(g) V^T``) is well-defined everywhere (a subgradient
  at repeated or zero singular values).
"""

from __future__ import annotations

from typing import Any

from ..recording import defjvp, defvjp
from . import matrix_primitives as M
from . import primitives as P
from .helpers import shape_of
from .matrix_helpers import (
    col,
    diag_embed,
    diagonal,
    gap_reciprocals,
    lower_gradient,
    lower_read,
    mT,
    part,
    regular_triangle,
    row,
    safe_reciprocal,
    singular,
    solve_right,
    sum_reciprocals,
    tri,
)

Tangents = tuple[Any, ...]
_ALL = slice(None)


# -- cholesky: x = L L^T; dL = L phi(inv(L) dx inv(L)^T) -------------------------------------
def _phi(x: Any) -> Any:
    """The lower triangle of ``x`` with its diagonal halved."""
    return x * tri(shape_of(x)[-1], x, diag=0.5)


def _cholesky_vjp(g: Any, ans: Any, x: Any) -> Any:
    inner = _phi(P.matmul_tn(ans, g))  # phi(L^T G)
    s = solve_right(M.solve(mT(ans), inner), ans)  # inv(L)^T phi(L^T G) inv(L)
    return _phi(s + mT(s))  # = lower_gradient(sym(s))


def _cholesky_jvp(ts: Tangents, ans: Any, x: Any) -> Any:
    inner = solve_right(M.solve(ans, lower_read(ts[0])), mT(ans))  # inv(L) dx inv(L)^T
    return P.matmul(ans, _phi(inner))


defvjp(M.cholesky, _cholesky_vjp)
defjvp(M.cholesky, _cholesky_jvp)


# -- eigh: x V = V diag(w); dw = diag(V^T dx V), dV = V (F * (V^T dx V)) ---------------------
def _eigh_parts(packed: Any) -> tuple[Any, Any]:
    return part(packed, 0, _ALL), part(packed, slice(1, None), _ALL)


def _eigh_vjp(g: Any, ans: Any, x: Any) -> Any:
    w, v = _eigh_parts(ans)
    gw, gv = _eigh_parts(g)
    b = P.matmul_tn(v, gv)
    inner = diag_embed(gw) + gap_reciprocals(w) * (b - mT(b)) * 0.5
    return lower_gradient(P.matmul_nt(P.matmul(v, inner), v))


def _eigh_jvp(ts: Tangents, ans: Any, x: Any) -> Any:
    w, v = _eigh_parts(ans)
    k = P.matmul(P.matmul_tn(v, lower_read(ts[0])), v)
    dv = P.matmul(v, gap_reciprocals(w) * k)
    return P.concat(row(diagonal(k)), dv, axis=-2)


defvjp(M.eigh, _eigh_vjp)
defjvp(M.eigh, _eigh_jvp)


# -- qr (m >= n): C = Q^T dx inv(R), O = tril(C, -1) - tril(C, -1)^T; -----------------------
#    dR = (C - O) R, dQ = dx inv(R) - Q (C - O)
_QR_SINGULAR = (
    "the derivative of xp.linalg.qr needs R regular, and this matrix has dependent columns",
    "differentiate qr of a matrix of full column rank",
)


def _qr_parts(packed: Any) -> tuple[Any, Any]:
    shape = shape_of(packed)
    m = shape[-2] - shape[-1]
    return part(packed, slice(None, m), _ALL), part(packed, slice(m, None), _ALL)


def _qr_vjp(g: Any, ans: Any, x: Any) -> Any:
    q, r = _qr_parts(ans)
    gq, gr = _qr_parts(g)
    m = P.matmul_nt(gr, r) - P.matmul_tn(q, gq)
    low = tri(shape_of(m)[-1], m, strict=True)
    copied = m - m * low + mT(m) * low  # triu(m) + triu(m, 1)^T
    regular_triangle(r, *_QR_SINGULAR)
    with singular(*_QR_SINGULAR):
        return mT(M.solve(r, mT(gq + P.matmul(q, copied))))  # (...) inv(R)^T


def _qr_jvp(ts: Tangents, ans: Any, x: Any) -> Any:
    q, r = _qr_parts(ans)
    regular_triangle(r, *_QR_SINGULAR)
    with singular(*_QR_SINGULAR):
        right = solve_right(ts[0], r)  # dx inv(R)
    c = P.matmul_tn(q, right)
    low = c * tri(shape_of(c)[-1], c, strict=True)
    upper = c - low + mT(low)  # C - O: upper triangular
    return P.concat(right - P.matmul(q, upper), P.matmul(upper, r), axis=-2)


defvjp(M.qr, _qr_vjp)
defjvp(M.qr, _qr_jvp)


# -- svd (reduced): x = U diag(s) V^T; dP = U^T dx V, ds = diag(dP), ------------------------
#    dU = U (Fm * sym(dP) + Fp * skew(dP)) + (I - U U^T) dx V inv(S),
#    dV = V (Fm * sym(dP) - Fp * skew(dP)) + (I - V V^T) dx^T U inv(S),
# Fm_ij = 1 / (s_j - s_i), Fp_ij = 1 / (s_j + s_i) -- the usual 1 / (s_j^2 - s_i^2) split in
# two, so that a repeated singular value zeroes only Fm's term (a rotation shared by the
# U and V columns of equal singular values, which well-posed functions do not see),
# and Fp's term, finite there, stays (the polar factor U V^T of an orthogonal matrix).
def _svd_parts(packed: Any, rows: int) -> tuple[Any, Any, Any]:
    u = part(packed, slice(None, rows), _ALL)
    return u, part(packed, rows, _ALL), part(packed, slice(rows + 1, None), _ALL)


def _svd_vjp(g: Any, ans: Any, x: Any, rows: int) -> Any:
    u, s, v = _svd_parts(ans, rows)
    gu, gs, gv = _svd_parts(g, rows)
    k = shape_of(s)[-1]
    cols = shape_of(ans)[-2] - rows - 1
    bu, bv = P.matmul_tn(u, gu), P.matmul_tn(v, gv)
    su, sv = bu - mT(bu), bv - mT(bv)
    rotations = gap_reciprocals(s) * (su + sv) + sum_reciprocals(s) * (su - sv)
    out = P.matmul_nt(P.matmul(u, diag_embed(gs) + rotations * 0.5), v)
    if rows > k:  # (I - U U^T) gU inv(S) V^T
        out = out + P.matmul_nt((gu - P.matmul(u, bu)) * row(safe_reciprocal(s)), v)
    if cols > k:  # U inv(S) ((I - V V^T) gV)^T
        out = out + P.matmul(u, col(safe_reciprocal(s)) * mT(gv - P.matmul(v, bv)))
    return out


def _svd_jvp(ts: Tangents, ans: Any, x: Any, rows: int) -> Any:
    u, s, v = _svd_parts(ans, rows)
    t = ts[0]
    k = shape_of(s)[-1]
    cols = shape_of(ans)[-2] - rows - 1
    dp = P.matmul(P.matmul_tn(u, t), v)
    dpt = mT(dp)
    sym = gap_reciprocals(s) * (dp + dpt) * 0.5
    skew = sum_reciprocals(s) * (dp - dpt) * 0.5
    du = P.matmul(u, sym + skew)
    dv = P.matmul(v, sym - skew)
    if rows > k:
        du = du + (P.matmul(t, v) - P.matmul(u, dp)) * row(safe_reciprocal(s))
    if cols > k:
        dv = dv + (P.matmul(mT(t), u) - P.matmul(v, dpt)) * row(safe_reciprocal(s))
    return P.concat(du, row(diagonal(dp)), dv, axis=-2)


defvjp(M.svd, _svd_vjp)
defjvp(M.svd, _svd_jvp)
