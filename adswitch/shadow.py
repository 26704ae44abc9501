"""Shadows of ``Duplicated`` arguments: making them, checking them, writing into them.

Writing happens only after the engine has returned every gradient and every check
has passed, so that an exception anywhere leaves every shadow exactly as it was.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from adswitch import trees
from adswitch.errors import ActivityError, AliasingError
from adswitch.leaves import SCALAR_TYPES, describe, is_array, is_differentiable
from adswitch.registry import default_registry
from adswitch.spec import Backend

if TYPE_CHECKING:
    from adswitch.plan import ArgPlan, Plan

__all__ = ["check_shadows", "make_zero", "zeros_like", "float_slot", "write"]


def zeros_like(x: Any) -> Any:
    """A zero array like ``x``, of ``x``'s own kind (numpy, or the owning engine's)."""
    if isinstance(x, np.ndarray):
        return np.zeros_like(x)
    owner = default_registry().owner(x)
    if owner is None:
        return np.zeros_like(x)
    return owner.zeros_like(x)


def make_zero(tree: Any) -> Any:
    """A zero shadow of ``tree``: same structure and container types, aliasing preserved.

    Floating arrays become zero arrays of the same kind, shape, dtype and device (one
    shadow per array *object*, so a parameter tied at two places has one shadow);
    Python floats become ``0.0``; every other leaf (ints, strings, integer arrays,
    callables) is kept as the same object, since it never receives a gradient.

    Args:
        tree: any tree the walker knows (see :func:`adswitch.register_tree`).

    Returns:
        The shadow tree.

    Example:
        >>> import adswitch as ad, numpy as np
        >>> w = np.ones(2)
        >>> z = ad.make_zero({"a": w, "b": w, "n": 3})
        >>> z["a"] is z["b"], z["a"].tolist(), z["n"]
        (True, [0.0, 0.0], 3)
    """
    leaves, treedef = trees.flatten(tree)
    memo: dict[int, Any] = {}
    zeros: list[Any] = []
    for leaf in leaves:
        if isinstance(leaf, float):
            zeros.append(type(leaf)(0.0))
        elif is_array(leaf) and is_differentiable(leaf):
            key = id(leaf)
            if key not in memo:
                memo[key] = zeros_like(leaf)
            zeros.append(memo[key])
        else:
            zeros.append(leaf)
    return trees.unflatten(treedef, zeros)


def float_slot(tree: Any, treedef: trees.TreeDef, index: int, path: str) -> tuple[Any, Any, bool]:
    """Locate leaf ``index`` of ``tree`` as ``(container, key, is_attribute)`` so that a
    Python float there can be replaced; ``ActivityError`` if the container is immutable."""
    counter = [0]
    found: list[tuple[Any, Any, bool] | None] = []
    _find_slot(tree, treedef, None, index, counter, found)
    slot = found[0] if found else None
    if slot is None:
        raise ActivityError(
            f"{path} is a Python float inside a Duplicated argument, held by an immutable "
            "container, so its gradient cannot be written into the shadow. Store it as a 0-d "
            "array (np.asarray(value)), or pass it in a plain argument to get its gradient back."
        )
    return slot


def _find_slot(
    node: Any,
    td: trees.TreeDef,
    parent: tuple[Any, Any, bool] | None,
    index: int,
    counter: list[int],
    found: list[tuple[Any, Any, bool] | None],
) -> None:
    if found:
        return
    if td is None:
        if counter[0] == index:
            found.append(parent)
        counter[0] += 1
        return
    handler, _, children = td
    kids, _ = handler.flatten(node)
    for child, child_td, slot in zip(kids, children, _child_keys(node, len(children))):
        _find_slot(child, child_td, slot, index, counter, found)


def _child_keys(node: Any, n: int) -> list[tuple[Any, Any, bool] | None]:
    if isinstance(node, dict):
        return [(node, k, False) for k in node]
    if isinstance(node, list):
        return [(node, i, False) for i in range(n)]
    params = getattr(node, "__dataclass_params__", None)
    if dataclasses.is_dataclass(node) and params is not None and not params.frozen:
        return [(node, f.name, True) for f in dataclasses.fields(node)]
    return [None] * n


def check_shadow_leaf(val: Any, shadow: Any, path: str) -> None:
    """A shadow leaf must be a writable array of the value's kind, shape and dtype."""
    if isinstance(val, float):
        if not isinstance(shadow, float):
            raise ActivityError(
                f"dval at {path} is {describe(shadow)} but val there is a Python float; "
                "build the shadow with ad.make_zero(val)."
            )
        return
    fix = "build it with ad.make_zero(val) (or pass dval=None)"
    if type(shadow).__module__.partition(".")[0] != type(val).__module__.partition(".")[0]:
        raise ActivityError(f"dval at {path} is {describe(shadow)}, val is {describe(val)}; {fix}.")
    if tuple(shadow.shape) != tuple(val.shape):
        raise ActivityError(
            f"dval at {path} has shape {tuple(shadow.shape)} but val has shape "
            f"{tuple(val.shape)}; {fix}."
        )
    if shadow.dtype != val.dtype:
        raise ActivityError(
            f"dval at {path} has dtype {shadow.dtype} but val has dtype {val.dtype}; {fix}."
        )
    owner = None if type(shadow) is np.ndarray else default_registry().owner(shadow)
    if owner is not None and not owner.writable(shadow):
        raise ActivityError(
            f"dval at {path} is {describe(shadow)}, which engine {owner.name!r} cannot update "
            "in place (its arrays are immutable). Pass the argument plain and use the "
            "returned gradient."
        )
    if isinstance(shadow, np.ndarray) and not shadow.flags.writeable:
        raise ActivityError(
            f"dval at {path} is a read-only numpy array, so the gradient cannot be added "
            "into it; pass a writable array (np.array(dval) makes a writable copy)."
        )


def write(engine: Backend, shadow: Any, grad: Any, zero: bool) -> None:
    """Add ``grad`` into the array ``shadow`` in place (after zeroing it when ``zero``)."""
    if zero:
        shadow[...] = 0
    engine.add_into(shadow, grad)


def no_float_in_duplicated(a: int, val: Any) -> None:
    raise ActivityError(
        f"args[{a}] is Duplicated({describe(val)}), which has no floating array leaf "
        "for a shadow to be written into in place. Pass it plain to get its gradient "
        "returned (Python floats are differentiated that way), or store it as an array."
    )


def check_shadows(plan: Plan, duplicated: list[tuple[int, ArgPlan]]) -> None:
    """Check every ``Duplicated`` argument's shadow against its value, before ``f`` runs:
    same structure, matching leaves, one shadow per (tied) parameter, no shadow that is
    a parameter or serves two. Records the shadow leaves (and Python-float slots) on the
    argument's plan for writing later."""
    shadow_of: dict[int, int] = {}  # unique leaf -> id of its shadow
    owner_of_shadow: dict[int, int] = {}  # and back
    value_ids = {id(leaf) for leaf in plan.leaves if not isinstance(leaf, SCALAR_TYPES)}
    active, leaves = plan.active, plan.leaves
    for a, arg in duplicated:
        if not any(active[u] and is_array(leaves[u]) for u in arg.leaf_ids):
            no_float_in_duplicated(a, arg.val)
        shadow_leaves, shadow_def = trees.flatten(arg.dval)
        if shadow_def != arg.treedef:
            where = trees.describe_mismatch(arg.treedef, shadow_def, f"args[{a}]")
            raise ActivityError(
                f"args[{a}]: dval does not have val's structure ({where}). Build the shadow "
                "with ad.make_zero(val), or pass Duplicated(val) to have one made."
            )
        for j, (u, shadow) in enumerate(zip(arg.leaf_ids, shadow_leaves)):
            if not active[u]:
                continue
            leaf = leaves[u]
            check_shadow_leaf(leaf, shadow, plan.path(a, j))
            if isinstance(leaf, float):
                arg.float_slots[j] = float_slot(arg.dval, shadow_def, j, plan.path(a, j))
                continue
            if id(shadow) in value_ids:
                raise ActivityError(
                    f"dval at {plan.path(a, j)} is one of the arguments' own arrays; writing "
                    "gradients there would overwrite parameters. Use ad.make_zero(val)."
                )
            if shadow_of.setdefault(u, id(shadow)) != id(shadow):
                raise ActivityError(
                    f"one array is tied at several places but the shadows there differ (see "
                    f"{plan.path(a, j)}); build the shadows with ad.make_zero of the whole "
                    "structure so that a tied parameter has one shadow."
                )
            if owner_of_shadow.setdefault(id(shadow), u) != u:
                raise AliasingError(
                    f"dval uses one array for two distinct parameters (at {plan.path(a, j)}); "
                    "their gradients would be summed. Build the shadow with ad.make_zero(val)."
                )
        arg.shadow_leaves = shadow_leaves
