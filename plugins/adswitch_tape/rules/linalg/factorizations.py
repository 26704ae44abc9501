"""Gradient and tangent rules of the factorizations: ``cholesky``, ``eigh``, ``qr``, ``svd``.

Rules as in ``solvers`` (batch-aware, written with primitives). The packed
outputs (see ``primitives``) are taken apart with ``part``; a cotangent arrives
packed the same way, zeros in the parts the function did not use.

Conventions and degeneracy:

* ``cholesky``, ``eigh`` read the lower triangle of their argument (numpy's); the
  gradient is the derivative of exactly that function: ``2 tril(G, -1) + diag(G)`` for
  ``G`` the symmetric gradient jax and torch return. The two agree on every matrix made
  symmetric inside ``f`` (``A = B @ B.T``, ``(B + B.T) / 2``).
* ``cholesky``: defined for positive-definite matrices only (numpy raises otherwise).
* ``eigh``: away from repeated eigenvalues, the usual rules. At a repeated eigenvalue
  (numerically: closer than 16 n eps |w|_max; ``spectra``) the eigenvectors are
  any rotation of one another and their cotangent does not determine a derivative
  (``sum(V diag(w - 1) V^T)`` and ``sum(w)`` give the same cotangents at the identity,
  with the gradients ``ones`` and ``I``), so: a function of the eigenvectors is refused
  (the ``eigenvectors`` primitive's rules raise); a function of the eigenvalues only has
  its first derivative in reverse mode when the equal eigenvalues get equal cotangents
  (symmetric functions: ``V diag(gw) V^T``, basis-independent), and is refused when they
  get different ones (a kink); forward mode is refused along a direction that splits the
  repeated value (``V^T dx V`` not a multiple of the identity between them), and every
  higher derivative there (a traced cotangent, tangent or factorization) is refused.
* ``qr``: ``m >= n`` (the namespace composes ``m < n``); needs ``R`` regular (full
  column rank), a :class:`~.helpers.SingularMatrixError` otherwise. numpy's
  (Householder) signs: only quantities invariant under ``Q -> Q D, R -> D R``
  (``D`` diagonal, entries +-1) are the same on every engine.
* ``svd`` (reduced): the same at a repeated singular value, and at a zero one (whose
  vectors are not unique either): functions of ``U`` or ``V`` are refused (the
  ``singular_vectors`` primitive's rules), symmetric functions of equal nonzero singular
  values have their first derivative in reverse mode, different cotangents for equal
  nonzero values, forward mode splitting them and higher derivatives are refused. A zero
  singular value is a kink (as ``abs`` at 0): its slope is ``u_i v_i^T`` times its
  cotangent (a subgradient). Signs are numpy's: only quantities invariant under flipping
  a pair ``(u_i, v_i)`` are the same on every engine.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core import raw
from ...recording import defjvp, defvjp
from .. import primitives as P
from ..helpers import shape_of
from . import primitives as M
from .helpers import (
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
from .spectra import (
    check_concrete,
    check_tangent,
    check_values,
    close_pairs,
    negligible,
    refuse_vectors,
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
# At a repeated eigenvalue only the eigenvalues may be used (the eigenvectors' own primitive
# refuses, before this rule runs): there the gradient is V diag(gw) V^T, basis-independent
# for the equal cotangents check_values demands, and the masked F meets gv = 0.
def _eigh_parts(packed: Any, name: str) -> tuple[Any, Any]:
    return part(packed, 0, _ALL), M.eigenvectors(packed, name=name)


def _eigh_vjp(g: Any, ans: Any, x: Any, name: str = "eigh") -> Any:
    w, v = _eigh_parts(ans, name)
    gw, gv = part(g, 0, _ALL), part(g, slice(1, None), _ALL)
    check_values(name, "eigen", gw, close_pairs(w), ans)
    b = P.matmul_tn(v, gv)
    inner = diag_embed(gw) + gap_reciprocals(w) * (b - mT(b)) * 0.5
    return lower_gradient(P.matmul_nt(P.matmul(v, inner), v))


def _eigh_jvp(ts: Tangents, ans: Any, x: Any, name: str = "eigh") -> Any:
    w, v = _eigh_parts(ans, name)
    k = P.matmul(P.matmul_tn(v, lower_read(ts[0])), v)
    check_tangent(name, "eigen", k, close_pairs(w), ans)
    dv = P.matmul(v, gap_reciprocals(w) * k)
    return P.concat(row(diagonal(k)), dv, axis=-2)


defvjp(M.eigh, _eigh_vjp)
defjvp(M.eigh, _eigh_jvp)


def _eigenvectors_vjp(g: Any, ans: Any, packed: Any, name: str = "eigh") -> Any:
    if close_pairs(part(packed, 0, _ALL)).any():
        raise refuse_vectors(name, "eigen")
    shape = shape_of(g)
    return P.concat(np.zeros((*shape[:-2], 1, shape[-1]), dtype=_dtype(g)), g, axis=-2)


def _eigenvectors_jvp(ts: Tangents, ans: Any, packed: Any, name: str = "eigh") -> Any:
    if close_pairs(part(packed, 0, _ALL)).any():
        raise refuse_vectors(name, "eigen")
    return part(ts[0], slice(1, None), _ALL)


defvjp(M.eigenvectors, _eigenvectors_vjp)
defjvp(M.eigenvectors, _eigenvectors_jvp)


def _dtype(x: Any) -> Any:
    return np.result_type(raw(x))


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
# two. Their masks (0 at equal values) only ever meet zero cotangents of U and V: where a
# value repeats or is 0, the singular_vectors primitive refuses before this rule runs.
def _svd_parts(packed: Any, rows: int) -> tuple[Any, Any, Any]:
    u = M.singular_vectors(packed, rows=rows, side="U")
    return u, part(packed, rows, _ALL), M.singular_vectors(packed, rows=rows, side="V")


def _cotangent_parts(g: Any, rows: int) -> tuple[Any, Any, Any]:
    u, s = part(g, slice(None, rows), _ALL), part(g, rows, _ALL)
    return u, s, part(g, slice(rows + 1, None), _ALL)


class _Spectrum:
    """What the svd rules read of the singular values ``s``, found once per rule call:
    the pairs equal to rounding and the values zero to rounding."""

    __slots__ = ("close", "zero")

    def __init__(self, s: Any) -> None:
        self.close = close_pairs(s)
        self.zero = negligible(s)

    @property
    def degenerate(self) -> bool:
        """Whether the singular vectors are not unique: a repeated or a zero value."""
        return bool(self.close.any() or self.zero.any())

    def live_pairs(self) -> Any:
        """The pairs of equal nonzero singular values (a zero one is a kink, as ``abs``
        at 0: its slope is set apart, :meth:`nonzero`)."""
        live = ~self.zero
        return self.close & live[..., :, None] & live[..., None, :]

    def nonzero(self, s: Any) -> Any:
        """``1.0`` per nonzero singular value, ``0.0`` per zero one, in ``s``'s dtype: a
        zero singular value has slope 0, as ``abs`` at 0 -- the minimum-norm subgradient
        (``'nuc'`` at a rank-deficient matrix: ``U_r V_r^T``), and what torch's, jax's and
        autograd's rules give."""
        return (~self.zero).astype(np.asarray(raw(s)).dtype)


def _degenerate(s: Any) -> bool:
    """Whether the singular vectors are not unique: a repeated or a zero singular value."""
    return _Spectrum(s).degenerate


def _svd_vjp(g: Any, ans: Any, x: Any, rows: int, name: str = "svd") -> Any:
    u, s, v = _svd_parts(ans, rows)
    gu, gs, gv = _cotangent_parts(g, rows)
    spectrum = _Spectrum(s)
    check_values(name, "singular", gs, spectrum.live_pairs(), ans)
    if spectrum.degenerate:  # (the vectors are unused: their primitive refuses otherwise)
        check_concrete(name, "singular", gs, ans)
        gs = gs * spectrum.nonzero(s)
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


def _svd_jvp(ts: Tangents, ans: Any, x: Any, rows: int, name: str = "svd") -> Any:
    u, s, v = _svd_parts(ans, rows)
    t = ts[0]
    k = shape_of(s)[-1]
    cols = shape_of(ans)[-2] - rows - 1
    dp = P.matmul(P.matmul_tn(u, t), v)
    dpt = mT(dp)
    spectrum = _Spectrum(s)
    check_tangent(name, "singular", (dp + dpt) * 0.5, spectrum.live_pairs(), ans)
    if spectrum.degenerate:
        check_concrete(name, "singular", dp, ans)
    sym = gap_reciprocals(s) * (dp + dpt) * 0.5
    skew = sum_reciprocals(s) * (dp - dpt) * 0.5
    du = P.matmul(u, sym + skew)
    dv = P.matmul(v, sym - skew)
    if rows > k:
        du = du + (P.matmul(t, v) - P.matmul(u, dp)) * row(safe_reciprocal(s))
    if cols > k:
        dv = dv + (P.matmul(mT(t), u) - P.matmul(v, dpt)) * row(safe_reciprocal(s))
    ds = diagonal(dp)
    if spectrum.degenerate:  # (a zero one's tangent 0, as the reverse rule's slope)
        ds = ds * spectrum.nonzero(s)
    return P.concat(du, row(ds), dv, axis=-2)


defvjp(M.svd, _svd_vjp)
defjvp(M.svd, _svd_jvp)


def _singular_slots(packed: Any, rows: int, side: str) -> slice:
    return slice(None, rows) if side == "U" else slice(rows + 1, None)


def _singular_vectors_vjp(g: Any, ans: Any, packed: Any, rows: int, side: str) -> Any:
    if _degenerate(part(packed, rows, _ALL)):
        raise refuse_vectors("svd", "singular")
    shape, total = shape_of(g), shape_of(packed)[-2]
    before, after = (0, total - rows) if side == "U" else (rows + 1, 0)
    pieces = [np.zeros((*shape[:-2], n, shape[-1]), dtype=_dtype(g)) for n in (before, after)]
    return P.concat(pieces[0], g, pieces[1], axis=-2)


def _singular_vectors_jvp(ts: Tangents, ans: Any, packed: Any, rows: int, side: str) -> Any:
    if _degenerate(part(packed, rows, _ALL)):
        raise refuse_vectors("svd", "singular")
    return part(ts[0], _singular_slots(packed, rows, side), _ALL)


defvjp(M.singular_vectors, _singular_vectors_vjp)
defjvp(M.singular_vectors, _singular_vectors_jvp)
