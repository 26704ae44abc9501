"""Your own derivatives: ``ad.custom_vjp``, ``ad.custom_jvp`` and ``ad.stop_gradient``.

The front end never differentiates anything here. Inside an adswitch call on engine
``E`` it flattens the arguments, builds *flat* callables (lists of leaves in, lists of
leaves out) around the user's ``f``/``fwd``/``bwd``/``rule``, checks what they return
(so every engine gets the same clear errors), and hands them to ``E``'s optional hooks
``custom_vjp``, ``custom_jvp`` and ``stop_gradient`` (see :class:`adswitch.spec.Backend`).
Outside any call a rule is just its function, and ``stop_gradient`` the identity.

Example:
    >>> import adswitch as ad, numpy as np
    >>> @ad.custom_vjp
    ... def clip(x):
    ...     return x
    >>> clip.defvjp(lambda x: (x, None), lambda res, ct: (ct * 0.5,))
    >>> ad.gradient(lambda x: ad.array_namespace(x).sum(clip(x)), np.ones(2))  # doctest: +SKIP
    (array([0.5, 0.5]),)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from adswitch import trees
from adswitch.errors import UsageError
from adswitch.leaves import describe, is_array, leaf_kind
from adswitch.rule_args import (
    RuleArgs,
    active_leaves,
    call_hook,
    engine_hook,
    primal,
    running_rules,
    zero_tangent,
)
from adswitch.rule_bare import bare_args, call_bare_vjp
from adswitch.rule_base import RuleBase
from adswitch.selection import current_calls, enclosing

__all__ = ["custom_jvp", "custom_vjp", "stop_gradient"]

_NUMBERS = (bool, int, float, complex, np.generic)


class custom_vjp(RuleBase):
    """``f`` with a reverse-mode rule: ``cv = ad.custom_vjp(f)``, ``cv.defvjp(fwd, bwd)``.

    ``fwd(*args) -> (out, residuals)``; ``bwd(*nondiff_args, residuals, ct)`` returns a
    tuple with one cotangent per argument not in ``nondiff_argnums``, each a tree like
    that argument (``None`` for a zero: a whole argument or one leaf). ``bwd`` runs on the
    engine's arrays, so it is differentiated in turn by nested derivatives.
    """

    kind = "custom_vjp"
    fwd: Callable[..., Any] | None = None  # set by defvjp
    bwd: Callable[..., Any] | None = None

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any]) -> None:
        if not callable(fwd) or not callable(bwd):
            raise UsageError(f"{self._name()}.defvjp(fwd, bwd): both must be callables.")
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args: Any) -> Any:
        calls = current_calls.get()  # (``enclosing()`` inline: every rule call runs this)
        if not calls or id(self) in running_rules.get():
            return self.fun(*args)
        engine = calls[-1]
        if self.fwd is None or self.bwd is None:
            raise UsageError(
                f"{self._name()} is differentiated but defvjp was never called: call "
                f"{self.__name__}.defvjp(fwd, bwd) before using it."
            )
        if self.host:
            from adswitch.host_rules import call_vjp

            return call_vjp(self, engine, args, self.out_shape)
        if not self.nondiff_argnums and bare_args(args):
            return call_bare_vjp(self, engine, args)
        name = self._name()
        hook = engine_hook(engine, "custom_vjp", name)
        split = RuleArgs(args, self.nondiff_argnums, name)
        if split.nondiff:
            split.refuse_traced_nondiff(engine, name)
        active = active_leaves(engine, split.leaves)
        user_fwd, user_bwd = self.fwd, self.bwd
        out_td: list[trees.TreeDef] = []  # set by fn or fwd, read by bwd

        fn = self._primal_fn(split, out_td)

        def fwd(leaves: list[Any]) -> tuple[list[Any], Any]:
            with primal(self):
                pair = user_fwd(*split.all_args(leaves))
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise self._not_a_pair(pair)
            out_leaves, td = self._check_out(split, leaves, pair[0], "fwd")
            out_td[:] = [td]
            return out_leaves, pair[1]

        def bwd(residuals: Any, cotangents: list[Any]) -> list[Any]:
            td = out_td[0]
            # (a bare output, the common one, is its one cotangent: no unflatten)
            ct = cotangents[0] if td is None else trees.unflatten(td, list(cotangents))
            got = user_bwd(*split.nondiff_args, residuals, ct)
            return self._check_cotangents(split, got)

        out = call_hook(hook, fn, (fwd, bwd), split.leaves, active)
        if not out_td:  # the engine built the output without calling fn or fwd here
            out_td.append(self._f_structure(split, split.leaves))
        td = out_td[0]
        return out[0] if td is None else trees.unflatten(td, out)  # (call_hook's own list)


class custom_jvp(RuleBase):
    """``g`` with a forward-mode rule: ``cj = ad.custom_jvp(g)``, ``cj.defjvp(rule)``.

    ``rule(*nondiff_args, primals, tangents) -> (out, tangent_out)``: ``primals`` and
    ``tangents`` are tuples over the arguments not in ``nondiff_argnums``; tangents of
    constant leaves are zeros (never ``None``). Reverse mode goes through the rule where
    the engine can transpose it (it must be linear in the tangents).
    """

    kind = "custom_jvp"
    rule: Callable[..., Any] | None = None  # set by defjvp

    def defjvp(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(rule):
            raise UsageError(f"{self._name()}.defjvp(rule): rule must be a callable.")
        self.rule = rule
        return rule  # (so that @g.defjvp works as a decorator, as in jax)

    def __call__(self, *args: Any) -> Any:
        engine = enclosing()
        if engine is None or id(self) in running_rules.get():
            return self.fun(*args)
        if self.rule is None:
            raise UsageError(
                f"{self._name()} is differentiated but defjvp was never called: call "
                f"{self.__name__}.defjvp(rule) before using it."
            )
        if self.host:
            from adswitch.host_rules import call_jvp

            return call_jvp(self, engine, args, self.out_shape)
        hook = engine_hook(engine, "custom_jvp", self._name())
        split = RuleArgs(args, self.nondiff_argnums, self._name())
        split.refuse_traced_nondiff(engine, self._name())
        active = active_leaves(engine, split.leaves)
        user_rule = self.rule
        out_td: list[trees.TreeDef] = []

        fn = self._primal_fn(split, out_td)

        def rule(leaves: list[Any], tangents: list[Any]) -> tuple[list[Any], list[Any]]:
            tangents = [zero_tangent(x) if t is None else t for x, t in zip(leaves, tangents)]
            with primal(self):
                got = user_rule(
                    *split.nondiff_args,
                    tuple(split.diff_args(leaves)),
                    tuple(split.diff_args(tangents)),
                )
            if not isinstance(got, tuple) or len(got) != 2:
                raise UsageError(
                    f"{self._name()}: the jvp rule returned {describe(got)}; it must "
                    "return a pair (out, tangent_out)."
                )
            out_leaves, td = self._check_out(split, leaves, got[0], "the jvp rule")
            out_td[:] = [td]
            return out_leaves, self._check_tangents(td, out_leaves, got[1])

        out = call_hook(hook, fn, (rule,), split.leaves, active)
        if not out_td:
            out_td.append(self._f_structure(split, split.leaves))
        return trees.unflatten(out_td[0], list(out))


def stop_gradient(tree: Any) -> Any:
    """``tree`` with every floating leaf held constant: no derivative flows through it, in
    any mode, at any order. Outside an adswitch call it returns ``tree`` itself.

    Example:
        >>> import adswitch as ad, numpy as np
        >>> def f(x):
        ...     return ad.array_namespace(x).sum(x * ad.stop_gradient(x))
        >>> ad.gradient(f, np.array([3.0]))
        (array([3.]),)
    """
    leaves, td = trees.flatten(tree)
    for i, x in enumerate(leaves):
        if not (x is None or isinstance(x, _NUMBERS) or is_array(x)):
            path = trees.leaf_path(td, "x", i)
            raise UsageError(
                f"ad.stop_gradient: the leaf at {path} is {describe(x)}, not an array or a "
                "number; pass only arrays and numbers (keep other values outside)."
            )
    engine = enclosing()
    if engine is None:
        return tree
    floating = [leaf_kind(x) in "fc" for x in leaves]
    if not any(floating):
        return tree
    # Refused even when no leaf is the engine's: an engine without the hook (finite
    # differences...) may carry derivatives in values it does not own.
    hook = engine_hook(engine, "stop_gradient", "ad.stop_gradient")
    owned = [f and engine.owns(x) for x, f in zip(leaves, floating)]
    return trees.unflatten(td, [hook(x) if o else x for x, o in zip(leaves, owned)])
