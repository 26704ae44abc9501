"""The box types adswitch traces with, each registered under the numpy memory it lives in.

HIPS autograd boxes are immutable: ``y[i] = v`` raises, and ``y += 1`` quietly rebinds
``y`` to a new box -- so another name for the old object (``z = y``) keeps the old value
where numpy would show the new one: a silently wrong number. While an adswitch trace is
active (:func:`guard_on`), every box autograd creates is a :class:`GuardedBox` instead;
differentiated arguments are :class:`LeafBox` es. To let a write reach every view and
alias of the written array, each GuardedBox registers at creation under the numpy memory
its value lives in (:data:`MEMORY`). The classes here are bare: their write and power
operators (``y[i] = v``, ``y += v``, ``**``) are attached by :mod:`.operators`, which the
engine imports. Outside adswitch autograd is untouched: stock ArrayBoxes keep autograd's
operators.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import autograd.numpy as anp
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


def raw_value(value: Any) -> Any:
    """The plain value under any number of boxes (at depth > 0 values are boxes of boxes)."""
    while type(value) in _BOX_TYPES:
        value = value._value
    return value


class GuardedBox(ArrayBox):  # type: ignore[misc]
    """An ``ArrayBox`` that registers under the memory its value lives in.

    Its writes, in-place operators and ``**`` are attached by :mod:`.operators`.
    """

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

    def __getitem__(self, index: Any) -> Any:
        if getattr(self._value, "shape", None) == ():
            # autograd's indexing rule (numpy's add.at) fails on 0-d arrays: x[None],
            # x[...], x[()] of a 0-d array are reshapes of it.
            shape = np.empty(())[index].shape
            if math.prod(shape) == 1:
                return anp.reshape(self, shape)
            return np.zeros(shape, dtype=self.dtype)
        return _GETITEM(self, index)


class LeafBox(GuardedBox):
    """A differentiated argument: the caller's array. Written like any traced array (the
    engine copies the final value back into the caller's array after the backward pass)
    when ``writable``: at the outermost call, for an array the caller could write."""

    __slots__ = ["writable"]


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
