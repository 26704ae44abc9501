"""The engine's primitives on HIPS autograd's core, over the front end's flat leaves.

Built on autograd's core (trace levels, nodes, ``add_outgrads``) rather than
``autograd.grad``: every active leaf gets its own root node on one shared trace, so a
single run of ``f`` gives the derivatives for every leaf (a tied array is one leaf, its
uses sum on its root). Nested calls need nothing special: at depth > 0 the leaves are
boxes of the enclosing trace, autograd boxes them again one level up, and whatever is
computed after this level's trace has closed -- a backward sweep, a pullback -- is
itself recorded by the enclosing trace, so the derivatives stay differentiable.

``value_and_grad`` is here; ``vjp``/``vjp_apply`` (reverse mode with a kept graph) are in
:mod:`.reverse`, ``jvp`` (forward mode) in :mod:`.forward`. This module is the one the
plugin loads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autograd.core import VJPNode
from autograd.tracer import Box
from autograd.util import toposort

from adswitch.spec import CallInfo, LossFn

from ..tracing import operators  # noqa: F401  (attaches GuardedBox's writes and ``**``)
from ..tracing.levels import LOCK
from ..tracing.run import run, write_back
from .forward import jvp
from .results import as_leaf_gradient, concrete, ones_like, owned
from .reverse import vjp, vjp_apply
from .sweeps import backward

__all__ = ["jvp", "value_and_grad", "vjp", "vjp_apply"]

_BOX_TYPES = Box.types
_new_root = VJPNode.new_root


def value_and_grad(
    fn: LossFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
) -> tuple[list[Any], list[Any | None]]:
    """Differentiate ``fn``'s loss with respect to the active leaves (see ``Backend``).

    Args:
        fn: the front end's closure ``fn(leaves) -> (loss, out_leaves)``.
        leaves: numpy arrays, Python floats, other values; at depth > 0 also boxes of the
            enclosing trace.
        active: ``True`` where a gradient is wanted.
        info: its depth (writes into arguments are the outermost call's only).

    Returns:
        ``(out_leaves, grads)``: outputs with this call's boxes removed, and per leaf the
        total gradient (``None`` where inactive, zeros where unused).

    Raises:
        MutationError: ``f`` makes a write that cannot be followed (see ``writes.py``) or
            writes into a constant numpy argument.
        UnsupportedError: ``f`` uses an operation autograd cannot differentiate.

    Example:
        >>> import autograd.numpy as anp
        >>> import numpy as np
        >>> from adswitch.spec import CallInfo
        >>> fn = lambda leaves: (anp.sum(leaves[0] ** 2), [])
        >>> value_and_grad(fn, [np.array([1.0, 2.0])], [True], CallInfo())[1][0]
        array([2., 4.])
    """
    with LOCK:
        return _value_and_grad(fn, leaves, active, info.depth == 0)


def _root(i: int) -> Any:
    return _new_root()


def _value_and_grad(
    fn: LossFn, leaves: Sequence[Any], active: Sequence[bool], outermost: bool
) -> tuple[list[Any], list[Any | None]]:
    level, values, roots, (loss, out_leaves) = run(fn, leaves, active, _root, _new_root, outermost)
    outs = [concrete(value, level) for value in out_leaves]
    if type(loss) in _BOX_TYPES and loss._trace == level:
        end = loss._node
        root_grads = backward(toposort(end), [(end, ones_like(loss._value))], roots)
    else:
        root_grads = {}  # the loss does not depend on any active leaf at this level
    grads: list[Any | None] = [None] * len(values)
    for node, i in roots.items():
        grads[i] = as_leaf_gradient(root_grads.get(node), leaves[i])
    if outermost:
        # Only now, after the backward pass: until then autograd's saved reads refer to
        # the caller's arrays.
        write_back(leaves, leaves, values, roots)
    return outs, owned(grads)
