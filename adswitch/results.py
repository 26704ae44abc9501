"""Where results go: gradients placed into one entry per argument (new trees for plain
arguments, ``None`` for ``Const``, the shadow for ``Duplicated``), and the shadows written
-- last, once every gradient exists and every check has passed. Also the type of a scalar
result, the same on every engine (engines hand back 0-d arrays, numpy scalars or Python
floats for the same number)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from adswitch import trees
from adswitch.leaves import is_array
from adswitch.plan import CONST, DUPLICATED, Plan
from adswitch.shadows import write, write_float
from adswitch.spec import Backend

__all__ = [
    "as_leaf_scalar",
    "loss_value",
    "output_scalars",
    "place",
    "restore_scalar_types",
    "tangent_like",
    "write_shadows",
]


def restore_scalar_types(plan: Plan, grads: list[Any]) -> list[Any]:
    """Scalar leaves get their own type back (``np.float32`` in, ``np.float32`` out),
    whatever the engine computed them as. Only at top level: inside an outer
    differentiation they stay traced."""
    if not plan.scalar_leaves:
        return grads
    grads = list(grads)
    for u in plan.scalar_leaves:
        leaf = plan.leaves[u]
        if type(grads[u]) is not type(leaf):
            grads[u] = _scalar(type(leaf), grads[u])
    return grads


def _scalar(cls: type, value: Any) -> Any:
    """``value`` as the scalar type ``cls``; a value of the engine's own transform around
    the call (a ``torch.func.vmap`` batch, a ``jax.jit`` tracer) has no number yet and stays
    the engine's value -- converting it is what the engine refuses."""
    try:
        return cls(value)
    except (TypeError, RuntimeError):
        if is_array(value):
            return value
        raise


def as_leaf_scalar(value: Any, leaf: Any) -> Any:
    """At top level, a 0-d result for a Python float (or numpy scalar) leaf -- a Jacobian
    block, a derivative -- is given back as that type, as gradients are."""
    if (
        value is not None
        and isinstance(leaf, (float, np.generic))
        and getattr(value, "shape", ()) == ()
    ):
        return _scalar(type(leaf), value)
    return value


def loss_value(plan: Plan, loss: Any) -> Any:
    """``withgradient``'s loss (at top level) as the caller's kind of scalar, whatever the
    engine computed it as: a Python float when every leaf of the call is a Python scalar,
    else a numpy scalar of its dtype (``np.float64``, ``np.float32``), as numpy's own
    reductions give. An engine's own array (a torch or jax scalar) is kept: the caller
    passed that kind."""
    cls = type(loss)
    if cls is np.ndarray:
        if loss.shape != () or loss.dtype.kind != "f":
            return loss
    elif cls is not float and not isinstance(loss, np.floating):
        return loss
    if not any(isinstance(leaf, np.generic) or is_array(leaf) for leaf in plan.leaves):
        return float(loss)
    if cls is float:
        return np.float64(loss)
    return loss[()] if cls is np.ndarray else loss


def output_scalars(plan: Plan, out_leaves: Sequence[Any], n_y: int) -> list[Any]:
    """``vjp``'s and ``jvp``'s outputs (at top level): each 0-d floating leaf of ``y`` (the
    first ``n_y``) as :func:`loss_value` gives a loss, so ``y`` is the same type on every
    engine (the tape computes ``np.float64``, torch and jax hand back 0-d arrays); ``aux``
    stays as ``f`` returned it."""
    leaves = list(out_leaves)
    for k in range(n_y):
        if type(leaves[k]) is not float:  # an engine that kept f's Python float is right
            leaves[k] = loss_value(plan, leaves[k])
    return leaves


def tangent_like(value: Any, y: Any) -> Any:
    """A 0-d tangent (or cotangent's result) in the scalar type of its output ``y``."""
    if isinstance(y, float | np.floating) and (
        isinstance(value, float) or getattr(value, "shape", None) == ()
    ):
        return value if type(value) is type(y) else type(y)(value)
    return value


def place(plan: Plan, per_leaf: Sequence[Any]) -> tuple[Any, ...]:
    """One entry per argument from one value per unique leaf: a tied leaf's value sits at
    its first position, ``None`` at the others and at inactive leaves."""
    active = plan.active
    results: list[Any] = []
    untied = plan.untied
    first = plan.first
    for a, p in enumerate(plan.args):
        if p.kind == CONST:
            results.append(None)
        elif p.kind == DUPLICATED:
            results.append(p.dval)
        elif p.treedef is None:
            u = p.leaf_ids[0]
            results.append(per_leaf[u] if active[u] and (untied or first[u] == (a, 0)) else None)
        else:
            if untied:  # every position is its unique leaf's first: no need to ask
                entries = [per_leaf[u] if active[u] else None for u in p.leaf_ids]
            else:
                entries = [
                    per_leaf[u] if active[u] and first[u] == (a, j) else None
                    for j, u in enumerate(p.leaf_ids)
                ]
            results.append(trees.unflatten(p.treedef, entries))
    return tuple(results)


def write_shadows(plan: Plan, engine: Backend, grads: Sequence[Any], zero: bool) -> None:
    """Add (or, with ``zero``, write) each gradient into its ``Duplicated`` shadow; a tied
    parameter has one shadow, written once with its total."""
    active, leaves = plan.active, plan.leaves
    written: set[int] = set()
    for p in plan.args:
        if p.shadow is None:
            continue
        floats = p.shadow.floats
        for j, (u, shadow) in enumerate(zip(p.leaf_ids, p.shadow.leaves)):
            if not active[u] or u in written:
                continue
            written.add(u)
            if isinstance(leaves[u], float):
                write_float(floats[j], grads[u], zero)
            else:
                write(engine, shadow, grads[u], zero)
