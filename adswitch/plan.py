"""The bookkeeping of one call, done once before any engine runs.

A :class:`Plan` unwraps the activity of each argument, flattens every argument tree
into *unique* leaves (a tied array is one leaf), decides which leaves are active,
and checks everything that can be checked before ``f`` runs: shadows against their
values, ties against activity, overlapping memory. Every error names the argument
by key path and says the fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from adswitch import templates, trees
from adswitch.activity import Active, Const, Duplicated
from adswitch.errors import ActivityError, AliasingError, UnsupportedError
from adswitch.leaves import (
    ARRAY_TYPES,
    PYTHON_FLOAT,
    ROLES,
    SCALAR,
    SCALAR_RESULT,
    describe,
    is_differentiable,
    is_view,
    leaf_kind,
    memory_root,
    roles_of,
)
from adswitch.shadow import check_shadows, no_float_in_duplicated
from adswitch.spec import Backend

__all__ = ["Plan", "PLAIN", "CONST", "DUPLICATED"]

PLAIN, CONST, DUPLICATED = 0, 1, 2
_KIND_NAMES = ("plain", "Const", "Duplicated")

_NONE: dict[int, tuple[Any, Any, bool]] = {}  # shared by non-Duplicated arguments; never written


class ArgPlan:
    """One positional argument: its activity, structure, and which unique leaf each
    of its leaves is."""

    __slots__ = ("dval", "float_slots", "kind", "leaf_ids", "shadow_leaves", "treedef", "val")

    def __init__(self, kind: int, val: Any, dval: Any, treedef: trees.TreeDef) -> None:
        self.kind = kind
        self.val = val
        self.dval = dval
        self.treedef = treedef
        self.leaf_ids: list[int] = []
        self.shadow_leaves: Sequence[Any] = ()  # Duplicated only, set by the shadow check
        # Duplicated only: leaf position -> (container, key, is_attribute) of a Python float
        self.float_slots: dict[int, tuple[Any, Any, bool]] = {} if kind == DUPLICATED else _NONE


class Plan:
    """Everything the front end knows about a call before the engine runs."""

    __slots__ = (
        "active",
        "args",
        "first",
        "has_duplicated",
        "kinds",
        "leaves",
        "n_active_arrays",
        "scalar_leaves",
        "template",
    )
    leaves: list[Any]  # the unique leaves
    active: Sequence[bool]
    first: Sequence[tuple[int, int]]  # (argument, position) of each unique leaf's first use
    kinds: Sequence[int]  # activity of the argument of each unique leaf's first use
    scalar_leaves: Sequence[int]  # active Python floats and numpy scalars
    n_active_arrays: int  # active leaves that are not Python floats

    def __init__(self, args: Sequence[Any]) -> None:
        self.args: list[ArgPlan] = []
        self.has_duplicated = False
        # the template this plan came from or made: its identity stands for the structure
        self.template: templates.Template | None = None
        if (
            len(args) == 1
            and type(args[0]) in ARRAY_TYPES  # numpy's and the engines' array types
            and self._one_array(args[0])  # ad.gradient(f, x), the commonest call
        ):
            return
        flats: list[list[Any]] = []
        n_leaves = 0
        for a, arg in enumerate(args):
            arg_type = type(arg)
            if arg_type is Const:
                kind, val, dval = CONST, arg.val, None
            elif arg_type is np.ndarray or ROLES.get(arg_type, 0) & SCALAR:
                kind, val, dval = PLAIN, arg, None
            else:
                kind, val, dval = self._unwrap(a, arg)
            if type(val) is np.ndarray:  # a bare array: nothing to walk
                flat, treedef = [val], None
            else:
                flat, treedef = trees.flatten(val)
            self.args.append(ArgPlan(kind, val, dval, treedef))
            flats.append(flat)
            n_leaves += len(flat)
            if kind == DUPLICATED:
                self.has_duplicated = True
        key = None
        if n_leaves >= templates.MIN_LEAVES and not self.has_duplicated:
            all_leaves = [leaf for flat in flats for leaf in flat]
            key = templates.key_for(tuple([(p.kind, p.treedef) for p in self.args]), all_leaves)
            template = None if key is None else templates.find(key)
            if template is not None:
                templates.apply(template, self, all_leaves)
                return
        # Leaf by leaf: unique leaves, activity, ties (inline: the commonest path).
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
        for a, (plan, flat) in enumerate(zip(self.args, flats)):
            kind = plan.kind
            ids = plan.leaf_ids
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
        self.n_active_arrays = n_active_arrays
        if complex_seen:
            self._check_complex()
        if not n_active_arrays and not any(active):
            self._nothing_active(args)
        if self.has_duplicated:
            check_shadows(self, [(a, p) for a, p in enumerate(self.args) if p.kind == DUPLICATED])
        elif key is not None:  # every check passed: the next call may skip the loop
            self.template = templates.Template(
                [p.leaf_ids for p in self.args],
                active,
                first,
                kinds,
                scalar_leaves,
                n_active_arrays,
                leaves,
            )
            templates.remember(key, self.template)

    def _one_array(self, x: Any) -> bool:
        """The plan of one plain floating array, directly; ``False`` (nothing set) for
        any other kind of array, which takes the general path and its checks."""
        roles = ROLES.get(type(x))
        if roles is None:
            roles = roles_of(type(x))
        if leaf_kind(x) != "f" or roles & (SCALAR | PYTHON_FLOAT):
            return False
        plan = ArgPlan(PLAIN, x, None, None)
        plan.leaf_ids = [0]
        self.args = [plan]
        self.leaves = [x]
        self.active = (True,)
        self.first = ((0, 0),)
        self.kinds = (PLAIN,)
        self.scalar_leaves = (0,) if roles & SCALAR_RESULT else ()
        self.n_active_arrays = 1
        return True

    # -- unwrapping ---------------------------------------------------------------------
    @staticmethod
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

    def path(self, a: int, j: int) -> str:
        return trees.leaf_path(self.args[a].treedef, f"args[{a}]", j)

    # -- checks ---------------------------------------------------------------------------
    def _tie_conflict(self, u: int, a: int, j: int, kind: int) -> None:
        fa, fj = self.first[u]
        raise ActivityError(
            f"the same array is passed as {_KIND_NAMES[self.kinds[u]]} at {self.path(fa, fj)} "
            f"and as {_KIND_NAMES[kind]} at {self.path(a, j)}, so its gradient has no single "
            "destination. Pass it once, or pass a copy (x.copy()) where it must differ."
        )

    def _nothing_active(self, args: Sequence[Any]) -> None:
        if not args:
            raise ActivityError("gradient needs at least one argument to differentiate.")
        if all(p.kind == CONST for p in self.args):
            raise ActivityError(
                "nothing to differentiate: every argument is Const. Pass the arguments you "
                "want gradients for plain (or as Duplicated)."
            )
        for a, plan in enumerate(self.args):
            if plan.kind == DUPLICATED:
                no_float_in_duplicated(a, plan.val)
        raise ActivityError(
            "nothing to differentiate: no argument holds a floating array or a Python float "
            f"(got {', '.join(describe(p.val) for p in self.args)}). Convert integer data with "
            "x.astype(float) or np.asarray(x, dtype=float)."
        )

    def _check_complex(self) -> None:
        for u, leaf in enumerate(self.leaves):
            if self.kinds[u] != CONST and leaf_kind(leaf) == "c":
                raise UnsupportedError(
                    f"{self.path(*self.first[u])} is complex ({describe(leaf)}); adswitch "
                    "differentiates real functions of real inputs. Split it into real and "
                    "imaginary parts, or pass it as Const."
                )

    def check_overlap(self, engine: Backend) -> None:
        """Distinct active arrays must not share memory (a view and its base)."""
        if self.n_active_arrays < 2:
            return
        active = self.active
        for u, leaf in enumerate(self.leaves):
            if not active[u] or isinstance(leaf, float):
                continue
            if is_view(leaf):
                break  # a view: group by memory below
        else:
            return  # every active array owns its memory, and they are distinct objects
        groups: dict[int, list[int]] = {}
        for u, leaf in enumerate(self.leaves):
            if self.active[u] and not isinstance(leaf, float):
                groups.setdefault(id(memory_root(leaf)), []).append(u)
        for members in groups.values():
            if len(members) == 1:
                continue
            for i, u in enumerate(members):
                for v in members[i + 1 :]:
                    a, b = self.leaves[u], self.leaves[v]
                    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
                        overlap = bool(np.shares_memory(a, b))
                    else:
                        overlap = engine.may_alias(a, b)
                    if overlap:
                        self._overlap_error(u, v)

    def _overlap_error(self, u: int, v: int) -> None:
        raise AliasingError(
            f"{self.path(*self.first[u])} and {self.path(*self.first[v])} are distinct arrays "
            "that share memory (a view and its base), so a gradient for each is ambiguous. "
            "Pass the base array once and take the view inside f, or pass a copy (x.copy())."
        )
