"""Trace levels: one per differentiation call, each with its tape and its locks.

One differentiation call owns one :class:`Trace`: a level (a number from a global
counter, so an inner call's level is higher than its enclosing call's) and a tape, the
list of recorded operations in the order they ran (see ``recording`` for how an
operation records itself, ``sweep`` for how the tape is read back). Level 0 is
:data:`FREE`, the level of fresh buffers, on which nothing is recorded.

Tape state is per call: a trace belongs to one call in one thread and tracers point at
their trace, so concurrent calls in different threads share no tape (the level counter
is an ``itertools.count``, atomic under the GIL). The one shared table is the count of
calls holding each locked numpy array, behind a ``threading.Lock``.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

import numpy as np

from adswitch.errors import MutationError

__all__ = ["FREE", "Entry", "Trace", "escaped", "role_text"]

_LEVELS = itertools.count(1)

# Every array some call locked: id -> [array, number of calls holding it, was writeable].
# Shared by all threads (an array can be an argument of concurrent calls), hence the lock.
_LOCKS: dict[int, list[Any]] = {}
_LOCKS_GUARD = threading.Lock()

Entry = tuple[Any, tuple[Any, ...], Any, dict[str, Any] | None, int | tuple[int | None, ...]]
"""A tape entry ``(prim, args, ans, kw, parents)``: ``parents`` holds a tape slot per
argument traced at this level (``None`` for constants), or is the bare slot (an ``int``)
when only the first argument is traced -- the common case. ``args``/``ans`` hold only
what the primitive's rules read (``Prim.keep_args``/``keep_ans``: values, shapes or
``None``), so the tape does not keep dead intermediates alive."""


class Trace:
    """One differentiation call: its level, its tape, the numpy constants it locked."""

    __slots__ = ("level", "live", "locked", "recording", "tape")

    def __init__(self) -> None:
        self.level = next(_LEVELS)
        self.tape: list[Entry | None] = []  # None: a leaf, or an entry already swept
        self.live = True
        # While ``f`` runs for a prepared call that may be replayed: the object told of
        # every operation recorded (``op``) and every read of a traced value (``read``).
        self.recording: Any = None
        # id -> (array, role); role "" for an array that was read-only before any call
        # locked it. Arrays are kept so that their ids stay unique.
        self.locked: dict[int, tuple[np.ndarray, Any]] = {}

    def guard(self, array: np.ndarray, role: Any) -> None:
        """Lock ``array`` (and the arrays it views) read-only until the call ends, so that
        a write by ``f`` into an array the backward pass will read fails loudly instead
        of corrupting the gradient. Locks are counted across calls and threads: an
        array stays locked until the last call that needs it ends, and one that was
        read-only already is left so. ``role`` says what the array is to the backward
        pass, for the error message (a string, or a tuple formatted by :func:`role_text`
        only when the error is raised)."""
        locked = self.locked
        a: Any = array
        with _LOCKS_GUARD:
            while isinstance(a, np.ndarray):
                key = id(a)
                if key in locked:
                    break
                entry = _LOCKS.get(key)
                if entry is None:
                    writeable = a.flags.writeable
                    entry = _LOCKS[key] = [a, 1, writeable]
                    if writeable:
                        a.setflags(write=False)  # (cheaper than through a flags object)
                else:
                    entry[1] += 1
                locked[key] = (a, role if entry[2] else "")
                a = a.base

    def close(self) -> None:
        """End the call: release its locks (restoring owners before their views, as
        numpy refuses the reverse) and refuse further recording."""
        self.live = False
        locked = self.locked
        if not locked:
            return
        release = []
        with _LOCKS_GUARD:
            for key in locked:
                entry = _LOCKS[key]
                entry[1] -= 1
                if entry[1] == 0:
                    del _LOCKS[key]
                    if entry[2]:
                        release.append(entry[0])
            if len(release) > 1:  # owners (no base: the common case) first, then views
                views = [a for a in release if a.base is not None]
                if views:
                    owners = [a for a in release if a.base is None]
                    release = owners + sorted(views, key=_view_depth)
            for array in release:
                array.setflags(write=True)
        locked.clear()


def role_text(role: Any) -> str:
    """The text of a lock's role (see :meth:`Trace.guard`)."""
    if isinstance(role, tuple):
        return "differentiated argument (leaf {}, shape {})".format(*role)
    return str(role)


def _view_depth(array: np.ndarray) -> int:
    depth = 0
    while isinstance(array.base, np.ndarray):
        array, depth = array.base, depth + 1
    return depth


class _Free(Trace):
    """The level below every call (0): fresh buffers from ``xp.zeros``/``ones``/``full``...
    are tracers of this level, so that a later write of a traced value into them is
    recorded (the buffer then moves to the writer's level). Nothing is ever recorded on
    it and it locks nothing, so one instance serves every thread."""

    __slots__ = ()

    def __init__(self) -> None:
        self.level = 0
        self.tape = []
        self.live = True
        self.locked = {}
        self.recording = None

    def guard(self, array: np.ndarray, role: Any) -> None:
        return None

    def close(self) -> None:
        return None


FREE: Trace = _Free()


def escaped(name: str) -> MutationError:
    return MutationError(
        f"tape: `{name}` was applied to a traced value from a gradient call that has "
        "already returned (stored in a global, a closure or an outer object, or an "
        "outer array written with a value traced by an inner call). Fix: return the "
        "value from the function instead of keeping it, and pass it in as an argument."
    )
