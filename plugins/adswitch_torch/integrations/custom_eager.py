"""The eager fast path of ``custom_vjp`` on torch: an old-style ``torch.autograd.Function``.

Outside any ``torch.func`` transform nothing needs the new-style Function of
:mod:`adswitch_torch.integrations.custom` (``setup_context``, ``generate_vmap_rule``,
residuals carried as extra
outputs because torch's vmap forbids tensors on ``ctx``): an old-style Function
(``forward(ctx, ...)``) saves the residual tensors with ``save_for_backward`` directly --
inputs, outputs or intermediates alike, so they still go through saved-tensor hooks
(``torch.utils.checkpoint``) and version checks -- and keeps the residual tree's
structure and non-tensor leaves on ``ctx``. That skips ``setup_context``, the extra
outputs and their ``mark_non_differentiable``, and the residuals' input/output
bookkeeping: about a third of a tiny rule call.

Everything else is the new-style Function's: the same ``fixed`` copies of outputs that
are inputs or views, zero cotangents for outputs without a gradient (torch's own
``materialize_grads`` for tensors), the same re-run of ``fwd`` when a graph of the
backward pass is built (nested derivatives), the same ``NoForwardRuleError`` for forward
mode. Inside a transform :func:`adswitch_torch.integrations.custom.custom_vjp` keeps the
new-style one.

It also holds the small pieces both Functions share (``custom`` imports them from here):
the copies of outputs, the residual tree's flattening, the gradients as torch wants them,
and the flag of a transposed pullback.

Example:
    >>> fast = vjp_function(torch)  # doctest: +SKIP
    >>> outs = fast.apply(call, x)  # doctest: +SKIP
"""

from __future__ import annotations

import contextvars
from collections.abc import Sequence
from typing import Any

from adswitch.errors import NoForwardRuleError

from .. import private_api

__all__ = [
    "NO_FORWARD",
    "ONE",
    "TRANSPOSING",
    "TUPLE",
    "as_grad",
    "builds_graph",
    "fixed",
    "flat",
    "inside",
    "eager_vjp",
    "unflat",
    "vjp_function",
]

NO_FORWARD = (
    "torch: custom_vjp has no forward-mode rule (ad.jvp, ad.derivative, forward-mode "
    "operators and torch.func.jvp/jacfwd push tangents through it). Fix: define "
    "ad.custom_jvp for this function, or use a reverse-mode operator (ad.gradient, ad.vjp, "
    "jacobian mode='reverse', torch.func.grad/jacrev)."
)

# Set while ``forward`` takes the derivative of a pullback along its cotangent (J t as
# the transpose of u -> J^T u): a ``bwd`` met there would be transposed, which is the
# Jacobian only for a ``bwd`` linear in its cotangent -- a clipped gradient would come
# out unclipped. A vjp rule has no forward-mode rule, so that is refused.
TRANSPOSING: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "adswitch_torch_transposing", default=False
)


def fixed(torch: Any, outs: Sequence[Any], leaves: Sequence[Any]) -> list[Any]:
    """``outs``, with a copy of each that is an input or a view."""
    # an input, or a view, as a Function output confuses torch's view tracking (and a
    # new-style Function refuses to save it): a copy. (Loops, not generators: this runs
    # on every rule call.)
    Tensor = torch.Tensor
    result = list(outs)
    for k, o in enumerate(result):
        if isinstance(o, Tensor):
            if o._base is not None:
                result[k] = o.clone()
                continue
            for v in leaves:
                if v is o:
                    result[k] = o.clone()
                    break
    return result


# The common residuals -- one tensor, or a flat tuple of tensors and constants -- skip
# torch's pytree (a tenth of a tiny rule call's time); any other tree goes through it.
ONE, TUPLE = object(), object()


def flat(torch: Any, residuals: Any) -> tuple[list[Any], Any]:
    """The residual tree's leaves and spec (``ONE``, ``TUPLE`` or torch's)."""
    if isinstance(residuals, torch.Tensor) or residuals is None:
        return [residuals], ONE
    if type(residuals) is tuple:
        for r in residuals:
            if not (r is None or isinstance(r, (torch.Tensor, float, int, bool, str))):
                break
        else:
            return list(residuals), TUPLE
    return private_api.pytree().tree_flatten(residuals)  # type: ignore[no-any-return]


def unflat(flat: Sequence[Any], spec: Any) -> Any:
    """The residual tree of ``flat``'s leaves and spec."""
    if spec is ONE:
        return flat[0]
    if spec is TUPLE:
        return tuple(flat)
    return private_api.pytree().tree_unflatten(list(flat), spec)


def as_grad(torch: Any, value: Any, leaf: Any, needed: bool) -> Any:
    """``value`` as the gradient torch wants for ``leaf`` (``None``: zero / not asked)."""
    if value is None or not needed or not isinstance(leaf, torch.Tensor):
        return None
    if not isinstance(value, torch.Tensor):
        value = torch.as_tensor(value, dtype=leaf.dtype, device=leaf.device)
    return value


def inside(torch: Any) -> bool:
    """Whether a ``torch.func`` transform is running."""
    return private_api.functorch_stack(torch)() is not None


def builds_graph(torch: Any, leaves: Sequence[Any]) -> bool:
    """Whether torch is building a graph of the backward pass being run (``create_graph``,
    or a ``torch.func`` level above): then the saved residuals would be constants, and
    ``fwd`` runs again on the inputs so that ``bwd``'s use of them is differentiated."""
    if not torch.is_grad_enabled():
        return False
    if inside(torch):
        return True
    Tensor = torch.Tensor
    return any(isinstance(v, Tensor) and v.requires_grad for v in leaves)


# per-leaf marks of the residual tree: a constant (its value kept on ctx), else the index
# of the saved tensor it is
_CONST = -1
# a tensor's place among the leaves kept on ctx (``others``): the tensors are saved
_TENSOR = object()
# the residual constants ``flat`` keeps in a flat tuple
_CONSTS = (float, int, bool, str)


def vjp_function(torch: Any) -> Any:
    """The old-style Function (module doc).

    Args:
        torch: the torch module.

    Returns:
        A ``torch.autograd.Function`` subclass: ``apply((fwd, bwd, others), *leaves)``
        with ``fwd``/``bwd`` the front end's flat callables and ``others`` the leaves with
        their tensors replaced by a mark (``None`` itself when every leaf is a tensor),
        the result the tuple of ``fwd``'s outputs.
    """
    Tensor = torch.Tensor
    transposed = TRANSPOSING.get
    grad_enabled = torch.is_grad_enabled

    class CustomVjpEager(torch.autograd.Function):  # type: ignore[misc]
        """``custom_vjp`` outside ``torch.func`` (module doc)."""

        @staticmethod
        def forward(ctx: Any, call: Any, *leaves: Any) -> Any:
            fwd, bwd, others = call
            outs, residuals = fwd(list(leaves))
            outs = list(outs)
            # (``fixed``'s copies, inline: this runs on every rule call)
            plain: Any = None  # the non-tensor outputs, whose cotangents torch leaves None
            frozen = None
            for k, o in enumerate(outs):
                if type(o) is Tensor or isinstance(o, Tensor):
                    copy = o._base is not None
                    if not copy:
                        for v in leaves:
                            if v is o:
                                copy = True
                                break
                    if copy:
                        outs[k] = o = o.clone()
                    if not o.is_floating_point():
                        frozen = frozen or []
                        frozen.append(o)
                else:
                    plain = plain or [None] * len(outs)
                    plain[k] = o
            if frozen:  # (one call: each call replaces the last one's marks)
                ctx.mark_non_differentiable(*frozen)
            ins = leaves if others is None else [v for v in leaves if isinstance(v, Tensor)]
            n_in = len(ins)
            # What is saved: the input tensors, then the residuals' tensors. ``where`` says
            # where the residual leaves are: 0 -- the saved tensors are the residuals (a
            # tuple that starts with the inputs, the common ``(x, out)``: each saved once);
            # an int k -- they are ``saved[k:]``; a list -- per leaf, a saved index or
            # ``_CONST`` (its value in ``consts``). (Plain loops: every rule call runs this.)
            where: Any = n_in
            consts: Any = None
            spec: Any = TUPLE
            if type(residuals) is tuple:
                for r in residuals:
                    if type(r) is not Tensor:
                        where = None  # (not all plain tensors: the general case below)
                        break
                else:
                    if len(residuals) >= n_in:
                        for k in range(n_in):
                            if residuals[k] is not ins[k]:
                                break
                        else:
                            where = 0
                    save = [*ins, *residuals[n_in:]] if where == 0 else [*ins, *residuals]
            else:
                where = None
            if where is None:  # any other tree: each leaf placed
                if type(residuals) is Tensor:
                    spec, res_flat = ONE, [residuals]
                else:
                    res_flat, spec = flat(torch, residuals)
                save = list(ins)
                where = []
                for r in res_flat:
                    if isinstance(r, Tensor):
                        where.append(len(save))
                        save.append(r)
                    else:
                        consts = consts or {}
                        consts[len(where)] = r
                        where.append(_CONST)
            # (one attribute: each costs a dict write on the node)
            ctx.state = (fwd, bwd, others, n_in, spec, where, consts, plain)
            ctx.save_for_backward(*save)
            return tuple(outs)

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            if transposed():
                raise NoForwardRuleError(NO_FORWARD)
            saved = ctx.saved_tensors
            fwd, bwd, others, n_in, spec, where, consts, plain = ctx.state
            leaves: Any = None  # (made only where needed: a graph, a non-tensor)
            if grad_enabled() and builds_graph(torch, leaves := _leaves(saved, n_in, others)):
                # A graph of this backward pass is being built: residuals that depend on
                # the inputs must be differentiable functions of them (``custom``'s doc).
                _, residuals = fwd(leaves)
            else:
                if type(where) is int:
                    res = saved[where:] if where else saved
                elif consts is None:
                    res = [saved[i] for i in where]
                else:
                    res = [consts[k] if i == _CONST else saved[i] for k, i in enumerate(where)]
                residuals = res if spec is TUPLE and type(res) is tuple else unflat(res, spec)
            # Torch hands zeros for tensor outputs without a gradient (materialize_grads,
            # on by default): only a non-tensor output has None.
            cts = list(grads)
            if plain is not None:
                for k, g in enumerate(grads):
                    if g is None:
                        cts[k] = torch.zeros_like(torch.as_tensor(plain[k]))
            cots = bwd(residuals, cts)
            got: list[Any] = [None]  # (the call)
            if others is None:  # every leaf a tensor: a tensor cotangent is torch's gradient
                for c in cots:
                    if type(c) is not Tensor:
                        break
                    got.append(c)
                else:
                    return tuple(got)
                del got[1:]
            if leaves is None:
                leaves = _leaves(saved, n_in, others)
            for c, v, n in zip(cots, leaves, ctx.needs_input_grad[1:]):
                got.append(
                    c if n and type(c) is Tensor and type(v) is Tensor else as_grad(torch, c, v, n)
                )
            return tuple(got)

        @staticmethod
        def jvp(ctx: Any, *tangents: Any) -> Any:
            raise NoForwardRuleError(NO_FORWARD)

    return CustomVjpEager


def _leaves(saved: Sequence[Any], n_in: int, others: Any) -> list[Any]:
    """The rule call's leaves: the saved input tensors, the others as they were."""
    if others is None:
        return list(saved[:n_in])
    it = iter(saved[:n_in])
    return [next(it) if v is _TENSOR else v for v in others]


# (apply, unwrap_if_dead) once made: the eager call's own state
_EAGER: list[Any] = []


def _as_is(value: Any) -> Any:
    return value


def eager_vjp(torch: Any, fwd: Any, bwd: Any, leaves: Sequence[Any]) -> list[Any]:
    """``custom_vjp`` outside any ``torch.func`` transform: the old-style Function's C++
    ``apply`` called directly (``Function.apply``'s Python layer only checks for
    transforms and unwraps dead functorch wrappers -- tensors that escaped a finished
    transform -- which is done here, per leaf)."""
    if not _EAGER:
        function = vjp_function(torch)
        apply = private_api.function_apply(torch, function)
        if apply is None:  # private API off: Function.apply unwraps the leaves itself
            _EAGER[:] = [function.apply, _as_is]
        else:
            _EAGER[:] = [apply, private_api.unwrap_if_dead(torch)]
    apply, unwrap = _EAGER
    Tensor = torch.Tensor
    others: Any = None
    args = list(leaves)
    for k, v in enumerate(args):
        if type(v) is Tensor or isinstance(v, Tensor):
            args[k] = unwrap(v)
        else:
            others = True
    if others:  # the non-tensor leaves as they are, the tensors' places marked
        others = [_TENSOR if isinstance(v, Tensor) else v for v in args]
    return list(apply((fwd, bwd, others), *args))
