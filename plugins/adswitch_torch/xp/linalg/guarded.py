"""``xp.linalg.slogdet``, ``qr`` and ``cholesky`` on torch: torch's own values and rules, and an
``UnsupportedError`` where their derivative does not exist -- instead of the ``inf``/NaN
(``slogdet`` at a singular matrix) or the numbers of size ``1/eps`` (``qr`` of dependent
columns) torch's rules give there.

Where a cheap check of torch's result finds the point regular, the result is torch's
own; otherwise the outputs are wrapped in an identity whose derivative (reverse or
forward, any order) raises the error.

``cholesky`` is torch's, differentiated through ``symmetric_tangents`` (torch's forward rule
takes a tangent that is not symmetric as if it were, and disagreed with its reverse rule).

Imported only from ``adswitch_torch.xp.linalg`` (it imports torch).
"""

from __future__ import annotations

import math
from typing import Any

import array_api_compat.torch as compat_torch
import torch

from adswitch.spec import gap_factor
from adswitch.spec import negligible as kit_negligible
from adswitch.spec import negligible_det as kit_negligible_det

from .support import (
    any_negligible_det,
    any_true,
    few,
    known_refusal,
    negligible,
    readable,
    refusal,
    refuse_if,
    stacked,
    symmetric_tangents,
    traced,
)

__all__ = ["cholesky", "qr", "slogdet"]


_SLOGDET = known_refusal("slogdet.singular")
_QR = known_refusal("qr.dependent")
_QR_COMPLETE = refusal(
    "qr",
    "with mode='complete', the columns of Q beyond n (m > n) are any basis of the "
    "complement of the matrix's range, and have no derivative",
    "call xp.linalg.qr(x, mode='reduced')",
)
_QR_R = refusal(
    "qr",
    "with mode='r', Q is not computed, and the derivative of R needs it",
    "call xp.linalg.qr(x, mode='reduced') and use its R",
)


class _Guard(torch.autograd.Function):
    """The identity on ``values``; its derivative raises ``UnsupportedError(message)``
    where ``bad`` (per matrix) is true."""

    @staticmethod
    def forward(bad: Any, message: str, *values: Any) -> Any:
        return tuple(v.clone() for v in values)

    @staticmethod
    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.message = inputs[1]
        ctx.save_for_backward(inputs[0])
        ctx.save_for_forward(inputs[0])

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        (bad,) = ctx.saved_tensors
        refuse_if(bad, ctx.message)
        return (None, None, *grads)

    @staticmethod
    def jvp(ctx: Any, _: Any, __: Any, *tangents: Any) -> Any:
        (bad,) = ctx.saved_tensors
        refuse_if(bad, ctx.message)
        return tangents

    @staticmethod
    def vmap(info: Any, in_dims: Any, bad: Any, message: str, *values: Any) -> Any:
        return stacked(_Guard, info, in_dims, (bad, message, *values))


def _guarded(bad: Any, message: str, *values: Any) -> Any:
    return _Guard.apply(bad, message, *values)  # type: ignore[no-untyped-call]


def slogdet(native: Any) -> Any:
    """``xp.linalg.slogdet`` from the namespace's own ``native`` (``torch.linalg.slogdet``)."""

    def slogdet(x: Any, /, *args: Any, **kwargs: Any) -> Any:
        """``torch.linalg.slogdet``; the derivative of ``log|det|`` at a singular matrix
        is an ``UnsupportedError`` (``adswitch_torch.xp.linalg``)."""
        sign, logabs = result = native(x, *args, **kwargs)
        if not traced(x) or not x.dtype.is_floating_point:
            return result
        if _finite(logabs) and any_negligible_det(torch.exp(logabs.detach()), x) is False:
            return result  # torch's rule is right here
        # (singular to within roundoff, not only where LU met an exact zero: which of the
        # two a LAPACK kernel gives at a singular matrix depends on the CPU)
        gone = torch.exp(logabs.detach())
        bad = ~torch.isfinite(logabs.detach()) | kit_negligible_det(
            gone, x.detach(), xp=compat_torch
        )
        (logabs,) = _guarded(bad, _SLOGDET, logabs)
        return type(result)((sign, logabs))

    return slogdet


def _dependent(r: Any) -> Any:
    """Per matrix: whether ``R`` has a diagonal entry within roundoff of 0."""
    size = torch.diagonal(r.detach(), dim1=-2, dim2=-1).abs()
    return negligible(size).any(-1)


def _finite(logabs: Any) -> bool:
    """Whether every ``log|det|`` is finite (read cheaply; ``False`` where unreadable)."""
    values = few(logabs) if logabs.ndim == 0 else None
    if values is not None:
        return math.isfinite(values)
    found = readable(logabs)
    return found is not None and any_true(~found[1].isfinite(found[0])) is False


def _independent(r: Any) -> bool:
    """Whether no diagonal entry of ``R`` is within roundoff of 0 (read cheaply)."""
    diagonal = torch.diagonal(r, dim1=-2, dim2=-1)
    values = few(diagonal) if diagonal.ndim == 1 else None
    if values is not None:
        size = [abs(v) for v in values]
        tol = max(size, default=0.0) * gap_factor(len(size), torch.finfo(r.dtype).eps)
        return all(v > tol for v in size)
    found = readable(diagonal)
    if found is None:
        return False
    d, xp = found
    return any_true(kit_negligible(xp.abs(d), xp=xp)) is False


def qr(native: Any) -> Any:
    """``xp.linalg.qr`` from the namespace's own ``native`` (``torch.linalg.qr``)."""

    def qr(x: Any, /, *args: Any, **kwargs: Any) -> Any:
        """``torch.linalg.qr``; the derivative at dependent columns (and of the factors
        that have none) is an ``UnsupportedError`` (``adswitch_torch.xp.linalg``)."""
        result = native(x, *args, **kwargs)
        if not traced(x) or not x.dtype.is_floating_point:
            return result
        q, r = result
        mode = kwargs.get("mode", args[0] if args else "reduced")
        message = _QR
        if mode == "r":
            message = _QR_R
        elif mode == "complete" and x.shape[-2] > x.shape[-1]:
            message = _QR_COMPLETE
        if message is _QR and _independent(r):
            return result  # torch's rule is right here
        bad = _dependent(r)
        if message is not _QR:
            bad = torch.ones_like(bad)
        if mode == "r":
            (r,) = _guarded(bad, message, r)
        else:
            q, r = _guarded(bad, message, q, r)
        return type(result)((q, r))

    return qr


def cholesky(native: Any) -> Any:
    """``xp.linalg.cholesky`` from the namespace's own ``native``."""

    def cholesky(x: Any, /, *args: Any, **kwargs: Any) -> Any:
        """``torch.linalg.cholesky``; forward and reverse mode both the derivative of
        the function of ``(x + x^T) / 2`` (``adswitch_torch.xp.linalg``)."""
        if traced(x) and x.dtype.is_floating_point:
            x = symmetric_tangents(x)
        return native(x, *args, **kwargs)

    return cholesky
