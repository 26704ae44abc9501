"""Activity wrappers: how each argument of a differentiated function is treated.

* plain argument -- differentiated; its gradient comes back as a new tree of the same type.
* ``Duplicated(val, dval)`` -- differentiated; the gradient is *added* into the shadow
  ``dval`` in place (zeroed first unless ``zero=False``), and the result entry *is* ``dval``.
* ``Const(val)`` -- not differentiated; the result entry is ``None``.
* ``Active(val)`` -- exists only to give a clear error: Enzyme uses it for scalars
  returned by value; in adswitch a plain argument already does that.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from adswitch.errors import ActivityError
from adswitch.zeros import make_zero

__all__ = ["Duplicated", "Const", "Active"]

T = TypeVar("T")


class Duplicated(Generic[T]):
    """An argument whose gradient is accumulated into a shadow you own.

    Args:
        val: the argument (an array or any tree of arrays, e.g. a model).
        dval: the shadow, with the same structure, shapes and dtypes; ``None`` makes one
            with :func:`adswitch.make_zero` (ties in ``val`` stay tied in the shadow).

    Example:
        >>> import adswitch as ad, numpy as np
        >>> w = ad.Duplicated(np.array([1.0, 2.0]))
        >>> g = ad.gradient(lambda w: ad.array_namespace(w).sum(w * w), w)
        >>> g[0] is w.dval, w.dval.tolist()
        (True, [2.0, 4.0])
    """

    __slots__ = ("dval", "val")

    def __init__(self, val: T, dval: T | None = None) -> None:
        if isinstance(val, (Duplicated, Const, Active)):
            raise ActivityError(
                f"Duplicated(...) was given a {type(val).__name__}(...); wrap the plain "
                "value once: Duplicated(x) or Const(x), not both."
            )
        if dval is None:
            dval = make_zero(val)
        self.val = val
        self.dval = dval

    def __repr__(self) -> str:
        return f"Duplicated({self.val!r}, {self.dval!r})"


class Const(Generic[T]):
    """An argument that is passed through undifferentiated (its gradient entry is ``None``).

    Example:
        >>> import adswitch as ad, numpy as np
        >>> f = lambda w, x: ad.array_namespace(w).sum(w * x)
        >>> ad.gradient(f, np.ones(2), ad.Const(np.array([3.0, 4.0])))
        (array([3., 4.]), None)
    """

    __slots__ = ("val",)

    def __init__(self, val: T) -> None:
        if isinstance(val, (Duplicated, Const, Active)):
            raise ActivityError(
                f"Const(...) was given a {type(val).__name__}(...); wrap the plain value once."
            )
        self.val = val

    def __repr__(self) -> str:
        return f"Const({self.val!r})"


class Active(Generic[T]):
    """Not supported: raises ``ActivityError`` when used in a call.

    Enzyme marks scalars returned by value as ``Active``; adswitch returns a gradient
    for every plain argument already, so pass the value plain instead.
    """

    __slots__ = ("val",)

    def __init__(self, val: T) -> None:
        self.val = val

    def __repr__(self) -> str:
        return f"Active({self.val!r})"


def describe(arg: Any) -> str:
    return type(arg).__name__ if isinstance(arg, (Duplicated, Const, Active)) else "plain"
