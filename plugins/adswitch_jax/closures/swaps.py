"""Swapping jax's traced values in for the arrays ``f`` captures, while jax traces it.

A compiled program takes the floating arrays ``f`` reads from its closure and defaults
as inputs (:mod:`adswitch_jax.closures.captures`); while jax traces ``f``, the closure cells and
defaults that hold them hold the traced values instead, and get their arrays back right
after, whatever happens. The swap is done under a lock, and a counter bumped before and
after lets a walk in another thread tell that it may have seen traced values (it then
walks again under the lock). Code outside adswitch that calls ``f`` from another thread
while it is being traced would see them: the one window in which a closure is not as
the user left it. No jax import here.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from adswitch_jax.closures.captures import Walk, walk

__all__ = ["stable_walk", "substituted", "swaps"]

_lock = threading.RLock()
_swaps = 0  # bumped before and after every swap: odd while values are swapped in


def stable_walk(func: Any) -> Walk:
    """:func:`walk`, never seeing the traced values another thread has swapped in."""
    before = _swaps
    if not before & 1:
        found = walk(func)
        if _swaps == before:
            return found
    with _lock:
        return walk(func)


def _rebuild(template: Any, values: Any) -> Any:
    tag = template[0]
    if tag == "L":
        return values[template[1]]
    if tag == "K":
        return template[1]
    if tag == "T":
        return tuple(_rebuild(t, values) for t in template[1])
    return dict(zip(template[1], (_rebuild(t, values) for t in template[2])))


def _swap(slot: tuple[Any, ...], new: Any) -> Any:
    kind, holder = slot[0], slot[1]
    if kind == "cell":
        old = holder.cell_contents
        holder.cell_contents = new
    elif kind == "defaults":
        old = holder.__defaults__
        holder.__defaults__ = new
    else:
        old = holder.__kwdefaults__
        holder.__kwdefaults__ = new
    return old


@contextmanager
def substituted(slots: list[tuple[Any, ...]], values: Any) -> Iterator[None]:
    """Within the block, the lifted arrays' places hold ``values`` (jax's traced values)
    instead; everything is put back after, whatever happens.

    Args:
        slots: :attr:`Walk.slots` of the walk of the function being traced.
        values: one value per lifted array, in order.
    """
    global _swaps
    if not slots:
        yield
        return
    with _lock:
        _swaps += 1
        done: list[tuple[tuple[Any, ...], Any]] = []
        try:
            for slot in slots:
                done.append((slot, _swap(slot, _rebuild(slot[2], values))))
            yield
        finally:
            for slot, old in reversed(done):
                _swap(slot, old)
            _swaps += 1


def swaps() -> int:
    """The swap counter (odd while some thread has traced values swapped in)."""
    return _swaps
