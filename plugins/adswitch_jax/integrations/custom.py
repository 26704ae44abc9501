"""The rule hooks on jax: ``custom_vjp``, ``custom_jvp`` and ``stop_gradient`` (the
``Backend`` hooks of ``adswitch.spec``, called by ``adswitch.custom`` on the flat leaves).

Each rule call builds a fresh ``jax.custom_vjp`` / ``jax.custom_jvp`` over the call's jax
leaves, so it is jax's own mechanism wherever the call runs: traced into a compiled
program (once, then replayed: prepared calls too), eager, nested under another
differentiation, batched by ``vmap``.

* Its arguments are the leaves that are jax values, active or not (an integer array of
  an enclosing ``jit`` is a tracer: jax's rules must not close over tracers); numpy
  arrays and Python numbers are constants of the rule, closed over. An integer argument
  gets jax's ``float0`` zero cotangent or tangent (no derivative).
* Its outputs are the output leaves that are jax values; the others (a numpy constant,
  a Python number, a string) are kept aside from the trace and put back: no derivative
  flows through a constant.
* ``custom_vjp``: the residuals of the user's ``fwd`` may be any tree. Its jax-array
  leaves are jax's residuals (so jax differentiates ``bwd`` through them when nested,
  and batches it under ``vmap``); the other leaves and the tree's structure are closed
  over, taken from the trace of ``fwd`` that precedes ``bwd``'s. Forward mode through
  it is jax's ``TypeError``, translated by ``refusals.errors`` into :data:`NO_FORWARD`; inside
  an enclosing ``jax.jit`` jax would raise it only when the caller's program is lowered,
  after adswitch returned, so an eager forward pass (:data:`FORWARD` set) refuses it
  right away.
* ``custom_jvp``: jax transposes the rule in reverse mode (linear in the tangents); a
  rule that is not fails in jax's transposition (``NotImplementedError`` "Transpose rule
  ... not implemented", or an ``AssertionError`` on a product of two tangents),
  translated by ``refusals.errors`` into :data:`NOT_LINEAR` once a jvp rule was traced.
* ``stop_gradient``: ``jax.lax.stop_gradient``.

Imported only once jax is in use (it imports jax at the top).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer

from adswitch.errors import NoForwardRuleError

__all__ = [
    "FORWARD",
    "NOT_LINEAR",
    "NO_FORWARD",
    "custom_jvp",
    "custom_vjp",
    "jvp_rules_traced",
    "stop_gradient",
]

NO_FORWARD = (
    "jax engine: custom_vjp has no forward-mode rule (ad.jvp, ad.derivative and "
    "forward-mode operators push tangents through it; jax refuses a jvp of a custom_vjp). "
    "Fix: define ad.custom_jvp for this function, or use a reverse-mode operator "
    "(ad.gradient, ad.vjp, jacobian mode='reverse')."
)
#: ``f`` is running inside the engine's eager ``jax.jvp`` (forward mode), not inside a
#: reverse pass nested in it.
FORWARD: ContextVar[bool] = ContextVar("adswitch_jax_forward", default=False)
NOT_LINEAR = (
    "jax engine: reverse mode through a jvp rule (ad.custom_jvp) transposes the rule, "
    "which needs it to be linear in the tangents; this one is not (jax: {detail}). Fix: "
    "make the tangent output linear in the tangents, or define ad.custom_vjp for reverse "
    "mode."
)

_float0: Any = jax.dtypes.float0
_jvp_rules = [0]  # how many jvp rules were traced in this process (see jvp_rules_traced)


def jvp_rules_traced() -> bool:
    """Whether a jvp rule was traced in this process: only then are jax's transposition
    failures translated into :data:`NOT_LINEAR` (``refusals.errors``)."""
    return _jvp_rules[0] > 0


def _inexact(value: Any) -> bool:
    return bool(jnp.issubdtype(value.dtype, jnp.inexact))


def _no_derivative(value: Any) -> Any:
    """jax's zero cotangent/tangent of a value without derivatives (an integer array)."""
    return np.zeros(np.shape(value), dtype=_float0)


class _Leaves:
    """The rule's arguments: the jax leaves, in order, the others closed over."""

    def __init__(self, leaves: Sequence[Any], active: Sequence[bool]) -> None:
        self.base = list(leaves)
        self.at = [i for i, x in enumerate(leaves) if isinstance(x, jax.Array)]
        self.active = [bool(active[i]) and _inexact(leaves[i]) for i in self.at]

    def args(self) -> list[Any]:
        return [self.base[i] for i in self.at]

    def full(self, values: Sequence[Any]) -> list[Any]:
        vals = list(self.base)
        for i, v in zip(self.at, values):
            vals[i] = v
        return vals

    def tangents(self, tangents: Sequence[Any]) -> list[Any]:
        """One per leaf: jax's for active leaves, ``None`` (the front end's zeros) else."""
        ts: list[Any] = [None] * len(self.base)
        for i, a, t in zip(self.at, self.active, tangents):
            if a:
                ts[i] = t
        return ts


class _Outputs:
    """The rule's outputs: jax values through jax, the rest kept aside from the trace."""

    def __init__(self) -> None:
        self.leaves: list[Any] = []
        self.slots: list[int] = []

    def split(self, outs: Sequence[Any]) -> tuple[Any, ...]:
        self.leaves = list(outs)
        self.slots = [k for k, o in enumerate(outs) if isinstance(o, jax.Array)]
        return tuple(outs[k] for k in self.slots)

    def join(self, arrays: Sequence[Any]) -> list[Any]:
        out = list(self.leaves)
        for k, a in zip(self.slots, arrays):
            out[k] = a
        return out

    def cotangents(self, cts: Sequence[Any]) -> list[Any]:
        """One per output leaf, as the contract gives them: zeros for non-floating ones."""
        out: list[Any] = [None] * len(self.leaves)
        for k, leaf in enumerate(self.leaves):
            if isinstance(leaf, (np.ndarray, np.generic, float, int, complex)):
                out[k] = np.zeros_like(leaf, dtype=float)
        for k, c in zip(self.slots, cts):
            leaf = self.leaves[k]
            out[k] = c if _inexact(leaf) else jnp.zeros(leaf.shape, leaf.dtype)
        return out

    def tangents(self, outs: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, ...]:
        """The tangents of the jax outputs, in their dtypes (``float0`` for integers)."""
        result = []
        for k in self.slots:
            o = outs[k]
            result.append(jnp.asarray(tangents[k], o.dtype) if _inexact(o) else _no_derivative(o))
        return tuple(result)


class _Residuals:
    """A residual tree split into jax's residuals (its jax arrays) and the rest."""

    def __init__(self) -> None:
        self.treedef: Any = None
        self.others: list[Any] = []

    def split(self, residuals: Any) -> tuple[Any, ...]:
        leaves, self.treedef = jax.tree_util.tree_flatten(residuals)
        self.others = [None if isinstance(r, jax.Array) else r for r in leaves]
        return tuple(r for r in leaves if isinstance(r, jax.Array))

    def join(self, arrays: Sequence[Any]) -> Any:
        it = iter(arrays)
        leaves = [next(it) if r is None else r for r in self.others]
        return jax.tree_util.tree_unflatten(self.treedef, leaves)


def _cotangent(c: Any, value: Any, active: bool) -> Any:
    """bwd's cotangent for one argument, as jax checks it (the argument's dtype)."""
    if not active:
        return _no_derivative(value)
    if c is None:
        return jnp.zeros_like(value)
    return jnp.asarray(c, value.dtype)


def custom_vjp(
    fn: Callable[[list[Any]], list[Any]],
    fwd: Callable[[list[Any]], tuple[list[Any], Any]],
    bwd: Callable[[Any, list[Any]], list[Any]],
    leaves: Sequence[Any],
    active: Sequence[bool],
) -> list[Any]:
    """``Backend.custom_vjp`` on jax: a ``jax.custom_vjp`` over the leaves (module doc)."""
    if FORWARD.get() and any(a and isinstance(v, Tracer) for v, a in zip(leaves, active)):
        raise NoForwardRuleError(NO_FORWARD)
    args, outs, kept = _Leaves(leaves, active), _Outputs(), _Residuals()

    @jax.custom_vjp
    def call(*values: Any) -> tuple[Any, ...]:
        return outs.split(fn(args.full(values)))

    def call_fwd(*values: Any) -> tuple[tuple[Any, ...], Any]:
        out_leaves, residuals = fwd(args.full(values))
        return outs.split(out_leaves), (kept.split(residuals), values)

    def call_bwd(saved: Any, cts: Sequence[Any]) -> tuple[Any, ...]:
        arrays, values = saved
        got = bwd(kept.join(arrays), outs.cotangents(cts))
        return tuple(_cotangent(got[i], v, a) for i, v, a in zip(args.at, values, args.active))

    call.defvjp(call_fwd, call_bwd)
    return outs.join(call(*args.args()))


def custom_jvp(
    fn: Callable[[list[Any]], list[Any]],
    rule: Callable[[list[Any], list[Any]], tuple[list[Any], list[Any]]],
    leaves: Sequence[Any],
    active: Sequence[bool],
) -> list[Any]:
    """``Backend.custom_jvp`` on jax: a ``jax.custom_jvp`` over the leaves (module doc)."""
    args, outs = _Leaves(leaves, active), _Outputs()
    _jvp_rules[0] += 1

    @jax.custom_jvp
    def call(*values: Any) -> tuple[Any, ...]:
        return outs.split(fn(args.full(values)))

    def call_jvp(primals: Sequence[Any], tangents: Sequence[Any]) -> Any:
        out_leaves, out_tangents = rule(args.full(primals), args.tangents(tangents))
        return outs.split(out_leaves), outs.tangents(out_leaves, out_tangents)

    call.defjvp(call_jvp)
    return outs.join(call(*args.args()))


def stop_gradient(value: Any) -> Any:
    """``Backend.stop_gradient`` on jax: ``jax.lax.stop_gradient``."""
    return jax.lax.stop_gradient(value) if isinstance(value, jax.Array) else value
