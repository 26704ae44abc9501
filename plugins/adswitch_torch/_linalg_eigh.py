"""``xp.linalg.eigh`` and ``eigvalsh`` on torch, with derivatives that are right (or
refused) at repeated eigenvalues, where torch's own rule divides roundoff by roundoff.

The rules (``x V = V diag(w)``, ``K = V^T sym(dx) V``): ``dw = diag(K)``, ``dV = V (F o
K)`` with ``F_ij = 1 / (w_j - w_i)``; the gradient is ``V (diag(g_w) + F o skew(V^T
g_V)) V^T``, symmetric (torch's convention: the derivative of ``eigh(sym(x))``).

Taken only where two eigenvalues are closer than ``16 n eps |w|_max``
(:mod:`._linalg_support`; elsewhere the wrappers return torch's own result and rule, the
same formulas). There:

* ``F`` is 0 between equal eigenvalues. That is exact for what has a derivative there:
  symmetric functions of the eigenvalues and functions of the eigenvectors through the
  projector onto the repeated eigenvalue's eigenspace (``V_c V_c^T``), first order, in
  reverse and forward mode.
* reverse mode refuses (``UnsupportedError``) a cotangent that shows ``f`` is not of that
  kind: one that changes under a rotation of the eigenspace's basis (``skew(V^T g_V)``
  nonzero between equal eigenvalues), or that differs between equal eigenvalues while
  the eigenvectors are used (``tr(C h(x))`` written as ``V h(w) V^T``: dropping its term
  would be wrong). Forward mode cannot see how its tangents are used: it keeps the
  convention. Functions of the eigenvalues alone (``eigvalsh``, ``eigh`` whose
  eigenvectors are unused) get ``V diag(g_w) V^T``: the derivative for symmetric
  functions, a subgradient at the kink of the others (``min`` of a repeated eigenvalue).
* a second derivative there is refused: the dropped terms are exact to first order only.

Imported only from ``adswitch_torch.linalg`` (it imports torch).
"""

from __future__ import annotations

from typing import Any

import torch

from ._linalg_support import (
    clusters,
    distinct,
    gap_reciprocals,
    guard_higher,
    refusal,
    refuse_if,
    spread,
    stacked,
    traced,
)

__all__ = ["eigh", "eigvalsh"]

_VECTORS = refusal(
    "eigh",
    "the matrix has a repeated eigenvalue, and f depends on the eigenvectors of its "
    "eigenspace other than through their projector V_c V_c^T, or on the repeated "
    "eigenvalues other than symmetrically -- the eigenvectors are any rotation of one "
    "another there, and no derivative follows",
    "use the eigenvectors of a repeated eigenvalue only through V_c @ V_c.T and its "
    "eigenvalues only symmetrically (their sum), from one call of eigh (each call is "
    "checked on its own), or move away from the repeated eigenvalue",
)
_SECOND = refusal(
    "eigh (or eigvalsh)",
    "a second derivative at a repeated eigenvalue is not computed: the first-order rule "
    "drops the terms between equal eigenvalues, exact to first order only",
    "take second derivatives away from the repeated eigenvalue, or differentiate once there",
)


def _sym(x: Any) -> Any:
    return (x + x.mT) * 0.5


def _rotation_dependent(close: Any, skew: Any, gw: Any) -> Any:
    """Per matrix: whether the cotangent ``(g_w, g_V)`` is not that of a function of the
    eigenspaces of the repeated eigenvalues (``close``) and of their sum."""
    scale = skew.detach().abs().amax((-2, -1))
    if gw is not None:
        scale = torch.maximum(scale, gw.detach().abs().amax(-1))
    bad = close & spread(skew, scale[..., None, None])
    if gw is not None:
        bad = bad | (close & spread(gw[..., None, :] - gw[..., :, None], scale[..., None, None]))
    return bad.any((-2, -1))


def eigh_gradient(w: Any, v: Any, gw: Any, gv: Any) -> Any:
    """The gradient of ``eigh`` from the cotangents of its outputs (``None``: unused)."""
    close = clusters(w)
    degenerate = close.any((-2, -1))
    w, v = guard_higher(w, degenerate, _SECOND), guard_higher(v, degenerate, _SECOND)
    inner = None if gw is None else torch.diag_embed(gw)
    if gv is not None:
        b = v.mT @ gv
        skew = (b - b.mT) * 0.5
        refuse_if(_rotation_dependent(close, skew, gw), _VECTORS)
        term = gap_reciprocals(w, close) * skew
        inner = term if inner is None else inner + term
    if inner is None:
        return None
    return v @ inner @ v.mT


def eigh_tangent(w: Any, v: Any, dx: Any) -> tuple[Any, Any]:
    """The tangents ``(dw, dV)`` of ``eigh`` along ``dx``."""
    close = clusters(w)
    degenerate = close.any((-2, -1))
    w, v = guard_higher(w, degenerate, _SECOND), guard_higher(v, degenerate, _SECOND)
    k = v.mT @ _sym(dx) @ v
    dw = torch.diagonal(k, dim1=-2, dim2=-1)
    return dw, v @ (gap_reciprocals(w, close) * k)


class _Eigh(torch.autograd.Function):
    """``torch.linalg.eigh`` with the rules of the module doc (reverse, forward, vmap)."""

    @staticmethod
    def forward(x: Any) -> Any:
        w, v = torch.linalg.eigh(x)
        return w, v

    @staticmethod
    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(*output)
        ctx.save_for_forward(*output)

    @staticmethod
    def backward(ctx: Any, gw: Any, gv: Any) -> Any:
        w, v = ctx.saved_tensors
        return eigh_gradient(w, v, gw, gv)

    @staticmethod
    def jvp(ctx: Any, dx: Any) -> Any:
        w, v = ctx.saved_tensors
        return eigh_tangent(w, v, dx)

    @staticmethod
    def vmap(info: Any, in_dims: Any, x: Any) -> Any:
        return stacked(_Eigh, info, in_dims, (x,))


_RESULT = getattr(torch.return_types, "linalg_eigh")  # noqa: B009  (not in torch's stubs)


def eigh(native: Any) -> Any:
    """``xp.linalg.eigh`` from the namespace's own ``native`` (``torch.linalg.eigh``'s
    result type kept)."""

    def eigh(x: Any, /, *args: Any, **kwargs: Any) -> Any:
        """``torch.linalg.eigh`` (lower triangle); derivatives right at repeated
        eigenvalues or refused (``adswitch_torch.linalg``)."""
        result = native(x, *args, **kwargs)
        if args or kwargs or not traced(x) or not x.dtype.is_floating_point:
            return result
        if distinct(result.eigenvalues):
            return result  # torch's rule is right here
        return _RESULT(_Eigh.apply(x))  # type: ignore[no-untyped-call]

    return eigh


def eigvalsh(native: Any) -> Any:
    """``xp.linalg.eigvalsh`` from the namespace's own ``native``."""

    def eigvalsh(x: Any, /, *args: Any, **kwargs: Any) -> Any:
        """``torch.linalg.eigvalsh``; derivatives right at repeated eigenvalues or refused
        (``adswitch_torch.linalg``)."""
        values = native(x, *args, **kwargs)
        if args or kwargs or not traced(x) or not x.dtype.is_floating_point:
            return values
        if distinct(values):
            return values  # torch's rule is right here
        return _Eigh.apply(x)[0]  # type: ignore[no-untyped-call]

    return eigvalsh
