"""A prepared call's shortcut: the call's checks in a few type tests, then the whole
prepared call handed to the engine as one function of its leaves.

A prepared call goes through the same layers on every call: the arguments rebound to the
prepared plan, the front end's call, the engine's dispatch and its cache lookup, the
results placed. For a program of a few microseconds (jax's ``jit``), those layers cost
more than the program. When the arguments are the simplest kind -- each a plain or
``Const`` array, or a flat dict of arrays, with no ties, no ``Duplicated`` and no Python
scalars -- and the engine offers the optional ``prepared_shortcut`` hook
(``adswitch.spec``), the prepared call keeps a :class:`Shortcut` after a call that took
the full path. The engine gets ``call(leaves)``: the whole prepared call (its full path)
on arguments rebuilt from ``leaves``, giving the result's arrays flat; jax traces it
once under ``jax.jit`` (inside which adswitch runs inline: no program of its own), so
later calls are one dispatch of jax's own C++, which flattens and checks the leaves. An
engine that runs ``f`` on every call (torch) gets, for a gradient, which leaves are
differentiated and ``loss(values)``: ``f`` run on them as the full path runs it (the
arguments rebuilt, inside the call, its loss checked as ``LossFunction`` checks it); it
then does its full path's own steps around it, without the layers in between.

* The front end checks, per call, what its full path checks of such arguments: the same
  wrapper (``Const`` or none) and leaf type at each position, the same dict keys in the
  same order, that no two leaves are one object, and that the call is not made inside
  another adswitch call.
* The engine checks what its own full path would find out (for jax: no transform is
  tracing, ``f`` reads the same objects, what its program baked in is unchanged; for
  torch: the leaves' shapes, dtypes and devices, no ``torch.func`` transform, grad mode).
* Any doubt, on either side, returns ``None`` and the call takes the full path, which
  gives the same numbers or the same error as without the shortcut. The shortcut is
  then dropped and may be made again after a later full call.

A sparse Jacobian's shortcut (``sparsity=``; an engine's own sparse matrix as its
result, ``adswitch.shortcut_template``) traces the colors' seeds as constants of its
program, as asdex and ``jax.jit`` of the operator do: the compiler folds them in
(Brusselator N = 32: 1.0-1.3x asdex's Jacobian, against 1.5-1.9x with the seeds an
input), and may then round a product and a sum as one (213 of 12,288 entries one ulp
apart), so its values are checked against the full path's to rounding, not bit for bit.
A sparse Hessian's full path records its seeds (``adswitch.sparse.seeds``), which the
shortcut then gives the engine as one more input after the leaves: folded in, its
forward-over-reverse program ran 6% slower (Rosenbrock n = 10,000: 1.11-1.21x asdex
against 1.07-1.12x), and its first run equals the full path's bit for bit.

A shortcut is made only when its flattening of the call's arguments gives the plan's
leaves, object for object, and the result is made of arrays, ``None`` and tuples or
dicts of them; it is kept only when its first run gives the full path's result, value
for value and key for key (one extra run, once: on torch, ``f`` runs once more then).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adswitch import selection
from adswitch import shortcut_template as results
from adswitch.activity import Const
from adswitch.outputs import loss_of
from adswitch.plan import CONST, PLAIN, Plan
from adswitch.sparse import seeds
from adswitch.sparse.seeds import SEEDS

__all__ = ["Shortcut", "make_shortcut"]

#: ``run(leaves) -> the result's arrays, flat``, or ``None``: take the full path.
Run = Callable[[list[Any]], Sequence[Any] | None]


class _Arg:
    """What one argument must look like: ``Const`` or not, a bare leaf of type ``cls``
    (``keys is None``) or a dict with ``keys`` in this order of leaves of type ``cls``."""

    __slots__ = ("cls", "const", "keys")

    def __init__(self, const: bool, keys: tuple[Any, ...] | None, cls: type) -> None:
        self.const = const
        self.keys = keys
        self.cls = cls


def _leaves_of(specs: tuple[_Arg, ...], args: Sequence[Any]) -> list[Any] | None:
    """The leaves of ``args`` in the plan's order, or ``None`` if some argument is not as
    prepared."""
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


def _rebuilt(specs: tuple[_Arg, ...], leaves: Sequence[Any], wrap: bool = True) -> list[Any]:
    """The arguments of ``leaves`` (any values, tracers included) as ``specs`` shape them:
    dicts rebuilt, ``Const`` ones wrapped again (``wrap``: as the prepared call takes
    them) or left bare (as ``f`` gets them)."""
    args: list[Any] = []
    k = 0
    for spec in specs:
        if spec.keys is None:
            value: Any = leaves[k]
            k += 1
        else:
            value = dict(zip(spec.keys, leaves[k : k + len(spec.keys)]))
            k += len(spec.keys)
        args.append(Const(value) if wrap and spec.const else value)
    return args


def _loss_caller(
    specs: tuple[_Arg, ...], f: Callable[..., Any], engine: Any
) -> Callable[[Sequence[Any]], Any]:
    """``loss(values)``: ``f`` on the arguments rebuilt from one value per leaf as the full
    path hands them to ``f`` (dicts rebuilt, ``Const`` unwrapped), run inside the call as
    the full path runs it (``selection.current_calls`` names the engine: a call nested in
    ``f`` knows it is nested), its output checked as ``LossFunction`` checks it (the
    loss: a Python float or a 0-d real array; ``OutputError`` else)."""
    calls = selection.current_calls
    inside = (engine,)
    if all(spec.keys is None for spec in specs):  # bare arrays: the leaves are the arguments

        def bare(values: Sequence[Any]) -> Any:
            token = calls.set(inside)
            try:
                return loss_of(f(*values))
            finally:
                calls.reset(token)

        return bare

    def trees(values: Sequence[Any]) -> Any:
        args = _rebuilt(specs, values, wrap=False)
        token = calls.set(inside)
        try:
            return loss_of(f(*args))
        finally:
            calls.reset(token)

    return trees


class Shortcut:
    """A prepared call's fast path (see the module docstring). Calling it gives the
    result as the full path does, or ``None`` (take the full path)."""

    __slots__ = ("_args", "_build", "_extras", "_run")

    def __init__(
        self, args: tuple[_Arg, ...], run: Run, template: Any, extras: Sequence[Any] = ()
    ) -> None:
        self._args = args
        self._run = run
        self._build = results.builder(template)
        self._extras = list(extras)  # inputs of the engine's program after the leaves

    def __call__(self, args: Sequence[Any]) -> Any:
        leaves = _leaves_of(self._args, args)
        if leaves is None:
            return None
        if self._extras:
            leaves += self._extras
        arrays = self._run(leaves)
        if arrays is None:
            return None
        return self._build(arrays)


def _specs(plan: Plan, args: Sequence[Any]) -> tuple[_Arg, ...] | None:
    """The argument specs of a call of this plan, or ``None`` if some argument is not of
    the kinds a shortcut takes."""
    if not plan.untied or plan.has_duplicated or plan.scalar_leaves:
        return None
    if len(args) != len(plan.args):
        return None
    specs: list[_Arg] = []
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
        if cls in results.NOT_AN_ARRAY or issubclass(cls, np.generic):
            return None
        specs.append(_Arg(const, keys, cls))
    return tuple(specs)


def make_shortcut(
    engine: Any,
    slot: dict[Any, Any],
    f: Callable[..., Any],
    plan: Plan,
    args: Sequence[Any],
    result: Any,
    full: Callable[[Sequence[Any]], Any],
    operator: str = "gradient",
) -> Shortcut | None:
    """A :class:`Shortcut` for later calls like this one, which took the full path with
    ``plan`` and gave ``result``, or ``None`` where none can be made (yet).

    Args:
        engine: the prepared call's engine (its optional ``prepared_shortcut`` hook).
        slot: the prepared call's engine slot, as the full path left it.
        f: the user's function.
        plan: this call's plan.
        args: this call's arguments.
        result: what the full path gave for them.
        full: the prepared call's full path, ``full(args) -> result``.
        operator: the prepared operator's name (``"gradient"``, ``"withgradient"``,
            ``"jacobian"``, ``"hessian"``).
    """
    hook = getattr(engine, "prepared_shortcut", None)
    if hook is None:
        return None
    specs = _specs(plan, args)
    template = results.template(result)
    if specs is None or template is None:
        return None
    leaves = _leaves_of(specs, args)
    if leaves is None or len(leaves) != len(plan.leaves):
        return None
    if not all(map(lambda a, b: a is b, leaves, plan.leaves)):
        return None  # its flattening is not the plan's

    # A sparse call's seeds: one more input of the program, not constants it could fold
    # in (``adswitch.sparse.seeds``), made the leaves' kind by the engine's namespace.
    setup = slot.get(SEEDS)
    extras: list[Any] = []
    if setup is not None:
        slot = {k: v for k, v in slot.items() if k != SEEDS}  # (the engine's entries only)
        try:
            extras = [engine.namespace(leaves).asarray(setup.seeds)]
        except Exception:  # (no namespace for these leaves: no shortcut)
            return None
        if type(extras[0]) is not type(leaves[0]):
            return None
    n_leaves = len(leaves)

    def call(values: Sequence[Any]) -> list[Any]:
        out: list[Any] = []
        if extras:
            token = seeds.standing_in(setup, values[n_leaves])
            try:
                got = full(_rebuilt(specs, values[:n_leaves]))
            finally:
                seeds.reset(token)
        else:
            got = full(_rebuilt(specs, values))
        if results.template(got) != template:
            raise TypeError("the prepared call's result changed its structure")
        results.flat(template, got, out)
        return out

    active = tuple(plan.active)
    loss = None
    if operator == "gradient":
        # (a gradient's arrays are the active leaves' gradients, in leaf order: an engine
        # that computes them itself relies on it)
        if len(results.arrays_of(template)) != sum(active):
            return None
        loss = _loss_caller(specs, f, engine)
    run = hook(slot, f, call, leaves + extras, active, operator, loss)
    if run is None:
        return None
    made = Shortcut(specs, run, template, extras)
    again = made(args)
    if again is None or not results.same(template, again, result):
        return None
    return made
