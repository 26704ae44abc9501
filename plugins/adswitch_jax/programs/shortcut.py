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
eagerly), on jax arrays or on numpy arrays (then traced with the tracers standing for
numpy arrays, run in 64-bit mode where the full path ran so, and given back as writable
numpy copies, as the full path gives them), with no constants baked in by value, and
where the arrays ``f`` closes over are jax arrays (held by identity: a numpy one could
change in place).

Imported only once jax is in use (it imports jax).
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from adswitch_jax.closures.baked import Guard
from adswitch_jax.closures.recall import memory_of
from adswitch_jax.closures.swaps import swaps
from adswitch_jax.primitives import dispatch as _dispatch
from adswitch_jax.programs.compiled import Prepared
from adswitch_jax.programs.entries import JIT
from adswitch_jax.programs.keys import ArrayImpl
from adswitch_jax.programs.traced import SHORTCUT_TRACING

__all__ = ["shortcut"]

_config: Any = jax.config  # its flags are dynamic attributes


def _guards(slot: dict[Any, Any], key: Any) -> tuple[list[Guard], bool, bool] | None:
    """``(guards, 64-bit, jax kind)``: the guards of the programs the full path ran for
    this prepared call, whether its calls ran in 64-bit mode, whether on jax arrays (else
    numpy) -- or ``None`` where some of its calls did not qualify (module docstring)."""
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
    kinds, x64 = set(), False
    for state in states:
        if type(state) is not Prepared or state.last is None:
            return None
        fast_key, _, entry = state.last
        found = state.scan
        if (
            entry.mode != JIT
            or found.static
            or found.traced
            or found.unhashable
            or not isinstance(fast_key, tuple)
            or fast_key[0] != key
        ):
            return None
        kinds.add(found.jax_kind)
        x64 = x64 or found.x64
        if entry.guard is not None:
            guards.append(entry.guard)
    if len(kinds) != 1:
        return None
    return guards, x64, kinds.pop()


def shortcut(
    slot: dict[Any, Any],
    func: Any,
    call: Callable[[Sequence[Any]], list[Any]],
    leaves: Sequence[Any],
    active: Sequence[bool],
    operator: str,
    loss: Callable[[Sequence[Any]], Any] | None,
) -> Callable[[list[Any]], Sequence[Any] | None] | None:
    """The shortcut of a prepared call whose last full call left ``slot``, or ``None``
    where this engine has none (see the module docstring). ``active``, ``operator`` and
    ``loss`` (the hook's, ``adswitch.spec``) play no part: the traced ``call`` is the
    whole prepared call."""
    trace_ctx, eval_trace = _dispatch._trace_ctx, getattr(_dispatch, "_EvalTrace", None)
    if trace_ctx is None or eval_trace is None or type(func) is not types.FunctionType:
        return None
    memory = memory_of(func)
    if memory is None:
        return None
    found = _guards(slot, memory.key)
    if found is None:
        return None
    guards, x64, jax_kind = found
    x64 = x64 or memory.wide
    kind = ArrayImpl if jax_kind else np.ndarray
    for leaf in leaves:
        if type(leaf) is not kind:
            return None
    try:
        lifted = memory.lifted_now()
    except ValueError:
        return None
    if lifted is None or any(type(a) is not ArrayImpl for a in lifted):
        return None

    def traced(*values: Any) -> list[Any]:
        token = SHORTCUT_TRACING.set(True)  # (only while jax traces: once per compile)
        try:
            return call(values)
        finally:
            SHORTCUT_TRACING.reset(token)

    program = jax.jit(traced)
    scoped = x64 and not _config.jax_enable_x64

    def fresh() -> bool:
        """Whether what the program baked in is still what ``f`` reads."""
        before = swaps()
        if before & 1:
            return False
        try:
            if memory.lifted_now() is None or swaps() != before:
                return False
        except ValueError:  # an empty cell
            return False
        if guards:
            roots = memory.roots_now()
            for guard in guards:
                if not guard.holds(roots):
                    return False
        return True

    def run(leaves: list[Any]) -> Sequence[Any] | None:
        if type(trace_ctx.trace) is not eval_trace:
            return None
        if jax_kind and not guards:
            # Dispatched first, checked while it runs: jax computes asynchronously, and
            # a stale result (what f reads changed) is dropped unseen -- the program has
            # no effects. (Checks first cost the wait for jax's idle worker threads:
            # Brusselator N = 32, 1.2-1.4x asdex against 1.0-1.1x.)
            try:
                arrays = program(*leaves)
            except Exception:  # the full path runs it again and says what went wrong
                return None
            return arrays if fresh() else None
        if not fresh():
            return None
        try:
            if jax_kind:
                return program(*leaves)  # type: ignore[no-any-return]
            if scoped:
                with jax.enable_x64(True):
                    arrays = program(*leaves)
            else:
                arrays = program(*leaves)
            if any(type(a) is not ArrayImpl for a in arrays):
                return None  # (a sparse matrix: the full path's is scipy's, built on the host)
            return [np.array(a) for a in arrays]  # (writable copies, as the full path's)
        except Exception:  # the full path runs it again and says what went wrong
            return None

    return run
