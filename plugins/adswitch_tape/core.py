"""Trace levels, primitives, the tape and the backward sweep.

One differentiation call owns one :class:`Trace`: a level (a number from a global
counter, so an inner call's level is higher than its enclosing call's) and a tape, the
list of recorded operations in the order they ran. An operation on tracers records
itself on the trace of its highest-level argument; arguments of lower levels (and numpy
arrays, Python scalars) are constants at that level, and the operation's value is
computed by calling the same primitive on the unwrapped values -- which records it on
the lower levels in turn. Because gradient rules are written with these same primitives,
the backward sweep of an inner call is itself recorded by the enclosing call: any order.

There is no global mutable state: a trace belongs to one call in one thread, tracers
point at their trace, so concurrent calls in different threads share nothing (the level
counter is an ``itertools.count``, atomic under the GIL).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from adswitch.errors import MutationError, UnsupportedError

__all__ = ["FREE", "Rule", "Trace", "backward", "escaped"]

_LEVELS = itertools.count(1)

Rule = Callable[..., Any]
"""A gradient rule ``rule(g, ans, *args, **kw)``: the gradient for one argument."""

Entry = tuple[Any, tuple[Any, ...], Any, dict[str, Any] | None, int | tuple[int | None, ...]]
"""A tape entry ``(prim, args, ans, kw, parents)``: ``parents`` holds a tape slot per
argument traced at this level (``None`` for constants), or is the bare slot (an ``int``)
when only the first argument is traced -- the common case, swept without a loop."""


class Trace:
    """One differentiation call: its level, its tape, the numpy constants it locked."""

    __slots__ = ("level", "live", "locked", "tape")

    def __init__(self) -> None:
        self.level = next(_LEVELS)
        self.tape: list[Entry | None] = []
        self.live = True
        # id -> (array, role, was_writeable); the array is kept so its id stays unique.
        self.locked: dict[int, tuple[np.ndarray, str]] = {}

    def leaf(self, value: Any) -> Tracer:
        """A traced input: a tape slot with no entry (its gradient stays in the sweep)."""
        self.tape.append(None)
        return Tracer(value, self, len(self.tape) - 1)

    def guard(self, array: np.ndarray, role: str) -> None:
        """Lock ``array`` (and the arrays it views) read-only until the call ends, so that
        a write by ``f`` into an array the backward pass will read fails loudly instead
        of corrupting the gradient. Already read-only arrays are left alone."""
        locked = self.locked
        a: Any = array
        while isinstance(a, np.ndarray) and id(a) not in locked:
            if a.flags.writeable:
                a.flags.writeable = False
                locked[id(a)] = (a, role)
            else:
                locked[id(a)] = (a, "")  # not ours to restore
            a = a.base

    def close(self) -> None:
        """End the call: restore the flags it changed (bases after their views were
        locked, so restore in reverse) and refuse further recording."""
        self.live = False
        for array, role in reversed(list(self.locked.values())):
            if role:
                array.flags.writeable = True
        self.locked.clear()


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

    def guard(self, array: np.ndarray, role: str) -> None:
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
        if isinstance(parents, int):  # one parent, the first argument
            try:
                rule = p.rules[0]
                gk = rule(g, ans, *args, **kw) if kw else rule(g, ans, *args)
            except (IndexError, TypeError):
                if p.rules and p.rules[0] is not None:
                    raise
                raise _no_rule(p.name, 0) from None
            old = grads[parents]
            grads[parents] = gk if old is None else old + gk
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
            grads[j] = gk if old is None else old + gk
    return grads


# Imported last: it builds on the definitions above (no import cycle at load time).
from .tracer import Tracer  # noqa: E402
