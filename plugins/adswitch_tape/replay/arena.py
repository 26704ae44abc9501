"""Buffers a replayed program owns across calls, so that a call does not allocate them anew.

A call of a plain numpy gradient allocates its large temporaries and frees them at the
end; glibc then gives the top of the heap back to the OS and the next call page-faults it
in again (hundreds of faults for a small network: much of its time). A replayed program
writes the results of its large ufuncs and matrix products, and its hottest rules'
temporaries, into buffers of an :class:`Arena` instead (``out=``), kept from one call to
the next.

Safety rests on reference counts, not on knowing what escaped: :meth:`Arena.take` hands
out a buffer only when nothing but the arena refers to it (no local, no tape entry, no
view of it, no result the caller holds), and :meth:`Arena.forget` drops the buffers the
call returns (a gradient, an output) from the arena: they are the caller's arrays from
then on, never written again. A call holds its arena alone (:class:`Arenas` lends one per
running call), so threads never share a buffer.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["Arena", "Arenas"]


def _unreferenced_count() -> int:
    """``sys.getrefcount`` of a buffer held by the arena's list only, as :meth:`Arena.take`
    sees it (measured: it varies across Pythons)."""
    bufs = [np.empty(1)]
    for b in bufs:
        return sys.getrefcount(b)
    raise AssertionError


_FREE = _unreferenced_count()


class Arena:
    """Buffers by ``(shape, dtype)``; see the module doc."""

    __slots__ = ("buffers",)

    def __init__(self) -> None:
        self.buffers: dict[tuple[tuple[int, ...], Any], list[np.ndarray]] = {}

    def take(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """A buffer of ``shape`` and ``dtype`` nothing else refers to (its content is
        garbage: write all of it)."""
        key = (shape, dtype)
        bufs = self.buffers.get(key)
        if bufs is None:
            bufs = self.buffers[key] = []
        for b in bufs:
            if sys.getrefcount(b) == _FREE:
                return b
        b = np.empty(shape, dtype=dtype)
        bufs.append(b)
        return b

    def forget(self, arrays: Iterable[Any]) -> None:
        """Drop from the arena every buffer that one of ``arrays`` is or views."""
        owned = {id(b): b for bufs in self.buffers.values() for b in bufs}
        if not owned:
            return
        gone: set[int] = set()
        for a in arrays:
            while isinstance(a, np.ndarray):
                if id(a) in owned:
                    gone.add(id(a))
                a = a.base
        if gone:
            for bufs in self.buffers.values():
                bufs[:] = [b for b in bufs if id(b) not in gone]


class Arenas:
    """The arenas of one program: one lent to each running call (see the module doc)."""

    __slots__ = ("_idle", "_lock")

    KEEP = 2  # idle arenas kept (more only while that many calls run at once)

    def __init__(self) -> None:
        self._idle: list[Arena] = []
        self._lock = threading.Lock()

    def lend(self) -> Arena:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return Arena()

    def give_back(self, arena: Arena) -> None:
        with self._lock:
            if len(self._idle) < self.KEEP:
                self._idle.append(arena)
