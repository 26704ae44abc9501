"""adswitch's kink convention for ``xp`` on torch (the README's table): at a point where a
function is not differentiable, its derivative is the limit of the symmetric difference
quotient -- the mean of the one-sided derivatives, which a central finite difference
converges to. torch already gives it for ``abs``, ``sign``, ``maximum``/``minimum``, the
``max``/``min`` reductions (ties share evenly), ``floor``/``ceil``/``round``/``trunc``,
``where``, ``sqrt``, ``pow`` and ``linalg.vector_norm``; what differs is taken here:

* ``clip(x, min, max)`` at ``x == min`` or ``x == max``: slope 1/2 for ``x`` and 1/2 for
  the bound, when it is a differentiated tensor (torch's ``clamp`` gives ``x`` all of it:
  slope 1, and the bound 0).
* ``sort``: entries tied in value share the mean of the cotangents (or tangents) at their
  sorted positions (torch's follows one permutation, so tied inputs got different,
  order-dependent derivatives).

Both are ``torch.autograd.Function`` s whose forward is torch's own function (values are
torch's), with ``backward``, forward-mode ``jvp`` and a generated ``vmap`` rule, their
derivatives written in differentiable torch operations, so Hessians and batched Jacobians
go through them. They are taken only while a floating tensor argument is differentiated
(requires grad, or carries a forward-mode tangent); otherwise the call is torch's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._modes import traced

__all__ = ["kink_rules"]


def kink_rules(compat: Any) -> dict[str, Callable[..., Any]]:
    """``clip`` and ``sort`` of the module doc, over ``array_api_compat.torch``.

    Args:
        compat: ``array_api_compat.torch``, whose functions give the values.

    Returns:
        ``{"clip": ..., "sort": ...}``.
    """
    import torch

    tensor = torch.Tensor

    def slopes(x: Any, lo: Any, hi: Any, need: tuple[bool, bool, bool]) -> list[Any]:
        """The slopes of ``clip`` in ``x``, ``lo``, ``hi`` (``None`` where not needed).

        ``sign(x - lo)`` and ``sign(hi - x)`` are 1 strictly inside that bound, 0 on it and
        -1 past it (a missing bound counts as 1), so the means of the one-sided slopes are
        ``(sign(x - lo) + sign(hi - x)) / 2`` for ``x``, ``(1 - sign(x - lo)) / 2`` for
        ``lo`` and ``(1 - sign(hi - x)) / 2`` for ``hi``. They are piecewise constant (no
        derivative of their own), so they are built without autograd and in place: fresh
        tensors are what costs here, and this makes as few as torch's own ``clamp`` rule.
        """
        out: list[Any] = [None, None, None]
        with torch.no_grad():
            below: Any = 1.0 if lo is None else torch.sub(x, lo).sign_()
            above: Any = 1.0 if hi is None else torch.rsub(x, hi).sign_()
            if need[1]:
                out[1] = torch.rsub(below, 1.0).mul_(0.5)
            if need[2]:
                out[2] = torch.rsub(above, 1.0).mul_(0.5)
            if need[0]:
                both = torch.add(below, above) if _unequal(below, above) else None
                if both is None:  # a fresh tensor of the full shape: add in place
                    both = below.add_(above) if isinstance(below, tensor) else above.add_(below)
                out[0] = both.mul_(0.5)
        return out

    class _Clip(torch.autograd.Function):
        """``clip`` with the symmetric slopes at its bounds (module doc)."""

        generate_vmap_rule = True

        @staticmethod
        def forward(x: Any, lo: Any, hi: Any) -> Any:
            return compat.clip(x, lo, hi)

        @staticmethod
        def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
            x, lo, hi = inputs
            ctx.bounds = tuple(isinstance(b, tensor) for b in (lo, hi))
            ctx.scalars = tuple(None if isinstance(b, tensor) else b for b in (lo, hi))
            saved = [v for v in (x, lo, hi) if isinstance(v, tensor)]
            ctx.save_for_backward(*saved)
            ctx.save_for_forward(*saved)

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            inputs = _restore(ctx)
            need = tuple(bool(n) for n in ctx.needs_input_grad)
            return tuple(
                None if s is None else (g * s).sum_to_size(v.shape)
                for s, v in zip(slopes(*inputs, need), inputs)  # type: ignore[arg-type]
            )

        @staticmethod
        def jvp(ctx: Any, x_t: Any, lo_t: Any, hi_t: Any) -> Any:
            tangents = (x_t, lo_t, hi_t)
            need = tuple(t is not None and b for t, b in zip(tangents, (True, *ctx.bounds)))
            out: Any = None
            for s, t in zip(slopes(*_restore(ctx), need), tangents):  # type: ignore[arg-type]
                if s is not None:
                    out = t * s if out is None else out + t * s
            return out

    def _restore(ctx: Any) -> tuple[Any, Any, Any]:
        saved = list(ctx.saved_tensors)
        x = saved.pop(0)
        lo = saved.pop(0) if ctx.bounds[0] else ctx.scalars[0]
        hi = saved.pop(0) if ctx.bounds[1] else ctx.scalars[1]
        return x, lo, hi

    def clip(x: Any, /, min: Any = None, max: Any = None, **kwargs: Any) -> Any:
        """``clip``; slope 1/2 to ``x`` and 1/2 to the bound where they are equal."""
        args = [v for v in (x, min, max) if isinstance(v, tensor)]
        if (
            kwargs
            or not isinstance(x, tensor)
            or not x.is_floating_point()
            or (min is None and max is None)
            or not any(traced(torch, v) for v in args)
        ):
            return compat.clip(x, min, max, **kwargs)
        return _Clip.apply(x, min, max)  # type: ignore[no-untyped-call]

    class _Sort(torch.autograd.Function):
        """``sort`` whose tied entries share their cotangents (module doc)."""

        generate_vmap_rule = True

        @staticmethod
        def forward(x: Any, dim: int, descending: bool) -> Any:
            values, order = torch.sort(x, dim=dim, descending=descending, stable=True)
            return values, order

        @staticmethod
        def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
            ctx.dim = inputs[1]
            values, order = output
            ctx.mark_non_differentiable(order)
            ctx.save_for_backward(values, order)
            ctx.save_for_forward(values, order)

        @staticmethod
        def backward(ctx: Any, g: Any, _g_order: Any) -> Any:
            values, order = ctx.saved_tensors
            shared = _tie_mean(torch, g, values, ctx.dim)
            return torch.zeros_like(shared).scatter(ctx.dim, order, shared), None, None

        @staticmethod
        def jvp(ctx: Any, x_t: Any, _dim: Any, _descending: Any) -> Any:
            values, order = ctx.saved_tensors
            return _tie_mean(torch, x_t.gather(ctx.dim, order), values, ctx.dim), None

    def sort(
        x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True, **kwargs: Any
    ) -> Any:
        """``sort``; tied entries share their cotangents (module doc)."""
        if (
            kwargs
            or not isinstance(x, tensor)
            or not x.is_floating_point()
            or x.ndim == 0
            or not traced(torch, x)
        ):
            return compat.sort(x, axis=axis, descending=descending, stable=stable, **kwargs)
        # ``stable`` only orders equal values, which the rule makes indistinguishable.
        values, _ = _Sort.apply(x, axis, bool(descending))  # type: ignore[no-untyped-call]
        return values

    return {"clip": clip, "sort": sort}


def _unequal(a: Any, b: Any) -> bool:
    """Whether ``a + b`` cannot be written into either: both tensors of other shapes."""
    return hasattr(a, "shape") and hasattr(b, "shape") and a.shape != b.shape


def _tie_mean(torch: Any, t: Any, values: Any, dim: int) -> Any:
    """``t`` with each run of equal entries of the sorted ``values`` (along ``dim``)
    replaced by the run's mean; linear in ``t`` (a scatter-add, a scale, a gather), so it
    differentiates again. A run of one keeps its entry exactly."""
    n = values.shape[dim]
    if n < 2:
        return t
    starts = values.narrow(dim, 1, n - 1) != values.narrow(dim, 0, n - 1)  # nan: own run
    group = torch.cat([torch.zeros_like(starts.narrow(dim, 0, 1)), starts], dim).cumsum(dim)
    sums = torch.zeros_like(t).scatter_add(dim, group, t)
    counts = torch.zeros_like(t).scatter_add(dim, group, torch.ones_like(t))
    return (sums / counts.clamp(min=1.0)).gather(dim, group)
