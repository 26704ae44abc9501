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
* ``sqrt`` at 0, ``pow(x, p)`` with a Python ``float`` ``p < 1`` (``p != 0``) at 0,
  ``asin``/``acos`` at +-1 and ``acosh`` at 1: the slope is infinite there, and torch's
  rules give ``0 * inf = nan`` for a zero cotangent or tangent (e.g. the off-diagonal
  entries of a Jacobian); here a zero seed contributes 0 (``_Seeded``), a nonzero one
  the infinite slope, at every order. A CPU tensor takes these rules only when it holds
  such a point (a custom Function's Python backward costs tens of microseconds).

All are ``torch.autograd.Function`` s whose forward is torch's own function (values are
torch's), with ``backward``, forward-mode ``jvp`` and a generated ``vmap`` rule, their
derivatives written in differentiable torch operations, so Hessians and batched Jacobians
go through them. They are taken only while a floating tensor argument is differentiated
(requires grad, or carries a forward-mode tangent); otherwise the call is torch's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import private_api
from ..primitives.forward_mode import traced

__all__ = ["kink_rules"]


def kink_rules(compat: Any, pow: Callable[..., Any] | None = None) -> dict[str, Callable[..., Any]]:
    """``clip``, ``sort``, ``sqrt`` and ``pow`` of the module doc, over ``array_api_compat.torch``.

    Args:
        compat: ``array_api_compat.torch``, whose functions give the values.
        pow: the namespace's ``pow`` for every other call (default ``compat.pow``).

    Returns:
        ``{"clip": ..., "sort": ..., "sqrt": ..., "pow": ...}``.
    """
    import torch

    tensor = torch.Tensor
    functorch_stack = private_api.functorch_stack(torch)

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

    class _Seeded(torch.autograd.Function):
        """``a * b`` with 0 where ``a`` is 0 and ``b`` infinite (``_seeded_product``);
        linear in ``a`` (its own rules are seeded products again, so every order and
        the derivative of a pullback keep it)."""

        generate_vmap_rule = True

        @staticmethod
        def forward(a: Any, b: Any) -> Any:
            return _seeded_product(torch, a, b)

        @staticmethod
        def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
            ctx.save_for_backward(*inputs)
            ctx.save_for_forward(*inputs)

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            a, b = ctx.saved_tensors
            return seeded(g, b), seeded(g, a)

        @staticmethod
        def jvp(ctx: Any, a_t: Any, b_t: Any) -> Any:
            a, b = ctx.saved_tensors
            out = None if a_t is None else seeded(a_t, b)
            if b_t is not None:
                out = seeded(b_t, a) if out is None else out + seeded(b_t, a)
            return out

    def seeded(a: Any, b: Any) -> Any:
        return _Seeded.apply(a, b)  # type: ignore[no-untyped-call]

    class _Power(torch.autograd.Function):
        """``k * x ** p`` whose slope ``k p x ** (p - 1)`` (this rule again) is applied
        to a seed as a seeded product: a zero seed contributes 0 where it is infinite."""

        generate_vmap_rule = True

        @staticmethod
        def forward(x: Any, p: float, k: float) -> Any:
            out = torch.sqrt(x) if p == 0.5 else torch.pow(x, p)  # (sqrt: torch's value)
            return out if k == 1.0 else out * k

        @staticmethod
        def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
            ctx.p, ctx.k = inputs[1], inputs[2]
            ctx.save_for_backward(inputs[0], output)
            ctx.save_for_forward(inputs[0])

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            x, out = ctx.saved_tensors
            if not torch.is_grad_enabled():
                # First order (no graph of this backward is built): plain kernels, the
                # zero seeds masked in one where; sqrt's slope from its value, as torch's.
                p, k = ctx.p, ctx.k
                if p == 0.0 or k == 0.0:
                    return torch.zeros_like(g), None, None
                if p == 0.5 and k == 1.0:
                    product = g / (out * 2.0)
                else:
                    product = g * (torch.pow(x, p - 1.0) * (k * p))
                return torch.where(g == 0, 0.0, product), None, None
            return slope(g, x, ctx.p, ctx.k), None, None

        @staticmethod
        def jvp(ctx: Any, x_t: Any, _p: Any, _k: Any) -> Any:
            (x,) = ctx.saved_tensors
            return slope(x_t, x, ctx.p, ctx.k)

    def slope(seed: Any, x: Any, p: float, k: float) -> Any:
        """``seed`` times the slope ``k p x ** (p - 1)`` (this rule again), seeded."""
        if p == 0.0 or k == 0.0:  # a constant: no slope (also at x == 0)
            return torch.zeros_like(seed)
        return seeded(seed, _Power.apply(x, p - 1.0, k * p))  # type: ignore[no-untyped-call]

    def at_zero(x: Any) -> bool:
        """Whether ``x`` may hold a 0 (where the slope is infinite). A custom Function
        costs tens of microseconds a call (its backward is Python), so a CPU tensor
        outside ``torch.func`` is asked (no device sync); any other takes the rule."""
        if x.device.type != "cpu" or functorch_stack() is not None:
            return True
        return bool((x == 0).any())

    def sqrt(x: Any, /, **kwargs: Any) -> Any:
        """``sqrt``; a zero seed contributes 0 at ``x == 0`` (module doc)."""
        if (
            kwargs
            or not isinstance(x, tensor)
            or not x.is_floating_point()
            or not traced(torch, x)
            or not at_zero(x)
        ):
            return compat.sqrt(x, **kwargs)
        return _Power.apply(x, 0.5, 1.0)  # type: ignore[no-untyped-call]

    def inverse(value: Any, inner: Callable[[Any], Any], sign: float) -> Any:
        """``asin``/``acos``/``acosh``: slope ``sign * inner(x) ** -0.5``, infinite where
        ``inner(x) == 0`` (``x == +-1``, ``x == 1``), applied to seeds as a seeded product."""

        class _Inverse(torch.autograd.Function):
            generate_vmap_rule = True

            @staticmethod
            def forward(x: Any) -> Any:
                return value(x)

            @staticmethod
            def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
                ctx.save_for_backward(inputs[0])
                ctx.save_for_forward(inputs[0])

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                (x,) = ctx.saved_tensors
                if not torch.is_grad_enabled():  # first order: plain kernels (as _Power)
                    return torch.where(g == 0, 0.0, g * (sign * torch.rsqrt(inner(x))))
                return seeded(g, _Power.apply(inner(x), -0.5, sign))  # type: ignore[no-untyped-call]

            @staticmethod
            def jvp(ctx: Any, x_t: Any) -> Any:
                (x,) = ctx.saved_tensors
                return seeded(x_t, _Power.apply(inner(x), -0.5, sign))  # type: ignore[no-untyped-call]

        def call(x: Any, /, **kwargs: Any) -> Any:
            if (
                kwargs
                or not isinstance(x, tensor)
                or not x.is_floating_point()
                or not traced(torch, x)
                or not at_zero(inner(x.detach()))
            ):
                return value(x, **kwargs)
            return _Inverse.apply(x)  # type: ignore[no-untyped-call]

        return call

    other_pow = compat.pow if pow is None else pow

    def pow_(x1: Any, x2: Any, /) -> Any:
        """``pow``; for a float exponent ``p < 1`` a zero seed contributes 0 at 0 (module doc)."""
        if (
            type(x2) is float
            and x2 < 1.0
            and x2 != 0.0
            and isinstance(x1, tensor)
            and x1.is_floating_point()
            and traced(torch, x1)
            and at_zero(x1)
        ):
            return _Power.apply(x1, x2, 1.0)  # type: ignore[no-untyped-call]
        return other_pow(x1, x2)

    return {
        "clip": clip,
        "sort": sort,
        "sqrt": sqrt,
        "pow": pow_,
        "asin": inverse(compat.asin, lambda x: 1.0 - x * x, 1.0),
        "acos": inverse(compat.acos, lambda x: 1.0 - x * x, -1.0),
        "acosh": inverse(compat.acosh, lambda x: x * x - 1.0, 1.0),
    }


def _seeded_product(torch: Any, seed: Any, slope: Any) -> Any:
    """``seed * slope`` with 0 where the seed is 0 and the slope infinite: a zero cotangent
    or tangent contributes nothing (never ``0 * inf = nan``); elsewhere the plain product
    (a masked ``where`` only there, so a finite slope's derivatives are untouched)."""
    out = seed * slope
    return torch.where((seed == 0) & torch.isinf(slope), torch.zeros_like(out), out)


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
