"""``xp.linalg.eigh`` and ``eigvalsh`` on torch, with derivatives that are right -- or
refused -- at repeated eigenvalues, where torch's own rule divides roundoff by roundoff.

The rules (``x V = V diag(w)``, ``K = V^T sym(dx) V``): ``dw = diag(K)``, ``dV = V (F o
K)`` with ``F_ij = 1 / (w_j - w_i)``; the gradient is ``V (diag(g_w) + F o skew(V^T
g_V)) V^T``, symmetric (torch's convention: the derivative of ``eigh(sym(x))``).

Taken only where two eigenvalues are closer than ``16 n eps |w|_max``
(:mod:`adswitch_torch.xp.linalg.support`; elsewhere the wrappers return torch's own
result and rule, the
same formulas). There (as the autograd engine's rules, ``adswitch_autograd.
xp.linalg.spectral``):

* functions of the eigenvalues: the first derivative in reverse mode of functions
  symmetric in the repeated ones (equal cotangents: ``g V_c V_c^T``) is computed;
  different cotangents for equal eigenvalues (a kink) are refused (``UnsupportedError``),
  and so is forward mode in a direction that splits a repeated eigenvalue;
* functions of the eigenvectors: refused, in both modes. The eigenvectors of a repeated
  eigenvalue are any rotation of one another, and their cotangent does not determine a
  derivative: ``sum(V diag(w - 1) V^T)`` and ``sum(w)`` give the same cotangents at the
  identity (0 for ``V``) and have the gradients ``ones`` and ``I``. Reverse mode refuses
  any cotangent of ``V`` (torch passes ``None`` for an unused output), forward mode a
  tangent that moves those eigenvectors -- so a ``jvp`` through ``eigh`` there is refused
  even if only its eigenvalues are used (``eigvalsh`` is not);
* second derivatives are refused (:func:`adswitch_torch.xp.linalg.support.guard_higher`).

A forward-mode Jacobian taken as the derivative of the pullback (``adswitch_torch.
_forward``) reaches the eigenvalues' term ``V diag(g_w) V^T`` with a symbolic ``g_w``: its
transpose (:class:`_ValuesPullback`) checks the tangent it is pushed along as forward
mode does.

Imported only from ``adswitch_torch.xp.linalg`` (it imports torch).
"""

from __future__ import annotations

from typing import Any

import torch

from .support import (
    clusters,
    distinct,
    gap_reciprocals,
    guard_higher,
    known_refusal,
    refusal,
    refuse_if,
    spread,
    stacked,
    symmetric_tangents,
    traced,
)

__all__ = ["eigh", "eigvalsh"]

_VECTORS = known_refusal("eigh.vectors")
_MOVES_VECTORS = known_refusal("eigh.moves_vectors")
_KINK = known_refusal("eigh.kink")
_SPLITS = refusal(
    "eigvalsh (or eigh)",
    "a forward-mode derivative, or a second derivative, at a repeated eigenvalue in a "
    "direction that splits it (the sorted eigenvalues have a kink there)",
    "use reverse mode (ad.gradient) for a symmetric function of the eigenvalues, or move "
    "away from the repeated eigenvalue",
)
_SECOND = known_refusal("eigh.second")


def _sym(x: Any) -> Any:
    return (x + x.mT) * 0.5


def _largest(x: Any) -> Any:
    """``(..., 1, 1)``: the largest magnitude of each matrix of ``x``."""
    return x.detach().abs().amax((-2, -1), keepdim=True)


def _kinked(close: Any, gw: Any) -> Any:
    """Per matrix: whether two equal eigenvalues get different cotangents ``gw``."""
    unequal = gw[..., None, :] - gw[..., :, None]
    scale = gw.detach().abs().amax(-1)[..., None, None]
    return (close & spread(unequal, scale)).any((-2, -1))


def _splits(close: Any, k: Any) -> Any:
    """Per matrix: whether the tangent ``k = V^T sym(dx) V`` splits a repeated eigenvalue
    (its block on the eigenspace is not a multiple of the identity)."""
    diagonal = torch.diagonal(k, dim1=-2, dim2=-1)
    scale = _largest(k)
    unequal = diagonal[..., None, :] - diagonal[..., :, None]
    return (close & (spread(k, scale) | spread(unequal, scale))).any((-2, -1))


def _moves_vectors(close: Any, k: Any) -> Any:
    """Per matrix: whether the tangent ``k`` moves an eigenvector of a repeated
    eigenvalue (a nonzero column of ``k`` at it)."""
    columns = close.any(-2)[..., None, :]
    return (columns & spread(k, _largest(k))).any((-2, -1))


class _ValuesPullback(torch.autograd.Function):
    """``V diag(g_w) V^T`` (the gradient of the eigenvalues at a repeated one), whose
    derivative in ``g_w`` -- a forward-mode Jacobian taken through the pullback -- checks
    that the tangent does not split the repeated eigenvalue."""

    @staticmethod
    def forward(gw: Any, v: Any, close: Any) -> Any:
        return (v * gw[..., None, :]) @ v.mT

    @staticmethod
    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        gw, v, close = inputs
        ctx.save_for_backward(gw, v, close)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        gw, v, close = ctx.saved_tensors
        two = grad + grad.mT
        k = v.mT @ (two * 0.5) @ v
        refuse_if(_splits(close, k), _SPLITS)
        return torch.diagonal(k, dim1=-2, dim2=-1), two @ (v * gw[..., None, :]), None

    @staticmethod
    def vmap(info: Any, in_dims: Any, gw: Any, v: Any, close: Any) -> Any:
        return stacked(_ValuesPullback, info, in_dims, (gw, v, close))


def eigh_gradient(w: Any, v: Any, gw: Any, gv: Any) -> Any:
    """The gradient of ``eigh`` from the cotangents of its outputs (``None``: unused)."""
    close = clusters(w)
    degenerate = close.any((-2, -1))
    if gv is not None:  # whatever its value (module doc)
        refuse_if(degenerate, _VECTORS)
    w, v = guard_higher(w, degenerate, _SECOND), guard_higher(v, degenerate, _SECOND)
    if gw is None:
        return v @ (gap_reciprocals(w, close) * _skew(v.mT @ gv)) @ v.mT
    refuse_if(_kinked(close, gw), _KINK)
    grad = _ValuesPullback.apply(gw, v, close)  # type: ignore[no-untyped-call]
    if gv is not None:
        grad = grad + v @ (gap_reciprocals(w, close) * _skew(v.mT @ gv)) @ v.mT
    return grad


def _skew(b: Any) -> Any:
    return (b - b.mT) * 0.5


def eigh_tangent(w: Any, v: Any, dx: Any, vectors: bool) -> tuple[Any, Any]:
    """The tangents ``(dw, dV)`` of ``eigh`` along ``dx`` (``vectors``: whether the
    eigenvectors are an output, as ``eigvalsh``'s are not)."""
    close = clusters(w)
    degenerate = close.any((-2, -1))
    w, v = guard_higher(w, degenerate, _SECOND), guard_higher(v, degenerate, _SECOND)
    k = v.mT @ _sym(dx) @ v
    if vectors:
        refuse_if(_moves_vectors(close, k), _MOVES_VECTORS)
    refuse_if(_splits(close, k), _SPLITS)
    dw = torch.diagonal(k, dim1=-2, dim2=-1)
    return dw, v @ (gap_reciprocals(w, close) * k)


class _Eigh(torch.autograd.Function):
    """``torch.linalg.eigh`` with the rules of the module doc (reverse, forward, vmap)."""

    @staticmethod
    def forward(x: Any, vectors: bool) -> Any:
        w, v = torch.linalg.eigh(x)
        return w, v

    @staticmethod
    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.set_materialize_grads(False)
        ctx.vectors = inputs[1]
        ctx.save_for_backward(*output)
        ctx.save_for_forward(*output)

    @staticmethod
    def backward(ctx: Any, gw: Any, gv: Any) -> Any:
        w, v = ctx.saved_tensors
        return eigh_gradient(w, v, gw, gv), None

    @staticmethod
    def jvp(ctx: Any, dx: Any, _: Any) -> Any:
        w, v = ctx.saved_tensors
        return eigh_tangent(w, v, dx, ctx.vectors)

    @staticmethod
    def vmap(info: Any, in_dims: Any, x: Any, vectors: bool) -> Any:
        return stacked(_Eigh, info, in_dims, (x, vectors))


_RESULT = getattr(torch.return_types, "linalg_eigh")  # noqa: B009  (not in torch's stubs)


def eigh(native: Any) -> Any:
    """``xp.linalg.eigh`` from the namespace's own ``native`` (``torch.linalg.eigh``'s
    result type kept)."""

    def eigh(x: Any, /, *args: Any, **kwargs: Any) -> Any:
        """``torch.linalg.eigh`` (lower triangle); derivatives right at repeated
        eigenvalues or refused (``adswitch_torch.xp.linalg``)."""
        if args or kwargs or not traced(x) or not x.dtype.is_floating_point:
            return native(x, *args, **kwargs)
        result = native(symmetric_tangents(x))
        if distinct(result.eigenvalues):
            return result  # torch's rule is right here (for symmetric tangents)
        return _RESULT(_Eigh.apply(x, True))  # type: ignore[no-untyped-call]

    return eigh


def eigvalsh(native: Any) -> Any:
    """``xp.linalg.eigvalsh`` from the namespace's own ``native``."""

    def eigvalsh(x: Any, /, *args: Any, **kwargs: Any) -> Any:
        """``torch.linalg.eigvalsh``; derivatives right at repeated eigenvalues or refused
        (``adswitch_torch.xp.linalg``)."""
        if args or kwargs or not traced(x) or not x.dtype.is_floating_point:
            return native(x, *args, **kwargs)
        values = native(symmetric_tangents(x))
        if distinct(values):
            return values  # torch's rule is right here (for symmetric tangents)
        return _Eigh.apply(x, False)[0]  # type: ignore[no-untyped-call]

    return eigvalsh
