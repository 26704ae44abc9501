"""The common ``custom_vjp`` call's short path: every argument a bare leaf (an array, a
number), none of them nondiff.

Such a call is its own flattening -- one leaf per argument, no tree to rebuild -- so the
per-call work of :mod:`adswitch.custom` shrinks to what depends on the values: which
leaves are active, and the checks of what ``fwd`` and ``bwd`` return. Those checks are
the same as the general path's: a value the short test does not pass (a tree where a
leaf was expected, another shape or kind, an output structure unlike f's, f's structure
not yet known) goes to the general check (``RuleBase._check_out`` /
``_check_cotangents``), which accepts what it accepts and raises its own error otherwise.
A tiny rule's budget is a few microseconds (``benchmarks/custom_rules.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from adswitch import trees
from adswitch.activity import Active, Const, Duplicated
from adswitch.leaves import leaf_kind
from adswitch.rule_args import RuleArgs, active_leaves, engine_hook, running_rules

# (``rule`` below is an ``adswitch.custom.custom_vjp``, typed ``Any``: ``custom`` imports
# this module, and the layers allow no cycle, not even one for type checking)

__all__ = ["bare_args", "call_bare_vjp"]

_WRAPPERS = (Active, Const, Duplicated)
# Whether a type is an activity wrapper (refused by the general path with its message):
# a property of the type alone.
_IS_WRAPPER: dict[type, bool] = {}
# f's output structure is cached per input structure (``RuleBase._f_structure``); the key
# of ``n`` bare arguments is ``RuleArgs.key()``'s, made once per ``n``.
_KEYS: dict[int, tuple[int, tuple[None, ...]]] = {}
_UNSET: Any = object()  # no output structure recorded yet


def bare_args(args: tuple[Any, ...]) -> bool:
    """Whether every argument is a bare leaf of :mod:`adswitch.trees` and none an
    activity wrapper. (``trees`` forgets its cached decision about a type when a tree
    type is registered over it, so its cache is the truth at every call.)"""
    handlers, leaf = trees._HANDLERS, trees._LEAF
    for a in args:
        cls = type(a)
        if handlers.get(cls) is not leaf:
            return False
        wrapper = _IS_WRAPPER.get(cls)
        if wrapper is None:
            wrapper = _IS_WRAPPER[cls] = issubclass(cls, _WRAPPERS)
        if wrapper:
            return False
    return True


def _split(rule: Any, args: tuple[Any, ...]) -> RuleArgs:
    """The general path's view of the arguments, for a check the short test left over."""
    return RuleArgs(args, rule.nondiff_argnums, rule._name())


def call_bare_vjp(rule: Any, engine: Any, args: tuple[Any, ...]) -> Any:
    """``rule(*args)`` inside a call on ``engine``, every argument a bare leaf (module
    doc): the same hook call, with the same checks, as ``custom_vjp.__call__``'s."""
    hook: Any = getattr(engine, "custom_vjp", None)
    if hook is None:
        hook = engine_hook(engine, "custom_vjp", rule._name())  # raises, naming the fix
    leaves = list(args)
    active = active_leaves(engine, leaves)
    me = rule._me  # what ``primal(rule)`` adds to the running rules
    if not any(active):  # nothing this engine differentiates: f itself (``call_hook``)
        token = running_rules.set(running_rules.get() | me)
        try:
            return rule.fun(*args)
        finally:
            running_rules.reset(token)
    n = len(leaves)
    key = _KEYS.get(n)
    if key is None:
        key = _KEYS[n] = (n, (None,) * n)
    user_fwd: Any = rule.fwd  # (both set: checked by the caller)
    user_bwd: Any = rule.bwd
    structures = rule._out_structure
    box = [_UNSET]  # the output's structure, set by fn or fwd, read by bwd
    leaf = trees._LEAF
    handlers = trees._HANDLERS

    def fn(values: list[Any]) -> list[Any]:
        running = running_rules.get()
        token = running_rules.set(running | me if running else me)
        try:
            out_leaves, td = trees.flatten(rule.fun(*values))
        finally:
            running_rules.reset(token)
        box[0] = td
        return out_leaves

    def fwd(values: list[Any]) -> tuple[list[Any], Any]:
        running = running_rules.get()
        token = running_rules.set(running | me if running else me)
        try:
            pair = user_fwd(*values)
        finally:
            running_rules.reset(token)
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise rule._not_a_pair(pair)
        out = pair[0]
        # a bare output where f's is one too (known: f ran once at these structures)
        if handlers.get(type(out)) is leaf and structures.get(key, _UNSET) is None:
            box[0] = None
            return [out], pair[1]
        out_leaves, td = rule._check_out(_split(rule, args), values, out, "fwd")
        box[0] = td
        return out_leaves, pair[1]

    def bwd(residuals: Any, cotangents: list[Any]) -> list[Any]:
        td = box[0]
        ct = cotangents[0] if td is None else trees.unflatten(td, list(cotangents))
        got = user_bwd(residuals, ct)
        if type(got) is tuple and len(got) == n:
            if n == 1:  # (the one-argument rule, inline)
                c = got[0]
                if c is None:
                    return [None]
                x = leaves[0]
                if (
                    active[0]
                    and type(c) is type(x)
                    and leaf_kind(c) == "f"
                    and getattr(c, "shape", ()) == getattr(x, "shape", ())
                ):
                    return [c]
            else:
                # each a float array like its active leaf, or None: nothing else to check
                fast = _fast_cotangents(leaves, active, got)
                if fast is not None:
                    return fast
        checked: list[Any] = rule._check_cotangents(_split(rule, args), got)
        return checked

    fn.nondiff_args = ()  # type: ignore[attr-defined]  # (``Backend.custom_vjp``)
    out = hook(fn, fwd, bwd, leaves, active)
    td = box[0]
    if td is _UNSET:  # the engine built the output without calling fn or fwd here
        td = rule._f_structure(_split(rule, args), leaves)
    return out[0] if td is None else trees.unflatten(td, list(out))


def _fast_cotangents(
    leaves: Sequence[Any], active: Sequence[bool], got: tuple[Any, ...]
) -> list[Any] | None:
    """``got`` as the flat cotangents when each is ``None`` or a floating value of its
    active leaf's type and shape (what ``_check_cotangents`` returns unchanged); ``None``
    when any needs the general check."""
    result: list[Any] = []
    for x, a, c in zip(leaves, active, got):
        if c is None:
            result.append(None)
        elif (
            a
            and type(c) is type(x)
            and leaf_kind(c) == "f"
            and getattr(c, "shape", ()) == getattr(x, "shape", ())
        ):
            result.append(c)
        else:
            return None
    return result
