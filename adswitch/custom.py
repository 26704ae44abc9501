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

import contextvars
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from adswitch import trees
from adswitch.activity import Active, Const, Duplicated
from adswitch.errors import UnsupportedError, UsageError
from adswitch.leaves import describe, is_array, leaf_kind
from adswitch.selection import enclosing

__all__ = ["custom_jvp", "custom_vjp", "stop_gradient"]

_NUMBERS = (bool, int, float, complex, np.generic)
_WRAPPERS = (Active, Const, Duplicated)

# The rules whose primal code (f, fwd, a jvp rule) is running now. A rule called again
# from there -- `fwd` computing `out = f(x)`, as in jax's examples -- is its plain
# function: there it computes a value, and the rule is already being applied.
_running: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "adswitch_running_rules", default=frozenset()
)


class _primal:
    """``with _primal(rule):`` -- ``rule``'s primal code runs (a plain class: this is on
    every rule call's path, where a generator-based context manager costs more)."""

    __slots__ = ("rule", "token")

    def __init__(self, rule: object) -> None:
        self.rule = rule

    def __enter__(self) -> None:
        self.token = _running.set(_running.get() | {id(self.rule)})

    def __exit__(self, *exc: object) -> None:
        _running.reset(self.token)


def _engines_with(hook: str) -> str:
    """Names of the registered engines whose class defines ``hook`` (no engine imported)."""
    from adswitch.registry import default_registry

    registry = default_registry()
    names = [n for n in registry.names() if getattr(registry._backends.get(n), hook, None)]
    return ", ".join(repr(n) for n in names) or "none registered"


def _hook(engine: Any, hook: str, what: str) -> Callable[..., Any]:
    method = getattr(engine, hook, None)
    if method is None:
        raise UnsupportedError(
            f"{what} inside a call on engine {engine.name!r}, which does not implement the "
            f"optional hook Backend.{hook} (see adswitch.spec.Backend). Engines that have "
            f"it: {_engines_with(hook)}; pick one with backend=, or implement the hook."
        )
    return method  # type: ignore[no-any-return]


def _check_argnums(nondiff_argnums: Sequence[int]) -> tuple[int, ...]:
    nums = tuple(nondiff_argnums)
    if any(not isinstance(i, int) or isinstance(i, bool) or i < 0 for i in nums):
        raise UsageError(
            f"nondiff_argnums={nondiff_argnums!r}: give non-negative argument positions, "
            "e.g. nondiff_argnums=(1,)."
        )
    return nums


def _refuse_wrapper(name: str, path: str, wrapper: Any) -> None:
    kind = type(wrapper).__name__
    raise UsageError(
        f"{name}: {path} is an ad.{kind} wrapper. Activity wrappers mark the arguments of "
        f"an operator call (ad.gradient(f, ad.{kind}(...))), not of a rule inside f: "
        f"pass the array itself (a rule differentiates what the enclosing call does)."
    )


class _Split:
    """One call's arguments: the nondiff ones as given, the others flattened."""

    def __init__(self, args: tuple[Any, ...], nondiff: tuple[int, ...], name: str) -> None:
        if any(i >= len(args) for i in nondiff):
            raise UsageError(
                f"{name}: nondiff_argnums={nondiff!r} but it was called with {len(args)} "
                "argument(s); fix nondiff_argnums or the call."
            )
        self.nargs = len(args)
        self.nondiff = nondiff
        self.nondiff_args = tuple(args[i] for i in nondiff)
        self.positions = [i for i in range(len(args)) if i not in nondiff]
        self.leaves: list[Any] = []
        self.treedefs: list[trees.TreeDef] = []
        self.counts: list[int] = []
        for i in self.positions:
            leaves, td = trees.flatten(args[i])
            for j, leaf in enumerate(leaves):
                if isinstance(leaf, _WRAPPERS):
                    _refuse_wrapper(name, trees.leaf_path(td, f"args[{i}]", j), leaf)
            self.leaves.extend(leaves)
            self.treedefs.append(td)
            self.counts.append(len(leaves))

    def diff_args(self, leaves: Sequence[Any]) -> list[Any]:
        out, start = [], 0
        for td, n in zip(self.treedefs, self.counts):
            # (a bare leaf, the common argument, skips the unflatten)
            out.append(
                leaves[start]
                if td is None
                else trees.unflatten(td, list(leaves[start : start + n]))
            )
            start += n
        return out

    def all_args(self, leaves: Sequence[Any]) -> list[Any]:
        args: list[Any] = [None] * self.nargs
        for i, a in zip(self.positions, self.diff_args(leaves)):
            args[i] = a
        for i, a in zip(self.nondiff, self.nondiff_args):
            args[i] = a
        return args

    def key(self) -> Hashable | None:
        try:
            key = (self.nargs, tuple(self.treedefs))
            hash(key)
            return key
        except TypeError:  # an unhashable aux: check the structure on every call
            return None


class _Rule:
    """What custom_vjp and custom_jvp share: the function, and f's output structure per
    input structure (so a rule's output can be checked against it)."""

    kind = "rule"

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int]) -> None:
        self.fun = fun
        self.nondiff_argnums = _check_argnums(nondiff_argnums)
        self.__name__ = getattr(fun, "__name__", type(self).__name__)
        self.__doc__ = getattr(fun, "__doc__", None)
        self.__wrapped__ = fun
        self._out_structure: dict[Hashable, trees.TreeDef] = {}

    def _name(self) -> str:
        return f"{self.kind}({self.__name__})"

    def _f_structure(self, split: _Split, leaves: Sequence[Any]) -> trees.TreeDef:
        """f's output structure at these inputs: run f once per input structure."""
        key = split.key()
        if key is not None and key in self._out_structure:
            return self._out_structure[key]
        with _primal(self):
            td = trees.flatten(self.fun(*split.all_args(leaves)))[1]
        if key is not None:
            self._out_structure[key] = td
        return td

    def _check_out(
        self, split: _Split, leaves: Sequence[Any], out: Any, who: str
    ) -> tuple[list[Any], trees.TreeDef]:
        out_leaves, td = trees.flatten(out)
        f_td = self._f_structure(split, leaves)
        if td != f_td and trees.reorder(f_td, td) is None:
            where = trees.describe_mismatch(f_td, td, "out", ("from f", f"from {who}"))
            raise UsageError(
                f"{self._name()}: the output {who} returns differs from f's: {where}. "
                f"{who} must return f's output (same containers, same keys) as its out."
            )
        return out_leaves, td


class custom_vjp(_Rule):
    """``f`` with a reverse-mode rule: ``cv = ad.custom_vjp(f)``, ``cv.defvjp(fwd, bwd)``.

    ``fwd(*args) -> (out, residuals)``; ``bwd(*nondiff_args, residuals, ct)`` returns a
    tuple with one cotangent per argument not in ``nondiff_argnums``, each a tree like
    that argument (``None`` for a zero: a whole argument or one leaf). ``bwd`` runs on the
    engine's arrays, so it is differentiated in turn by nested derivatives.
    """

    kind = "custom_vjp"

    def __init__(
        self,
        fun: Callable[..., Any],
        nondiff_argnums: Sequence[int] = (),
        *,
        host: bool = False,
        out_shape: Any = None,
    ) -> None:
        super().__init__(fun, nondiff_argnums)
        self.fwd: Callable[..., Any] | None = None
        self.bwd: Callable[..., Any] | None = None
        self.host, self.out_shape = host, out_shape  # host=True: adswitch.host_rules

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any]) -> None:
        if not callable(fwd) or not callable(bwd):
            raise UsageError(f"{self._name()}.defvjp(fwd, bwd): both must be callables.")
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args: Any) -> Any:
        engine = enclosing()
        if engine is None or id(self) in _running.get():
            return self.fun(*args)
        if self.fwd is None or self.bwd is None:
            raise UsageError(
                f"{self._name()} is differentiated but defvjp was never called: call "
                f"{self.__name__}.defvjp(fwd, bwd) before using it."
            )
        if self.host:
            from adswitch.host_rules import call_vjp

            return call_vjp(self, engine, args, self.out_shape)
        hook = _hook(engine, "custom_vjp", self._name())
        split = _Split(args, self.nondiff_argnums, self._name())
        active = [engine.owns(x) and leaf_kind(x) == "f" for x in split.leaves]
        user_fwd, user_bwd = self.fwd, self.bwd
        out_td: list[trees.TreeDef] = []  # set by fn or fwd, read by bwd

        def fn(leaves: list[Any]) -> list[Any]:
            with _primal(self):
                out_leaves, td = trees.flatten(self.fun(*split.all_args(leaves)))
            out_td[:] = [td]
            return out_leaves

        def fwd(leaves: list[Any]) -> tuple[list[Any], Any]:
            with _primal(self):
                pair = user_fwd(*split.all_args(leaves))
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise UsageError(
                    f"{self._name()}: fwd returned {describe(pair)}; it must return a pair "
                    "(out, residuals)."
                )
            out_leaves, td = self._check_out(split, leaves, pair[0], "fwd")
            out_td[:] = [td]
            return out_leaves, pair[1]

        def bwd(residuals: Any, cotangents: list[Any]) -> list[Any]:
            ct = trees.unflatten(out_td[0], list(cotangents))
            got = user_bwd(*split.nondiff_args, residuals, ct)
            return self._check_cotangents(split, got)

        out = hook(fn, fwd, bwd, split.leaves, active)
        if not out_td:  # the engine built the output without calling fn or fwd here
            out_td.append(self._f_structure(split, split.leaves))
        return trees.unflatten(out_td[0], list(out))

    def _check_cotangents(self, split: _Split, got: Any) -> list[Any]:
        n = len(split.positions)
        if isinstance(got, list):
            got = tuple(got)
        if not isinstance(got, tuple) or len(got) != n:
            given = f"{len(got)} values" if isinstance(got, tuple) else describe(got)
            raise UsageError(
                f"{self._name()}: bwd returned {given}; it must return a tuple of {n} "
                f"cotangent(s), one per argument not in nondiff_argnums (positions "
                f"{split.positions}), None for a zero -- e.g. `return (ct,)` for one argument."
            )
        flat: list[Any] = []
        start = 0
        for k, pos in enumerate(split.positions):
            td, count, ct = split.treedefs[k], split.counts[k], got[k]
            leaves = split.leaves[start : start + count]
            start += count
            if ct is None:
                flat.extend([None] * count)
                continue
            ct_leaves, ct_td = trees.flatten(ct)
            if ct_td != td:
                order = trees.reorder(td, ct_td)
                if order is None:
                    where = trees.describe_mismatch(
                        td, ct_td, f"args[{pos}]", ("in the argument", "in its cotangent")
                    )
                    raise UsageError(
                        f"{self._name()}: bwd's cotangent for argument {pos} has another "
                        f"structure than the argument: {where}. Return a tree like the "
                        "argument (None for a zero leaf)."
                    )
                ordered: list[Any] = [None] * count
                for j, i in enumerate(order):
                    ordered[i] = ct_leaves[j]
                ct_leaves = ordered
            for j, (leaf, c) in enumerate(zip(leaves, ct_leaves)):
                flat.append(self._check_leaf(td, j, pos, leaf, c))
        return flat

    def _check_leaf(self, td: trees.TreeDef, index: int, pos: int, leaf: Any, ct: Any) -> Any:
        if ct is None or leaf_kind(leaf) != "f":
            return None  # integer/bool/constant leaves take no cotangent
        if leaf_kind(ct) == "f" and np.shape(leaf) == getattr(ct, "shape", ()):
            return ct
        path = trees.leaf_path(td, f"args[{pos}]", index)  # (built for the message only)
        if leaf_kind(ct) != "f":
            raise UsageError(
                f"{self._name()}: bwd's cotangent at {path} (argument {pos}) is "
                f"{describe(ct)}; a cotangent must be a floating array or float like the "
                "argument's leaf, or None for a zero."
            )
        want, have = tuple(np.shape(leaf)), tuple(getattr(ct, "shape", ()))
        if want != have:
            raise UsageError(
                f"{self._name()}: bwd's cotangent at {path} (argument {pos}) has shape "
                f"{have} but the argument's leaf has shape {want}; return a cotangent "
                "shaped like the argument (sum over broadcast axes)."
            )
        return ct


class custom_jvp(_Rule):
    """``g`` with a forward-mode rule: ``cj = ad.custom_jvp(g)``, ``cj.defjvp(rule)``.

    ``rule(*nondiff_args, primals, tangents) -> (out, tangent_out)``: ``primals`` and
    ``tangents`` are tuples over the arguments not in ``nondiff_argnums``; tangents of
    constant leaves are zeros (never ``None``). Reverse mode goes through the rule where
    the engine can transpose it (it must be linear in the tangents).
    """

    kind = "custom_jvp"

    def __init__(
        self,
        fun: Callable[..., Any],
        nondiff_argnums: Sequence[int] = (),
        *,
        host: bool = False,
        out_shape: Any = None,
    ) -> None:
        super().__init__(fun, nondiff_argnums)
        self.rule: Callable[..., Any] | None = None
        self.host, self.out_shape = host, out_shape  # host=True: adswitch.host_rules

    def defjvp(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(rule):
            raise UsageError(f"{self._name()}.defjvp(rule): rule must be a callable.")
        self.rule = rule
        return rule  # (so that @g.defjvp works as a decorator, as in jax)

    def __call__(self, *args: Any) -> Any:
        engine = enclosing()
        if engine is None or id(self) in _running.get():
            return self.fun(*args)
        if self.rule is None:
            raise UsageError(
                f"{self._name()} is differentiated but defjvp was never called: call "
                f"{self.__name__}.defjvp(rule) before using it."
            )
        if self.host:
            from adswitch.host_rules import call_jvp

            return call_jvp(self, engine, args, self.out_shape)
        hook = _hook(engine, "custom_jvp", self._name())
        split = _Split(args, self.nondiff_argnums, self._name())
        active = [engine.owns(x) and leaf_kind(x) == "f" for x in split.leaves]
        user_rule = self.rule
        out_td: list[trees.TreeDef] = []

        def fn(leaves: list[Any]) -> list[Any]:
            with _primal(self):
                out_leaves, td = trees.flatten(self.fun(*split.all_args(leaves)))
            out_td[:] = [td]
            return out_leaves

        def rule(leaves: list[Any], tangents: list[Any]) -> tuple[list[Any], list[Any]]:
            tangents = [_zeros(x) if t is None else t for x, t in zip(leaves, tangents)]
            with _primal(self):
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

        out = hook(fn, rule, split.leaves, active)
        if not out_td:
            out_td.append(self._f_structure(split, split.leaves))
        return trees.unflatten(out_td[0], list(out))

    def _check_tangents(self, td: trees.TreeDef, out_leaves: list[Any], t: Any) -> list[Any]:
        t_leaves, t_td = trees.flatten(t)
        if t_td != td:
            order = trees.reorder(td, t_td)
            if order is None:
                where = trees.describe_mismatch(td, t_td, "out", ("in out", "in tangent_out"))
                raise UsageError(
                    f"{self._name()}: the jvp rule's tangent_out has another structure "
                    f"than its out: {where}. Return a tangent tree like the output."
                )
            ordered: list[Any] = [None] * len(t_leaves)
            for j, i in enumerate(order):
                ordered[i] = t_leaves[j]
            t_leaves = ordered
        result = []
        for j, (o, tl) in enumerate(zip(out_leaves, t_leaves)):
            if tl is None:
                result.append(_zeros(o))
                continue
            want, have = tuple(np.shape(o)), tuple(getattr(tl, "shape", ()))
            if want != have:
                path = trees.leaf_path(td, "out", j)
                raise UsageError(
                    f"{self._name()}: the jvp rule's tangent at {path} has shape {have} "
                    f"but the output there has shape {want}; return tangents shaped like "
                    "the output."
                )
            result.append(tl)
        return result


def _zeros(x: Any) -> Any:
    """A zero tangent like ``x``, in ``x``'s own kind (a float for a Python number)."""
    if not is_array(x):
        return 0.0
    from adswitch.namespace import array_namespace

    return array_namespace(x).zeros_like(x)


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
    hook = _hook(engine, "stop_gradient", "ad.stop_gradient")
    owned = [f and engine.owns(x) for x, f in zip(leaves, floating)]
    return trees.unflatten(td, [hook(x) if o else x for x, o in zip(leaves, owned)])
