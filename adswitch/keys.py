"""Keys for engines that compile (``Capabilities.compiles``): what a compiled program
is specialised to, so that a cached program is reused exactly when it still applies."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from adswitch import templates
from adswitch.plan import Plan

__all__ = ["cache_key", "without_function"]


def cache_key(plan: Plan, f: Any) -> Hashable | None:
    """Equal for calls of the same ``f`` on the same structure, ties, activity and
    non-array leaf values; ``None`` when something is unhashable.

    Example:
        >>> import numpy as np, adswitch as ad
        >>> key = cache_key(Plan((np.ones(2), ad.Const(3))), len)
        >>> key == cache_key(Plan((np.zeros(5), ad.Const(3))), len)  # values, shapes: no
        True
        >>> key == cache_key(Plan((np.ones(2), ad.Const(4))), len)  # constants: yes
        False
    """
    active, leaves = plan.active, plan.leaves
    template = plan.template
    if template is not None:
        # The template object stands for the structure, ties, activity, leaf types and
        # dtypes (one template per such key while it is remembered; a new one after it
        # was forgotten only costs a recompile): what is left is the static values.
        fast = (f, template, tuple([leaves[u] for u in template.static]))
        try:
            hash(fast)
        except TypeError:
            return None
        return fast
    static = tuple(
        [(u, type(leaves[u]), leaves[u]) for u in templates.static_positions(active, leaves)]
    )
    key = (
        f,
        tuple([(p.kind, p.treedef, tuple(p.leaf_ids)) for p in plan.args]),
        tuple(active),
        static,
    )
    try:
        hash(key)
    except TypeError:
        return None
    return key


def without_function(key: Hashable) -> Hashable:
    """A :func:`cache_key` without the function (``CallInfo.structure_key``).

    Example:
        >>> import numpy as np
        >>> without_function(cache_key(Plan((np.ones(2),)), len)) == without_function(
        ...     cache_key(Plan((np.ones(2),)), sum))
        True
    """
    assert isinstance(key, tuple)
    return key[1:]
