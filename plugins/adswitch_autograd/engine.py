"""One reverse-mode pass of HIPS autograd over the front end's flat leaves.

Built on autograd's core (trace levels, ``VJPNode``, ``add_outgrads``) rather than
``autograd.grad``: every active leaf gets its own root node on one shared trace, so a
single forward trace and a single backward sweep give the total gradient of every leaf
(a tied array is one leaf, its uses sum on its root). Nested calls need nothing special:
at depth > 0 the leaves are boxes of the enclosing trace, autograd boxes them again one
level up, and the backward pass -- run after this level's trace has closed -- is itself
recorded by the enclosing trace, so the gradients stay differentiable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from autograd.core import VJPNode, add_outgrads, vspace
from autograd.tracer import Box, trace_stack
from autograd.util import toposort

from adswitch.spec import CallInfo, LossFn

from .boxes import GuardedBox, guarded_boxes
from .translate import guarded_call

__all__ = ["value_and_grad"]

_BOX_TYPES = Box.types
_new_root = VJPNode.new_root


def value_and_grad(
    fn: LossFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
) -> tuple[list[Any], list[Any | None]]:
    """Run ``fn`` once under an autograd trace and sweep back once; see ``Backend.value_and_grad``."""
    values = list(leaves)
    roots: dict[VJPNode, int] = {}
    with guarded_boxes(), trace_stack.new_trace() as level:
        for i, is_active in enumerate(active):
            if is_active:
                node = _new_root()
                values[i] = GuardedBox(leaves[i], level, node)
                roots[node] = i
        with guarded_call(leaves):
            loss, out_leaves = fn(values)
    outs = [_concrete(value, level) for value in out_leaves]
    if type(loss) in _BOX_TYPES and loss._trace == level:
        root_grads = _backward(loss._node, vspace(loss._value).ones(), roots)
    else:
        root_grads = {}  # the loss does not depend on any active leaf at this level
    grads: list[Any | None] = [None] * len(values)
    for node, i in roots.items():
        grads[i] = _as_leaf_gradient(root_grads.get(node), leaves[i])
    return outs, grads


def _concrete(value: Any, level: int) -> Any:
    # Strip exactly this call's boxes; at depth > 0 what is left is the enclosing trace's box.
    while type(value) in _BOX_TYPES and value._trace >= level:
        value = value._value
    return value


def _backward(end_node: Any, seed: Any, roots: dict[Any, int]) -> dict[Any, Any]:
    """autograd's ``backward_pass``, collecting the cotangent of every root, not just one."""
    outgrads: dict[Any, tuple[Any, bool]] = {end_node: (seed, False)}
    found: dict[Any, Any] = {}
    for node in toposort(end_node):
        outgrad = outgrads.pop(node)[0]
        if node in roots:
            found[node] = outgrad
            continue
        for parent, ingrad in zip(node.parents, node.vjp(outgrad), strict=False):
            outgrads[parent] = add_outgrads(outgrads.get(parent), ingrad)
    return found


def _as_leaf_gradient(grad: Any, leaf: Any) -> Any:
    """Give ``grad`` the leaf's kind, shape and dtype; zeros when the leaf was unused."""
    if isinstance(leaf, np.ndarray):
        if grad is None:
            return np.zeros_like(leaf)
        if (
            type(grad) is not np.ndarray
            or grad.dtype != leaf.dtype
            or grad.shape != leaf.shape
            or not grad.flags.writeable
            or grad.base is not None
        ):
            # Scalars, broadcast views and read-only results become fresh arrays the
            # caller may write into.
            grad = np.array(np.broadcast_to(grad, leaf.shape), dtype=leaf.dtype)
        return grad
    if isinstance(leaf, float) and type(leaf) is not np.float64:
        return 0.0 if grad is None else _to_float(grad)
    if grad is None:
        return vspace(leaf).zeros()
    if type(leaf) in _BOX_TYPES:
        return _match_box(grad, leaf)
    # numpy scalar leaves (np.float32, np.float64): keep the scalar type.
    return type(leaf)(grad) if np.ndim(grad) == 0 else grad


def _to_float(grad: Any) -> Any:
    # At depth > 0 the gradient of a float is a box of the outer trace: keep it traced.
    if type(grad) in _BOX_TYPES:
        return grad
    return float(grad)


def _match_box(grad: Any, leaf: Any) -> Any:
    """Depth > 0: keep the gradient differentiable, but give it the leaf's dtype."""
    leaf_value = leaf._value
    while type(leaf_value) in _BOX_TYPES:
        leaf_value = leaf_value._value
    dtype = getattr(leaf_value, "dtype", None)
    if dtype is not None and getattr(grad, "dtype", dtype) != dtype:
        grad = grad.astype(dtype)
    return grad
