"""Results in the caller's kinds: numpy for numpy, jax arrays for jax arrays, floats for
floats. Traced values of an enclosing transformation are left as they are.

Imported only once jax is in use (it imports jax at the top).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from adswitch_jax.programs.keys import ArrayImpl

__all__ = ["Kinds", "outputs", "per_leaf"]


def _to_numpy(value: Any) -> Any:
    # A writable copy: numpy views of jax buffers are read-only.
    return np.array(value) if type(value) is ArrayImpl else value


def outputs(values: Sequence[Any], jax_kind: bool) -> list[Any]:
    """Output leaves (or tangents) as numpy unless a leaf was a jax array."""
    if jax_kind:
        return list(values)
    return [_to_numpy(v) for v in values]


class Kinds:
    """What each active leaf's results must look like, without holding the leaves (a
    pullback keeps this, not the caller's arrays).

    Attributes:
        active: which leaves are differentiated.
        kinds: per active leaf, ``(how, dtype or type)``: ``"jax"``, ``"numpy"``,
            ``"scalar"`` (a Python float or numpy scalar) or ``"traced"``.
    """

    __slots__ = ("active", "kinds")

    def __init__(self, leaves: Sequence[Any], active: Sequence[bool]) -> None:
        self.active = tuple(active)
        kinds: list[tuple[str, Any]] = []
        for leaf, is_active in zip(leaves, active):
            if not is_active:
                continue
            if type(leaf) is ArrayImpl:
                kinds.append(("jax", leaf.dtype))
            elif isinstance(leaf, np.ndarray):
                kinds.append(("numpy", leaf.dtype))
            elif isinstance(leaf, jax.Array):
                kinds.append(("traced", None))
            else:
                kinds.append(("scalar", type(leaf)))
        self.kinds = kinds


def per_leaf(grads: Sequence[Any], kinds: Kinds, batched: bool = False) -> list[Any | None]:
    """The gradients of the active leaves spread over all leaves (``None`` elsewhere),
    each like its leaf: its kind and dtype, a Python float for a Python float -- batched,
    the same with a leading axis (a Python float leaf's then a 1-d numpy array)."""
    result: list[Any | None] = [None] * len(kinds.active)
    k = 0
    for i, is_active in enumerate(kinds.active):
        if not is_active:
            continue
        grad = grads[k]
        how, what = kinds.kinds[k]
        k += 1
        if type(grad) is ArrayImpl:  # concrete: match the leaf's kind (jax's is its own)
            if how == "numpy":
                grad = np.array(grad, dtype=what)
            elif how == "scalar":
                if batched:
                    dtype = what if issubclass(what, np.generic) else np.float64
                    grad = np.array(grad, dtype=dtype)
                else:
                    grad = what(grad)
        result[i] = grad
    return result
