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

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from autograd.core import VJPNode, add_outgrads, vspace
from autograd.tracer import Box, trace_stack
from autograd.util import toposort

from adswitch.spec import CallInfo, LossFn

from . import operators  # noqa: F401  (attaches GuardedBox's writes and ``**``)
from .boxes import LeafBox, guard_off, guard_on
from .translate import freeze, thaw, translate

__all__ = ["value_and_grad"]

_BOX_TYPES = Box.types
_new_root = VJPNode.new_root
_LOCK = threading.RLock()


def value_and_grad(
    fn: LossFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
) -> tuple[list[Any], list[Any | None]]:
    """Differentiate ``fn``'s loss with respect to the active leaves (see ``Backend``).

    Args:
        fn: the front end's closure ``fn(leaves) -> (loss, out_leaves)``.
        leaves: numpy arrays, Python floats, other values; at depth > 0 also boxes of the
            enclosing trace.
        active: ``True`` where a gradient is wanted.
        info: unused; autograd needs no depth flag and compiles nothing.

    Returns:
        ``(out_leaves, grads)``: outputs with this call's boxes removed, and per leaf the
        total gradient (``None`` where inactive, zeros where unused).

    Raises:
        MutationError: ``f`` makes a write that cannot be followed (see ``writes.py``) or
            writes into a constant numpy argument.
        UnsupportedError: ``f`` uses an operation autograd cannot differentiate.

    Example:
        >>> import autograd.numpy as anp
        >>> from adswitch.spec import CallInfo
        >>> fn = lambda leaves: (anp.sum(leaves[0] ** 2), [])
        >>> value_and_grad(fn, [np.array([1.0, 2.0])], [True], CallInfo())[1][0]
        array([2., 4.])
    """
    # autograd keeps its trace levels in one global counter: two threads tracing at once
    # could hand a nested call its enclosing call's level and mix the graphs. One thread
    # at a time (re-entrant, for nested calls) -- autograd is GIL-bound anyway.
    with _LOCK:
        return _value_and_grad(fn, leaves, active, info.depth == 0)


def _value_and_grad(
    fn: LossFn, leaves: Sequence[Any], active: Sequence[bool], outermost: bool
) -> tuple[list[Any], list[Any | None]]:
    values = list(leaves)
    roots: dict[VJPNode, int] = {}
    # autograd's trace_stack.new_trace(), inlined with the other per-call guards: context
    # managers cost microseconds that show on small functions.
    guard_on()
    trace_stack.top += 1
    level = trace_stack.top
    frozen = freeze(leaves)
    writable = {id(a) for a in frozen} if outermost else set()
    try:
        for i, is_active in enumerate(active):
            if is_active:
                node = _new_root()
                box = values[i] = LeafBox(leaves[i], level, node)
                # Only the outermost call may write its arguments: they are the caller's
                # arrays, copied back after the backward pass (see _write_back).
                box.writable = id(leaves[i]) in writable
                roots[node] = i
        loss, out_leaves = fn(values)
    except Exception as exc:
        error = translate(exc, bool(frozen))
        if error is None:
            raise
        raise error from exc
    finally:
        if frozen:
            thaw(frozen)
        trace_stack.top -= 1
        guard_off()
    outs = [_concrete(value, level) for value in out_leaves]
    if type(loss) in _BOX_TYPES and loss._trace == level:
        root_grads = _backward(loss._node, _ones_like(loss._value), roots)
    else:
        root_grads = {}  # the loss does not depend on any active leaf at this level
    grads: list[Any | None] = [None] * len(values)
    for node, i in roots.items():
        grads[i] = _as_leaf_gradient(root_grads.get(node), leaves[i])
    if outermost:
        _write_back(leaves, values, roots)
    return outs, grads


def _write_back(leaves: Sequence[Any], values: list[Any], roots: dict[Any, int]) -> None:
    """Leave the caller's arrays as a plain call of ``f`` would: with its writes.

    Only now, after the backward pass: until then autograd's saved reads refer to them.
    """
    for i in roots.values():
        final = values[i]._value
        if final is not leaves[i] and type(leaves[i]) is np.ndarray:
            np.copyto(leaves[i], final)


def _ones_like(value: Any) -> Any:
    if type(value) is np.float64:
        return np.ones((), np.float64)
    return vspace(value).ones()


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
    if type(grad) in _BOX_TYPES:
        # Depth > 0 and the gradient depends on an enclosing trace: it must stay traced.
        return _match_dtype(grad, leaf)
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
        return 0.0 if grad is None else float(grad)
    if grad is None:
        return vspace(leaf).zeros()
    if type(leaf) in _BOX_TYPES:
        return _match_dtype(grad, leaf)
    # numpy scalar leaves (np.float32, np.float64): keep the scalar type.
    return type(leaf)(grad) if np.ndim(grad) == 0 else grad


def _match_dtype(grad: Any, leaf: Any) -> Any:
    """Keep a (possibly traced) gradient as it is, but in the leaf's floating dtype."""
    while type(leaf) in _BOX_TYPES:
        leaf = leaf._value
    dtype = getattr(leaf, "dtype", None)
    if dtype is not None and getattr(grad, "dtype", dtype) != dtype:
        grad = grad.astype(dtype)
    return grad
