"""Which traced arrays see which memory, so that a write reaches every view numpy's would.

Every :class:`~adswitch_autograd.tracing.boxes.GuardedBox` registers at creation under the numpy
array owning its memory (:data:`~adswitch_autograd.tracing.boxes.MEMORY`). A write replaces the
written box's value by a new array (see :mod:`.writes`); the live boxes that viewed the
old one -- views (``y[0]``, ``y.T``, reshapes) and aliases -- are then *refreshed*: they
re-read their elements from the new value, as a traced read, and stay linked to it by
their element positions (:data:`~adswitch_autograd.tracing.boxes.VIEW_LINKS`). A write into such
a view goes to the array it views. Views whose layout cannot be mapped (the viewed array
is not C-contiguous) are reported as ``None`` so that the write is refused.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
from autograd.tracer import Box

from ..tracing.boxes import LINKED, MEMORY, VIEW_LINKS, raw_value

__all__ = ["Unmapped", "moved", "refresh", "viewed", "watchers"]

_BOX_TYPES = Box.types

ALIAS = ()
"""Positions marker: the box holds the very same array (it takes the new value whole)."""

Positions = tuple[np.ndarray, ...]


class Unmapped(Exception):
    """A view whose elements cannot be located in the array it views."""


def viewed(box: Any, raw: np.ndarray) -> tuple[Any, Positions] | None:
    """``(owner box, positions of box's elements in it)`` when ``box`` is a view, else None.

    Raises:
        Unmapped: ``box`` views memory whose traced owner or layout cannot be determined.
    """
    link = VIEW_LINKS.get(id(box))
    if link is not None:
        view, owner, positions = link[0](), link[1](), link[2]
        if view is box and owner is not None:
            return owner, positions
    if raw.base is None:
        return None
    owner = _owner_of(box, raw.base)
    if owner is None:
        if _seen_by_others(box, raw.base):
            raise Unmapped
        return None  # a view of a temporary nobody else sees: as good as its own array
    covered = _covered(raw, raw_value(owner))
    if covered is None:
        raise Unmapped
    return owner, np.unravel_index(covered, raw_value(owner).shape)


def _seen_by_others(box: Any, base: Any) -> bool:
    """Whether a live box other than ``box`` (and the boxes inside it) sees ``base``."""
    own = set()
    inner = box
    while type(inner) in _BOX_TYPES:
        own.add(id(inner))
        inner = inner._value
    for ref in MEMORY.get(id(base), []):
        other = ref()
        if other is None or id(other) in own:
            continue
        other_raw = raw_value(other)
        if type(other_raw) is np.ndarray and (other_raw is base or other_raw.base is base):
            return True
    return False


def watchers(
    box: Any, raw: np.ndarray, exclude: frozenset[int]
) -> list[tuple[Any, Positions | None]]:
    """Live boxes other than ``box`` (and the boxes inside it) that see ``raw``'s memory,
    with their element positions in it (``ALIAS`` for the same array, ``None``: unknown)."""
    own = set(exclude)
    inner = box
    while type(inner) in _BOX_TYPES:
        own.add(id(inner))
        inner = inner._value
    found: list[tuple[Any, Positions | None]] = []
    alive = [ref for ref in MEMORY.get(id(raw), []) if ref() is not None]
    MEMORY[id(raw)] = alive
    for ref in alive:
        other = ref()
        if other is None or id(other) in own or other._trace < box._trace:
            # Lower levels: the boxes an enclosing trace made while this one computed --
            # wrapped by boxes of this level, which are the ones to refresh.
            continue
        other_raw = raw_value(other)
        if type(other_raw) is not np.ndarray or not (other_raw is raw or other_raw.base is raw):
            continue  # registered under an id that a dead array once had: not ours
        if other._trace > box._trace:
            found.append((other, None))  # a nested trace's view: cannot be re-read here
        elif other_raw is raw:
            found.append((other, ALIAS))
        else:
            covered = _covered(other_raw, raw)
            positions = None if covered is None else np.unravel_index(covered, raw.shape)
            found.append((other, positions))
    for owner_ref, view_ref, positions in LINKED.get(id(box), []):
        view = view_ref()
        if owner_ref() is box and view is not None and id(view) not in own:
            found.append((view, positions))
    return _unique(found)


def _unique(found: list[tuple[Any, Positions | None]]) -> list[tuple[Any, Positions | None]]:
    seen: set[int] = set()
    out = []
    for other, positions in found:
        if id(other) not in seen:
            seen.add(id(other))
            out.append((other, positions))
    return out


def moved(box: Any) -> None:
    """``box`` now holds a new array: register it there."""
    MEMORY.setdefault(id(raw_value(box)), []).append(weakref.ref(box))


def refresh(view: Any, owner: Any, positions: Positions) -> None:
    """Make ``view`` re-read its elements from ``owner``'s current value (a traced read)."""
    if positions is ALIAS:
        view._value, view._node = owner._value, owner._node
        MEMORY.setdefault(id(raw_value(view)), []).append(weakref.ref(view))
        return
    current = owner[positions]
    view._value, view._node = current._value, current._node
    link = VIEW_LINKS.get(id(view))
    if link is None or link[0]() is not view or link[1]() is not owner:
        VIEW_LINKS[id(view)] = (weakref.ref(view), weakref.ref(owner), positions)
        entries = LINKED.setdefault(id(owner), [])
        entries[:] = [e for e in entries if e[0]() is not None and e[1]() is not None]
        entries.append((weakref.ref(owner), weakref.ref(view), positions))
    MEMORY.setdefault(id(raw_value(view)), []).append(weakref.ref(view))


def _owner_of(view: Any, base: Any) -> Any:
    """The one live box at the view's level whose value is the array ``base``, or None."""
    owners = {}
    for ref in MEMORY.get(id(base), []):
        other = ref()
        if other is not None and other._trace == view._trace and raw_value(other) is base:
            owners[id(other)] = other  # a box may be registered more than once
    return next(iter(owners.values())) if len(owners) == 1 else None


def _covered(view: np.ndarray, base: np.ndarray) -> np.ndarray | None:
    """Flat positions in the C-contiguous ``base`` of each element of ``view``."""
    item = base.itemsize
    offset = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    if view.itemsize != item or offset % item or not base.flags.c_contiguous:
        return None
    if any(stride % item for stride in view.strides):
        return None
    flat = np.arange(base.size, dtype=np.int64)
    covered: np.ndarray = np.lib.stride_tricks.as_strided(
        flat[offset // item :],
        shape=view.shape,
        strides=tuple(stride // item * flat.itemsize for stride in view.strides),
    ).copy()
    return covered
