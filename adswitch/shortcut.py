"""A prepared gradient's shortcut: the call's checks in a few type tests, the engine's
own compiled program run on the leaves straight away.

A prepared ``ad.gradient`` goes through the same layers on every call: the arguments
rebound to the prepared plan, the front end's call, the engine's dispatch and its cache
lookup. For a program of a few microseconds (jax's ``jit``), those layers cost more than
the program. When the arguments are the simplest kind -- each a plain or ``Const`` array,
or a flat dict of arrays, with no ties, no ``Duplicated`` and no Python scalars -- and the
engine offers the optional ``prepared_shortcut`` hook (``adswitch.spec``), the prepared
call keeps a :class:`Shortcut` after a call that took the full path:

* the front end checks, per call, what its full path checks of such arguments: the same
  wrapper (``Const`` or none) and leaf type at each position, the same dict keys in the
  same order, and that no two leaves are one object;
* the engine checks what its own full path would find out (for jax: no transform is
  tracing, ``f`` reads the same objects, the leaves' shapes and dtypes are the
  program's) and runs the program;
* any doubt, on either side, returns ``None`` and the call takes the full path, which
  gives the same numbers or the same error as without the shortcut. The shortcut is
  then dropped and may be made again after a later full call.

A shortcut is made only when its own flattening of the call's arguments gives the plan's
leaves, object for object, and it is kept only when its first run gives the full path's
results, value for value (one extra run of the program, once).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adswitch.activity import Const
from adswitch.plan import CONST, PLAIN, Plan

__all__ = ["Shortcut", "make_shortcut"]

#: ``run(leaves) -> gradients of the active leaves``, or ``None``: take the full path.
Run = Callable[[list[Any]], Sequence[Any] | None]

_NOT_AN_ARRAY = (int, float, complex, bool, str, bytes, type(None), list, tuple, dict)


class _Arg:
    """What one argument must look like: ``Const`` or not, a bare leaf of type ``cls``
    (``keys is None``) or a dict with ``keys`` in this order of leaves of type ``cls``."""

    __slots__ = ("active", "cls", "const", "keys")

    def __init__(
        self, const: bool, keys: tuple[Any, ...] | None, cls: type, active: tuple[bool, ...]
    ) -> None:
        self.const = const
        self.keys = keys
        self.cls = cls
        self.active = active  # per leaf of the argument


class Shortcut:
    """A prepared gradient's fast path (see the module docstring). Calling it gives the
    gradients as ``ad.gradient`` does, or ``None`` (take the full path)."""

    __slots__ = ("_args", "_run")

    def __init__(self, args: tuple[_Arg, ...], run: Run) -> None:
        self._args = args
        self._run = run

    def leaves_of(self, args: Sequence[Any]) -> list[Any] | None:
        """The leaves of ``args`` in the plan's order, or ``None`` if some argument is
        not as prepared."""
        specs = self._args
        if len(args) != len(specs):
            return None
        leaves: list[Any] = []
        for arg, spec in zip(args, specs):
            if spec.const:
                if type(arg) is not Const:
                    return None
                arg = arg.val
            cls = spec.cls
            if spec.keys is None:
                if type(arg) is not cls:  # (a wrapper, a tracer, another kind: full path)
                    return None
                leaves.append(arg)
                continue
            if type(arg) is not dict or tuple(arg) != spec.keys:
                return None
            for leaf in arg.values():
                if type(leaf) is not cls:
                    return None
                leaves.append(leaf)
        if len(leaves) > 1 and len(set(map(id, leaves))) != len(leaves):
            return None  # tied: the full path tells the plan's ties apart
        return leaves

    def __call__(self, args: Sequence[Any]) -> tuple[Any, ...] | None:
        leaves = self.leaves_of(args)
        if leaves is None:
            return None
        grads = self._run(leaves)
        if grads is None:
            return None
        results: list[Any] = []
        k = 0
        for spec in self._args:
            if spec.const:
                results.append(None)
                k += len(spec.active) if spec.keys is not None else 1
                continue
            if spec.keys is None:
                results.append(grads[k] if spec.active[0] else None)
                k += spec.active[0]
                continue
            entry: dict[Any, Any] = {}
            for key, is_active in zip(spec.keys, spec.active):
                entry[key] = grads[k] if is_active else None
                k += is_active
            results.append(entry)
        return tuple(results)


def _specs(plan: Plan, args: Sequence[Any]) -> tuple[_Arg, ...] | None:
    """The argument specs of a call of this plan, or ``None`` if some argument is not of
    the kinds a shortcut takes."""
    if not plan.untied or plan.has_duplicated or plan.scalar_leaves:
        return None
    if len(args) != len(plan.args):
        return None
    specs: list[_Arg] = []
    active = plan.active
    for arg, p in zip(args, plan.args):
        if p.kind not in (PLAIN, CONST):
            return None
        const = p.kind == CONST
        value = arg.val if const and type(arg) is Const else arg
        if isinstance(value, dict):
            if type(value) is not dict or not value:
                return None
            leaf_types = {type(v) for v in value.values()}
            if len(leaf_types) != 1:
                return None
            cls = leaf_types.pop()
            keys: tuple[Any, ...] | None = tuple(value)
        else:
            cls, keys = type(value), None
        if cls in _NOT_AN_ARRAY or issubclass(cls, np.generic):
            return None
        ids = p.leaf_ids
        specs.append(_Arg(const, keys, cls, tuple(bool(active[u]) for u in ids)))
    return tuple(specs)


def _same_results(ours: tuple[Any, ...], theirs: tuple[Any, ...]) -> bool:
    """Whether the shortcut's results are the full path's, value for value."""
    if len(ours) != len(theirs):
        return False
    for a, b in zip(ours, theirs):
        if type(a) is not type(b):
            return False
        if isinstance(a, dict):
            if list(a) != list(b) or not _same_results(tuple(a.values()), tuple(b.values())):
                return False
        elif a is not None and not np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True):
            return False
    return True


def make_shortcut(
    engine: Any,
    slot: dict[Any, Any],
    f: Callable[..., Any],
    plan: Plan,
    args: Sequence[Any],
    results: tuple[Any, ...],
) -> Shortcut | None:
    """A :class:`Shortcut` for later calls like this one, which took the full path with
    ``plan`` and gave ``results``, or ``None`` where none can be made (yet).

    Args:
        engine: the prepared call's engine (its optional ``prepared_shortcut`` hook).
        slot: the prepared call's engine slot, as the full path left it.
        f: the user's function.
        plan: this call's plan.
        args: this call's arguments.
        results: the gradients the full path gave for them.
    """
    hook = getattr(engine, "prepared_shortcut", None)
    if hook is None:
        return None
    specs = _specs(plan, args)
    if specs is None:
        return None
    run = hook(slot, f, list(plan.leaves), list(plan.active))
    if run is None:
        return None
    made = Shortcut(specs, run)
    leaves = made.leaves_of(args)
    if leaves is None or len(leaves) != len(plan.leaves):
        return None
    if not all(map(lambda a, b: a is b, leaves, plan.leaves)):
        return None  # its flattening is not the plan's
    again = made(args)
    if again is None or not _same_results(again, results):
        return None
    return made
