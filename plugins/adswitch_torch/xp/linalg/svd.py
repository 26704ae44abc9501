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

* functions of the singular vectors: refused (``UnsupportedError``), in both modes, as
  the autograd engine's rules (``adswitch_autograd.xp.linalg.factors``): the vectors are not
  unique there, and their cotangent does not determine a derivative (``sum(U diag(s -
  1) Vh)`` and ``sum(s)`` give the same cotangents at the identity, and different
  gradients). Reverse mode refuses any cotangent of ``U`` or ``Vh`` (torch passes
  ``None`` for an unused output); forward mode any ``jvp`` through ``svd`` there, even if
  only ``S`` is used (``svdvals`` is not). (The polar factor ``U Vh``, smooth at an
  orthogonal matrix, is refused there too: write it without the SVD.)
* functions of the singular values alone (``svdvals``, the spectral norms; taken here
  also at a single zero singular value of a square matrix): reverse mode gives ``U
  diag(g_s) V^T`` where equal singular values get equal cotangents (symmetric
  functions), with slope 0 on a zero one (a kink, as ``abs`` at 0); different cotangents
  for equal ones are refused, and so is forward mode in a direction that splits a
  repeated one or moves a zero one. ``matrix_norm`` ord 2/-2 spreads its slope equally
  over the singular values tied with the largest (smallest): ``U_k V_k^T / k``,
  independent of the basis (``'nuc'``: ``U V^T`` over the nonzero ones).
* a second derivative there is refused: the dropped terms are exact to first order only.
* ``full_matrices=True`` of a non-square matrix: the extra columns of ``U`` (rows of
  ``Vh``) are any basis of a complement; a cotangent on them is refused, and so is forward
  mode (fix: ``full_matrices=False``).

Imported only from ``adswitch_torch.xp.linalg`` (it imports torch).
"""

from __future__ import annotations

from typing import Any

import array_api_compat.torch as compat_torch
import torch

from adswitch.errors import UnsupportedError
from adswitch.spec import negligible as kit_negligible
from adswitch.spec import spread_extreme

from .support import (
    any_true,
    distinct,
    known_refusal,
    readable,
    refuse_if,
    spread,
    stacked,
    traced,
)
from .svd_derivatives import svd_gradient, svd_tangent

__all__ = ["matrix_norm", "svd", "svdvals"]

_COMPLETE = known_refusal("svd.complete")


class _Svd(torch.autograd.Function):
    """``torch.linalg.svd(x, full_matrices=False)`` with the rules of the module doc."""

    @staticmethod
    def forward(x: Any, vectors: bool) -> Any:
        u, s, vh = torch.linalg.svd(x, full_matrices=False)
        return u, s, vh

    @staticmethod
    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.set_materialize_grads(False)
        ctx.vectors = inputs[1]
        ctx.save_for_backward(*output)
        ctx.save_for_forward(*output)

    @staticmethod
    def backward(ctx: Any, gu: Any, gs: Any, gvh: Any) -> Any:
        u, s, vh = ctx.saved_tensors
        return svd_gradient(u, s, vh, gu, gs, gvh), None

    @staticmethod
    def jvp(ctx: Any, dx: Any, _: Any) -> Any:
        u, s, vh = ctx.saved_tensors
        return svd_tangent(u, s, vh, dx, ctx.vectors)

    @staticmethod
    def vmap(info: Any, in_dims: Any, x: Any, vectors: bool) -> Any:
        return stacked(_Svd, info, in_dims, (x, vectors))


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
    plainly distinct, and none is zero."""
    if not distinct(s):
        return False
    if not s.shape[-1]:
        return True
    found = readable(s)
    if found is None:
        return False
    v, xp = found
    return any_true(kit_negligible(v, xp=xp)[..., -1:]) is False  # (the smallest is last)


def svd(native: Any) -> Any:
    """``xp.linalg.svd`` from the namespace's own ``native`` (``torch.linalg.svd``)."""

    def svd(x: Any, /, *args: Any, **kwargs: Any) -> Any:
        """``torch.linalg.svd``; derivatives right at repeated and zero singular values
        or refused (``adswitch_torch.xp.linalg``)."""
        full = kwargs.get("full_matrices", args[0] if args else True)
        if len(args) > 1 or set(kwargs) - {"full_matrices"} or not _differentiable(x):
            return native(x, *args, **kwargs)
        if bool(full) and x.shape[-2] != x.shape[-1]:  # (torch ignores the extra columns)
            return _RESULT(_CompleteSvd.apply(x))  # type: ignore[no-untyped-call]
        result = native(x, full_matrices=False)
        if _regular(x, result.S):
            return result  # torch's rule is right here
        return _RESULT(_Svd.apply(x, True))  # type: ignore[no-untyped-call]

    return svd


def svdvals(native: Any) -> Any:
    """``xp.linalg.svdvals`` from the namespace's own ``native``."""

    def svdvals(x: Any, /, *args: Any, **kwargs: Any) -> Any:
        """``torch.linalg.svdvals``; derivatives right at repeated and zero singular
        values or refused (``adswitch_torch.xp.linalg``)."""
        values = native(x, *args, **kwargs)
        if args or kwargs or not _differentiable(x) or _regular(x, values):
            return values  # (torch's rule is right where _regular)
        return _Svd.apply(x, False)[1]  # type: ignore[no-untyped-call]

    return svdvals


def _spread_extreme(values: Any, largest: bool) -> Any:
    """``max`` (``min``) of the sorted singular values, its slope spread over the ties
    (``adswitch.spec.spread_extreme``; torch's ``amax`` puts it on one of them)."""
    return spread_extreme(values, values.detach(), largest, xp=compat_torch)


_SPECTRAL: dict[Any, Any] = {
    2: lambda v: _spread_extreme(v, True),
    -2: lambda v: _spread_extreme(v, False),
    "nuc": lambda v: torch.sum(v, -1),
}


def matrix_norm(native: Any) -> Any:
    """``xp.linalg.matrix_norm`` from the namespace's own ``native``: the orders 2, -2 and
    ``'nuc'`` (functions of the singular values) through :func:`svdvals`."""
    values = svdvals(torch.linalg.svdvals)

    def matrix_norm(x: Any, /, *args: Any, **kwargs: Any) -> Any:
        """``torch.linalg.matrix_norm`` (``keepdims`` also spelled as the Array API
        does); ord 2, -2, 'nuc': derivatives right or refused at repeated and zero
        singular values (``adswitch_torch.xp.linalg``)."""
        order = kwargs.get("ord", args[0] if args else "fro")
        keep = bool(kwargs.get("keepdims", kwargs.get("keepdim", False)))
        reduce = _SPECTRAL.get(order) if isinstance(order, (int, str)) else None
        plain = set(kwargs) <= {"ord", "keepdims", "keepdim"} and len(args) <= 1
        if reduce is None or not plain or not _differentiable(x):
            if "keepdims" in kwargs:
                kwargs["keepdim"] = kwargs.pop("keepdims")
            return native(x, *args, **kwargs)
        out = reduce(values(x))
        return out[..., None, None] if keep else out

    return matrix_norm
