"""What the torch ``linalg`` rules share: the tolerance that tells repeated eigenvalues and
singular values from distinct ones, the masked reciprocal gaps, the vmap rule of a
function over stacks of matrices, and the refusals (an ``UnsupportedError`` raised where a
derivative does not exist, and a guard that raises when a first-order rule that is exact
only to first order is differentiated again).

Value-dependent decisions (is this matrix singular, is this eigenvalue repeated) are taken
only inside the ``forward`` of an ``autograd.Function`` whose ``vmap`` rule hands it the
plain batched stack (:func:`stacked`): a backward pass batched under ``torch.func.vmap``
(the engine's Jacobians) sees batched tensors, on which Python cannot branch.

Imported only from ``adswitch_torch.xp.linalg`` (it imports torch).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import array_api_compat.torch as compat_torch
import numpy as np
import torch

from adswitch.errors import UnsupportedError
from adswitch.spec import (
    beyond_rounding,
    close_pairs,
    gap_factor,
    known_linalg_refusal,
    linalg_refusal,
)
from adswitch.spec import negligible as kit_negligible
from adswitch.spec import negligible_det as kit_negligible_det
from adswitch.spec import tolerance as kit_tolerance

from ...primitives.forward_mode import traced as _carries

__all__ = [
    "any_negligible_det",
    "any_true", "clusters", "concretely", "distinct", "few", "gap_reciprocals", "guard_higher",
    "known_refusal", "negligible", "readable", "refuse_if", "refusal", "safe_reciprocal",
    "spread", "stacked", "sum_reciprocals", "tolerance", "traced",
]  # fmt: skip


def traced(x: Any) -> bool:
    """Whether ``x`` is being differentiated (requires grad, or carries a forward-mode
    tangent): only then do the functions here take their own rules, else torch's."""
    return isinstance(x, torch.Tensor) and _carries(torch, x)


def symmetric_tangents(x: Any) -> Any:
    """``x`` with its own values, differentiated as ``(x + x^T) / 2``.

    torch's ``eigh``/``cholesky`` read one triangle, and their reverse rules return the
    symmetric gradient (the derivative of the function of ``(x + x^T) / 2``), but their
    forward rules push a tangent that is not symmetric as if it were: along ``E_01`` the
    two modes disagreed (``eigh``: -2.50 forward against 2.00 reverse). Fed this,
    both modes follow the symmetric convention, and the values are exactly torch's.
    """
    sym = (x + x.mT) * 0.5
    return sym - sym.detach() + x.detach()


def concretely(flag: Any) -> bool | None:
    """Whether the boolean tensor ``flag`` has a true entry, or ``None`` where its value
    cannot be read here (a tensor batched by ``torch.func.vmap``)."""
    try:
        return bool(flag.any())
    except RuntimeError:
        return None


def readable(x: Any) -> tuple[Any, Any] | None:
    """``(array, namespace)`` for reading the values of ``x`` in a cheap check: numpy's
    view of a CPU tensor (numpy is several times faster than torch on a few numbers), the
    tensor itself and ``array_api_compat.torch`` on other devices; ``None`` where the
    values cannot be read here (batched by ``torch.func.vmap``)."""
    x = x.detach()
    if x.device.type == "cpu" and x.dtype in _NUMPY_DTYPES:
        try:
            return x.numpy(), np
        except RuntimeError:
            return None
    return x, compat_torch


_NUMPY_DTYPES = (torch.float64, torch.float32)
_FEW = 32  # values of one matrix up to this many are checked as Python floats


def few(x: Any) -> Any:
    """The values of a small tensor as Python floats (``tolist``: the cheapest way to
    read a few numbers), or ``None`` where it is not small or cannot be read here
    (batched by ``torch.func.vmap``)."""
    if x.numel() > _FEW * 2:
        return None
    try:
        return x.detach().tolist()
    except RuntimeError:
        return None


def any_true(flag: Any) -> bool | None:
    """Whether the boolean array ``flag`` (numpy or torch) has a true entry, ``None``
    where a batched tensor's value cannot be read."""
    if isinstance(flag, np.ndarray):
        return bool(flag.any())
    return concretely(flag)


def any_negligible_det(det: Any, x: Any) -> bool | None:
    """Whether some determinant ``det`` of the matrices ``x`` is zero to within roundoff
    (``adswitch.spec.negligible_det``; not an exact zero, which depends on the LAPACK
    kernel), read cheaply; ``None`` where the values cannot be read here."""
    found, dets = readable(x), readable(det)
    if found is None or dets is None:
        return None
    array, xp = found
    return any_true(kit_negligible_det(dets[0], array, xp=xp))


def distinct(values: Any) -> bool:
    """Whether the sorted eigen- or singular values ``values`` are plainly distinct: no
    two within :func:`tolerance` (and readable: see :func:`readable`). Where they are,
    torch's own rules are right, and the wrappers return torch's results."""
    n = values.shape[-1]
    if n < 2:
        return True
    v = few(values) if values.ndim == 1 else None
    if v is not None:  # one matrix's
        # (Python floats: several times faster than any array library on a few numbers)
        tol = max(abs(x) for x in v) * gap_factor(n, torch.finfo(values.dtype).eps)
        return all(abs(b - a) > tol for a, b in itertools.pairwise(v))
    found = readable(values)
    if found is None:
        return False
    v, xp = found
    tol = kit_tolerance(v, xp=xp)
    return any_true(xp.abs(v[..., 1:] - v[..., :-1]) <= tol) is False


def refusal(name: str, why: str, fix: str) -> str:
    """The message for ``xp.linalg.<name>`` at a point where its derivative does not
    exist (or is not computed) -- in the words every engine uses (``adswitch.spec``)."""
    return linalg_refusal("torch", name, why, fix)


def known_refusal(key: str) -> str:
    """One of the refusals every engine shares (``adswitch.spec.LINALG_REFUSALS``)."""
    return known_linalg_refusal("torch", key)


def stacked(function: Any, info: Any, in_dims: Sequence[Any], args: Sequence[Any]) -> Any:
    """The ``vmap`` rule of an ``autograd.Function`` over stacks of matrices: the batch
    axis moved to the front (an unbatched tensor argument expanded to it), ``function``
    applied to the whole stack, every output batched along axis 0."""
    size = info.batch_size
    moved = []
    for arg, dim in zip(args, in_dims):
        if not isinstance(arg, torch.Tensor):
            moved.append(arg)
        elif dim is None:
            moved.append(arg.expand(size, *arg.shape))
        else:
            moved.append(arg.movedim(dim, 0))
    out = function.apply(*moved)
    if isinstance(out, tuple):
        return out, tuple(0 for _ in out)
    return out, 0


class _Refusal(torch.autograd.Function):
    """Raise ``UnsupportedError(message)`` if any entry of ``bad`` is true (its
    ``forward`` sees concrete values, also under vmap)."""

    @staticmethod
    def forward(bad: Any, message: str) -> Any:
        if bool(bad.any()):
            raise UnsupportedError(message)
        return bad.clone()

    @staticmethod
    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        pass

    @staticmethod
    def vmap(info: Any, in_dims: Any, bad: Any, message: str) -> Any:
        return stacked(_Refusal, info, in_dims, (bad, message))


def refuse_if(bad: Any, message: str) -> None:
    """Raise ``UnsupportedError(message)`` where the boolean tensor ``bad`` has a true
    entry (batched tensors included)."""
    _Refusal.apply(bad, message)  # type: ignore[no-untyped-call]


class _HigherOrder(torch.autograd.Function):
    """The identity on ``value``, whose own derivative raises where ``degenerate``: it
    wraps the saved values a first-order rule computes with (eigenvalues, eigenvectors)
    at points where that rule is exact to first order only (a dropped term of equal
    eigenvalues), so that a second derivative through them is refused there instead of
    silently wrong -- while the rule stays differentiable in its cotangent or tangent
    (linear, exact: what a forward-mode Jacobian taken as the derivative of the pullback
    needs)."""

    @staticmethod
    def forward(value: Any, degenerate: Any, message: str) -> Any:
        return value.clone()

    @staticmethod
    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.message = inputs[2]
        ctx.save_for_backward(inputs[1])
        ctx.save_for_forward(inputs[1])

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (degenerate,) = ctx.saved_tensors
        refuse_if(degenerate, ctx.message)
        return grad, None, None

    @staticmethod
    def jvp(ctx: Any, tangent: Any, *_: Any) -> Any:
        (degenerate,) = ctx.saved_tensors
        refuse_if(degenerate, ctx.message)
        return tangent

    @staticmethod
    def vmap(info: Any, in_dims: Any, value: Any, degenerate: Any, message: str) -> Any:
        return stacked(_HigherOrder, info, in_dims, (value, degenerate, message))


def guard_higher(value: Any, degenerate: Any, message: str) -> Any:
    """``value`` (a saved value a first-order rule computes with), guarded by
    :class:`_HigherOrder` when the rule's result may be differentiated again: grad mode
    is on and ``value`` requires grad. ``degenerate``: per matrix of the stack."""
    if torch.is_grad_enabled() and value.requires_grad:
        return _HigherOrder.apply(value, degenerate, message)  # type: ignore[no-untyped-call]
    return value


def tolerance(values: Any) -> Any:
    """``(..., 1)``: the magnitude below which differences of the eigen- or singular
    values ``values`` (``(..., n)``) are roundoff, per matrix (``adswitch.spec``'s)."""
    return kit_tolerance(values.detach(), xp=compat_torch)


def _eye(n: int, like: Any) -> Any:
    return torch.eye(n, dtype=torch.bool, device=like.device)


def clusters(values: Any) -> Any:
    """``(..., n, n)`` booleans: which pairs ``i != j`` of the sorted ``values`` are equal
    to within :func:`tolerance` (a repeated eigenvalue or singular value)."""
    return close_pairs(values.detach(), xp=compat_torch)


def negligible(values: Any) -> Any:
    """Which singular values ``(..., n)`` are zero to within :func:`tolerance`."""
    return kit_negligible(values.detach(), xp=compat_torch)


def gap_reciprocals(values: Any, close: Any) -> Any:
    """``F[..., i, j] = 1 / (v_j - v_i)``, 0 on the diagonal and where ``close`` (a
    repeated value): differentiable in ``values``, and never ``inf`` (so no ``0 * inf``
    reaches a derivative of the unselected branch)."""
    skip = close | _eye(values.shape[-1], values)
    gaps = values[..., None, :] - values[..., :, None]
    return torch.where(skip, 0.0, 1.0 / torch.where(skip, 1.0, gaps))


def sum_reciprocals(values: Any, zero: Any) -> Any:
    """``F[..., i, j] = 1 / (v_j + v_i)`` for singular values, 0 on the diagonal and where
    both are negligible (``zero``)."""
    skip = (zero[..., None, :] & zero[..., :, None]) | _eye(values.shape[-1], values)
    sums = values[..., None, :] + values[..., :, None]
    return torch.where(skip, 0.0, 1.0 / torch.where(skip, 1.0, sums))


def safe_reciprocal(values: Any, zero: Any) -> Any:
    """``1 / v``, and 0 where ``v`` is negligible (``zero``)."""
    return torch.where(zero, 0.0, 1.0 / torch.where(zero, 1.0, values))


def spread(values: Any, scale: Any) -> Any:
    """Which entries of ``values`` are not zero to within ``sqrt(eps)`` times ``scale``
    (per matrix, broadcast against ``values``): a generous rounding, as what is tested is
    whether a derivative exists, not a value (``adswitch.spec.beyond_rounding``)."""
    return beyond_rounding(values.detach(), scale, xp=compat_torch)
