"""A prepared gradient's shortcut on this engine (the ``prepared_shortcut`` hook): the
last compiled program of a prepared ``ad.gradient``, run on the call's leaves with only
the checks that could tell it stale.

The front end (``adswitch.shortcut``) has checked the wrappers, dict keys and leaf types
(jax arrays, no tracers) and that no two leaves are one object. Here is checked what the
full path (:mod:`adswitch_jax._dispatch`, :mod:`adswitch_jax._compiled`) would find out
besides: no jax transformation is tracing (one would stage the call inline), ``f`` reads
the same objects as when the program was compiled (its remembered walk,
:mod:`adswitch_jax._recall`, with the arrays it closes over read afresh), the program's
guard on what it baked in holds, the full path has run no other program since, and the
leaves' shapes and dtypes are the program's (jax's own dispatch: a trace of the program
again means they are not). Any doubt returns ``None``: the full path runs.

Only calls of 32-bit (or globally 64-bit) jax arrays with no baked-in leaves qualify: a
numpy or scoped 64-bit call converts on the way in and out, which the full path does.

Imported only once jax is in use (it imports jax through its imports).
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from typing import Any

from jax.core import Tracer

from adswitch_jax import _dispatch
from adswitch_jax._calls import Retrace
from adswitch_jax._compiled import Prepared
from adswitch_jax._entries import JIT
from adswitch_jax._keys import ArrayImpl
from adswitch_jax._recall import memory_of
from adswitch_jax._swaps import swaps

__all__ = ["shortcut"]


def shortcut(
    slot: dict[Any, Any], func: Any, leaves: Sequence[Any], active: Sequence[bool]
) -> Callable[[list[Any]], Sequence[Any] | None] | None:
    """The shortcut of a prepared gradient whose last full call left ``slot``, or
    ``None`` where this engine has none (see the module docstring)."""
    state = slot.get((_dispatch._SLOT, "value_and_grad", False, False))
    trace_ctx, eval_trace = _dispatch._trace_ctx, getattr(_dispatch, "_EvalTrace", None)
    if type(state) is not Prepared or state.last is None or trace_ctx is None or eval_trace is None:
        return None
    last = state.last
    fast_key, _, entry = last
    found = state.scan
    if (
        entry.mode != JIT
        or entry.program is None
        or found.static
        or found.x64
        or found.traced
        or found.unhashable
        or not found.jax_kind
        or len(found.dyn) != len(leaves)
        or type(func) is not types.FunctionType
    ):
        return None
    for leaf in leaves:
        if type(leaf) is not ArrayImpl:
            return None
    memory = memory_of(func)
    if (
        memory is None
        or memory.wide
        or not isinstance(fast_key, tuple)
        or memory.key != fast_key[0]
    ):
        return None
    program, guard = entry.program, entry.guard

    def run(leaves: list[Any]) -> Sequence[Any] | None:
        if type(trace_ctx.trace) is not eval_trace or state.last is not last:
            return None
        before = swaps()
        if before & 1:
            return None
        try:
            lifted = memory.lifted_now()
        except ValueError:  # an empty cell
            return None
        if lifted is None or swaps() != before:
            return None
        for value in lifted:  # (a loop: no generator on the hot path)
            if isinstance(value, Tracer):
                return None
        if guard is not None and not guard.holds(memory.roots_now()):
            return None
        try:
            _, grads = program(*leaves, *lifted)
        except Retrace:
            return None
        except Exception:  # the full path runs it again and says what went wrong
            return None
        return grads  # type: ignore[no-any-return]

    return run
