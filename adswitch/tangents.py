"""The user's tangents (for ``jvp``, ``hvp``) and cotangents (for a ``vjp``'s pullback),
checked against what they go with and turned into one value per leaf.

A tangent tree mirrors its primal: an array shaped like each floating leaf, ``None``
elsewhere and for a ``Const`` argument. A tied array has one tangent -- the one at its
first position; later positions may repeat it (or hold ``None``), never differ from it.
A cotangent tree mirrors the differentiated output the same way. Every error names the
place by key path and says the fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from adswitch import trees
from adswitch.bases import numpy_dtype, shape_of
from adswitch.errors import ActivityError
from adswitch.leaves import describe, leaf_kind
from adswitch.outputs import Outputs
from adswitch.plan import CONST, Plan

__all__ = ["cotangents_per_output", "stand_in", "tangents_per_leaf"]


def tangents_per_leaf(plan: Plan, tangents: Any, name: str = "tangents") -> list[Any]:
    """One tangent per unique leaf of ``plan`` (``None`` where inactive).

    Args:
        plan: the primals' plan.
        tangents: a tuple (or list) with one tree per primal.
        name: how the caller calls them, for messages (``"tangents"``).
    """
    if not isinstance(tangents, (tuple, list)) or len(tangents) != len(plan.args):
        raise ActivityError(
            f"{name} must be a tuple with one tree per primal ({len(plan.args)}), like "
            f"primals; got {describe(tangents)}"
            + (f" of length {len(tangents)}" if isinstance(tangents, (tuple, list)) else "")
            + ". Pass None for a Const primal."
        )
    per_leaf: list[Any] = [None] * len(plan.leaves)
    seen: list[bool] = [False] * len(plan.leaves)
    for a, (arg, tree) in enumerate(zip(plan.args, tangents)):
        root = f"{name}[{a}]"
        if arg.kind == CONST:
            if tree is not None:
                raise ActivityError(
                    f"{root} is given, but primal {a} is Const, which is not differentiated. "
                    "Pass None there, or pass the primal plain to push a tangent through it."
                )
            continue
        if tree is None and _all_later_ties(plan, a, seen):
            continue  # nothing of it to push: tied to earlier places, or not floating
        if tree is None:
            raise ActivityError(
                f"{root} is None, but primal {a} is differentiated. Pass a tangent tree "
                "shaped like it (zeros where you want none), or mark the primal ad.Const."
            )
        leaves, treedef = trees.flatten(tree)
        if treedef != arg.treedef:
            matched = _by_key(arg.treedef, treedef, leaves)
            if matched is None:
                where = trees.describe_mismatch(
                    arg.treedef, treedef, root, ("in the primal", "in the tangent")
                )
                raise ActivityError(
                    f"{root} does not have primal {a}'s structure ({where}). Build it like "
                    "the primal, e.g. with ad.make_zero(primal) and then fill it."
                )
            leaves, treedef = matched, arg.treedef  # (in the primal's order now)
        paths: list[str] | None = None  # (built only for a message: O(leaves) each time)
        for j, (u, t) in enumerate(zip(arg.leaf_ids, leaves)):
            value = plan.leaves[u]
            if not seen[u] and plan.active[u]:
                per_leaf[u] = _same_kind(t, value)
                if per_leaf[u] is None:
                    paths = paths or trees.leaf_paths(treedef, root)
                    per_leaf[u] = _conform(t, value, paths[j], "primal")
                seen[u] = True
                continue
            paths = paths or trees.leaf_paths(treedef, root)
            path = paths[j]
            if not plan.active[u]:
                if t is not None:
                    raise ActivityError(
                        f"{path} is {describe(t)}, but the primal there is {describe(value)}, "
                        "which is not differentiated. Pass None there."
                    )
                continue
            fa, fj = plan.first[u]
            first = trees.leaf_path(plan.args[fa].treedef, f"{name}[{fa}]", fj)
            _check_tie(per_leaf[u], t, path, first)
    return per_leaf


def _by_key(expected: trees.TreeDef, given: trees.TreeDef, leaves: list[Any]) -> list[Any] | None:
    """``leaves`` of a tree ``given`` in the order of ``expected``, when the two differ only
    in the order of some dicts' keys (matched by key); else ``None``."""
    order = trees.reorder(expected, given)
    if order is None:
        return None
    out: list[Any] = [None] * len(order)
    for leaf, position in zip(leaves, order):
        out[position] = leaf
    return out


def _all_later_ties(plan: Plan, a: int, seen: list[bool]) -> bool:
    """No leaf of argument ``a`` takes a tangent of its own: each is a later place of a tie
    (its tangent was given at the first place) or not differentiated (an int)."""
    return all(seen[u] or not plan.active[u] for u in plan.args[a].leaf_ids)


def cotangents_per_output(layout: Outputs, y_leaves: Sequence[Any], cotangent: Any) -> list[Any]:
    """One cotangent per differentiated output leaf, from a tree shaped like ``y``."""
    leaves, treedef = trees.flatten(cotangent)
    if treedef != layout.y_def:
        matched = _by_key(layout.y_def, treedef, leaves)
        if matched is None:
            where = trees.describe_mismatch(
                layout.y_def, treedef, "cotangent", ("in the output", "in the cotangent")
            )
            raise ActivityError(
                f"the cotangent does not have the output's structure ({where}). Pass a tree "
                "shaped like the differentiated output (None where a leaf is not floating)."
            )
        leaves, treedef = matched, layout.y_def
    diff = set(layout.diff_positions)
    out: list[Any] = []
    for k, (c, y) in enumerate(zip(leaves, y_leaves)):
        if k in diff:
            same = _same_kind(c, y)
            if same is not None:
                out.append(same)
                continue
        path = trees.leaf_path(treedef, "cotangent", k)
        if k not in diff:
            if c is not None:
                raise ActivityError(
                    f"{path} is {describe(c)}, but the output there is {describe(y)}, which is "
                    "not differentiated. Pass None there."
                )
            continue
        out.append(_conform(c, y, path, "output"))
    return out


def stand_in(value: Any) -> Any:
    """Something with ``value``'s shape and dtype that holds no data (one element,
    broadcast), for checking cotangents after the value itself may be gone; non-arrays
    as they are."""
    if isinstance(value, (float, int, str, bytes, complex, type(None))) or not hasattr(
        value, "dtype"
    ):
        return value
    return np.broadcast_to(np.zeros((), dtype=numpy_dtype(value.dtype)), shape_of(value))


def _same_kind(t: Any, value: Any) -> Any:
    """``t`` itself when it is an array of ``value``'s type, shape and dtype (``value``
    being differentiated, so floating): what :func:`_conform` would return, checked without
    a key path; ``None`` when :func:`_conform` must look closer."""
    if type(t) is not type(value) or isinstance(t, (float, int)):
        return None
    shape = getattr(t, "shape", None)
    if shape is None or shape != value.shape or t.dtype != value.dtype:
        return None
    return t


def _conform(t: Any, value: Any, path: str, what: str) -> Any:
    """``t`` checked against ``value`` (shape, floating), in ``value``'s dtype."""
    if t is None:
        raise ActivityError(
            f"{path} is None, but the {what} there is {describe(value)}, which is "
            "differentiated. Pass an array shaped like it (zeros for none)."
        )
    if isinstance(value, float):
        if isinstance(t, (int, float)) and not isinstance(t, bool):
            return float(t)
        if shape_of(t) == () and leaf_kind(t) == "f":
            return t
        raise ActivityError(
            f"{path} is {describe(t)}, but the {what} there is a Python float; pass a float."
        )
    if isinstance(t, (int, float)) and not isinstance(t, bool) and shape_of(value) == ():
        return np.asarray(t, dtype=numpy_dtype(value.dtype))
    if not hasattr(t, "shape") or leaf_kind(t) != "f":
        raise ActivityError(
            f"{path} is {describe(t)}; the {what} there is {describe(value)}. Pass a "
            "floating-point array of the same shape."
        )
    if shape_of(t) != shape_of(value):
        raise ActivityError(
            f"{path} has shape {shape_of(t)}, but the {what} there has shape "
            f"{shape_of(value)}. Pass an array of the {what}'s shape."
        )
    wanted = numpy_dtype(value.dtype)
    if isinstance(t, np.ndarray):
        return t if t.dtype == wanted else t.astype(wanted)
    # an engine's array (the engine converts it to its kind, see adswitch.spec)
    if numpy_dtype(t.dtype) != wanted:
        raise ActivityError(
            f"{path} has dtype {t.dtype}, but the {what} there has dtype {value.dtype}. "
            "Convert it (t.astype(...)) to the same dtype."
        )
    return t


def _check_tie(first: Any, t: Any, path: str, first_path: str) -> None:
    if t is None or t is first:
        return
    if isinstance(t, np.ndarray) and isinstance(first, np.ndarray) and np.array_equal(t, first):
        return
    if isinstance(t, float) and isinstance(first, float) and t == first:
        return
    raise ActivityError(
        f"{path} differs from {first_path}, but both places hold the same (tied) "
        "array, which has one tangent. Pass None (or the same tangent) at the later place, "
        "or pass distinct arrays (x.copy()) if they should move independently."
    )
