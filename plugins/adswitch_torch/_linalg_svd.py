"""``xp.linalg.svd``, ``svdvals`` and the spectral ``matrix_norm`` orders on torch, with
derivatives that are right (or refused) at repeated and zero singular values, where
torch's own rule divides by ``s_j^2 - s_i^2`` (NaN for the polar factor of an orthogonal
matrix).

The rules (reduced SVD ``x = U diag(s) V^T``, ``dP = U^T dx V``; ``Fm_ij = 1 / (s_j -
s_i)``, ``Fp_ij = 1 / (s_j + s_i)``, the usual ``1 / (s_j^2 - s_i^2)`` split in two):
``ds = diag(dP)``, ``dU = U (Fm o sym(dP) + Fp o skew(dP)) + (I - U U^T) dx V inv(S)``,
``dV = V (Fm o sym(dP) - Fp o skew(dP)) + (I - V V^T) dx^T U inv(S)``; the gradient is the
transpose (as the tape's ``rules/matrix_factorizations``).

Taken only where two singular values are equal, or (non-square) one is zero, to within
``16 k eps s_max`` (elsewhere the wrappers return torch's own result and rule, the same
formulas), and for ``full_matrices=True`` of a non-square matrix. There:

* ``Fm`` is 0 between equal singular values: the rotation their ``U`` and ``V`` columns
  share, which a function through ``U_c V_c^T``, ``U_c U_c^T`` or ``V_c V_c^T`` does not
  see; ``Fp``, finite there, is kept (so the polar factor ``U V^T`` of an orthogonal matrix
  has its derivative). ``Fp`` is 0 between two zero singular values, and so are the
  ``(I - U U^T)``/``(I - V V^T)`` terms of a zero singular value (non-square matrices).
  Exact for the functions that have a derivative there, first order, reverse and forward.
* reverse mode refuses (``UnsupportedError``) a cotangent that shows ``f`` is not one of
  them, when the singular vectors are used: one that changes under the shared rotation
  (``skew(U^T g_U) + skew(V^T g_V)`` between equal singular values) or, at two zero
  singular values, under either rotation; that differs between equal singular values
  (``U h(s) V^T``); that is nonzero on a zero singular value of a non-square matrix (its
  ``(I - U U^T)`` term would be ``0 / 0``), or on the direction of a null space its
  vector is any unit vector of. Forward mode cannot see how its tangents are used: it
  keeps the convention. Functions of the singular values alone (``svdvals``, the
  spectral norms) get ``U diag(g_s) V^T``: a subgradient where they repeat or vanish.
* a second derivative there is refused: the dropped terms are exact to first order only.
* ``full_matrices=True`` of a non-square matrix: the extra columns of ``U`` (rows of
  ``Vh``) are any basis of a complement; a cotangent on them is refused, and so is forward
  mode (fix: ``full_matrices=False``).

Imported only from ``adswitch_torch.linalg`` (it imports torch).
"""

from __future__ import annotations

from typing import Any

import torch

from adswitch.errors import UnsupportedError

from ._linalg_support import (
    any_true,
    clusters,
    distinct,
    gap_reciprocals,
    guard_higher,
    negligible,
    readable,
    refusal,
    refuse_if,
    safe_reciprocal,
    spread,
    stacked,
    sum_reciprocals,
    traced,
)

_GAP_ULPS = 16  # roundoff, in k * eps * the largest singular value (as _linalg_support)

__all__ = ["matrix_norm", "svd", "svdvals"]

_VECTORS = refusal(
    "svd",
    "the matrix has a repeated (or zero) singular value, and f depends on its singular "
    "vectors other than through U_c V_c^T, U_c U_c^T or V_c V_c^T, or on the repeated "
    "singular values other than symmetrically -- the singular vectors are not unique "
    "there, and no derivative follows",
    "use the singular vectors of a repeated singular value only through those products "
    "(the polar factor U @ Vh) and the singular values only symmetrically, from one "
    "call of svd (each call is checked on its own); use xp.linalg.svdvals for functions "
    "of the singular values, or move away from the repeated or zero singular value",
)
_SECOND = refusal(
    "svd (or svdvals, matrix_norm)",
    "a second derivative at a repeated or zero singular value is not computed: the "
    "first-order rule drops the terms between equal singular values, exact to first "
    "order only",
    "take second derivatives away from the repeated or zero singular value, or "
    "differentiate once there",
)
_COMPLETE = refusal(
    "svd",
    "with full_matrices=True, the columns of U (rows of Vh) beyond min(m, n) are any "
    "basis of a complement of the matrix's range, and have no derivative",
    "call xp.linalg.svd(x, full_matrices=False)",
)


def _projected_out(vectors: Any, grads: Any, inner: Any) -> Any:
    """``(I - X X^T) G`` for ``X`` the ``vectors``, ``G`` their cotangent, ``X^T G``."""
    return grads - vectors @ inner


def _largest(part: Any, axes: int) -> Any:
    """The largest magnitude of ``part`` per matrix (over its last ``axes`` axes)."""
    return part.detach().abs().flatten(-axes).amax(-1)


def _rotation_dependent(s: Any, parts: dict[str, Any], square: bool) -> Any:
    """Per matrix: whether the cotangent is not that of a function the dropped terms are
    exact for (module doc). ``parts``: ``gs``, ``su``/``sv`` (``skew(U^T g_U)``,
    ``skew(V^T g_V)``), ``ru``/``rv`` (``(I - U U^T) g_U``, ``(I - V V^T) g_V``)."""
    close, zero = clusters(s), negligible(s)
    gs, su, sv = parts["gs"], parts["su"], parts["sv"]
    scale = torch.stack(
        [_largest(p, 1 if name == "gs" else 2) for name, p in parts.items() if p is not None]
    ).amax(0)
    pairs = scale[..., None, None]
    bad = close & spread(_combined(su, sv, 1.0), pairs)
    both_zero = close & zero[..., None, :] & zero[..., :, None]
    for one in (su, sv):
        if one is not None:  # two zero singular values: U_c, V_c rotate independently
            bad = bad | (both_zero & spread(one, pairs))
    if gs is not None:
        bad = bad | (close & spread(gs[..., None, :] - gs[..., :, None], pairs))
    found = bad.any((-2, -1))
    if square:
        return found
    lone = torch.zeros_like(zero)  # a zero singular value of a non-square matrix
    if gs is not None:
        lone = lone | spread(gs, scale[..., None])
    for rest in (parts["ru"], parts["rv"]):
        if rest is not None:
            lone = lone | spread(rest, pairs).any(-2)
    return found | (zero & lone).any(-1)


def _combined(su: Any, sv: Any, sign: float) -> Any:
    """``su + sign * sv``, either of them possibly ``None`` (an unused output: 0)."""
    if sv is None:
        return su
    if su is None:
        return sv * sign
    return su + sv * sign


def _guarded(u: Any, s: Any, vh: Any, close: Any, zero: Any) -> tuple[Any, Any, Any]:
    """The saved factors, guarded against a second derivative where the rules drop terms:
    repeated singular values, or a zero one of a non-square matrix."""
    degenerate = close.any((-2, -1))
    if u.shape[-2] != vh.shape[-1]:
        degenerate = degenerate | zero.any(-1)
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
    u, s, vh = _guarded(u, s, vh, close, zero)
    if gu is None and gvh is None:
        if gs is None:
            return None
        return (u * gs[..., None, :]) @ vh
    v = vh.mT
    gv = None if gvh is None else gvh.mT
    bu = None if gu is None else u.mT @ gu
    bv = None if gv is None else v.mT @ gv
    su = None if bu is None else bu - bu.mT
    sv = None if bv is None else bv - bv.mT
    ru = _projected_out(u, gu, bu) if gu is not None and m > k else None
    rv = _projected_out(v, gv, bv) if gv is not None and n > k else None
    parts = {"gs": gs, "su": su, "sv": sv, "ru": ru, "rv": rv}
    refuse_if(_rotation_dependent(s, parts, m == n), _VECTORS)
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


def svd_tangent(u: Any, s: Any, vh: Any, dx: Any) -> tuple[Any, Any, Any]:
    """The tangents ``(dU, ds, dVh)`` of the reduced ``svd`` along ``dx``."""
    m, k, n = u.shape[-2], s.shape[-1], vh.shape[-1]
    close, zero = clusters(s), negligible(s)
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


class _Svd(torch.autograd.Function):
    """``torch.linalg.svd(x, full_matrices=False)`` with the rules of the module doc."""

    @staticmethod
    def forward(x: Any) -> Any:
        u, s, vh = torch.linalg.svd(x, full_matrices=False)
        return u, s, vh

    @staticmethod
    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(*output)
        ctx.save_for_forward(*output)

    @staticmethod
    def backward(ctx: Any, gu: Any, gs: Any, gvh: Any) -> Any:
        u, s, vh = ctx.saved_tensors
        return svd_gradient(u, s, vh, gu, gs, gvh)

    @staticmethod
    def jvp(ctx: Any, dx: Any) -> Any:
        u, s, vh = ctx.saved_tensors
        return svd_tangent(u, s, vh, dx)

    @staticmethod
    def vmap(info: Any, in_dims: Any, x: Any) -> Any:
        return stacked(_Svd, info, in_dims, (x,))


class _CompleteSvd(torch.autograd.Function):
    """``torch.linalg.svd(x, full_matrices=True)`` of non-square matrices: the reduced
    rule, and a refusal for a cotangent on the extra columns (and for forward mode)."""

    @staticmethod
    def forward(x: Any) -> Any:
        u, s, vh = torch.linalg.svd(x, full_matrices=True)
        return u, s, vh

    @staticmethod
    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(*output)

    @staticmethod
    def backward(ctx: Any, gu: Any, gs: Any, gvh: Any) -> Any:
        u, s, vh = ctx.saved_tensors
        k = s.shape[-1]
        if gu is not None:
            refuse_if(spread(gu[..., :, k:], 0.0).flatten(-2).any(-1), _COMPLETE)
            gu = gu[..., :, :k]
        if gvh is not None:
            refuse_if(spread(gvh[..., k:, :], 0.0).flatten(-2).any(-1), _COMPLETE)
            gvh = gvh[..., :k, :]
        return svd_gradient(u[..., :, :k], s, vh[..., :k, :], gu, gs, gvh)

    @staticmethod
    def jvp(ctx: Any, dx: Any) -> Any:
        raise UnsupportedError(_COMPLETE)

    @staticmethod
    def vmap(info: Any, in_dims: Any, x: Any) -> Any:
        return stacked(_CompleteSvd, info, in_dims, (x,))


_RESULT = getattr(torch.return_types, "linalg_svd")  # noqa: B009  (not in torch's stubs)


def _differentiable(x: Any) -> bool:
    return traced(x) and x.dtype.is_floating_point


def _regular(x: Any, s: Any) -> bool:
    """Whether torch's own rule is right at ``x`` with singular values ``s``: they are
    plainly distinct, and none is zero (for a non-square matrix)."""
    if not distinct(s):
        return False
    if x.shape[-2] == x.shape[-1] or not s.shape[-1]:
        return True
    found = readable(s)
    if found is None:
        return False
    v = found[0]
    tol = v[..., :1] * (_GAP_ULPS * v.shape[-1] * torch.finfo(s.dtype).eps)
    return any_true(v[..., -1:] <= tol) is False


def svd(native: Any) -> Any:
    """``xp.linalg.svd`` from the namespace's own ``native`` (``torch.linalg.svd``)."""

    def svd(x: Any, /, *args: Any, **kwargs: Any) -> Any:
        """``torch.linalg.svd``; derivatives right at repeated and zero singular values
        or refused (``adswitch_torch.linalg``)."""
        full = kwargs.get("full_matrices", args[0] if args else True)
        if len(args) > 1 or set(kwargs) - {"full_matrices"} or not _differentiable(x):
            return native(x, *args, **kwargs)
        if bool(full) and x.shape[-2] != x.shape[-1]:  # (torch ignores the extra columns)
            return _RESULT(_CompleteSvd.apply(x))  # type: ignore[no-untyped-call]
        result = native(x, full_matrices=False)
        if _regular(x, result.S):
            return result  # torch's rule is right here
        return _RESULT(_Svd.apply(x))  # type: ignore[no-untyped-call]

    return svd


def svdvals(native: Any) -> Any:
    """``xp.linalg.svdvals`` from the namespace's own ``native``."""

    def svdvals(x: Any, /, *args: Any, **kwargs: Any) -> Any:
        """``torch.linalg.svdvals``; derivatives right at repeated and zero singular
        values or refused (``adswitch_torch.linalg``)."""
        values = native(x, *args, **kwargs)
        if args or kwargs or not _differentiable(x) or _regular(x, values):
            return values  # (torch's rule is right where _regular)
        return _Svd.apply(x)[1]  # type: ignore[no-untyped-call]

    return svdvals


_SPECTRAL: dict[Any, Any] = {2: torch.amax, -2: torch.amin, "nuc": torch.sum}


def matrix_norm(native: Any) -> Any:
    """``xp.linalg.matrix_norm`` from the namespace's own ``native``: the orders 2, -2 and
    ``'nuc'`` (functions of the singular values) through :func:`svdvals`."""
    values = svdvals(torch.linalg.svdvals)

    def matrix_norm(x: Any, /, *args: Any, **kwargs: Any) -> Any:
        """``torch.linalg.matrix_norm`` (``keepdims`` also spelled as the Array API
        does); ord 2, -2, 'nuc': derivatives right or refused at repeated and zero
        singular values (``adswitch_torch.linalg``)."""
        order = kwargs.get("ord", args[0] if args else "fro")
        keep = bool(kwargs.get("keepdims", kwargs.get("keepdim", False)))
        reduce = _SPECTRAL.get(order) if isinstance(order, (int, str)) else None
        plain = set(kwargs) <= {"ord", "keepdims", "keepdim"} and len(args) <= 1
        if reduce is None or not plain or not _differentiable(x):
            if "keepdims" in kwargs:
                kwargs["keepdim"] = kwargs.pop("keepdims")
            return native(x, *args, **kwargs)
        out = reduce(values(x), -1)
        return out[..., None, None] if keep else out

    return matrix_norm
