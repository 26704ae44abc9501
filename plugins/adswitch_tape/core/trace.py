"""Trace levels: one per differentiation call, each with its tape and its locks.

One differentiation call owns one :class:`Trace`: a level (a number from a global
counter, so an inner call's level is higher than its enclosing call's) and a tape, the
list of recorded operations in the order they ran (see ``recording`` for how an
operation records itself, ``sweep`` for how the tape is read back). Level 0 is
:data:`FREE`, the level of fresh buffers, on which nothing is recorded.

Tape state is per call: a trace belongs to one call in one thread and tracers point at
their trace, so concurrent calls in different threads share no tape (the level counter
is an ``itertools.count``, atomic under the GIL). The shared tables -- the count of
calls holding each locked numpy array, and the views waiting for another call to
release their base -- are behind a ``threading.Lock``. An array numpy could not make
writeable again is never locked: the call reads a private copy (``Trace.guard``).
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

import numpy as np

from adswitch.errors import MutationError
from adswitch.spec import restorable as shared_restorable
from adswitch.spec import same_contents

__all__ = ["FREE", "Entry", "Trace", "escaped", "restorable", "role_text"]

_LEVELS = itertools.count(1)

# Every array some call locked: id -> [array, number of calls holding it, was writeable].
# Shared by all threads (an array can be an argument of concurrent calls), hence the lock.
_LOCKS: dict[int, list[Any]] = {}
_LOCKS_GUARD = threading.Lock()
# Views released while an array they view is still locked by another call (numpy makes a
# view writeable only while its base is): id -> view, made writeable by a later ``close``.
_PENDING: dict[int, np.ndarray] = {}

Entry = tuple[Any, tuple[Any, ...], Any, dict[str, Any] | None, int | tuple[int | None, ...]]
"""A tape entry ``(prim, args, ans, kw, parents)``: ``parents`` holds a tape slot per
argument traced at this level (``None`` for constants), or is the bare slot (an ``int``)
when only the first argument is traced -- the common case. ``args``/``ans`` hold only
what the primitive's rules read (``Prim.keep_args``/``keep_ans``: values, shapes or
``None``), so the tape does not keep dead intermediates alive."""


class Trace:
    """One differentiation call: its level, its tape, the numpy constants it locked."""

    __slots__ = ("copies", "level", "live", "locked", "recording", "tape")

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
        # id -> (caller's array, its private copy, role) for the arrays ``guard`` could
        # not lock.
        self.copies: dict[int, tuple[np.ndarray, np.ndarray, Any]] = {}

    def guard(self, array: np.ndarray, role: Any) -> np.ndarray:
        """Lock ``array`` (and the arrays it views) read-only until the call ends, so that
        a write by ``f`` into an array the backward pass will read fails loudly instead
        of corrupting the gradient, and return the array the tape is to keep.

        That is ``array`` itself, or -- where numpy could not make it writeable again
        after the call (see :func:`restorable`: a view of a torch tensor, an array scipy
        wraps around C memory) -- a private read-only copy (one per array and call), so
        that the caller's flags stay as they were. The tape reads the copy, never the
        caller's memory; a write by ``f`` into the caller's array, which the lock would
        have refused, is found by comparing the two and refused at :meth:`close`.

        Locks are counted across calls and threads: an array stays locked until the last
        call that needs it ends, and one that was read-only already is left so. ``role``
        says what the array is to the backward pass, for the error message (a string,
        or, for a differentiated argument, a tuple formatted by :func:`role_text` only
        when the error is raised)."""
        copies = self.copies
        if copies:  # (an array with a copy is not in ``locked``: each use comes here)
            kept = copies.get(id(array))
            if kept is not None:
                return kept[1]
        locked = self.locked
        # Decided before anything is locked: whether a view can be restored depends on
        # the flags of the arrays it views as they are now.
        if not _lockable(array, locked):
            copy = np.array(array, copy=True)
            copy.setflags(write=False)  # (private: never made writeable again)
            copies[id(array)] = (array, copy, role)  # (``array`` kept: its id stays unique)
            return copy
        a: Any = array
        with _LOCKS_GUARD:
            while isinstance(a, np.ndarray):
                key = id(a)
                if key in locked:
                    break
                entry = _LOCKS.get(key)
                if entry is None:
                    # a pending view is read-only only because of an earlier call
                    writeable = a.flags.writeable or _PENDING.pop(key, None) is not None
                    entry = _LOCKS[key] = [a, 1, writeable]
                    if writeable:
                        a.setflags(write=False)  # (cheaper than through a flags object)
                else:
                    entry[1] += 1
                locked[key] = (a, role if entry[2] else "")
                a = a.base
        return array

    def close(self) -> None:
        """End the call: release its locks (restoring owners before their views, as
        numpy refuses the reverse), refuse further recording, then raise ``MutationError``
        if ``f`` wrote into an array the tape needs that could not be locked."""
        self.live = False
        if self.locked:
            self._release()
        if self.copies:
            _check_copies(self.copies)

    def _release(self) -> None:
        locked = self.locked
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
                try:
                    array.setflags(write=True)
                except ValueError:  # it views an array another call still holds
                    _PENDING[id(array)] = array
            if _PENDING:
                _retry_pending()
        locked.clear()


def role_text(role: Any) -> str:
    """The text of a lock's role (see :meth:`Trace.guard`)."""
    if isinstance(role, tuple):
        return "differentiated argument (leaf {}, shape {})".format(*role)
    return str(role)


def _check_copies(copies: dict[int, tuple[np.ndarray, np.ndarray, Any]]) -> None:
    """Refuse a write by ``f`` into a caller's array the tape read through a copy: the
    lock (see :meth:`Trace.guard`) would have refused it at the write."""
    changed = [
        (copy.shape, role)
        for array, copy, role in copies.values()
        if not same_contents(array, copy)
    ]
    copies.clear()
    if changed:
        shape, role = changed[0]
        raise MutationError(
            f"tape: f wrote in place into a numpy array (shape {shape}) that the backward "
            f"pass needs: it is {role_text(role)}. The array could not be locked "
            "read-only during the call (numpy cannot make it writeable again: its memory "
            "belongs to another object, e.g. a torch tensor or C code), so the write was "
            "found only when f returned; it would make the gradient wrong. Fix: write "
            "into a copy (`a = a.copy()` before writing), or build the new value without "
            "mutation (xp.where, xp.concat), or pass the array as an argument and write "
            "through the traced array f is given (writes through traced arrays are "
            "differentiated)."
        )


def _retry_pending() -> None:
    """Make writeable the pending views whose bases are writeable again (under the lock)."""
    for key, array in sorted(_PENDING.items(), key=lambda item: _view_depth(item[1])):
        try:
            array.setflags(write=True)
        except ValueError:
            continue
        del _PENDING[key]


def restorable(array: np.ndarray, held: dict[int, Any] | None = None) -> bool:
    """:func:`adswitch.spec.restorable`, counting as writeable the bases in ``held`` (a
    call's locks) that had the flag before the call: its ``close`` restores them before
    their views."""
    if not held:
        return shared_restorable(array)

    def released(base: np.ndarray) -> bool:
        entry = held.get(id(base))
        return entry is not None and entry[0] is base and bool(entry[1])  # role "": read-only

    return shared_restorable(array, released)


def _lockable(array: np.ndarray, locked: dict[int, Any]) -> bool:
    """Whether every writeable array in ``array``'s chain of bases (those this call has
    not locked yet) can be locked and restored; a chain with one that cannot is not
    protected by locking the others (it can still be written), so it is copied whole."""
    a: Any = array
    while isinstance(a, np.ndarray) and id(a) not in locked:
        if a.flags.writeable and not restorable(a, locked):
            return False
        a = a.base
    return True


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
        self.copies = {}
        self.recording = None

    def guard(self, array: np.ndarray, role: Any) -> np.ndarray:
        return array

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
