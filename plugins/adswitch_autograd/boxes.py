"""The boxes adswitch traces with: autograd's ArrayBox, with numpy's write semantics.

HIPS autograd boxes are immutable: ``y[i] = v`` raises, and ``y += 1`` quietly rebinds
``y`` to a new box -- so another name for the old object (``z = y``) keeps the old value
where numpy would show the new one: a silently wrong number. While an adswitch trace is
active, every box autograd creates is a :class:`GuardedBox` instead, whose writes
(``y[i] = v``, ``y += v``...) are recorded by :mod:`.writes`. Differentiated arguments
are :class:`LeafBox` es. To let a write reach every view and alias of the written array,
each GuardedBox registers at creation under the numpy memory its value lives in
(:data:`MEMORY`). Its ``**``, reflected ``**`` (``2.0 ** e``) and ``**=`` are
``namespace.pow``, exact for nested derivatives in a traced exponent at ``e == 0``
(autograd's own ``power`` rule is not; see ``namespace``). Outside adswitch autograd is
untouched: stock ArrayBoxes keep autograd's operators.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np
from autograd.numpy.numpy_boxes import ArrayBox
from autograd.tracer import Box

__all__ = [
    "MEMORY",
    "LINKED",
    "VIEW_LINKS",
    "GuardedBox",
    "LeafBox",
    "guard_off",
    "guard_on",
    "mutation_message",
    "raw_value",
    "tracing",
]

_BOX_TYPES = Box.types

MEMORY: dict[int, list[weakref.ref[Any]]] = {}
"""id(numpy array owning the memory) -> weak references to the boxes whose values live
in it (the owner itself, views of it, aliases). Cleared when the outermost trace ends."""

_NDARRAY = np.ndarray
_GETITEM = ArrayBox.__getitem__
_REF = weakref.ref
_MEMORY_GET = MEMORY.get

LINKED: dict[int, list[tuple[weakref.ref[Any], weakref.ref[Any], Any]]] = {}
"""id(box) -> (weak box, weak view, positions) for the views that re-read their elements
from that box after a write (ids are reused: entries are checked against the weak box).
Cleared with MEMORY."""

VIEW_LINKS: dict[int, tuple[Any, Any, Any]] = {}
"""id(view box) -> (weak view, weak box it views, positions): a view that was written
through keeps writing through, though its value is now a copy. Cleared with MEMORY."""

_INPLACE = {
    "__iadd__": ("+=", "add"),
    "__isub__": ("-=", "subtract"),
    "__imul__": ("*=", "multiply"),
    "__itruediv__": ("/=", "true_divide"),
    "__ifloordiv__": ("//=", "floor_divide"),
    "__imod__": ("%=", "mod"),
    "__ipow__": ("**=", "power"),
    "__imatmul__": ("@=", "matmul"),
}


def mutation_message(operation: str, why: str) -> str:
    """The explanation every refused write carries: the engine, the operation, the fix."""
    return (
        f"autograd (HIPS) via adswitch cannot differentiate the write `{operation}`: {why}. "
        "Fix: build a new array instead (`y = y + v`, `xp.where(mask, v, y)`, "
        "`xp.concat`/`xp.stack` of the pieces), or write into a fresh buffer "
        "(`buf = xp.zeros_like(x)` or `buf = xp.asarray(y, copy=True)`, then `buf[i] = v`), "
        "or use an engine that records all mutation: backend='tape'."
    )


def raw_value(value: Any) -> Any:
    """The plain value under any number of boxes (at depth > 0 values are boxes of boxes)."""
    while type(value) in _BOX_TYPES:
        value = value._value
    return value


class GuardedBox(ArrayBox):  # type: ignore[misc]
    """An ``ArrayBox`` with numpy's write semantics (recorded) or a clear refusal."""

    __slots__ = ["__weakref__"]

    def __init__(self, value: Any, trace: int, node: Any) -> None:
        self._value = value  # type: ignore[misc]
        self._node = node  # type: ignore[misc]
        self._trace = trace  # type: ignore[misc]
        # Runs for every traced operation: kept to a few attribute and dict lookups.
        if type(value) is not _NDARRAY:
            while type(value) in _BOX_TYPES:
                value = value._value
            if type(value) is not _NDARRAY:
                return  # a scalar: immutable, nothing can view it
        base = value.base
        key = id(value) if base is None else id(base)
        refs = _MEMORY_GET(key)
        if refs is None:
            MEMORY[key] = [_REF(self)]
        else:
            refs.append(_REF(self))

    # autograd answers these through wrapped primitives (microseconds each); the front end
    # asks for them on every loss, so read them off the value directly.
    @property
    def shape(self) -> tuple[int, ...]:
        shape: tuple[int, ...] = getattr(self._value, "shape", ())
        return shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def dtype(self) -> np.dtype[Any]:
        dtype = getattr(self._value, "dtype", None)
        return np.result_type(self._value) if dtype is None else dtype

    def __setitem__(self, index: Any, value: Any) -> None:
        writes.write(self, index, value, "y[index] = value")

    def __getitem__(self, index: Any) -> Any:
        if getattr(self._value, "shape", None) == ():
            # autograd's indexing rule (numpy's add.at) fails on 0-d arrays: x[None],
            # x[...], x[()] of a 0-d array are reshapes of it.
            shape = np.empty(())[index].shape
            if math.prod(shape) == 1:
                import autograd.numpy as anp

                return anp.reshape(self, shape)
            return np.zeros(shape, dtype=self.dtype)
        return _GETITEM(self, index)

    # ``b ** e`` and ``2.0 ** e``: ArrayBox's operators call ``anp.power``, whose rule is
    # wrong for nested derivatives in a traced exponent at ``e == 0``; ``namespace.pow``
    # is exact there and is ``anp.power`` for a constant exponent.
    def __pow__(self, other: Any) -> Any:
        return _namespace.pow(self, other)

    def __rpow__(self, other: Any) -> Any:
        return _namespace.pow(other, self)


def _inplace_method(symbol: str, function_name: str) -> Any:
    def inplace(self: GuardedBox, other: Any) -> Any:
        import autograd.numpy as anp

        if function_name == "power":  # exact in a traced exponent, as ``**``
            result = _namespace.pow(self, other)
        else:
            result = getattr(anp, function_name)(self, other)
        raw = raw_value(self)
        if type(raw) is not np.ndarray:
            return result  # numpy scalars are immutable: Python rebinds, so do we
        if not np.can_cast(result.dtype, raw.dtype, casting="same_kind"):
            # numpy's in-place ufunc rule; a plain write would cast silently instead
            raise TypeError(
                f"Cannot cast {function_name} output from {result.dtype} to {raw.dtype} "
                f"with casting rule 'same_kind' (as numpy's `y {symbol} value`)"
            )
        writes.write(self, Ellipsis, result, f"y {symbol} value")
        return self

    inplace.__name__ = function_name
    return inplace


class LeafBox(GuardedBox):
    """A differentiated argument: the caller's array. Written like any traced array (the
    engine copies the final value back into the caller's array after the backward pass)
    when ``writable``: at the outermost call, for an array the caller could write."""

    __slots__ = ["writable"]


for _name, (_symbol, _function) in _INPLACE.items():
    setattr(GuardedBox, _name, _inplace_method(_symbol, _function))

# Registered as box types (``isbox``, trace-level lookup). GuardedBox replaces ArrayBox
# only while :func:`guard_on` is in force; boxed again by a nested call, either becomes
# a GuardedBox one level up.
for _cls in (GuardedBox, LeafBox):
    Box.types.add(_cls)
    Box.type_mappings[_cls] = GuardedBox

_ARRAY_TYPES = tuple(t for t, box in Box.type_mappings.items() if box is ArrayBox)
_MAPPINGS = Box.type_mappings
_depth = 0


def guard_on() -> None:
    """Make autograd box every array as a :class:`GuardedBox` until :func:`guard_off`.

    Re-entrant (nested adswitch calls): only the outermost level swaps and restores.
    Plain functions rather than a context manager: this runs on every gradient call.
    """
    global _depth
    if not _depth:
        for array_type in _ARRAY_TYPES:
            _MAPPINGS[array_type] = GuardedBox
    _depth += 1


def guard_off() -> None:
    """Undo one :func:`guard_on`; the outermost restores autograd's own ``ArrayBox``."""
    global _depth
    _depth -= 1
    if not _depth:
        for array_type in _ARRAY_TYPES:
            _MAPPINGS[array_type] = ArrayBox
        MEMORY.clear()
        LINKED.clear()
        VIEW_LINKS.clear()


def tracing() -> bool:
    """Whether an adswitch autograd trace is active (calls hold the engine's lock)."""
    return _depth > 0


from . import namespace as _namespace  # noqa: E402  (used at call time only)
from . import writes  # noqa: E402  (writes builds on the classes above)
