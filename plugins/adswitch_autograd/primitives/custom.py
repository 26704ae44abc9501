"""The rule hooks on HIPS autograd: ``custom_vjp``, ``custom_jvp`` and ``stop_gradient``
(the ``Backend`` hooks of ``adswitch.spec``, called by ``adswitch.custom`` on the flat
leaves).

Each rule call is a fresh ``autograd.extend.primitive`` over the flat leaves, returning
the tuple of output leaves (autograd boxes it as a sequence), with ``defvjp_argnums`` /
``defjvp_argnums`` rules that call the front end's flat callables:

* ``custom_vjp``: the primitive runs ``fwd`` on the plain values and keeps its
  residuals; its VJP calls ``bwd(residuals, cotangents)``. When autograd takes that VJP
  on boxed values (a nested derivative: the inputs carry an enclosing trace), the kept
  residuals would be constants, so ``fwd`` runs again on the boxed inputs and ``bwd``'s
  operations on the residuals are traced too. Its JVP is the contract's
  ``UnsupportedError``: a vjp rule has no forward-mode rule (the plugin's fallback, the
  transposition of the VJP, would be wrong for a ``bwd`` not linear in its cotangent,
  such as a clipped gradient). A Hessian (forward-over-reverse here) through it works
  where the forward pass needs no tangent of the rule's output (a loss that is the
  rule's output, or a sum of it); otherwise it is that error.
* ``custom_jvp``: its JVP calls ``rule(primals, tangents)``; its VJP is the VJP of the
  rule's tangent output in the tangents at zero (the plugin's ``reverse.vjp``: the rule
  is linear in them), taken on the boxed primals so it nests.
* ``stop_gradient``: a copy of the plain value under every box (a constant at every
  level; a copy, so a later write into it cannot reach the traced array's memory).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
from autograd.extend import defjvp_argnums, defvjp_argnums, primitive, vspace

from adswitch.errors import NoForwardRuleError
from adswitch.spec import CallInfo, OutputFn

from ..tracing.boxes import raw_value
from . import reverse

__all__ = ["custom_jvp", "custom_vjp", "stop_gradient"]

NO_FORWARD = (
    "autograd: custom_vjp has no forward-mode rule (ad.jvp, ad.derivative, forward-mode "
    "operators and a Hessian whose forward pass needs the rule's output tangent push "
    "tangents through it). Fix: define ad.custom_jvp for this function, or use a "
    "reverse-mode operator (ad.gradient, ad.vjp, jacobian mode='reverse')."
)


def _boxed(values: Sequence[Any]) -> bool:
    return any(raw_value(v) is not v for v in values)


def _zero(value: Any) -> Any:
    """A zero cotangent/tangent like ``value`` (plain; autograd adds it to boxes)."""
    plain = raw_value(value)
    if isinstance(plain, (np.ndarray, np.generic)) and plain.dtype.kind in "fc":
        return vspace(plain).zeros()
    return np.zeros_like(plain, dtype=float) if np.ndim(plain) else 0.0


def custom_vjp(
    fn: Callable[[list[Any]], list[Any]],
    fwd: Callable[[list[Any]], tuple[list[Any], Any]],
    bwd: Callable[[Any, list[Any]], list[Any]],
    leaves: Sequence[Any],
    active: Sequence[bool],
) -> list[Any]:
    """``Backend.custom_vjp`` on autograd (module doc)."""
    kept: dict[str, Any] = {}

    @primitive  # type: ignore[untyped-decorator]
    def rule_call(*plain: Any) -> tuple[Any, ...]:
        outs, residuals = fwd(list(plain))
        result = tuple(outs)
        kept["ans"], kept["residuals"] = result, residuals
        return result

    def vjp_maker(argnums: Sequence[int], ans: Any, args: tuple[Any, ...], kwargs: Any) -> Any:
        def pull(g: Any) -> tuple[Any, ...]:
            if kept.get("ans") is ans and not _boxed(args):
                residuals = kept["residuals"]
            else:  # nested: residuals as traced functions of the boxed inputs (module doc)
                _, residuals = fwd(list(args))
            cots = bwd(residuals, list(g))
            return tuple(_zero(args[i]) if cots[i] is None else cots[i] for i in argnums)

        return pull

    def refuse(*_: Any) -> Any:
        raise NoForwardRuleError(NO_FORWARD)

    defvjp_argnums(rule_call, vjp_maker)
    defjvp_argnums(rule_call, refuse)
    return list(rule_call(*leaves))


def custom_jvp(
    fn: Callable[[list[Any]], list[Any]],
    rule: Callable[[list[Any], list[Any]], tuple[list[Any], list[Any]]],
    leaves: Sequence[Any],
    active: Sequence[bool],
) -> list[Any]:
    """``Backend.custom_jvp`` on autograd (module doc)."""

    @primitive  # type: ignore[untyped-decorator]
    def rule_call(*plain: Any) -> tuple[Any, ...]:
        return tuple(fn(list(plain)))

    def jvp_maker(
        argnums: Sequence[int], gs: Sequence[Any], ans: Any, args: tuple[Any, ...], kwargs: Any
    ) -> tuple[Any, ...]:
        tangents = [_zero(a) for a in args]
        for i, g in zip(argnums, gs):
            tangents[i] = g
        return tuple(rule(list(args), tangents)[1])

    def vjp_maker(argnums: Sequence[int], ans: Any, args: tuple[Any, ...], kwargs: Any) -> Any:
        def linear(moving: list[Any]) -> tuple[list[Any], list[Any]]:
            tangents = [_zero(a) for a in args]
            for k, i in enumerate(argnums):
                tangents[i] = moving[k]
            out = list(rule(list(args), tangents)[1])
            return out, out

        def pull(g: Any) -> tuple[Any, ...]:
            # The rule is linear in the tangents: its VJP in them at zero is its transpose,
            # taken by this plugin's own reverse mode (its levels and boxes), nested in the
            # enclosing trace when the primals are boxed.
            zeros = [_zero(args[i]) for i in argnums]
            info = CallInfo(depth=1 if _boxed(args) or _boxed(list(g)) else 0)
            _, back = reverse.vjp(cast(OutputFn, linear), zeros, [True] * len(zeros), info)
            return tuple(_zero(args[i]) if c is None else c for i, c in zip(argnums, back(list(g))))

        return pull

    defvjp_argnums(rule_call, vjp_maker)
    defjvp_argnums(rule_call, jvp_maker)
    return list(rule_call(*leaves))


def stop_gradient(value: Any) -> Any:
    """``Backend.stop_gradient`` on autograd: a plain copy (module doc)."""
    plain = raw_value(value)
    return plain.copy() if isinstance(plain, np.ndarray) else plain
