"""The bookkeeping of one call, done once before any engine runs.

A :class:`Plan` unwraps the activity of each argument, flattens every argument tree
into *unique* leaves (a tied array is one leaf), decides which leaves are active,
and checks everything that can be checked before ``f`` runs: shadows against their
values, ties against activity. Every error names the argument by key path and says
the fix.

A plan is built in one place -- its constructor -- and never changed afterwards: the
checks it runs return what they find, and the plan keeps it. Everything downstream
(the function the engine runs, the placement of results, the shadow writes) reads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from adswitch import templates, trees
from adswitch.activity import Active, Const, Duplicated
from adswitch.diagnosis import (
    KIND_NAMES,
    complex_leaf,
    nothing_active,
    opaque_object,
    tie_conflict,
)
from adswitch.errors import ActivityError
from adswitch.leaves import (
    ARRAY_TYPES,
    PYTHON_FLOAT,
    ROLES,
    SCALAR,
    SCALAR_RESULT,
    SCALAR_TYPES,
    is_differentiable,
    leaf_kind,
    roles_of,
)
from adswitch.shadows import DuplicatedArg, ShadowSlots, check_shadows

__all__ = ["ArgPlan", "Plan", "PLAIN", "CONST", "DUPLICATED", "KIND_NAMES", "unwrap"]

PLAIN, CONST, DUPLICATED = 0, 1, 2  # (``diagnosis.KIND_NAMES`` names them)


class ArgPlan:
    """One positional argument: its activity, structure, and which unique leaf each
    of its leaves is; for a ``Duplicated`` argument, where its shadow's leaves are."""

    __slots__ = ("dval", "kind", "leaf_ids", "shadow", "treedef", "val")

    def __init__(self, kind: int, val: Any, dval: Any, treedef: trees.TreeDef) -> None:
        self.kind = kind
        self.val = val
        self.dval = dval
        self.treedef = treedef  # None: the argument is a single leaf
        self.leaf_ids: Sequence[int] = ()
        self.shadow: ShadowSlots | None = None


class Plan:
    """Everything the front end knows about a call before the engine runs.

    Attributes:
        args: one :class:`ArgPlan` per positional argument.
        leaves: the unique leaves; ``active`` says which are differentiated.
        first: ``(argument, position)`` of each unique leaf's first use.
        kinds: the activity of the argument of each unique leaf's first use.
        scalar_leaves: active Python floats and numpy scalars (their gradients are given
            back as their own type).
        n_active_arrays: active leaves that are not Python floats.
        has_duplicated: some argument is ``Duplicated``.
        untied: every leaf position is its own unique leaf (no tied arrays).
        bare: when every argument is a single leaf, the unique leaf of each (the
            function is then called without rebuilding any tree), else ``None``.
        template: the template this plan came from or made (its identity stands for the
            structure in compiled engines' cache keys), or ``None``.
    """

    __slots__ = (
        "active",
        "args",
        "bare",
        "first",
        "has_duplicated",
        "kinds",
        "leaves",
        "n_active_arrays",
        "scalar_leaves",
        "template",
        "untied",
    )
    args: Sequence[ArgPlan]
    leaves: list[Any]
    active: Sequence[bool]
    first: Sequence[tuple[int, int]]
    kinds: Sequence[int]
    scalar_leaves: Sequence[int]
    n_active_arrays: int
    has_duplicated: bool
    untied: bool
    bare: Sequence[int] | None
    template: templates.Template | None

    def __init__(self, args: Sequence[Any]) -> None:
        self.template = None
        if len(args) == 1 and type(args[0]) in ARRAY_TYPES and self._one_array(args[0]):
            return  # ad.gradient(f, x), the commonest call: planned directly
        arg_plans: list[ArgPlan] = []
        flats: list[list[Any]] = []
        has_duplicated = False
        for a, arg in enumerate(args):
            arg_type = type(arg)
            if arg_type is Const:
                kind, val, dval = CONST, arg.val, None
            elif arg_type is np.ndarray or ROLES.get(arg_type, 0) & SCALAR:
                kind, val, dval = PLAIN, arg, None
            else:
                kind, val, dval = _unwrap(a, arg)
            if type(val) is np.ndarray:  # a bare array: nothing to walk
                flat, treedef = [val], None
            else:
                flat, treedef = trees.flatten(val)
            arg_plans.append(ArgPlan(kind, val, dval, treedef))
            flats.append(flat)
            has_duplicated = has_duplicated or kind == DUPLICATED
        self.args = arg_plans
        self.has_duplicated = has_duplicated
        all_leaves = [leaf for flat in flats for leaf in flat]
        key = None
        if len(all_leaves) >= templates.MIN_LEAVES and not has_duplicated:
            key = templates.key_for(tuple([(p.kind, p.treedef) for p in arg_plans]), all_leaves)
            template = None if key is None else templates.find(key)
            if template is not None:
                self._from_template(template, all_leaves)
                return
        self._leaf_by_leaf(flats)
        if not self.n_active_arrays and not any(self.active):
            self._nothing_active(args)
        if has_duplicated:
            duplicated = [
                DuplicatedArg(a, p.val, p.dval, p.treedef, p.leaf_ids)
                for a, p in enumerate(arg_plans)
                if p.kind == DUPLICATED
            ]
            slots = check_shadows(duplicated, self.leaves, self.active, self.path)
            for arg, found in zip(duplicated, slots):
                arg_plans[arg.position].shadow = found
        elif key is not None:  # every check passed: the next call may skip the loop
            self.template = templates.Template(
                [p.leaf_ids for p in arg_plans],
                self.active,
                self.first,
                self.kinds,
                self.scalar_leaves,
                self.n_active_arrays,
                self.leaves,
                self.bare,
            )
            templates.remember(key, self.template)

    def structure(self) -> Plan:
        """This plan without the call's values (no leaves, values or shadows): what a
        prepared call keeps, so that it holds none of the example call's arrays."""
        bare = Plan.__new__(Plan)
        for name in _STRUCTURE_FIELDS:
            setattr(bare, name, getattr(self, name))
        bare.leaves = []
        bare.args = tuple(ArgPlan(p.kind, None, None, p.treedef) for p in self.args)
        for new, old in zip(bare.args, self.args):
            new.leaf_ids = tuple(old.leaf_ids)
        return bare

    def for_results(self) -> Plan:
        """This plan with only what placing results needs (for a pullback, which may
        outlive its call): no argument arrays, but the scalar leaves (their types come
        back) and the ``Duplicated`` shadows (the results go there)."""
        kept = self.structure()
        kept.leaves = [leaf if isinstance(leaf, SCALAR_TYPES) else None for leaf in self.leaves]
        kept.args = tuple(
            p if p.kind == DUPLICATED else bare for p, bare in zip(self.args, kept.args)
        )
        return kept

    def rebound(self, leaves: list[Any], args: Sequence[ArgPlan]) -> Plan:
        """The plan of a call whose arguments have this plan's structure (the caller
        checked it: see ``adswitch.preparation``) with ``leaves`` as its unique leaves;
        ``Duplicated`` shadows are checked against the new values."""
        plan = Plan.__new__(Plan)
        plan.active = self.active  # (the fields of _STRUCTURE_FIELDS, spelled out: hot path)
        plan.bare = self.bare
        plan.first = self.first
        plan.has_duplicated = self.has_duplicated
        plan.kinds = self.kinds
        plan.n_active_arrays = self.n_active_arrays
        plan.scalar_leaves = self.scalar_leaves
        plan.template = self.template
        plan.untied = self.untied
        plan.leaves = leaves
        plan.args = args
        if self.has_duplicated:
            duplicated = [
                DuplicatedArg(a, p.val, p.dval, p.treedef, p.leaf_ids)
                for a, p in enumerate(args)
                if p.kind == DUPLICATED
            ]
            slots = check_shadows(duplicated, leaves, self.active, plan.path)
            for arg, found in zip(duplicated, slots):
                args[arg.position].shadow = found
        return plan

    def _one_array(self, x: Any) -> bool:
        """The plan of one plain floating array, directly; ``False`` (nothing set) for
        any other kind of array, which takes the general path and its checks."""
        roles = ROLES.get(type(x))
        if roles is None:
            roles = roles_of(type(x))
        if leaf_kind(x) != "f" or roles & (SCALAR | PYTHON_FLOAT):
            return False
        arg = ArgPlan(PLAIN, x, None, None)
        arg.leaf_ids = _FIRST_LEAF
        self.args = (arg,)
        self.leaves = [x]
        self.active = (True,)
        self.first = ((0, 0),)
        self.kinds = (PLAIN,)
        self.scalar_leaves = (0,) if roles & SCALAR_RESULT else ()
        self.n_active_arrays = 1
        self.has_duplicated = False
        self.untied = True
        self.bare = _FIRST_LEAF
        return True

    def _from_template(self, template: templates.Template, leaves: list[Any]) -> None:
        """The structure-decided fields from a template (no ties: the unique leaves are
        the leaves)."""
        for arg, ids in zip(self.args, template.leaf_ids):
            arg.leaf_ids = ids
        self.leaves = leaves
        self.active = template.active
        self.first = template.first
        self.kinds = template.kinds
        self.scalar_leaves = template.scalar_leaves
        self.n_active_arrays = template.n_active_arrays
        self.untied = True
        self.bare = template.bare
        self.template = template

    def _leaf_by_leaf(self, flats: list[list[Any]]) -> None:
        """Unique leaves, activity, ties (inline: the commonest path)."""
        leaves: list[Any] = []
        active: list[bool] = []
        first: list[tuple[int, int]] = []
        kinds: list[int] = []
        scalar_leaves: list[int] = []
        self.leaves, self.active, self.first, self.kinds = leaves, active, first, kinds
        self.scalar_leaves = scalar_leaves
        index_of: dict[int, int] = {}
        complex_seen = False
        n_active_arrays = 0
        n_positions = 0
        for a, (plan, flat) in enumerate(zip(self.args, flats)):
            kind = plan.kind
            ids: list[int] = []
            for j, leaf in enumerate(flat):
                leaf_type = type(leaf)
                roles = ROLES.get(leaf_type)
                if roles is None:
                    roles = roles_of(leaf_type)
                # Python scalars are values, not parameters: never tied, whatever their id.
                u = -1 if roles & SCALAR else index_of.get(id(leaf), -1)
                if u < 0:
                    u = len(leaves)
                    if not roles & SCALAR:
                        index_of[id(leaf)] = u
                    leaves.append(leaf)
                    kind_of_leaf = leaf_kind(leaf)
                    is_active = kind != CONST and kind_of_leaf == "f"
                    if kind_of_leaf == "o" and kind != CONST and not roles & SCALAR:
                        self._check_opaque(leaf, a, j)
                    active.append(is_active)
                    if is_active:
                        if roles & SCALAR_RESULT:
                            scalar_leaves.append(u)
                        if not roles & PYTHON_FLOAT:
                            n_active_arrays += 1
                    elif kind != CONST and kind_of_leaf == "c":
                        complex_seen = True
                    first.append((a, j))
                    kinds.append(kind)
                elif kinds[u] != kind and is_differentiable(leaf):
                    self._tie_conflict(u, a, j, kind)
                ids.append(u)
            plan.leaf_ids = ids
            n_positions += len(ids)
        self.n_active_arrays = n_active_arrays
        self.untied = len(leaves) == n_positions
        self.bare = bare_positions(self.args)
        if complex_seen:
            self._check_complex()

    def path(self, a: int, j: int) -> str:
        """The key path of position ``j`` of argument ``a``, e.g. ``args[1]['W']``."""
        return trees.leaf_path(self.args[a].treedef, f"args[{a}]", j)

    # -- checks (their messages: ``diagnosis``) ------------------------------------------
    def _tie_conflict(self, u: int, a: int, j: int, kind: int) -> None:
        fa, fj = self.first[u]
        raise tie_conflict(self.kinds[u], self.path(fa, fj), kind, self.path(a, j))

    def _check_opaque(self, leaf: Any, a: int, j: int) -> None:
        """An object the tree walker does not know is a leaf, never differentiated: if it
        holds floating arrays, that would silently drop their gradients."""
        error = opaque_object(leaf, self.path(a, j))
        if error is not None:
            raise error

    def _nothing_active(self, args: Sequence[Any]) -> None:
        raise nothing_active([(p.kind, p.val, p.treedef) for p in self.args])

    def _check_complex(self) -> None:
        for u, leaf in enumerate(self.leaves):
            if self.kinds[u] != CONST and leaf_kind(leaf) == "c":
                raise complex_leaf(leaf, self.path(*self.first[u]))


_FIRST_LEAF = (0,)
# What follows from the arguments' structure alone (shared by a prepared call's plans).
_STRUCTURE_FIELDS = (
    "active",
    "bare",
    "first",
    "has_duplicated",
    "kinds",
    "n_active_arrays",
    "scalar_leaves",
    "template",
    "untied",
)


def bare_positions(args: Sequence[ArgPlan]) -> Sequence[int] | None:
    """The unique leaf of each argument when every argument is a single leaf."""
    if all(p.treedef is None for p in args):
        return tuple([p.leaf_ids[0] for p in args])
    return None


def unwrap(a: int, arg: Any) -> tuple[int, Any, Any]:
    """``(kind, value, shadow)`` of argument ``a`` (its activity wrapper taken off)."""
    arg_type = type(arg)
    if arg_type is Const:
        return CONST, arg.val, None
    if arg_type is np.ndarray or ROLES.get(arg_type, 0) & SCALAR:
        return PLAIN, arg, None
    return _unwrap(a, arg)


def _unwrap(a: int, arg: Any) -> tuple[int, Any, Any]:
    if isinstance(arg, Duplicated):
        return DUPLICATED, arg.val, arg.dval
    if isinstance(arg, Const):
        return CONST, arg.val, None
    if isinstance(arg, Active):
        raise ActivityError(
            f"args[{a}] is Active(...), which adswitch does not use: pass the value plain "
            "to get its gradient returned, or Duplicated(x) to have it added into a shadow."
        )
    return PLAIN, arg, None
