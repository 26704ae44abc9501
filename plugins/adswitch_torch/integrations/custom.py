"""The rule hooks on torch: ``custom_vjp``, ``custom_jvp`` and ``stop_gradient`` (the
``Backend`` hooks of ``adswitch.spec``, called by ``adswitch.custom`` on the flat leaves).

Both rules are new-style ``torch.autograd.Function`` s (``forward`` without ``ctx``,
``setup_context``, ``generate_vmap_rule = True``), so they compose with ``torch.func``:
``vmap`` batches ``fwd``/``bwd`` (a batched pullback -- a reverse Jacobian -- calls ``bwd``
once, vmapped), ``grad``/``jacrev``/``jacfwd``/``hessian`` differentiate through them. One
class serves every rule: the call's flat callables ride along as the first, non-tensor
argument, a per-call :class:`_Call` that also keeps what ``forward`` learns. Outside any
``torch.func`` transform, ``custom_vjp`` takes a cheaper old-style Function instead (the
same rule, the same checks, the same nesting: :mod:`adswitch_torch.integrations.custom_eager`).

* ``custom_vjp``: ``forward`` runs the user's ``fwd``. Its residuals are an arbitrary tree:
  torch under ``generate_vmap_rule`` forbids tensors on ``ctx`` attributes, so the tree's
  tensor leaves are extra outputs of ``forward`` (marked non-differentiable and saved with
  ``save_for_backward``; a residual that *is* an input or an output is saved as that
  one), while the tree structure and the non-tensor leaves stay on the ``_Call``.
  ``backward`` calls ``bwd(residuals, cotangents)``. When torch builds a graph of the
  backward pass (``create_graph``, or any ``torch.func`` level above: a Hessian, a nested
  gradient, the batched forward mode that differentiates the pullback), the saved
  residuals would be constants -- ``forward`` ran without a graph -- so ``fwd`` is run
  again on the saved inputs with grad on, and ``bwd``'s operations on those residuals are
  differentiated. Forward mode through it (``ad.jvp``, ``torch.func.jvp``, or a pullback
  transposed under :func:`transposing`) is the contract's ``NoForwardRuleError``: a vjp
  rule has no forward-mode rule (a transposed ``bwd`` would be wrong for a ``bwd`` not
  linear in its cotangent, such as a clipped gradient).
* ``custom_jvp``: ``jvp`` calls ``rule(primals, tangents)``; reverse mode is the
  derivative of the rule's tangent output with respect to the tangents at zero (the rule
  is linear in them): ``torch.autograd.grad`` with the graph kept when torch keeps one, or
  ``torch.func.vjp`` inside a ``torch.func`` transform (where ``autograd.grad`` would not
  differentiate at the transform's level).
* ``stop_gradient``: ``detach()``, which drops both the reverse graph and a forward-AD
  tangent (and a ``torch.func`` level's).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from adswitch.errors import NoForwardRuleError

from .. import private_api
from .custom_eager import NO_FORWARD, builds_graph, eager_vjp
from .custom_eager import TRANSPOSING as _transposing
from .custom_eager import as_grad as _as_grad
from .custom_eager import fixed as _fixed
from .custom_eager import flat as _flat
from .custom_eager import inside as _inside
from .custom_eager import unflat as _unflat

__all__ = ["custom_jvp", "custom_vjp", "stop_gradient", "transposing"]

_functions: dict[str, Any] = {}


@contextlib.contextmanager
def transposing() -> Iterator[None]:
    """The pullbacks run inside are transposed (forward mode by reverse; see above)."""
    token = _transposing.set(True)
    try:
        yield
    finally:
        _transposing.reset(token)


class _Call:
    """One rule call: the flat callables, and what ``forward`` learns for ``backward``
    (no tensors here: those are saved on ``ctx``)."""

    __slots__ = ("bwd", "fn", "fwd", "is_tensor", "n_out", "others", "res", "rule")

    def __init__(self, fn: Any, fwd: Any, bwd: Any, rule: Any) -> None:
        self.fn, self.fwd, self.bwd, self.rule = fn, fwd, bwd, rule
        self.n_out = 0
        # residuals: (treedef, per leaf ("i", k) input k / ("o", k) output k / ("n", k) extra
        # output k / ("c", value) a constant); None until forward ran
        self.res: Any = None
        self.is_tensor: list[bool] = []
        self.others: Any = None  # None: every leaf a tensor

    def split(self, torch: Any, leaves: Sequence[Any]) -> None:
        Tensor = torch.Tensor
        for v in leaves:
            if not isinstance(v, Tensor):  # (every leaf a tensor, the common case: no lists)
                self.is_tensor = [isinstance(v, Tensor) for v in leaves]
                self.others = [None if t else v for v, t in zip(leaves, self.is_tensor)]
                break

    def restore(self, saved: Sequence[Any]) -> list[Any]:
        """The leaves: tensors from ``saved`` (the graph's), the others as they were."""
        if self.others is None:
            return list(saved)
        it = iter(saved)
        return [next(it) if t else v for v, t in zip(self.others, self.is_tensor)]


def _flatten_residuals(
    torch: Any, call: _Call, leaves: Sequence[Any], outs: Sequence[Any], residuals: Any
) -> list[Any]:
    """Records the residual tree on ``call``; returns its new tensors (extra outputs)."""
    flat, spec = _flat(torch, residuals)
    where: list[tuple[str, Any]] = []
    extra: list[Any] = []
    for r in flat:
        if not isinstance(r, torch.Tensor):
            where.append(("c", r))
            continue
        k = next((k for k, v in enumerate(leaves) if v is r), None)
        if k is not None:
            where.append(("i", k))
            continue
        k = next((k for k, o in enumerate(outs) if o is r), None)
        if k is not None:
            where.append(("o", k))
            continue
        where.append(("n", len(extra)))
        extra.append(r.clone() if r._base is not None else r)
    call.res = (spec, where)
    return extra


def _residuals(
    call: _Call, leaves: Sequence[Any], outs: Sequence[Any], extra: Sequence[Any]
) -> Any:
    spec, where = call.res
    pools = {"i": leaves, "o": outs, "n": extra}
    return _unflat([v if kind == "c" else pools[kind][v] for kind, v in where], spec)


def _setup(
    torch: Any,
    ctx: Any,
    inputs: Sequence[Any],
    outs: Sequence[Any],
    extra: Sequence[Any],
    forward: bool,
) -> _Call:
    call: _Call = inputs[0]
    frozen = [o for o in outs if isinstance(o, torch.Tensor) and not o.is_floating_point()]
    frozen.extend(extra)
    if frozen:
        ctx.mark_non_differentiable(*frozen)
    tensors = [v for v in inputs[1:] if isinstance(v, torch.Tensor)]
    ctx.call = call
    # shapes for zero cotangents of outputs torch gives none (no tensors on ctx)
    ctx.out_meta = [
        (o.shape, o.dtype, o.device) if isinstance(o, torch.Tensor) else None for o in outs
    ]
    ctx.save_for_backward(*tensors, *outs, *extra)  # outs: only tensors are saved
    if forward:
        ctx.save_for_forward(*tensors)
    ctx.n_in = len(tensors)
    return call


def _cotangents(torch: Any, ctx: Any, grads: Sequence[Any], outs: Sequence[Any]) -> list[Any]:
    result = []
    for g, o, meta in zip(grads, outs, ctx.out_meta):
        if g is None:
            g = (
                torch.zeros(meta[0], dtype=meta[1], device=meta[2])
                if meta
                else torch.zeros_like(torch.as_tensor(o))
            )
        result.append(g)
    return result


def _vjp_function(torch: Any) -> Any:
    class CustomVjp(torch.autograd.Function):  # type: ignore[misc]
        """``custom_vjp`` of the module doc."""

        generate_vmap_rule = True

        @staticmethod
        def forward(call: _Call, *leaves: Any) -> Any:
            outs, residuals = call.fwd(list(leaves))
            outs = _fixed(torch, outs, leaves)
            call.n_out = len(outs)
            extra = _flatten_residuals(torch, call, leaves, outs, residuals)
            return (*outs, *extra)

        @staticmethod
        def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
            n = inputs[0].n_out
            _setup(torch, ctx, inputs, output[:n], output[n:], forward=False)

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            if _transposing.get():
                raise NoForwardRuleError(NO_FORWARD)
            call: _Call = ctx.call
            saved = ctx.saved_tensors
            n_in, n_out = ctx.n_in, call.n_out
            leaves = call.restore(saved[:n_in])
            # saved outputs: only the tensors of the outputs were saved
            it = iter(saved[n_in:])
            outs = [next(it) if m is not None else None for m in ctx.out_meta]
            extra = list(it)
            if builds_graph(torch, leaves):
                # A graph of this backward pass is being built: residuals that depend on
                # the inputs must be differentiable functions of them (module doc).
                _, residuals = call.fwd(leaves)
            else:
                residuals = _residuals(call, leaves, outs, extra)
            cots = call.bwd(residuals, _cotangents(torch, ctx, grads[:n_out], outs))
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


def _transposed(
    torch: Any, call: _Call, leaves: list[Any], cots: list[Any], needs: Sequence[bool]
) -> list[Any]:
    """The rule's vjp in its tangents at zero, per input leaf (``None``: zero/not asked)."""
    wanted = [k for k, (v, n) in enumerate(zip(leaves, needs)) if n and isinstance(v, torch.Tensor)]
    out: list[Any] = [None] * len(leaves)
    if not wanted:
        return out

    def tangent_out(*ts: Any) -> tuple[Any, ...]:
        full = [_zero_tangent(torch, v) for v in leaves]
        for k, t in zip(wanted, ts):
            full[k] = t
        _, out_t = call.rule(leaves, full)
        return tuple(out_t)

    zeros = [torch.zeros_like(leaves[k]) for k in wanted]
    if _inside(torch):
        # autograd.grad would not differentiate at the transform's level: its own vjp
        def floats(*ts: Any) -> tuple[Any, ...]:
            return tuple(
                o if isinstance(o, torch.Tensor) and o.is_floating_point() else torch.zeros(())
                for o in tangent_out(*ts)
            )

        _, pull = torch.func.vjp(floats, *zeros)
        found = pull(
            tuple(
                c if isinstance(c, torch.Tensor) and c.is_floating_point() else torch.zeros(())
                for c in cots
            )
        )
    else:
        create = torch.is_grad_enabled()
        with torch.enable_grad():
            ts = [z.requires_grad_() for z in zeros]
            out_t = tangent_out(*ts)
            pairs = [
                (o, g)
                for o, g in zip(out_t, cots)
                if isinstance(o, torch.Tensor) and o.requires_grad
            ]
            found = [None] * len(ts)
            if pairs:
                found = list(
                    torch.autograd.grad(
                        [o for o, _ in pairs],
                        ts,
                        [g for _, g in pairs],
                        create_graph=create,
                        allow_unused=True,
                    )
                )
    for k, g in zip(wanted, found):
        out[k] = g
    return out


def _jvp_function(torch: Any) -> Any:
    class CustomJvp(torch.autograd.Function):  # type: ignore[misc]
        """``custom_jvp`` of the module doc."""

        generate_vmap_rule = True

        @staticmethod
        def forward(call: _Call, *leaves: Any) -> Any:
            outs = _fixed(torch, call.fn(list(leaves)), leaves)
            call.n_out = len(outs)
            return tuple(outs)

        @staticmethod
        def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
            _setup(torch, ctx, inputs, output, (), forward=True)

        @staticmethod
        def jvp(ctx: Any, _call_tangent: Any, *tangents: Any) -> Any:
            call: _Call = ctx.call
            leaves = call.restore(ctx.saved_tensors[: ctx.n_in])
            ts = [_zero_tangent(torch, v) if t is None else t for v, t in zip(leaves, tangents)]
            _, out_tangents = call.rule(leaves, ts)
            return tuple(out_tangents)

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            # The rule is linear in the tangents: its vjp in them, at zero, is the rule's
            # transpose. Built with a graph when torch keeps one, so it nests.
            call: _Call = ctx.call
            saved = ctx.saved_tensors
            leaves = call.restore(saved[: ctx.n_in])
            it = iter(saved[ctx.n_in :])
            outs = [next(it) if m is not None else None for m in ctx.out_meta]
            cots = _cotangents(torch, ctx, grads, outs)
            return (None, *_transposed(torch, call, leaves, cots, ctx.needs_input_grad[1:]))

    return CustomJvp


_MAKERS = {"vjp": _vjp_function, "jvp": _jvp_function}


def _function(torch: Any, kind: str) -> Any:
    made = _functions.get(kind)
    if made is None:
        made = _functions[kind] = _MAKERS[kind](torch)
    return made


def _apply(torch: Any, function: Any, call: _Call, leaves: Sequence[Any]) -> Any:
    """``function.apply(call, *leaves)`` outside ``torch.func``, without its per-call
    ``inspect.signature``.

    A Function with ``setup_context`` binds its arguments to ``forward``'s signature on
    every call (about 25 us, a tiny rule's whole budget) and only then, when no
    ``torch.func`` transform is active, hands them to the autograd C++ ``apply``. Our
    ``forward(call, *leaves)`` has no defaults to bind, so the C++ ``apply`` is called
    directly, after the same unwrapping of dead functorch wrappers (tensors that escaped
    a finished transform). Inside a transform, call ``function.apply`` (torch's own path,
    ``custom_function_call``).
    """
    apply = private_api.function_apply(torch, function)
    if apply is None:  # private API off: torch's own path, which unwraps itself
        return function.apply(call, *leaves)
    unwrap: Any = _functions.get("unwrap")
    if unwrap is None:
        unwrap = private_api.unwrap_dead_wrappers()
        _functions["unwrap"] = unwrap
    return apply(call, *unwrap(tuple(leaves)))


def custom_vjp(
    torch: Any,
    fn: Callable[[list[Any]], list[Any]],
    fwd: Callable[[list[Any]], tuple[list[Any], Any]],
    bwd: Callable[[Any, list[Any]], list[Any]],
    leaves: Sequence[Any],
    active: Sequence[bool],
) -> list[Any]:
    """``Backend.custom_vjp`` on torch (module doc). (``TorchBackend.custom_vjp`` makes
    the same choice itself, on its hot path.)"""
    if private_api.are_transforms_active(torch):
        return custom_vjp_transformed(torch, fn, fwd, bwd, leaves)
    # outside torch.func: the old-style Function (``custom_eager``), whose outputs are
    # fwd's alone (no residuals among them)
    return eager_vjp(torch, fwd, bwd, leaves)


def custom_vjp_transformed(
    torch: Any,
    fn: Callable[[list[Any]], list[Any]],
    fwd: Callable[[list[Any]], tuple[list[Any], Any]],
    bwd: Callable[[Any, list[Any]], list[Any]],
    leaves: Sequence[Any],
) -> list[Any]:
    """``custom_vjp`` inside a ``torch.func`` transform: the new-style Function, through
    torch's own ``Function.apply`` (``custom_function_call``)."""
    call = _Call(fn, fwd, bwd, None)
    call.split(torch, leaves)
    out = _function(torch, "vjp").apply(call, *leaves)
    return list(out[: call.n_out])


def custom_jvp(
    torch: Any,
    fn: Callable[[list[Any]], list[Any]],
    rule: Callable[[list[Any], list[Any]], tuple[list[Any], list[Any]]],
    leaves: Sequence[Any],
    active: Sequence[bool],
) -> list[Any]:
    """``Backend.custom_jvp`` on torch (module doc)."""
    call = _Call(fn, None, None, rule)
    call.split(torch, leaves)
    function = _function(torch, "jvp")
    if private_api.are_transforms_active(torch):
        return list(function.apply(call, *leaves))
    return list(_apply(torch, function, call, leaves))


def stop_gradient(torch: Any, value: Any) -> Any:
    """``Backend.stop_gradient`` on torch: ``detach()`` (no graph, no forward tangent)."""
    return value.detach() if isinstance(value, torch.Tensor) else value
