"""What every rule call does first, whatever the rule: its arguments split into the
nondiff ones and the flattened rest (:class:`RuleArgs`), the engine's hook looked up with
the fix when it is missing, activity wrappers refused, and the record of which rules'
primal code runs now (a rule called from its own ``fwd`` is its plain function).

Used by :mod:`adswitch.rule_base`, :mod:`adswitch.custom` and :mod:`adswitch.host_rules`.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from adswitch import trees
from adswitch.activity import Active, Const, Duplicated
from adswitch.errors import UnsupportedError, UsageError
from adswitch.leaves import is_array, leaf_kind

__all__ = [
    "RuleArgs",
    "active_leaves",
    "call_hook",
    "check_argnums",
    "engine_hook",
    "primal",
    "running_rules",
    "zero_tangent",
]

_WRAPPERS = (Active, Const, Duplicated)
_NO_KEY = object()  # RuleArgs.key not computed yet

# The rules whose primal code (f, fwd, a jvp rule) is running now. A rule called again
# from there -- `fwd` computing `out = f(x)`, as in jax's examples -- is its plain
# function: there it computes a value, and the rule is already being applied.
running_rules: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "adswitchrunning_rules_rules", default=frozenset()
)


class primal:
    """``with primal(rule):`` -- ``rule``'s primal code runs (a plain class: this is on
    every rule call's path, where a generator-based context manager costs more)."""

    __slots__ = ("rule", "token")

    def __init__(self, rule: object) -> None:
        self.rule = rule

    def __enter__(self) -> None:
        self.token = running_rules.set(running_rules.get() | {id(self.rule)})

    def __exit__(self, *exc: object) -> None:
        running_rules.reset(self.token)


def _engines_with(hook: str) -> str:
    """Names of the registered engines whose class defines ``hook`` (no engine imported)."""
    from adswitch.registry import default_registry

    registry = default_registry()
    names = [n for n in registry.names() if getattr(registry._backends.get(n), hook, None)]
    return ", ".join(repr(n) for n in names) or "none registered"


def engine_hook(engine: Any, hook: str, what: str) -> Callable[..., Any]:
    method = getattr(engine, hook, None)
    if method is None:
        raise UnsupportedError(
            f"{what} inside a call on engine {engine.name!r}, which does not implement the "
            f"optional hook Backend.{hook} (see adswitch.spec.Backend). Engines that have "
            f"it: {_engines_with(hook)}; pick one with backend=, or implement the hook."
        )
    return method  # type: ignore[no-any-return]


def check_argnums(nondiff_argnums: Sequence[int]) -> tuple[int, ...]:
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


class RuleArgs:
    """One call's arguments: the nondiff ones as given, the others flattened."""

    def __init__(self, args: tuple[Any, ...], nondiff: tuple[int, ...], name: str) -> None:
        self.nargs = len(args)
        self.nondiff = nondiff
        self._key: Any = _NO_KEY
        if not nondiff:
            # The common call -- every argument a bare leaf (an array, a number), none
            # nondiff -- is its own flattening: no tree walk (a tiny rule's budget).
            bare = True
            for a in args:
                if trees.flatten(a)[1] is not None:
                    bare = False
                    break
            if bare:
                for i, a in enumerate(args):
                    if isinstance(a, _WRAPPERS):
                        _refuse_wrapper(name, f"args[{i}]", a)
                self.bare = True
                self.nondiff_args: tuple[Any, ...] = ()
                self.positions = list(range(self.nargs))
                self.leaves = list(args)
                self.treedefs: list[trees.TreeDef] = [None] * self.nargs
                self.counts = [1] * self.nargs
                return
        if any(i >= len(args) for i in nondiff):
            raise UsageError(
                f"{name}: nondiff_argnums={nondiff!r} but it was called with {len(args)} "
                "argument(s); fix nondiff_argnums or the call."
            )
        self.bare = False  # (diff_args/all_args rebuild the trees)
        self.nondiff_args = tuple(args[i] for i in nondiff)
        self.positions = [i for i in range(len(args)) if i not in nondiff]
        self.leaves = []
        self.treedefs = []
        self.counts = []
        for i in self.positions:
            leaves, td = trees.flatten(args[i])
            for j, leaf in enumerate(leaves):
                if isinstance(leaf, _WRAPPERS):
                    _refuse_wrapper(name, trees.leaf_path(td, f"args[{i}]", j), leaf)
            self.leaves.extend(leaves)
            self.treedefs.append(td)
            self.counts.append(len(leaves))

    def refuse_traced_nondiff(self, engine: Any, name: str) -> None:
        """A non-differentiated argument must not carry derivatives: the rule has none for
        it, so what flows through it would be dropped silently (jax refuses the same)."""
        traced = getattr(engine, "is_traced", None)
        for pos, arg in zip(self.nondiff, self.nondiff_args):
            leaves, td = trees.flatten(arg)
            for j, leaf in enumerate(leaves):
                if not engine.owns(leaf):
                    continue
                if traced(leaf) if traced is not None else leaf_kind(leaf) == "f":
                    path = trees.leaf_path(td, f"args[{pos}]", j)
                    raise UsageError(
                        f"{name}: {path} is in nondiff_argnums but depends on the values "
                        "being differentiated (it is traced by the enclosing call), and "
                        "the rule gives no derivative for it, so that part of the "
                        f"derivative would be lost. Fix: take argument {pos} out of "
                        "nondiff_argnums and return its cotangent from bwd (None for a "
                        "zero), or pass ad.stop_gradient(...) of it if its derivative is "
                        "meant to be dropped."
                    )

    def diff_args(self, leaves: Sequence[Any]) -> list[Any]:
        if self.bare:
            return list(leaves)
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
        if self.bare:
            return list(leaves)
        args: list[Any] = [None] * self.nargs
        for i, a in zip(self.positions, self.diff_args(leaves)):
            args[i] = a
        for i, a in zip(self.nondiff, self.nondiff_args):
            args[i] = a
        return args

    def key(self) -> Hashable | None:
        """The input structure, what f's output structure is cached by (computed once)."""
        if self._key is not _NO_KEY:
            return self._key  # type: ignore[no-any-return]
        try:
            key: Hashable | None = (self.nargs, tuple(self.treedefs))
            hash(key)
        except TypeError:  # an unhashable aux: check the structure on every call
            key = None
        self._key = key
        return key


def zero_tangent(x: Any) -> Any:
    """A zero tangent like ``x``, in ``x``'s own kind (a float for a Python number)."""
    if not is_array(x):
        return 0.0
    from adswitch.namespace import array_namespace

    return array_namespace(x).zeros_like(x)


# Whether an engine owns a type, per (id(engine), type): ``Backend.owns`` depends on the
# type alone (adswitch.spec), and walking the MRO costs about a microsecond per leaf on
# every rule call. The engine is kept in the entry, so that a reused id is not trusted.
_OWNS: dict[tuple[int, type], tuple[Any, bool]] = {}


def active_leaves(engine: Any, leaves: Sequence[Any]) -> list[bool]:
    """Which leaves the rule differentiates: the engine's floating arrays and numbers."""
    active = []
    for x in leaves:
        key = (id(engine), type(x))
        entry = _OWNS.get(key)
        if entry is None or entry[0] is not engine:
            if len(_OWNS) > 1024:  # (engines made per test: keep it small)
                _OWNS.clear()
            entry = _OWNS[key] = (engine, bool(engine.owns(x)))
        active.append(entry[1] and leaf_kind(x) == "f")
    return active


def call_hook(
    hook: Callable[..., Any],
    fn: Callable[[list[Any]], list[Any]],
    rules: tuple[Callable[..., Any], ...],
    leaves: list[Any],
    active: list[bool],
) -> list[Any]:
    """``hook(fn, *rules, leaves, active)`` -- or, where no leaf is active (nothing this
    engine differentiates passes through the rule), ``fn`` itself: engines are called
    only with something to differentiate."""
    if not any(active):
        return list(fn(list(leaves)))
    return list(hook(fn, *rules, leaves, active))
