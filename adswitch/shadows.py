"""Shadows of ``Duplicated`` arguments: checking them before ``f`` runs, writing into them
after.

Writing happens only after the engine has returned every gradient and every check
has passed, so that an exception anywhere leaves every shadow exactly as it was.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from adswitch import trees
from adswitch.errors import ActivityError, AliasingError
from adswitch.leaves import SCALAR_TYPES, describe, is_array
from adswitch.registry import default_registry
from adswitch.spec import Backend

__all__ = [
    "DuplicatedArg",
    "ShadowSlots",
    "check_shadows",
    "float_slot",
    "write",
    "write_float",
]

FloatSlot = tuple[Any, Any, bool]
"""Where a Python float of a shadow lives: ``(container, key, is_attribute)``."""


def float_slot(tree: Any, treedef: trees.TreeDef, index: int, path: str) -> FloatSlot:
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
    try:
        writable = owner is None or owner.writable(shadow)
    except ActivityError as exc:  # the engine's reason; the front end knows where
        raise ActivityError(f"dval at {path}: {exc}") from None
    if not writable:
        assert owner is not None
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


def write_float(slot: FloatSlot, grad: Any, zero: bool) -> None:
    """Replace the Python float at ``slot`` by ``grad`` (added to it unless ``zero``)."""
    container, key, is_attr = slot
    old = 0.0 if zero else (getattr(container, key) if is_attr else container[key])
    if is_attr:
        setattr(container, key, old + grad)
    else:
        container[key] = old + grad


def no_float_in_duplicated(a: int, val: Any) -> None:
    raise ActivityError(
        f"args[{a}] is Duplicated({describe(val)}), which has no floating array leaf "
        "for a shadow to be written into in place. Pass it plain to get its gradient "
        "returned (Python floats are differentiated that way), or store it as an array."
    )


class DuplicatedArg(NamedTuple):
    """One ``Duplicated`` argument, as the plan sees it."""

    position: int  # the argument's index
    val: Any
    dval: Any
    treedef: trees.TreeDef
    leaf_ids: Sequence[int]  # the unique leaf of each of its positions


class ShadowSlots(NamedTuple):
    """What the shadow check found for one ``Duplicated`` argument, for writing later."""

    leaves: Sequence[Any]  # the shadow's leaves, one per position of the value
    floats: dict[int, FloatSlot]  # position -> where a Python float's gradient goes


def check_shadows(
    duplicated: Sequence[DuplicatedArg],
    leaves: Sequence[Any],
    active: Sequence[bool],
    path: Callable[[int, int], str],
) -> list[ShadowSlots]:
    """Check every ``Duplicated`` argument's shadow against its value, before ``f`` runs:
    same structure, matching leaves, one shadow per (tied) parameter, no shadow that is
    a parameter or serves two.

    Args:
        duplicated: the ``Duplicated`` arguments.
        leaves: the call's unique leaves; ``active`` says which are differentiated.
        path: ``path(argument, position)`` -> the key path of a leaf, for messages.

    Returns:
        Per argument, where to write its gradients later.
    """
    shadow_of: dict[int, int] = {}  # unique leaf -> id of its shadow
    owner_of_shadow: dict[int, int] = {}  # and back
    value_ids = {id(leaf) for leaf in leaves if not isinstance(leaf, SCALAR_TYPES)}
    found: list[ShadowSlots] = []
    for arg in duplicated:
        a = arg.position
        if not any(active[u] and is_array(leaves[u]) for u in arg.leaf_ids):
            no_float_in_duplicated(a, arg.val)
        shadow_leaves, shadow_def = trees.flatten(arg.dval)
        in_dval: list[int] | None = None  # val position -> dval position, when they differ
        if shadow_def != arg.treedef:
            order = trees.reorder(arg.treedef, shadow_def)
            if order is None:
                where = trees.describe_mismatch(arg.treedef, shadow_def, f"args[{a}]")
                raise ActivityError(
                    f"args[{a}]: dval does not have val's structure ({where}). Build the "
                    "shadow with ad.make_zero(val), or pass Duplicated(val) to have one made."
                )
            # The same keys in another order: each shadow leaf is matched to val's by key.
            in_dval = [0] * len(order)
            for i, position in enumerate(order):
                in_dval[position] = i
            shadow_leaves = [shadow_leaves[i] for i in in_dval]
        floats: dict[int, FloatSlot] = {}
        for j, (u, shadow) in enumerate(zip(arg.leaf_ids, shadow_leaves)):
            if not active[u]:
                continue
            leaf = leaves[u]
            check_shadow_leaf(leaf, shadow, path(a, j))
            if isinstance(leaf, float):
                at = j if in_dval is None else in_dval[j]
                floats[j] = float_slot(arg.dval, shadow_def, at, path(a, j))
                continue
            if id(shadow) in value_ids:
                raise ActivityError(
                    f"dval at {path(a, j)} is one of the arguments' own arrays; writing "
                    "gradients there would overwrite parameters. Use ad.make_zero(val)."
                )
            if shadow_of.setdefault(u, id(shadow)) != id(shadow):
                raise ActivityError(
                    f"one array is tied at several places but the shadows there differ (see "
                    f"{path(a, j)}); build the shadows with ad.make_zero of the whole "
                    "structure so that a tied parameter has one shadow."
                )
            if owner_of_shadow.setdefault(id(shadow), u) != u:
                raise AliasingError(
                    f"dval uses one array for two distinct parameters (at {path(a, j)}); "
                    "their gradients would be summed. Build the shadow with ad.make_zero(val)."
                )
        found.append(ShadowSlots(shadow_leaves, floats))
    return found
