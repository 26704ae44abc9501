"""``xp.linalg.det`` on torch with its derivatives right at singular matrices, where
torch's own gradient is 0 when LU meets an exact zero pivot.

Taken where torch's ``det`` is zero to within roundoff (``adswitch.spec.negligible_det``;
elsewhere torch's rule is right: the wrapper returns torch's own result). The gradient
of ``det`` is the cofactor matrix ``C`` (the adjugate's transpose), and its derivative
``dC[t]``, the Hessian of ``det`` applied to ``t`` (a symmetric operator, so the
gradient rule of ``C`` is its tangent rule):

* well-conditioned matrices (LU's pivots within ``sqrt(eps)`` of the largest, a cheap
  test from the one LU factorization ``C`` needs): ``C = det(x) inv(x)^T`` and ``dC[t] =
  C tr(inv(x) t) - C t^T inv(x)^T``, in differentiable operations (every order);
* the others, singular ones included, from the SVD ``x = U S V^T``: ``C = det(U V^T) U
  diag(p) V^T`` with ``p_i`` the product of the other singular values (rank ``n - 1``:
  nonzero; lower: 0), and ``dC[t] = det(U V^T) U (diag(Q m) - Q o M^T) V^T`` for ``M =
  U^T t V``, ``m = diag(M)``, ``Q_ik`` the product of the singular values other than the
  ``i``-th and ``k``-th. Both are exact at any rank; a third derivative there is refused
  (``UnsupportedError``).

Imported only from ``adswitch_torch.xp.linalg`` (it imports torch).
"""

from __future__ import annotations

from typing import Any

import array_api_compat.torch as compat_torch
import torch

from adswitch.spec import well_conditioned

from .support import (
    any_negligible_det,
    few,
    refusal,
    refuse_if,
    stacked,
    traced,
)

__all__ = ["det"]

_THIRD = refusal(
    "det",
    "a third derivative at a singular (or ill-conditioned) matrix is not computed",
    "take third derivatives of det at a well-conditioned matrix",
)


def _products_of_others(s: Any) -> Any:
    """``out[..., i] = prod(s[..., j] for j != i)``, without dividing (zeros allowed)."""
    ones = s.new_ones((*s.shape[:-1], 1))
    before = torch.cumprod(torch.cat([ones, s[..., :-1]], -1), -1)
    after = torch.cumprod(torch.cat([ones, s.flip(-1)[..., :-1]], -1), -1).flip(-1)
    return before * after


def _pair_products(s: Any) -> Any:
    """``Q[..., i, k] = prod(s[..., l] for l not in (i, k))`` for ``i != k``; 0 for ``i == k``."""
    n = s.shape[-1]
    others = s[..., None, :].repeat(*([1] * (s.ndim - 1)), n, 1)
    others.diagonal(dim1=-2, dim2=-1).fill_(1.0)
    q = _products_of_others(others)
    q.diagonal(dim1=-2, dim2=-1).zero_()
    return q


def _svd_parts(x: Any) -> tuple[Any, Any, Any, Any]:
    u, s, vh = torch.linalg.svd(x)
    sign = torch.linalg.det(u) * torch.linalg.det(vh)
    return u, s, vh, sign[..., None, None]


def _svd_cofactor(x: Any) -> Any:
    u, s, vh, sign = _svd_parts(x)
    return sign * (u * _products_of_others(s)[..., None, :]) @ vh


def _svd_cofactor_tangent(x: Any, t: Any) -> Any:
    u, s, vh, sign = _svd_parts(x)
    m = u.mT @ t @ vh.mT
    q = _pair_products(s)
    diag = (q * torch.diagonal(m, dim1=-2, dim2=-1)[..., None, :]).sum(-1)
    return sign * u @ (torch.diag_embed(diag) - q * m.mT) @ vh


def _cofactor_matrix(x: Any) -> tuple[Any, Any]:
    """``(C, regular)``: the cofactor matrices of the stack ``x`` and which matrices were
    well-conditioned (LU) rather than computed from the SVD."""
    n = x.shape[-1]
    if n == 0:
        return torch.zeros_like(x), torch.ones(x.shape[:-2], dtype=torch.bool, device=x.device)
    lu, pivots, _ = torch.linalg.lu_factor_ex(x)
    pivot = torch.diagonal(lu, dim1=-2, dim2=-1)
    size = pivot.abs()
    regular = well_conditioned(size, xp=compat_torch)
    steps = torch.arange(1, n + 1, device=x.device, dtype=pivots.dtype)
    swaps = (pivots != steps).sum(-1)
    det = pivot.prod(-1) * (1.0 - 2.0 * (swaps % 2)).to(x.dtype)
    eye = torch.eye(n, dtype=x.dtype, device=x.device).expand_as(x)
    inverse_t = torch.linalg.lu_solve(lu, pivots, eye, adjoint=True)
    cofactor = det[..., None, None] * inverse_t
    if not bool(regular.all()):
        ill = ~regular
        cofactor[ill] = _svd_cofactor(x[ill])
    return cofactor, regular


class _SingularTangent(torch.autograd.Function):
    """``dC[t]`` from the SVD for the matrices that are not ``regular`` (0 for the
    others): linear in ``t``, its derivative in ``x`` (a third derivative) refused."""

    @staticmethod
    def forward(x: Any, t: Any, regular: Any) -> Any:
        out = torch.zeros_like(t)
        if not bool(regular.all()):
            ill = ~regular
            out[ill] = _svd_cofactor_tangent(x[ill], t[ill])
        return out

    @staticmethod
    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.save_for_backward(inputs[0], inputs[2])
        ctx.save_for_forward(inputs[0], inputs[2])

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, regular = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            refuse_if(~regular, _THIRD)
        grad_t = None
        if ctx.needs_input_grad[1]:
            grad_t = _SingularTangent.apply(x, grad, regular)  # type: ignore[no-untyped-call]
        return None, grad_t, None

    @staticmethod
    def jvp(ctx: Any, dx: Any, dt: Any, _: Any) -> Any:
        x, regular = ctx.saved_tensors
        if dx is not None:
            refuse_if(~regular, _THIRD)
        if dt is None:
            return torch.zeros_like(x)
        return _SingularTangent.apply(x, dt, regular)  # type: ignore[no-untyped-call]

    @staticmethod
    def vmap(info: Any, in_dims: Any, x: Any, t: Any, regular: Any) -> Any:
        return stacked(_SingularTangent, info, in_dims, (x, t, regular))


def _cofactor_tangent(x: Any, cofactor: Any, regular: Any, t: Any) -> Any:
    """``dC[t]``: the module doc's two formulas, each where it applies."""
    n = x.shape[-1]
    keep = regular[..., None, None]
    safe = torch.where(keep, x, torch.eye(n, dtype=x.dtype, device=x.device))
    inverse_t = torch.linalg.inv(safe).mT
    trace = (inverse_t * t).sum((-2, -1), keepdim=True)
    smooth = trace * cofactor - (cofactor @ t.mT) @ inverse_t
    singular = _SingularTangent.apply(x, t, regular)  # type: ignore[no-untyped-call]
    return torch.where(keep, smooth, singular)


class _Cofactor(torch.autograd.Function):
    """``(C, regular)`` of the module doc; ``C`` differentiable to every order (third
    derivatives at ill-conditioned matrices refused)."""

    @staticmethod
    def forward(x: Any) -> Any:
        return _cofactor_matrix(x)

    @staticmethod
    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.mark_non_differentiable(output[1])
        ctx.save_for_backward(inputs[0], *output)
        ctx.save_for_forward(inputs[0], *output)

    @staticmethod
    def backward(ctx: Any, grad: Any, _: Any) -> Any:
        x, cofactor, regular = ctx.saved_tensors
        return _cofactor_tangent(x, cofactor, regular, grad)

    @staticmethod
    def jvp(ctx: Any, dx: Any) -> Any:
        x, cofactor, regular = ctx.saved_tensors
        return _cofactor_tangent(x, cofactor, regular, dx), None

    @staticmethod
    def vmap(info: Any, in_dims: Any, x: Any) -> Any:
        return stacked(_Cofactor, info, in_dims, (x,))


def _cofactor(x: Any) -> Any:
    return _Cofactor.apply(x)[0]  # type: ignore[no-untyped-call]


class _Det(torch.autograd.Function):
    """``torch.linalg.det`` whose gradient is the cofactor matrix at every rank."""

    @staticmethod
    def forward(x: Any) -> Any:
        return torch.linalg.det(x)

    @staticmethod
    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.save_for_backward(inputs[0])
        ctx.save_for_forward(inputs[0])

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved_tensors
        return grad[..., None, None] * _cofactor(x)

    @staticmethod
    def jvp(ctx: Any, dx: Any) -> Any:
        (x,) = ctx.saved_tensors
        return (dx * _cofactor(x)).sum((-2, -1))

    @staticmethod
    def vmap(info: Any, in_dims: Any, x: Any) -> Any:
        return stacked(_Det, info, in_dims, (x,))


def _regular(value: Any, x: Any) -> bool:
    """Whether no determinant is zero to within roundoff (read cheaply; ``False`` where
    unreadable). torch's own rule fails at an exact zero pivot and is right, to first
    and second order, at every other matrix (measured: roundoff-singular ones of ranks
    ``n - 1`` to 1, with determinants of 1e-15 to 1e-48); but whether LU meets that exact
    zero depends on the LAPACK kernel (one CPU's 0 is another's -6.7e-16), so every
    matrix singular to within roundoff takes the exact rule (whose third derivative
    is refused there)."""
    values = few(value) if value.ndim == 0 else None
    if values is not None and values == 0.0:
        return False
    return any_negligible_det(value, x) is False


def det(native: Any) -> Any:
    """``xp.linalg.det`` from the namespace's own ``native`` (``torch.linalg.det``)."""

    def det(x: Any, /, *args: Any, **kwargs: Any) -> Any:
        """``torch.linalg.det``; its gradient is the cofactor matrix at singular matrices
        too, its second derivative exact there (``adswitch_torch.xp.linalg``)."""
        value = native(x, *args, **kwargs)
        if args or kwargs or not traced(x) or not x.dtype.is_floating_point:
            return value
        if _regular(value, x):
            return value  # torch's rule is right here
        return _Det.apply(x)  # type: ignore[no-untyped-call]

    return det
