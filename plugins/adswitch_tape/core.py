"""Trace levels, primitives, the tape and the backward sweep.

One differentiation call owns one :class:`Trace`: a level (a number from a global
counter, so an inner call's level is higher than its enclosing call's) and a tape, the
list of recorded operations in the order they ran. An operation on tracers records
itself on the trace of its highest-level argument; arguments of lower levels (and numpy
arrays, Python scalars) are constants at that level, and the operation's value is
computed by calling the same primitive on the unwrapped values -- which records it on
the lower levels in turn. Because gradient rules are written with these same primitives,
the backward sweep of an inner call is itself recorded by the enclosing call: any order.

Tape state is per call: a trace belongs to one call in one thread and tracers point at
their trace, so concurrent calls in different threads share no tape (the level counter
is an ``itertools.count``, atomic under the GIL). The one shared table is the count of
calls holding each locked numpy array, behind a ``threading.Lock``.
"""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from adswitch.errors import MutationError, UnsupportedError

__all__ = ["FREE", "IN_PLACE_FROM", "Rule", "Trace", "backward", "escaped", "role_text"]

_LEVELS = itertools.count(1)

# Every array some call locked: id -> [array, number of calls holding it, was writeable].
# Shared by all threads (an array can be an argument of concurrent calls), hence the lock.
_LOCKS: dict[int, list[Any]] = {}
_LOCKS_GUARD = threading.Lock()

Rule = Callable[..., Any]
"""A gradient rule ``rule(g, ans, *args, **kw)``: the gradient for one argument."""

Entry = tuple[Any, tuple[Any, ...], Any, dict[str, Any] | None, int | tuple[int | None, ...]]
"""A tape entry ``(prim, args, ans, kw, parents)``: ``parents`` holds a tape slot per
argument traced at this level (``None`` for constants), or is the bare slot (an ``int``)
when only the first argument is traced -- the common case, swept without a loop.
``args``/``ans`` hold only what the primitive's rules read (``Prim.keep_args``/``keep_ans``:
values, shapes or ``None``), so the tape does not keep dead intermediates alive."""


class Trace:
    """One differentiation call: its level, its tape, the numpy constants it locked."""

    __slots__ = ("level", "live", "locked", "tape")

    def __init__(self) -> None:
        self.level = next(_LEVELS)
        self.tape: list[Entry | None] = []
        self.live = True
        # id -> (array, role); role "" for an array that was read-only before any call
        # locked it. Arrays are kept so that their ids stay unique.
        self.locked: dict[int, tuple[np.ndarray, Any]] = {}

    def leaf(self, value: Any) -> Tracer:
        """A traced input: a tape slot with no entry (its gradient stays in the sweep)."""
        self.tape.append(None)
        return Tracer(value, self, len(self.tape) - 1)

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


# Arrays at least this large are worth updating in place (below, numpy's temporaries are
# cheaper than the checks); shared with the rules in ``vjps``.
IN_PLACE_FROM = 4096


def _exclusive_refcount() -> int:
    """``sys.getrefcount`` of an array held only by a list slot and one local -- the
    pattern of ``backward`` -- measured, not assumed, as it varies across Pythons."""
    grads = [np.empty(1)]
    old = grads[0]
    return sys.getrefcount(old)


_EXCLUSIVE = _exclusive_refcount()


def _added_in_place(old: Any, gk: Any) -> bool:
    """Accumulate ``gk`` into ``old`` in place when that is safe: ``old`` is a large plain
    array that owns its memory, is writeable, and nothing but the sweep refers to it (no
    other gradient slot, no tape entry, no user variable). Saves a large temporary per
    fan-out."""
    if (
        type(old) is np.ndarray
        and type(gk) is np.ndarray
        and old.size >= IN_PLACE_FROM
        and old.base is None
        and old.shape == np.broadcast_shapes(old.shape, gk.shape)
        and old.dtype == np.result_type(old, gk)
        and old.flags.writeable
        and sys.getrefcount(old) == _EXCLUSIVE + 1  # + the argument of this call
    ):
        np.add(old, gk, out=old)
        return True
    return False


def _no_rule(name: str, k: int) -> UnsupportedError:
    return UnsupportedError(
        f"tape: no gradient rule for `{name}` with respect to argument {k}; "
        "mark that input ad.Const or compute it without tracing."
    )


def backward(trace: Trace, root: int, seed: Any) -> list[Any]:
    """Sweep the tape backwards from slot ``root``; return the gradient of every slot
    that is a leaf (other slots are cleared as soon as their entry is processed)."""
    tape = trace.tape
    grads: list[Any] = [None] * len(tape)
    grads[root] = seed
    for i in range(root, -1, -1):
        g = grads[i]
        if g is None:
            continue
        entry = tape[i]
        if entry is None:  # a leaf: its gradient is the result
            continue
        grads[i] = None
        tape[i] = None  # free the saved values as soon as they are used
        p, args, ans, kw, parents = entry
        # One parent, the first argument: most entries. This branch is the loop below,
        # unrolled for it (the sweep's hot path).
        if isinstance(parents, int):
            try:
                rule = p.rules[0]
                gk = rule(g, ans, *args, **kw) if kw else rule(g, ans, *args)
            except (IndexError, TypeError):
                if p.rules and p.rules[0] is not None:
                    raise
                raise _no_rule(p.name, 0) from None
            old = grads[parents]
            if old is None:
                grads[parents] = gk
            elif (
                type(old) is not np.ndarray
                or old.size < IN_PLACE_FROM
                or not _added_in_place(old, gk)
            ):
                grads[parents] = old + gk
            continue
        for k in range(len(parents)):
            j = parents[k]
            if j is None:
                continue
            try:
                rule = p.rules[k]
                gk = rule(g, ans, *args, **kw) if kw else rule(g, ans, *args)
            except (IndexError, TypeError):
                if k < len(p.rules) and p.rules[k] is not None:
                    raise
                raise _no_rule(p.name, k) from None
            old = grads[j]
            if old is None:
                grads[j] = gk
            elif (
                type(old) is not np.ndarray
                or old.size < IN_PLACE_FROM
                or not _added_in_place(old, gk)
            ):
                grads[j] = old + gk
    return grads


# Imported last: it builds on the definitions above (no import cycle at load time).
from .tracer import Tracer  # noqa: E402
