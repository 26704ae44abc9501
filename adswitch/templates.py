"""Plan templates: what a call's structure decides, remembered for the next call.

Everything a :class:`~adswitch.plan.Plan` computes leaf by leaf -- which unique leaf each
position is, which leaves are active, where each first occurs -- follows from the
arguments' activity wrappers and tree structures, each leaf's type and dtype, and which
leaves are the same object. A training loop calls ``gradient`` again and again with the
same structure, so the second call on looks those answers up by a key of exactly those
facts (about a quarter of the per-leaf cost) instead of deriving them again.

A template is used only when the answer cannot differ:
    * no ``Duplicated`` argument (its checks depend on the shadows' identities);
    * every leaf's type says its kind: a known array type (whose kind is its dtype's) or
      a Python scalar type;
    * no ties: the non-scalar leaves are distinct objects (checked on every call);
    * the call that made the template passed every check (errors are never cached).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from adswitch.leaves import ARRAY_TYPES, ROLES, SCALAR, is_array, leaf_kind, roles_of

__all__ = ["MIN_LEAVES", "Template", "find", "key_for", "remember", "static_positions"]

#: Calls with fewer leaves derive their plan directly (the lookup would cost as much).
MIN_LEAVES = 4
_MAX_TEMPLATES = 512


class Template:
    """The structure-decided part of a freshly derived plan, frozen (shared by every plan
    made from it, never mutated)."""

    __slots__ = (
        "active",
        "bare",
        "first",
        "kinds",
        "leaf_ids",
        "n_active_arrays",
        "scalar_leaves",
        "static",
    )

    def __init__(
        self,
        leaf_ids: Sequence[Sequence[int]],
        active: Sequence[bool],
        first: Sequence[tuple[int, int]],
        kinds: Sequence[int],
        scalar_leaves: Sequence[int],
        n_active_arrays: int,
        leaves: Sequence[Any],
        bare: Sequence[int] | None,
    ) -> None:
        self.leaf_ids = tuple(tuple(ids) for ids in leaf_ids)
        self.bare = bare  # see ``Plan.bare``
        self.active = tuple(active)
        self.first = tuple(first)
        self.kinds = tuple(kinds)
        self.scalar_leaves = tuple(scalar_leaves)
        self.n_active_arrays = n_active_arrays
        # a compiled program bakes the values at these positions in (``keys.cache_key``)
        self.static = tuple(static_positions(active, leaves))


def static_positions(active: Sequence[bool], leaves: Sequence[Any]) -> list[int]:
    """Positions of the inactive leaves that are not arrays: their values are constants of
    ``f`` (a compiled program bakes them in)."""
    return [u for u in range(len(leaves)) if not active[u] and not is_array(leaves[u])]


_TEMPLATES: dict[Hashable, Template] = {}


def key_for(kinds_and_treedefs: tuple[Any, ...], leaves: list[Any]) -> Hashable | None:
    """The template key of a call, or ``None`` when its leaves' kinds are not all decided
    by type and dtype (or ``leaves`` holds a tie: then no template applies either)."""
    types = tuple(map(type, leaves))
    scalars = 0
    for cls in set(types):
        if cls in ARRAY_TYPES:
            continue
        roles = ROLES.get(cls)
        if roles is None:
            roles = roles_of(cls)
        if roles & SCALAR:
            scalars += 1
            continue
        # Classify a type seen for the first time now, so that the first call of a
        # structure already makes its template (and its compiled-engine key is the same
        # from the first call on).
        leaf_kind(leaves[types.index(cls)])
        if cls not in ARRAY_TYPES:
            return None  # a type whose kind depends on the value
    if scalars:
        distinct = [leaf for leaf, cls in zip(leaves, types) if cls in ARRAY_TYPES]
    else:
        distinct = leaves
    if len(set(map(id, distinct))) != len(distinct):
        return None  # a tied parameter: the plan is derived leaf by leaf
    dtypes = tuple([leaf.dtype if cls in ARRAY_TYPES else None for leaf, cls in zip(leaves, types)])
    key = (kinds_and_treedefs, types, dtypes)
    try:
        hash(key)
    except TypeError:  # an unhashable tree node's auxiliary data
        return None
    return key


def find(key: Hashable) -> Template | None:
    return _TEMPLATES.get(key)


def remember(key: Hashable, template: Template) -> None:
    if len(_TEMPLATES) >= _MAX_TEMPLATES:
        del _TEMPLATES[next(iter(_TEMPLATES))]  # the oldest first
    _TEMPLATES[key] = template


def clear() -> None:
    """Forget every template (for tests)."""
    _TEMPLATES.clear()
