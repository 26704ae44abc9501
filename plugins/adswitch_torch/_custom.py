"""The rule hooks on torch: ``custom_vjp``, ``custom_jvp`` and ``stop_gradient`` (the
``Backend`` hooks of ``adswitch.spec``, called by ``adswitch.custom`` on the flat leaves).

Both rules are ``torch.autograd.Function`` s over the flat leaves (the front end's flat
callables ride along as the first, non-tensor argument, so one class serves every rule):

* ``custom_vjp``: ``forward`` runs the user's ``fwd`` (torch runs it without a graph) and
  keeps its residuals; ``backward`` calls ``bwd(residuals, cotangents)``. When torch builds
  a graph of the backward pass (``create_graph``: a Hessian, a nested gradient, the
  batched forward mode that differentiates the pullback), the kept residuals would be
  constants -- ``forward`` ran without a graph -- so ``fwd`` is run again on the saved
  inputs with grad on, and ``bwd``'s operations on those residuals are differentiated.
  torch's forward AD through it (``ad.jvp``) is the contract's ``UnsupportedError``: a
  vjp rule has no forward-mode rule (a transposed ``bwd`` would be wrong for a ``bwd``
  not linear in its cotangent, such as a clipped gradient).
* ``custom_jvp``: ``jvp`` calls ``rule(primals, tangents)``; reverse mode is the
  derivative of the rule's tangent output with respect to the tangents at zero (the rule
  is linear in them), taken by ``torch.autograd.grad`` with the graph kept when torch
  keeps one, so it nests.
* ``stop_gradient``: ``detach()``, which drops both the reverse graph and a forward-AD
  tangent.

Old-style ``Function`` s (``forward(ctx, ...)``): the residuals are arbitrary trees, which
``setup_context`` could not receive. torch.func cannot batch them; a batched pullback then
runs as a loop (``_pull``).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from adswitch.errors import NoForwardRuleError

__all__ = ["custom_jvp", "custom_vjp", "stop_gradient", "transposing"]

NO_FORWARD = (
    "torch: custom_vjp has no forward-mode rule (ad.jvp, ad.derivative and forward-mode "
    "operators push tangents through it). Fix: define ad.custom_jvp for this function, or "
    "use a reverse-mode operator (ad.gradient, ad.vjp, jacobian mode='reverse')."
)

_functions: dict[str, Any] = {}

# Set while ``_forward`` takes the derivative of a pullback along its cotangent (J t as
# the transpose of u -> J^T u): a ``bwd`` met there would be transposed, which is the
# Jacobian only for a ``bwd`` linear in its cotangent -- a clipped gradient would come
# out unclipped. A vjp rule has no forward-mode rule, so that is refused.
_transposing: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "adswitch_torch_transposing", default=False
)


@contextlib.contextmanager
def transposing() -> Iterator[None]:
    """The pullbacks run inside are transposed (forward mode by reverse; see above)."""
    token = _transposing.set(True)
    try:
        yield
    finally:
        _transposing.reset(token)


def _tensors(torch: Any, leaves: Sequence[Any]) -> list[Any]:
    return [v for v in leaves if isinstance(v, torch.Tensor)]


def _restore(ctx: Any) -> list[Any]:
    """The leaves, tensors from ``ctx.saved_tensors`` (attached to the graph when torch
    keeps one), the others as they were."""
    saved = iter(ctx.saved_tensors)
    return [next(saved) if t else v for v, t in zip(ctx.others, ctx.is_tensor)]


def _save(torch: Any, ctx: Any, leaves: Sequence[Any], forward: bool) -> None:
    ctx.is_tensor = [isinstance(v, torch.Tensor) for v in leaves]
    ctx.others = [None if t else v for v, t in zip(leaves, ctx.is_tensor)]
    tensors = _tensors(torch, leaves)
    ctx.save_for_backward(*tensors)
    if forward:
        ctx.save_for_forward(*tensors)


def _outputs(torch: Any, ctx: Any, outs: Sequence[Any]) -> tuple[Any, ...]:
    """The outputs as a tuple; integer/bool tensors marked non-differentiable."""
    fixed = [o.clone() if isinstance(o, torch.Tensor) and o._base is not None else o for o in outs]
    frozen = [o for o in fixed if isinstance(o, torch.Tensor) and not o.is_floating_point()]
    if frozen:
        ctx.mark_non_differentiable(*frozen)
    ctx.out_like = [
        o if isinstance(o, torch.Tensor) else torch.as_tensor(o) for o in fixed
    ]  # for zero cotangents of outputs torch gives none
    return tuple(fixed)


def _cotangents(torch: Any, ctx: Any, grads: Sequence[Any]) -> list[Any]:
    return [torch.zeros_like(o) if g is None else g for g, o in zip(grads, ctx.out_like)]


def _as_grad(torch: Any, value: Any, leaf: Any, needed: bool) -> Any:
    """``value`` as the gradient torch wants for ``leaf`` (``None``: zero / not asked)."""
    if value is None or not needed or not isinstance(leaf, torch.Tensor):
        return None
    if not isinstance(value, torch.Tensor):
        value = torch.as_tensor(value, dtype=leaf.dtype, device=leaf.device)
    return value


def _vjp_function(torch: Any) -> Any:
    class CustomVjp(torch.autograd.Function):  # type: ignore[misc]
        """``custom_vjp`` of the module doc."""

        @staticmethod
        def forward(ctx: Any, spec: Any, *leaves: Any) -> Any:
            outs, residuals = spec[1](list(leaves))  # spec: (fn, fwd, bwd)
            ctx.spec = spec
            ctx.residuals = residuals
            _save(torch, ctx, leaves, forward=False)
            return _outputs(torch, ctx, outs)

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            if _transposing.get():
                raise NoForwardRuleError(NO_FORWARD)
            _, fwd, bwd = ctx.spec
            leaves = _restore(ctx)
            residuals = ctx.residuals
            if torch.is_grad_enabled() and any(
                isinstance(v, torch.Tensor) and v.requires_grad for v in leaves
            ):
                # A graph of this backward pass is being built: residuals that depend on
                # the inputs must be differentiable functions of them (module doc).
                _, residuals = fwd(leaves)
            cots = bwd(residuals, _cotangents(torch, ctx, grads))
            needs = ctx.needs_input_grad[1:]
            return (None, *(_as_grad(torch, c, v, n) for c, v, n in zip(cots, leaves, needs)))

        @staticmethod
        def jvp(ctx: Any, *tangents: Any) -> Any:
            raise NoForwardRuleError(NO_FORWARD)

    return CustomVjp


def _zero_tangent(torch: Any, leaf: Any) -> Any:
    if isinstance(leaf, torch.Tensor):
        return torch.zeros_like(leaf)
    import numpy as np

    return np.zeros_like(leaf)


def _jvp_function(torch: Any) -> Any:
    class CustomJvp(torch.autograd.Function):  # type: ignore[misc]
        """``custom_jvp`` of the module doc."""

        @staticmethod
        def forward(ctx: Any, spec: Any, *leaves: Any) -> Any:
            ctx.spec = spec  # (fn, rule)
            _save(torch, ctx, leaves, forward=True)
            return _outputs(torch, ctx, spec[0](list(leaves)))

        @staticmethod
        def jvp(ctx: Any, _spec_tangent: Any, *tangents: Any) -> Any:
            _, rule = ctx.spec
            leaves = _restore(ctx)
            ts = [_zero_tangent(torch, v) if t is None else t for v, t in zip(leaves, tangents)]
            _, out_tangents = rule(leaves, ts)
            return tuple(out_tangents)

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            # The rule is linear in the tangents: its vjp in them, at zero, is the rule's
            # transpose. Built with a graph when torch keeps one, so it nests.
            _, rule = ctx.spec
            leaves = _restore(ctx)
            needs = ctx.needs_input_grad[1:]
            create = torch.is_grad_enabled()
            with torch.enable_grad():
                ts = [
                    torch.zeros_like(v, requires_grad=True)
                    if isinstance(v, torch.Tensor) and n
                    else _zero_tangent(torch, v)
                    for v, n in zip(leaves, needs)
                ]
                _, out_t = rule(leaves, ts)
                pairs = [
                    (o, g)
                    for o, g in zip(out_t, _cotangents(torch, ctx, grads))
                    if isinstance(o, torch.Tensor) and o.requires_grad
                ]
                wrt = [t for t, n in zip(ts, needs) if n and isinstance(t, torch.Tensor)]
                found: list[Any] = [None] * len(wrt)
                if pairs and wrt:
                    found = list(
                        torch.autograd.grad(
                            [o for o, _ in pairs],
                            wrt,
                            [g for _, g in pairs],
                            create_graph=create,
                            allow_unused=True,
                        )
                    )
            it = iter(found)
            out = [
                next(it) if n and isinstance(v, torch.Tensor) else None
                for v, n in zip(leaves, needs)
            ]
            return (None, *out)

    return CustomJvp


def _function(torch: Any, kind: str) -> Any:
    made = _functions.get(kind)
    if made is None:
        made = _functions[kind] = (_vjp_function if kind == "vjp" else _jvp_function)(torch)
    return made


def custom_vjp(
    torch: Any,
    fn: Callable[[list[Any]], list[Any]],
    fwd: Callable[[list[Any]], tuple[list[Any], Any]],
    bwd: Callable[[Any, list[Any]], list[Any]],
    leaves: Sequence[Any],
    active: Sequence[bool],
) -> list[Any]:
    """``Backend.custom_vjp`` on torch (module doc)."""
    if not any(active):
        return list(fn(list(leaves)))
    return list(_function(torch, "vjp").apply((fn, fwd, bwd), *leaves))


def custom_jvp(
    torch: Any,
    fn: Callable[[list[Any]], list[Any]],
    rule: Callable[[list[Any], list[Any]], tuple[list[Any], list[Any]]],
    leaves: Sequence[Any],
    active: Sequence[bool],
) -> list[Any]:
    """``Backend.custom_jvp`` on torch (module doc)."""
    if not any(active):
        return list(fn(list(leaves)))
    return list(_function(torch, "jvp").apply((fn, rule), *leaves))


def stop_gradient(torch: Any, value: Any) -> Any:
    """``Backend.stop_gradient`` on torch: ``detach()`` (no graph, no forward tangent)."""
    return value.detach() if isinstance(value, torch.Tensor) else value
