"""Whether the chosen engine can take a call's leaves -- their array kinds and dtypes, as
its ``Capabilities`` declare -- checked before ``f`` runs, so that an engine is never
handed an array it would silently convert (or refuse with a raw traceback).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError, UsageError
from adswitch.foreign import foreign_array
from adswitch.leaves import describe
from adswitch.plan import Plan
from adswitch.registry import Registry
from adswitch.spec import Backend

__all__ = ["array_kind", "check_accepts", "check_flag", "dtype_name"]

# (id of the engine, leaf type, dtype) combinations found acceptable: one set lookup per
# leaf on later calls.
_ACCEPTED: set[tuple[int, type, Any]] = set()


def check_flag(name: str, value: Any) -> None:
    """A keyword that must be a bool (``zero=``...): ``UsageError`` otherwise (a string
    like ``"no"`` would otherwise count as true)."""
    if type(value) is not bool:
        raise UsageError(f"{name}={value!r}: {name} must be True or False.")


def dtype_name(leaf: Any) -> str:
    """``"float32"``, ``"bfloat16"``... for arrays of any kind; ``"float64"`` for a float."""
    if isinstance(leaf, float):
        return "float64"
    return str(leaf.dtype).rsplit(".", 1)[-1]


def array_kind(leaf: Any, registry: Registry) -> str | None:
    """``"numpy"``, the owning engine's name (``"torch"``, ``"jax"``...), the array type's
    top-level module for arrays no engine owns, or ``None`` for a non-array."""
    if isinstance(leaf, (np.ndarray, np.generic)):
        return "numpy"
    if not (hasattr(leaf, "shape") and hasattr(leaf, "dtype")) or isinstance(leaf, (int, float)):
        return None
    owner = registry.owner(leaf)
    return owner.name if owner is not None else type(leaf).__module__.partition(".")[0]


def check_accepts(plan: Plan, engine: Backend, registry: Registry) -> None:
    """Raise ``UnsupportedError`` naming the first leaf whose array kind, or (for a
    differentiated leaf) dtype, the engine does not declare, with the engines that would
    take it; or that is a masked array, an ``np.matrix`` or a pandas object, refused on
    every engine (:func:`adswitch.foreign.foreign_array`)."""
    key = id(engine)
    accepted = _ACCEPTED
    leaves = plan.leaves
    if len(leaves) == 1:  # the commonest call, decided without the loop (0.7 us in situ)
        leaf = leaves[0]
        if (key, type(leaf), getattr(leaf, "dtype", None)) in accepted:
            return
    for u, leaf in enumerate(leaves):
        cls = type(leaf)
        if cls is float or cls is int or cls is str or leaf is None:
            continue
        dtype = getattr(leaf, "dtype", None)
        if (key, cls, dtype) in accepted:
            continue
        refusal = foreign_array(leaf, plan.path(*plan.first[u]))
        if refusal is not None:  # (never accepted: only a type's first sight pays this)
            raise refusal
        kind = array_kind(leaf, registry)
        caps = engine.capabilities
        if kind is not None and kind != engine.name and kind not in caps.array_kinds:
            _refuse(plan, u, engine, registry, f"arrays of kind {kind!r}", "array_kinds", kind)
        if plan.active[u] and kind is not None and dtype_name(leaf) not in caps.dtypes:
            name = dtype_name(leaf)
            _refuse(plan, u, engine, registry, f"dtype {name}", "dtypes", name)
        accepted.add((key, cls, dtype))


def _refuse(
    plan: Plan, u: int, engine: Backend, registry: Registry, what: str, field: str, value: str
) -> None:
    leaf = plan.leaves[u]
    others = []
    for info in registry.infos():
        caps = info.capabilities
        usable = info.available and caps is not None and info.name != engine.name
        if usable and value in getattr(caps, field):
            others.append(repr(info.name))
    where = plan.path(*plan.first[u])
    declared = ", ".join(getattr(engine.capabilities, field))
    fix = (
        f"engines that take {what}: {', '.join(others)} (backend=...)"
        if others
        else "no installed engine takes it"
    )
    convert = "convert it (np.asarray(x), x.astype(...))" if field == "dtypes" else "convert it"
    raise UnsupportedError(
        f"{where} is {describe(leaf)}, but engine {engine.name!r} takes {field.replace('_', ' ')} "
        f"{declared} only. Fix: {convert}, or choose another engine -- {fix}."
    )
