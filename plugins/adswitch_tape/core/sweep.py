"""The backward sweep: read a trace's tape back from the loss, applying each entry's rules.

Rules are written with the same primitives as user code (see ``rules``), so when the
gradients are themselves traced by an enclosing call, the sweep of an inner call is
recorded by that call like any other computation: derivatives of any order.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError

from .trace import Trace

__all__ = ["IN_PLACE_FROM", "Rule", "backward"]

Rule = Callable[..., Any]
"""A gradient rule ``rule(g, ans, *args, **kw)``: the gradient for one argument."""

# Arrays at least this large are worth updating in place (below, numpy's temporaries are
# cheaper than the checks); shared with the rules.
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
    # One loop for every entry: unrolling it for the one-parent case (an ``int``) saved
    # 3-4% on bench_tape's chain workload and nothing measurable on the others.
    tape = trace.tape
    grads: list[Any] = [None] * len(tape)
    grads[root] = seed
    for i in range(root, -1, -1):
        g = grads[i]
        if g is None:  # no gradient reached this slot
            continue
        entry = tape[i]
        if entry is None:  # a leaf: its gradient is the result
            continue
        grads[i] = tape[i] = None  # free the saved values as soon as they are used
        p, args, ans, kw, parents = entry
        for k, j in ((0, parents),) if isinstance(parents, int) else enumerate(parents):
            if j is None:  # a constant argument
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
