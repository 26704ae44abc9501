"""One run of ``f`` on a new trace level with its active leaves traced: what every
primitive (``value_and_grad``, ``vjp``, ``vjp_apply``, ``jvp``) shares.

The run opens the level with the primitive's node type, freezes the caller's numpy
leaves for the duration of ``f`` (see :mod:`.translate`), wraps each active leaf in a
:class:`~.boxes.LeafBox` on its own root, calls ``f`` and turns autograd's failures into
adswitch errors. Writes into a differentiated argument go to its box; after the
derivatives exist, :func:`write_back` leaves the caller's arrays as a plain call of
``f`` would.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np

from ..mutation.translate import freeze, thaw, translate, unchanged
from . import levels
from .boxes import LeafBox, guard_off, guard_on

__all__ = ["run", "write_back"]


def run(
    fn: Callable[[list[Any]], Any],
    leaves: Sequence[Any],
    active: Sequence[bool],
    new_root: Callable[[int], Any],
    constant_root: Callable[[], Any],
    outermost: bool,
    private: Collection[int] | None = None,
) -> tuple[int, list[Any], dict[Any, int], Any]:
    """Call ``fn`` with the active leaves traced on a new level.

    Args:
        fn: the front end's closure.
        leaves: what ``fn`` gets (boxed where active).
        active: where to box.
        new_root: ``new_root(i)``, the root node of active leaf ``i``.
        constant_root: makes a root without derivative of the same node type (for the
            fresh buffers ``f`` creates).
        outermost: no adswitch call encloses this one; only then may ``f`` write its
            differentiated arguments (the caller's arrays).
        private: ``leaves`` are read-only copies the caller made (nothing to freeze);
            the ids of those ``f`` may write (copied back by :func:`write_back`).

    Returns:
        ``(level, values, roots, result)``: the level, what ``fn`` got (the boxes hold
        the final values of written arguments), ``{root node: leaf index}``, and ``fn``'s
        result.
    """
    roots: dict[Any, int] = {}
    guard_on()
    level = levels.open_level(constant_root)
    if private is None:
        frozen, values, could_write = freeze(leaves)
        writable: Collection[int] = could_write if outermost else ()
    else:
        frozen, values, could_write = [], list(leaves), set()
        writable = private if outermost else ()
    handed = list(values)  # what f gets, before boxing: the leaves or copies of them
    try:
        for i, is_active in enumerate(active):
            if is_active:
                node = new_root(i)
                given = values[i]
                box = values[i] = LeafBox(given, level, node)
                # Only the outermost call may write its arguments: they are the caller's
                # arrays, copied back after the derivatives exist (see write_back).
                box.writable = id(given) in writable
                roots[node] = i
        result = fn(values)
        unchanged(leaves, handed)
    except Exception as exc:
        error = translate(exc, bool(could_write) or private is not None)
        if error is None:
            raise
        raise error from exc
    finally:
        if frozen:
            thaw(frozen)
        levels.close_level()
        guard_off()
    return level, values, roots, result


def write_back(
    targets: Sequence[Any], seen: Sequence[Any], values: Sequence[Any], roots: dict[Any, int]
) -> None:
    """Copy the final value of every written argument into the caller's array.

    Args:
        targets: the caller's leaves.
        seen: what ``f`` got for them (``targets`` themselves, or private copies).
        values: the run's values (boxes at the active positions).
        roots: the run's roots.
    """
    for i in roots.values():
        final = values[i]._value
        if final is not seen[i] and type(targets[i]) is np.ndarray:
            np.copyto(targets[i], final)
