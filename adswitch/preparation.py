"""``prepare``: check a call's structure once, then call it again and again cheaply.

A prepared call keeps what the arguments' structure decides -- activity wrappers, trees,
which leaves are tied, which are differentiated, the engine -- and a signature of each
leaf (type, shape, dtype, device), but none of the example call's arrays. Each call
flattens the new arguments, compares them with that signature (every difference is
listed, by key path, in one ``PreparationError``), and runs the operator on a plan rebuilt
from the prepared structure: the planning, the engine selection and the capability
checks are not done again. Values may change freely; ``Duplicated`` shadows and
overlapping memory, which depend on the objects passed, are checked on every call.

Dicts are matched by key: a dict with the prepared keys in another order (``jax.tree_util``
and optax give dicts back with sorted keys) is the same structure, and its gradient comes
back keyed in the order given. ``f`` sees the arguments as given, so such a call gets an
engine slot of its own (a recording or compiled program of ``f`` on one key order would
not be the computation of ``f`` on another).

A prepared call holds no per-call state, so several threads may call it at once.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from adswitch import selection, templates, trees
from adswitch.accepts import check_flag
from adswitch.activity import Active, Const, Duplicated
from adswitch.api import WithGradient, gradient, withgradient
from adswitch.call import Started, run_gradient, start
from adswitch.compilers import outside_compilers
from adswitch.errors import PreparationError, UsageError
from adswitch.forward import derivative, derivative_primals, jvp, run_jvp
from adswitch.jacobians import MODES, jacobian, run_jacobian
from adswitch.leaves import ARRAY_TYPES, SCALAR_TYPES, describe
from adswitch.overlap import check_overlap
from adswitch.plan import CONST, KIND_NAMES, PLAIN, ArgPlan, Plan, unwrap
from adswitch.reverse import run_vjp, vjp
from adswitch.second_order import hessian, hvp, run_hessian, run_hvp, run_sparse_hessian
from adswitch.shortcut import Shortcut, make_shortcut
from adswitch.signatures import describe_signature, signature, stands_in
from adswitch.spec import Backend

__all__ = ["Prepared", "prepare"]

_new_tuple = tuple.__new__
# Full calls of a prepared gradient after which a shortcut is sought (an engine may need a
# few: jax remembers a function's walk from its second call on).
_SHORTCUT_TRIES = 8

# operator -> (its name, the keywords it takes with their defaults, whether its
# arguments come as (primals, tangents), whether Duplicated is allowed)
_OPERATORS: dict[Callable[..., Any], tuple[str, dict[str, Any], bool, bool]] = {
    gradient: ("gradient", {"zero": True}, False, True),
    withgradient: ("withgradient", {"zero": True}, False, True),
    vjp: ("vjp", {"has_aux": False, "zero": True}, False, True),
    jvp: ("jvp", {"has_aux": False}, True, False),
    jacobian: (
        "jacobian",
        {"mode": "auto", "has_aux": False, "sparsity": None, "check": False},
        False,
        False,
    ),
    hessian: ("hessian", {"sparsity": None, "check": False}, False, False),
    hvp: ("hvp", {"zero": True}, True, True),
    derivative: ("derivative", {}, False, False),
}


def prepare(
    op: Callable[..., Any],
    f: Callable[..., Any],
    *args: Any,
    backend: str | Backend | None = None,
    **op_kwargs: Any,
) -> Prepared:
    """Prepare ``op(f, *args, **op_kwargs)`` for repeated calls on arguments of the same
    structure.

    Args:
        op: one of ``ad.gradient``, ``ad.withgradient``, ``ad.vjp``, ``ad.jvp``,
            ``ad.jacobian``, ``ad.hessian``, ``ad.hvp``, ``ad.derivative``.
        f: the function.
        *args: example arguments, exactly as ``op`` takes them (for ``jvp``/``hvp``:
            ``primals, tangents``).
        backend: the engine. Given, it pins the prepared call to that engine: it runs
            there whatever ``ad.use`` says when it is called. Left ``None``, the engine is
            chosen now by the usual rules (``ad.use``, ``ADSWITCH_BACKEND``, the arrays'
            types, the default) and kept; a call inside an ``ad.use`` that selects another
            engine is a ``PreparationError`` (prepare again there, or pin the engine).
        **op_kwargs: ``op``'s keywords (``zero=``, ``has_aux=``, ``mode=``).

    Returns:
        A :class:`Prepared` ``prep``: ``prep(*args)`` returns what ``op(f, *args,
        **op_kwargs)`` returns, for arguments whose structure, activity wrappers, leaf
        types, shapes, dtypes, devices and ties are the example's (else
        ``PreparationError``).

    Example:
        >>> import adswitch as ad, numpy as np
        >>> prep = ad.prepare(ad.gradient, lambda x: ad.array_namespace(x).sum(x * x),
        ...                   np.ones(3))
        >>> prep(np.array([1.0, 2.0, 3.0]))[0].tolist()
        [2.0, 4.0, 6.0]
    """
    spec = _OPERATORS.get(op)
    if spec is None:
        names = ", ".join(f"ad.{name}" for name, *_ in _OPERATORS.values())
        raise UsageError(f"ad.prepare's first argument is the operator ({names}); got {op!r}.")
    name, defaults, split, duplicated_ok = spec
    unknown = sorted(set(op_kwargs) - set(defaults))
    if unknown:
        allowed = ", ".join(defaults) or "none"
        raise UsageError(
            f"ad.{name} takes no keyword {', '.join(unknown)} (its keywords: {allowed})."
        )
    kwargs = {**defaults, **op_kwargs}
    for flag in ("zero", "has_aux"):
        if flag in kwargs:
            check_flag(flag, kwargs[flag])
    if name == "jacobian" and kwargs["mode"] not in MODES:
        raise UsageError(
            f"mode={kwargs['mode']!r}; ad.jacobian's mode is one of {', '.join(MODES)}."
        )
    # Planned and checked now; f does not run (nothing of the caller's is touched) until
    # the first call.
    primals = _primals(name, args, split)
    started = start(f, primals, backend, name, duplicated_ok=duplicated_ok)
    if name == "jacobian" and kwargs["sparsity"] is not None:  # detected and colored once
        from adswitch.sparse.compressed import refuse_traced, setup

        refuse_traced(started)
        kwargs["sparsity"] = setup(
            f, primals, kwargs["sparsity"], kwargs["mode"], started.engine, kwargs["has_aux"]
        )
    if name == "hessian" and kwargs["sparsity"] is not None:  # detected and colored once
        from adswitch.sparse.hessian import setup_hessian

        check_flag("check", kwargs["check"])
        kwargs["sparsity"] = setup_hessian(f, primals, kwargs["sparsity"], started)
    return Prepared(name, f, kwargs, split, started, backend is not None)


def _primals(name: str, args: Sequence[Any], split: bool) -> tuple[Any, ...]:
    if name == "derivative":
        if not args:
            raise UsageError("ad.derivative needs x: prepare(ad.derivative, f, x, *args).")
        return derivative_primals(args[0], args[1:])[0]
    if split:
        if len(args) != 2:
            raise UsageError(
                f"ad.{name} takes (primals, tangents): prepare(ad.{name}, f, primals, tangents)."
            )
        return tuple(args[0])
    return tuple(args)


class Prepared:
    """A prepared operator call (see :func:`prepare`)."""

    __slots__ = (
        "_depth",
        "_engine",
        "_f",
        "_kwargs",
        "_memo",
        "_name",
        "_orders",
        "_pinned",
        "_plan",
        "_shortcut",
        "_shortcut_tries",
        "_signature",
        "_simple",
        "_slot",
        "_split",
    )

    def __init__(
        self,
        name: str,
        f: Callable[..., Any],
        kwargs: dict[str, Any],
        split: bool,
        started: Started,
        pinned: bool = False,
    ) -> None:
        self._name = name
        self._pinned = pinned  # backend= was given: ad.use does not apply
        self._f = f
        self._kwargs = kwargs
        self._split = split
        self._engine = started.engine
        self._depth = started.depth
        self._plan = started.plan.structure()
        self._signature = [signature(leaf) for leaf in started.plan.leaves]
        # What the engine keeps for calls of this structure: its ``prepare_slot`` objects per
        # operator step, made on their first call (``call.Started.info``), or the dict it
        # gets itself (without the hook).
        self._slot: dict[Hashable, Any] = {}
        # The CallInfos (and what else follows from the structure) made once, unless a
        # compiled engine's cache key holds leaf values, which may change between calls.
        static = templates.static_positions(started.plan.active, started.plan.leaves)
        self._memo: dict[Hashable, Any] | None = None if static else {}
        # (slot, memo) per key order of the dicts, for calls whose dicts come in another
        # order than the example's: f runs on them as given (see the module doc).
        self._orders: dict[Hashable, tuple[dict[Hashable, Any], dict[Hashable, Any] | None]] = {}
        plan = self._plan
        # No ties and no Duplicated (the commonest prepared calls): each call is checked
        # by comparing each argument's wrapper and tree with the prepared one and each leaf's
        # signature with its own, and runs on the prepared arguments' plans.
        simple = plan.untied and not plan.has_duplicated
        self._simple = tuple([(p.kind, p.treedef) for p in plan.args]) if simple else None
        self._shortcut: Shortcut | None = None
        # (operators whose arguments are the primals alone and whose results are arrays)
        # (sparse ones too, but not ``check=True``, which needs the dense values)
        shortcuts = name in ("gradient", "withgradient") or (
            name in ("jacobian", "hessian") and not kwargs.get("check")
        )
        self._shortcut_tries = 0 if shortcuts and simple and not self._depth else None

    @outside_compilers
    def __call__(self, *args: Any) -> Any:
        shortcut = self._shortcut
        if shortcut is not None and not selection.current_calls.get():
            if not self._pinned:
                self._check_use()
            fast = shortcut(args)
            if fast is not None:
                return fast
            self._shortcut = None  # something changed: the full path, then maybe again
        result = self._full(args)
        tries = self._shortcut_tries
        if tries is not None and tries < _SHORTCUT_TRIES and not selection.current_calls.get():
            self._shortcut_tries = tries + 1
            self._shortcut = self._make_shortcut(args, result)
        return result

    def _make_shortcut(self, args: tuple[Any, ...], result: Any) -> Shortcut | None:
        """A shortcut for calls like this one (``adswitch.shortcut``), or ``None``."""
        try:
            plan, reordered = self._rebind(args)
        except PreparationError:
            return None
        if reordered is not False:  # traced stand-ins, or dicts in another key order
            return None
        slot = self._slot
        if getattr(self._engine, "prepare_slot", None) is not None:
            slot = _plain(slot)  # (the hook's dict subclasses as plain dicts: spec.Backend)
        return make_shortcut(
            self._engine,
            slot,
            self._f,
            plan,
            args,
            result,
            self._full,
            self._name,
        )

    def _full(self, args: Sequence[Any]) -> Any:
        """The call's full path: rebound to the prepared plan, run, results placed."""
        name, kw = self._name, self._kwargs
        tangents: Any = None
        if name == "derivative":
            if not args:
                raise UsageError("a prepared ad.derivative takes (x, *args).")
            primals, tangents = derivative_primals(args[0], args[1:])
        elif self._split:
            if len(args) != 2:
                raise UsageError(f"a prepared ad.{name} takes (primals, tangents).")
            primals, tangents = tuple(args[0]), args[1]
        else:
            primals = tuple(args)
        plan, reordered = self._rebind(primals)
        if reordered is None:  # traced stand-ins: the engine's transform stages the call
            slot, memo = None, None
        else:
            slot, memo = self._order_slot(plan) if reordered else (self._slot, self._memo)
        # (``tuple.__new__``: ``Started(...)`` without the named tuple's Python ``__new__``)
        started = _new_tuple(Started, (plan, self._engine, self._depth, slot, memo))
        f = self._f
        if name == "gradient":
            return run_gradient(started, f, kw["zero"], "gradient")[1]
        if name == "withgradient":
            return WithGradient(*run_gradient(started, f, kw["zero"], "withgradient"))
        if name == "vjp":
            return run_vjp(started, f, kw["has_aux"], kw["zero"])
        if name == "jvp":
            return run_jvp(started, f, tangents, kw["has_aux"])
        if name == "derivative":
            return run_jvp(started, f, tangents, False, "derivative")[1]
        if name == "jacobian":
            if kw["sparsity"] is not None:
                from adswitch.sparse.compressed import sparse_jacobian

                dense = run_jacobian if kw["check"] else None
                return sparse_jacobian(started, f, kw["has_aux"], kw["sparsity"], dense)
            return run_jacobian(started, f, kw["mode"], kw["has_aux"])
        if name == "hessian":
            if kw["sparsity"] is not None:
                return run_sparse_hessian(started, f, kw["sparsity"], kw["check"])
            return run_hessian(started, f)
        return run_hvp(started, f, tangents, kw["zero"])

    @property
    def sparsity(self) -> Any:
        """A sparse ``ad.jacobian``'s or ``ad.hessian``'s pattern (``scipy.sparse.csr_array``;
        a Hessian's symmetrized), else ``None``."""
        s = self._kwargs.get("sparsity")
        return None if s is None else s.pattern

    @property
    def colors(self) -> Any:
        """A sparse ``ad.jacobian``'s coloring (per column, or per row in reverse mode), or
        ``ad.hessian``'s (per variable: a star or a column coloring), else ``None``."""
        s = self._kwargs.get("sparsity")
        return None if s is None else s.colors

    def _rebind(self, args: Sequence[Any]) -> tuple[Plan, bool | None]:
        """The plan of this call, after checking it against the prepared structure, and
        whether some dict of it has the prepared keys in another order (``None``: some
        leaf is a traced value of the engine's own transform, see ``stands_in``)."""
        prepared = self._plan
        calls = selection.current_calls.get()
        if not self._pinned and not calls:
            self._check_use()
        simple = self._simple
        if simple is not None and not calls and not self._depth and len(args) == len(simple):
            leaves: list[Any] = []
            flatten = trees.flatten
            for arg, (kind, treedef) in zip(args, simple):
                cls = type(arg)
                if cls is Const:
                    if kind != CONST:
                        break
                    arg = arg.val
                elif kind != PLAIN or cls is Duplicated or cls is Active:
                    break
                if treedef is None:
                    leaves.append(arg)  # (not a leaf: its signature below tells)
                elif flatten(arg, leaves)[1] != treedef:
                    break
            else:
                # (untied: the unique leaves are the leaves in order)
                if list(map(signature, leaves)) != self._signature or (
                    len(leaves) > 1 and not _distinct(leaves)
                ):
                    return self._rebind_checked(args)
                plan = prepared.rebound(leaves, prepared.args)
                if plan.n_active_arrays > 1:
                    check_overlap(plan, self._engine)
                return plan, False
        return self._rebind_checked(args)

    def _check_use(self) -> None:
        """The innermost ``ad.use`` selects the engine of a call: one that selects another
        engine than the prepared call's is refused, not silently ignored."""
        used = selection.innermost_use()
        if used is None or used is self._engine:
            return
        name = used if isinstance(used, str) else used.name
        if name == self._engine.name:
            return
        here = self._engine.name
        raise PreparationError(
            f"this ad.{self._name} was prepared on engine {here!r}, but is called inside "
            f"ad.use({name!r}), which selects engine {name!r}. A prepared call keeps the "
            f"engine it was prepared on: prepare it again inside ad.use({name!r}) to run "
            f"on {name!r}, or pass backend={here!r} to ad.prepare to pin it to {here!r} "
            "whatever ad.use says."
        )

    def _order_slot(self, plan: Plan) -> tuple[dict[Hashable, Any], dict[Hashable, Any] | None]:
        """The engine slot and memo of calls with this plan's dict key orders."""
        key = tuple([p.treedef for p in plan.args])
        try:
            found = self._orders.get(key)
        except TypeError:  # an unhashable tree node's auxiliary data: nothing kept
            return {}, None
        if found is None:
            if len(self._orders) >= _MAX_ORDERS:
                self._orders.pop(next(iter(self._orders)))  # the oldest first
            found = self._orders[key] = ({}, None if self._memo is None else {})
        return found

    def _rebind_checked(self, args: Sequence[Any]) -> tuple[Plan, bool | None]:
        """:meth:`_rebind`, every difference from the prepared structure listed."""
        prepared = self._plan
        calls = selection.current_calls.get()
        if len(calls) != self._depth or (calls and calls[-1] is not self._engine):
            prepared_at = (
                f"inside {self._depth} enclosing call(s)" if self._depth else "at top level"
            )
            called_at = (
                f"inside a differentiation on {calls[-1].name!r}" if calls else "at top level"
            )
            raise PreparationError(
                f"this ad.{self._name} was prepared {prepared_at} on engine "
                f"{self._engine.name!r}, but is called {called_at}. Prepare it where you call it."
            )
        problems: list[str] = []
        if len(args) != len(prepared.args):
            raise PreparationError(
                f"this ad.{self._name} was prepared for {len(prepared.args)} argument(s), got "
                f"{len(args)}. Prepare it again for the new call."
            )
        leaves: list[Any] = [None] * len(self._signature)
        seen = [False] * len(self._signature)
        reordered = False
        traced = False  # some leaf is a tracer of the engine's transform (jax.jit...)
        new_args: list[ArgPlan] = []
        for a, (arg, shape) in enumerate(zip(args, prepared.args)):
            kind, val, dval = unwrap(a, arg)
            if kind != shape.kind:
                problems.append(
                    f"args[{a}] was prepared {KIND_NAMES[shape.kind]}, is {KIND_NAMES[kind]}"
                )
                continue
            if type(val) in ARRAY_TYPES and shape.treedef is None:
                flat, treedef = [val], None
            else:
                flat, treedef = trees.flatten(val)
            leaf_ids: Sequence[int] = shape.leaf_ids
            positions: Sequence[int] = range(len(flat))  # the prepared position of each leaf
            if treedef != shape.treedef:
                order = trees.reorder(shape.treedef, treedef)
                if order is None:
                    where = trees.describe_mismatch(
                        shape.treedef, treedef, f"args[{a}]", ("was prepared", "is given")
                    )
                    problems.append(f"args[{a}] has another structure ({where})")
                    continue
                # The same keys in another order: leaves matched by key, and the argument
                # kept as given (f sees it, and its gradient comes back, in its order).
                positions = order
                leaf_ids = tuple([shape.leaf_ids[i] for i in order])
                reordered = True
            for j, (u, leaf) in enumerate(zip(leaf_ids, flat)):
                if seen[u]:
                    if leaf is not leaves[u] and not isinstance(leaf, SCALAR_TYPES):
                        problems.append(
                            f"{prepared.path(a, positions[j])} was prepared as the same array "
                            f"as {prepared.path(*prepared.first[u])} (tied), now it is another one"
                        )
                    continue
                leaves[u] = leaf
                seen[u] = True
                if signature(leaf) != self._signature[u]:
                    if stands_in(leaf, self._signature[u], self._engine):
                        traced = True
                        continue
                    was = describe_signature(self._signature[u])
                    now = describe(leaf)
                    problems.append(
                        f"{prepared.path(a, positions[j])} was prepared as {was}, is {now}"
                    )
            arg_plan = ArgPlan(kind, val, dval, treedef)
            arg_plan.leaf_ids = leaf_ids
            new_args.append(arg_plan)
        if not problems:
            problems = self._new_ties(leaves, prepared)
        if problems:
            listed = "\n  - ".join(problems)
            raise PreparationError(
                f"this call differs from the prepared ad.{self._name}:\n  - {listed}\n"
                "Prepare again (ad.prepare) for arguments of the new structure."
            )
        plan = prepared.rebound(leaves, new_args)
        if reordered:
            _follow_given_order(plan)
        check_overlap(plan, self._engine)
        return plan, None if traced else reordered

    def _new_ties(self, leaves: list[Any], prepared: Plan) -> list[str]:
        """Distinct prepared leaves that are now one object."""
        if _distinct(leaves):
            return []
        arrays = [u for u, leaf in enumerate(leaves) if not isinstance(leaf, SCALAR_TYPES)]
        first: dict[int, int] = {}
        problems = []
        for u in arrays:
            v = first.setdefault(id(leaves[u]), u)
            if v != u:
                problems.append(
                    f"{prepared.path(*prepared.first[u])} is now the same array as "
                    f"{prepared.path(*prepared.first[v])} (a tie the prepared call did not have)"
                )
        return problems

    def __repr__(self) -> str:
        f = getattr(self._f, "__qualname__", self._f)
        return f"<adswitch prepared {self._name} of {f!r} on {self._engine.name!r}>"


def _follow_given_order(plan: Plan) -> None:
    """A plan whose dicts come in another key order than the prepared ones: each unique
    leaf's first place is where it first occurs in the given order (a tied array's total
    gradient sits there, as an unprepared call on these arguments puts it), and no
    template (its identity stands for the prepared order in compiled engines' keys)."""
    first: dict[int, tuple[int, int]] = {}
    for a, p in enumerate(plan.args):
        for j, u in enumerate(p.leaf_ids):
            first.setdefault(u, (a, j))
    plan.first = tuple([first[u] for u in range(len(plan.leaves))])
    plan.template = None


_MAX_ORDERS = 8  # key orders kept per prepared call (each may hold an engine's program)


def _plain(slot: dict[Hashable, Any]) -> dict[Hashable, Any]:
    """``slot`` with every dict in it (dict subclasses too, nested ones) a plain dict."""
    # (``dict(slot)`` first: one copy under the GIL, while other threads may add entries)
    return {k: _plain(v) if isinstance(v, dict) else v for k, v in dict(slot).items()}


def _distinct(leaves: list[Any]) -> bool:
    """No two array leaves are one object (Python scalars may repeat: they are values)."""
    arrays = [leaf for leaf in leaves if not isinstance(leaf, SCALAR_TYPES)]
    return len({id(leaf) for leaf in arrays}) == len(arrays)
