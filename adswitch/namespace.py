"""``array_namespace``: the Array API namespace for whatever arrays these are."""

from __future__ import annotations

from typing import Any

import numpy as np

from adswitch.errors import AdswitchError
from adswitch.registry import default_registry
from adswitch.spec import Backend

__all__ = ["array_namespace"]

_SCALARS = (int, float, complex, bool, type(None))
_NUMPY_KINDS = (np.ndarray, np.generic, *_SCALARS)
# Exact types found to be numpy's or Python's (a type test is cheaper than isinstance
# against a tuple, which this function would otherwise pay on every engine array).
_NUMPY_TYPES: set[type] = {np.ndarray, *_SCALARS}
# adswitch's own traced arrays (``ad.sparsity``'s tracer): type -> its namespace, filled in
# by the module defining the type (no engine owns them).
OWN_NAMESPACES: dict[type, Any] = {}


def array_namespace(*arrays: Any) -> Any:
    """The Array API namespace for ``arrays`` -- numpy arrays, engine arrays, or the traced
    values an engine passes to a function being differentiated.

    Python scalars and ``None`` are ignored; numpy arrays mixed with one engine's arrays
    give that engine's namespace (numpy constants are allowed in traced expressions); with
    only numpy arrays (or none) the result is ``numpy`` itself (numpy >= 2.1 follows the
    standard).

    Args:
        *arrays: the arrays whose namespace is wanted.

    Returns:
        A module-like namespace (``xp``) with the standard's functions.

    Raises:
        AdswitchError: arrays of two different engines are mixed, or an array's type
            belongs to no installed engine.

    Example:
        >>> import adswitch as ad, numpy as np
        >>> def f(x):
        ...     xp = ad.array_namespace(x)
        ...     return xp.sum(xp.sin(x) * x)
        >>> float(f(np.zeros(3)))
        0.0
    """
    owner: Backend | None = None
    registry = None
    for x in arrays:
        cls = type(x)
        if cls in _NUMPY_TYPES:
            continue
        if isinstance(x, _NUMPY_KINDS):
            _NUMPY_TYPES.add(cls)
            continue
        own = OWN_NAMESPACES.get(cls)
        if own is not None:
            return own
        if registry is None:
            registry = default_registry()
        found = registry.owner(x)
        if found is None:
            raise AdswitchError(_not_an_array(x, registry.listing()))
        if owner is not None and found is not owner:
            raise AdswitchError(
                f"array_namespace got arrays of engines {owner.name!r} and {found.name!r}; "
                "convert them to one kind first."
            )
        owner = found
    if owner is None:
        return np
    return owner.namespace(arrays)


def _not_an_array(x: Any, listing: str) -> str:
    name = f"{type(x).__module__}.{type(x).__qualname__}"
    if isinstance(x, (list, tuple, dict, set, frozenset)):
        return (
            f"array_namespace takes arrays, not a {type(x).__name__}; convert it first "
            "(np.asarray(x)), or pass the arrays it holds."
        )
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return (
            f"no installed engine owns arrays of type {name}; {listing}. Use arrays of one "
            "of them (or numpy), or install the plugin of the engine these arrays belong to."
        )
    return f"array_namespace takes arrays; got {name}, which is not one."
