"""The array methods users reach for out of habit -- ``x.sum()``, ``x.reshape(...)``,
``x.dot(y)`` -- on traced arrays: those of the adapter kit (``adswitch.spec.array_methods``),
each the namespace function of the same meaning, so differentiated the same way; any other
public attribute is an ``UnsupportedError`` naming the ``xp`` function to use.

Attached to the traced array by :func:`attach`, which the namespace calls when it is
imported (the methods are the namespace's functions).
"""

from __future__ import annotations

from types import ModuleType

from adswitch.spec import array_methods

from ..core import Tracer

__all__ = ["attach"]


def attach(xp: ModuleType) -> None:
    """Give the traced array the methods it lacks (the namespace ``xp``'s functions)."""
    for name, method in array_methods(xp, "tape").items():
        if name == "__getattr__" or not hasattr(Tracer, name):
            setattr(Tracer, name, method)
