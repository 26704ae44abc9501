"""A tape that outlives its call owns its values: later writes by the caller cannot reach it.

During a call the numpy arrays its tape reads are locked read-only (``Trace.guard``), so
``f`` cannot change them behind the backward pass. A ``vjp`` pullback sweeps the tape
after the call has returned and its locks are gone: if the tape still read the caller's
memory, a write into an argument, a constant ``f`` read from a closure or an index array
-- or the write-back of ``f``'s own writes into its arguments -- would change every later
result. :func:`own` therefore replaces, on the tape, every array that is or views an
array the call locked by a copy (one copy per array, however many entries read it), and
:func:`owned_output` gives the caller copies of outputs the tape may still read. Values
``f`` computed itself are reachable only through the tape and the outputs, so nothing
else needs copying.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .array.tracer import Tracer
from .core import Trace

__all__ = ["own", "owned_output"]


def own(trace: Trace) -> None:
    """Copy, on ``trace``'s tape, every array whose memory the caller can reach (see the
    module doc). Call it before the trace is closed: its locks say what to copy."""
    locked = trace.locked
    if not locked:
        return
    copies: dict[int, np.ndarray] = {}

    def owned(v: Any) -> Any:
        if type(v) is not np.ndarray:
            if type(v) is tuple and v and any(type(k) is np.ndarray for k in v):
                return tuple(owned(k) for k in v)  # an index key holding arrays
            return v  # a scalar, a shape, a key without arrays, an enclosing call's tracer
        a: Any = v
        while type(a) is np.ndarray and id(a) not in locked:
            a = a.base
        if type(a) is not np.ndarray:
            return v  # memory of this call's own
        copy = copies.get(id(v))
        if copy is None:
            copy = copies[id(v)] = np.array(v, copy=True)
        return copy

    tape = trace.tape
    for i, entry in enumerate(tape):
        if entry is None:
            continue
        prim, args, ans, kw, parents = entry
        new_args = tuple(owned(a) for a in args)
        new_ans = owned(ans)
        new_kw = {k: owned(v) for k, v in kw.items()} if kw else kw
        if (
            new_ans is not ans
            or any(n is not a for n, a in zip(new_args, args))
            or (kw and any(new_kw[k] is not v for k, v in kw.items()))  # type: ignore[index]
        ):
            tape[i] = (prim, new_args, new_ans, new_kw, parents)
    copies.clear()


def owned_output(out: Any, value: Any, trace: Trace) -> Any:
    """The output leaf ``out`` (its unwrapped ``value``) as the caller may keep it: a copy
    when it is an array traced by ``trace``, which its tape may read (``ans`` of ``exp``,
    a view of an argument)."""
    if type(out) is Tracer and out._trace is trace and type(value) is np.ndarray:
        return np.array(value, copy=True)
    return value
