"""Distinct differentiated arrays must not share memory: a view and its base passed as two
parameters would make a gradient for each ambiguous."""

from __future__ import annotations

import numpy as np

from adswitch.errors import AliasingError
from adswitch.leaves import is_view, memory_root
from adswitch.plan import Plan
from adswitch.spec import Backend

__all__ = ["check_overlap"]


def check_overlap(plan: Plan, engine: Backend) -> None:
    """Raise ``AliasingError`` when two distinct active arrays of ``plan`` share memory
    (``engine.may_alias`` decides for arrays that are not numpy's)."""
    if plan.n_active_arrays < 2:
        return
    active, leaves = plan.active, plan.leaves
    for u, leaf in enumerate(leaves):
        if active[u] and not isinstance(leaf, float) and is_view(leaf):
            break  # a view: group by memory below
    else:
        return  # every active array owns its memory, and they are distinct objects
    groups: dict[int, list[int]] = {}
    for u, leaf in enumerate(leaves):
        if active[u] and not isinstance(leaf, float):
            groups.setdefault(id(memory_root(leaf)), []).append(u)
    for members in groups.values():
        for i, u in enumerate(members):
            for v in members[i + 1 :]:
                a, b = leaves[u], leaves[v]
                if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
                    overlap = bool(np.shares_memory(a, b))
                else:
                    overlap = engine.may_alias(a, b)
                if overlap:
                    raise AliasingError(
                        f"{plan.path(*plan.first[u])} and {plan.path(*plan.first[v])} are "
                        "distinct arrays that share memory (a view and its base), so a "
                        "gradient for each is ambiguous. Pass the base array once and take "
                        "the view inside f, or pass a copy (x.copy())."
                    )
