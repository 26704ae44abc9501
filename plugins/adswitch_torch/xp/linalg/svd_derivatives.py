"""The gradient and tangent rules of the reduced SVD on torch, at the degenerate points
``svd`` hands them (the formulas and conventions: its module doc), and the
refusals: at a repeated (or, non-square, a zero) singular value any cotangent of the
singular vectors, and forward mode through them.

Written in differentiable torch operations on the saved factors, which are guarded
against a second derivative where terms are dropped
(:func:`adswitch_torch.xp.linalg.support.guard_higher`).

Imported only from ``adswitch_torch.xp.linalg`` (it imports torch).
"""

from __future__ import annotations

from typing import Any

import torch

from .support import (
    clusters,
    gap_reciprocals,
    guard_higher,
    known_refusal,
    negligible,
    refuse_if,
    safe_reciprocal,
    spread,
    sum_reciprocals,
)

__all__ = ["svd_gradient", "svd_tangent"]

_VECTORS = known_refusal("svd.vectors")
_MOVES_VECTORS = known_refusal("svd.moves_vectors")
_KINK = known_refusal("svd.kink")
_SPLITS = known_refusal("svd.splits")
_SECOND = known_refusal("svd.second")


def _projected_out(vectors: Any, grads: Any, inner: Any) -> Any:
    """``(I - X X^T) G`` for ``X`` the ``vectors``, ``G`` their cotangent, ``X^T G``."""
    return grads - vectors @ inner


def _combined(su: Any, sv: Any, sign: float) -> Any:
    """``su + sign * sv``, either of them possibly ``None`` (an unused output: 0)."""
    if sv is None:
        return su
    if su is None:
        return sv * sign
    return su + sv * sign


def _degenerate(close: Any, zero: Any, square: bool) -> Any:
    """Per matrix: repeated singular values, or (non-square) a zero one."""
    found = close.any((-2, -1))
    return found if square else found | zero.any(-1)


def _kinked(close: Any, zero: Any, gs: Any) -> Any:
    """Per matrix: whether two equal nonzero singular values get different cotangents."""
    live = close & ~zero[..., None, :] & ~zero[..., :, None]
    unequal = gs[..., None, :] - gs[..., :, None]
    scale = gs.detach().abs().amax(-1)[..., None, None]
    return (live & spread(unequal, scale)).any((-2, -1))


def _splits(u: Any, v: Any, close: Any, zero: Any, dx: Any) -> Any:
    """Per matrix: whether the tangent ``dx`` splits a repeated nonzero singular value
    (``sym(U_c^T dx V_c)`` not a multiple of the identity) or moves a zero one (``dx v_k``
    or ``dx^T u_k`` nonzero: ``s_k`` grows as ``|t|``)."""
    scale = dx.detach().abs().amax((-2, -1), keepdim=True)
    live = close & ~zero[..., None, :] & ~zero[..., :, None]
    dp = u.mT @ dx @ v
    sym = (dp + dp.mT) * 0.5
    diagonal = torch.diagonal(dp, dim1=-2, dim2=-1)
    unequal = diagonal[..., None, :] - diagonal[..., :, None]
    split = (live & (spread(sym, scale) | spread(unequal, scale))).any((-2, -1))
    moved = spread(dx @ v, scale).any(-2) | spread(dx.mT @ u, scale).any(-2)
    return split | (zero & moved).any(-1)


def _guarded(u: Any, s: Any, vh: Any, close: Any, zero: Any) -> tuple[Any, Any, Any]:
    """The saved factors, guarded against a second derivative where the rules drop terms:
    repeated singular values, or a zero one of a non-square matrix."""
    degenerate = _degenerate(close, zero, u.shape[-2] == vh.shape[-1])
    return (
        guard_higher(u, degenerate, _SECOND),
        guard_higher(s, degenerate, _SECOND),
        guard_higher(vh, degenerate, _SECOND),
    )


def svd_gradient(u: Any, s: Any, vh: Any, gu: Any, gs: Any, gvh: Any) -> Any:
    """The gradient of the reduced ``svd`` from its outputs' cotangents (``None``:
    unused)."""
    m, k, n = u.shape[-2], s.shape[-1], vh.shape[-1]
    close, zero = clusters(s), negligible(s)
    if gu is not None or gvh is not None:  # whatever their value (module doc)
        refuse_if(_degenerate(close, zero, m == n), _VECTORS)
    u, s, vh = _guarded(u, s, vh, close, zero)
    if gu is None and gvh is None:
        if gs is None:
            return None
        refuse_if(_kinked(close, zero, gs), _KINK)
        slope = torch.where(zero, 0.0, gs)  # a zero one has a kink (as abs at 0): slope 0
        return (u * slope[..., None, :]) @ vh
    v = vh.mT
    gv = None if gvh is None else gvh.mT
    bu = None if gu is None else u.mT @ gu
    bv = None if gv is None else v.mT @ gv
    su = None if bu is None else bu - bu.mT
    sv = None if bv is None else bv - bv.mT
    ru = _projected_out(u, gu, bu) if gu is not None and m > k else None
    rv = _projected_out(v, gv, bv) if gv is not None and n > k else None
    shared, opposite = _combined(su, sv, 1.0), _combined(su, sv, -1.0)
    inner = gap_reciprocals(s, close) * shared + sum_reciprocals(s, zero) * opposite
    inner = inner * 0.5
    if gs is not None:
        inner = inner + torch.diag_embed(gs)
    grad = u @ inner @ vh
    recip = safe_reciprocal(s, zero)
    if ru is not None:  # (I - U U^T) gU inv(S) V^T
        grad = grad + (ru * recip[..., None, :]) @ vh
    if rv is not None:  # U inv(S) ((I - V V^T) gV)^T
        grad = grad + u @ (recip[..., :, None] * rv.mT)
    return grad


def svd_tangent(u: Any, s: Any, vh: Any, dx: Any, vectors: bool) -> tuple[Any, Any, Any]:
    """The tangents ``(dU, ds, dVh)`` of the reduced ``svd`` along ``dx`` (``vectors``:
    whether the singular vectors are outputs, as ``svdvals``' are not)."""
    m, k, n = u.shape[-2], s.shape[-1], vh.shape[-1]
    close, zero = clusters(s), negligible(s)
    if vectors:  # strict: any tangent (they have no derivative there)
        refuse_if(_degenerate(close, zero, m == n), _MOVES_VECTORS)
    refuse_if(_splits(u, vh.mT, close, zero, dx), _SPLITS)
    u, s, vh = _guarded(u, s, vh, close, zero)
    v = vh.mT
    dp = u.mT @ dx @ v
    dpt = dp.mT
    sym = gap_reciprocals(s, close) * (dp + dpt) * 0.5
    skew = sum_reciprocals(s, zero) * (dp - dpt) * 0.5
    du = u @ (sym + skew)
    dv = v @ (sym - skew)
    recip = safe_reciprocal(s, zero)[..., None, :]
    if m > k:
        du = du + (dx @ v - u @ dp) * recip
    if n > k:
        dv = dv + (dx.mT @ u - v @ dpt) * recip
    return du, torch.diagonal(dp, dim1=-2, dim2=-1), dv.mT
