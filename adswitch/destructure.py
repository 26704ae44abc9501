"""``destructure``: a model as one flat parameter vector, ties counted once (seed 001)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from adswitch import trees
from adswitch.errors import ActivityError
from adswitch.leaves import is_array, is_differentiable
from adswitch.namespace import array_namespace

__all__ = ["destructure"]


def destructure(tree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """Flatten the unique floating leaves of ``tree`` into one 1-d vector.

    A tied array (the same object at several places) is listed once, so the gradient
    with respect to the vector sums all of its uses -- the bug of Flux's ``destructure``
    in seed 001 cannot happen. Python floats are included as one element each. Leaves
    that are not floating (ints, strings, integer arrays) stay fixed in ``rebuild``.

    Args:
        tree: the model (any tree the walker knows).

    Returns:
        ``(flat, rebuild)``: ``flat`` is a 1-d array of the leaves' kind, in the common
        floating dtype; ``rebuild(v)`` builds the tree back from a vector of that length
        -- also from an engine's traced vector inside ``f``, which makes it differentiable
        on every engine. Each leaf gets its own dtype back; tied places get one object.

    Example:
        >>> import adswitch as ad, numpy as np
        >>> w = np.array([1.0, 2.0])
        >>> flat, rebuild = ad.destructure({"a": w, "b": w, "c": 3.0})
        >>> flat.tolist()
        [1.0, 2.0, 3.0]
        >>> def loss(v):
        ...     m = rebuild(v)
        ...     return ad.array_namespace(v).sum(m["a"] * m["b"])
        >>> g = ad.gradient(loss, flat)[0]
        >>> g.tolist()
        [2.0, 4.0, 0.0]
    """
    leaves, treedef = trees.flatten(tree)
    slots: list[
        tuple[int, int, tuple[int, ...], Any, bool]
    ] = []  # start, stop, shape, dtype, float
    slot_of: dict[int, int] = {}
    position: list[int] = []  # per leaf: index into slots, or -1 when fixed
    parts: list[Any] = []
    offset = 0
    for leaf in leaves:
        if not is_differentiable(leaf):
            position.append(-1)
            continue
        key = id(leaf)
        if is_array(leaf) and key in slot_of:
            position.append(slot_of[key])
            continue
        if isinstance(leaf, float):
            size, shape, dtype, part = 1, (), np.dtype(np.float64), np.asarray([leaf])
        else:
            xp = array_namespace(leaf)
            shape = tuple(leaf.shape)
            size = int(np.prod(shape)) if shape else 1
            dtype = leaf.dtype
            part = xp.reshape(leaf, (-1,))
        slot_of[key] = len(slots)
        position.append(len(slots))
        slots.append((offset, offset + size, shape, dtype, isinstance(leaf, float)))
        parts.append(part)
        offset += size
    if not parts:
        raise ActivityError("destructure found no floating leaf in the tree; nothing to flatten.")
    xp = array_namespace(*[p for p in parts if not isinstance(p, np.ndarray)] or parts[:1])
    common = xp.result_type(*[p.dtype for p in parts])
    flat = xp.concat([_cast(xp, p, common) for p in parts])
    total = offset

    def rebuild(vector: Any) -> Any:
        shape = tuple(getattr(vector, "shape", ()))
        if shape != (total,):
            raise ActivityError(
                f"rebuild expects a 1-d vector of length {total} (as destructure returned); "
                f"got shape {shape}."
            )
        vxp = array_namespace(vector)
        built = []
        for start, stop, leaf_shape, dtype, was_float in slots:
            piece = vector[start:stop]
            if was_float:
                built.append(vxp.reshape(piece, ()))
            else:
                built.append(_cast(vxp, vxp.reshape(piece, leaf_shape), dtype))
        return trees.unflatten(
            treedef, [leaf if p < 0 else built[p] for leaf, p in zip(leaves, position)]
        )

    return flat, rebuild


def _dtype_name(dtype: Any) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def _cast(xp: Any, x: Any, dtype: Any) -> Any:
    """Cast across namespaces by dtype name (a numpy dtype means torch's same-named one)."""
    name = _dtype_name(dtype)
    if _dtype_name(x.dtype) == name:
        return x
    return xp.astype(x, getattr(xp, name))
