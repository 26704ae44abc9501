"""Zero arrays and zero shadows of any tree, in each leaf's own kind."""

from __future__ import annotations

from typing import Any

import numpy as np

from adswitch import trees
from adswitch.leaves import is_array, is_differentiable
from adswitch.registry import default_registry

__all__ = ["make_zero", "zeros_like"]


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
    shadow per array *object*, so a parameter tied at two places has one shadow) -- or
    the engine's own gradient buffer where it has one (a torch parameter's ``.grad``, so
    that a ``torch.optim`` step sees the gradient; ``zero=True`` calls overwrite it);
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
