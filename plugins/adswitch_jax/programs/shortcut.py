"""A prepared call's shortcut on this engine (the ``prepared_shortcut`` hook): the whole
prepared call traced once under ``jax.jit``, called with only the checks that could tell
it stale.

Under the trace, adswitch's own call runs inline (a transformation is staging it, see
:mod:`adswitch_jax.primitives.dispatch`): the program is the prepared call's, with the
front end's bookkeeping traced away, and jax's C++ dispatch flattens and checks the
leaves. What ``f`` reads besides its arguments is baked into that program, so every
call first checks what the full path would (:mod:`adswitch_jax.closures.recall`,
:mod:`adswitch_jax.closures.baked`): no jax transformation is tracing (one would stage
the call inline), ``f`` still reads the same objects, and what the full path's programs
baked in is unchanged. The front end (``adswitch.shortcut``) has checked the wrappers,
dict keys, leaf types and that no two leaves are one object. Any doubt, or any error,
returns ``None``: the full path runs, and says what went wrong.

Only calls qualify whose full path compiled (no eager fallback, no outputs computed
eagerly), in jax's default precision or global 64-bit mode (a call scoped to 64-bit
converts on the way in and out, which the full path does), on jax arrays, with no
constants baked in by value, and where the arrays ``f`` closes over are jax arrays (held
by identity: a numpy one could change in place).

Imported only once jax is in use (it imports jax).
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from typing import Any

import jax

from adswitch_jax.closures.baked import Guard
from adswitch_jax.closures.recall import memory_of
from adswitch_jax.closures.swaps import swaps
from adswitch_jax.primitives import dispatch as _dispatch
from adswitch_jax.programs.compiled import Prepared
from adswitch_jax.programs.entries import JIT
from adswitch_jax.programs.keys import ArrayImpl

__all__ = ["shortcut"]


def _guards(slot: dict[Any, Any], key: Any) -> list[Guard] | None:
    """The guards of the programs the full path ran for this prepared call, or ``None``
    where some of its calls did not qualify (see the module docstring)."""
    guards: list[Guard] = []
    states: list[Any] = []
    pending = [slot]  # (the front end keeps sub-slots per operator step: dicts in it)
    while pending:
        for k, v in pending.pop().items():
            if type(v) is dict:
                pending.append(v)
            elif type(k) is tuple and k and k[0] == _dispatch._SLOT:
                states.append(v)
            else:
                return None  # something this engine does not know: no shortcut
    if not states:
        return None
    for state in states:
        if type(state) is not Prepared or state.last is None:
            return None
        fast_key, _, entry = state.last
        found = state.scan
        if (
            entry.mode != JIT
            or found.static
            or found.x64
            or found.traced
            or found.unhashable
            or not found.jax_kind
            or not isinstance(fast_key, tuple)
            or fast_key[0] != key
        ):
            return None
        if entry.guard is not None:
            guards.append(entry.guard)
    return guards


def shortcut(
    slot: dict[Any, Any],
    func: Any,
    call: Callable[[Sequence[Any]], list[Any]],
    leaves: Sequence[Any],
) -> Callable[[list[Any]], Sequence[Any] | None] | None:
    """The shortcut of a prepared call whose last full call left ``slot``, or ``None``
    where this engine has none (see the module docstring)."""
    trace_ctx, eval_trace = _dispatch._trace_ctx, getattr(_dispatch, "_EvalTrace", None)
    if trace_ctx is None or eval_trace is None or type(func) is not types.FunctionType:
        return None
    for leaf in leaves:
        if type(leaf) is not ArrayImpl:
            return None
    memory = memory_of(func)
    if memory is None or memory.wide:
        return None
    guards = _guards(slot, memory.key)
    if guards is None:
        return None
    try:
        lifted = memory.lifted_now()
    except ValueError:
        return None
    if lifted is None or any(type(a) is not ArrayImpl for a in lifted):
        return None
    program = jax.jit(lambda *values: call(values))

    def run(leaves: list[Any]) -> Sequence[Any] | None:
        if type(trace_ctx.trace) is not eval_trace:
            return None
        before = swaps()
        if before & 1:
            return None
        try:
            if memory.lifted_now() is None or swaps() != before:
                return None
        except ValueError:  # an empty cell
            return None
        if guards:
            roots = memory.roots_now()
            for guard in guards:
                if not guard.holds(roots):
                    return None
        try:
            return program(*leaves)  # type: ignore[no-any-return]
        except Exception:  # the full path runs it again and says what went wrong
            return None

    return run
