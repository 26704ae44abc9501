"""The backward sweep: read a trace's tape back from its outputs, applying each entry's rules.

Rules are written with the same primitives as user code (see ``rules``), so when the
gradients are themselves traced by an enclosing call, the sweep of an inner call is
recorded by that call like any other computation: derivatives of any order.

Two sweeps: :func:`backward` (one root, the gradient of a loss: frees each entry as it
goes, the fast path of ``value_and_grad``) and :func:`backward_many` (one seed per root,
the cotangents of several outputs at once; optionally batched and optionally keeping the
tape for another sweep -- a reusable pullback).

Batching: the seeds of :func:`backward_many` may carry leading batch axes (shape
``batch + output.shape``); every rule then receives cotangents ``g`` of shape
``batch + ans.shape`` and must return ``batch + x.shape``. The number of batch axes is
:data:`BATCH`'s ``axes`` while the sweep runs -- per thread, so concurrent sweeps in
different threads never see each other's -- and the rules' helpers read it. A rule's
own primitive calls spell the batch axes out (``axis=``, ``shape=``, ``key=`` include
them), so what an enclosing call records of a batched sweep is ordinary, unbatched
computation, and a later batched sweep over it adds its own batch axes in front.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError

from .trace import Trace

__all__ = ["BATCH", "IN_PLACE_FROM", "Rule", "backward", "backward_many"]

Rule = Callable[..., Any]
"""A gradient rule ``rule(g, ans, *args, **kw)``: the gradient for one argument."""


class _Batch(threading.local):
    """The leading batch axes of the cotangents of the sweep running in this thread."""

    axes = 0  # outside a batched sweep (and in every new thread): none


BATCH = _Batch()
"""``BATCH.axes``: how many leading batch axes the current sweep's cotangents carry."""

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


def backward_many(
    trace: Trace,
    roots: Sequence[int],
    seeds: Sequence[Any],
    batch: int = 0,
    keep: bool = False,
) -> list[Any]:
    """Sweep the tape backwards from every slot of ``roots`` at once, slot ``roots[k]``
    seeded with ``seeds[k]`` (a root given twice gets the sum); return the gradient of
    every leaf slot.

    Args:
        trace: the trace whose tape is swept.
        roots: tape slots (of outputs); several may be equal.
        seeds: one cotangent per root, each with ``batch`` leading batch axes in front of
            its output's shape.
        batch: the number of leading batch axes of the seeds (0: none).
        keep: leave the tape as it is, so that it can be swept again (a pullback called
            many times); without it each entry is freed as soon as it is used.

    Returns:
        Per tape slot, the gradient that reached it at leaf slots (``None`` where none
        did); other slots are cleared.
    """
    # The loop repeats ``backward``'s (see there): one function call per entry would cost
    # the unbatched gradient its speed.
    tape = trace.tape
    grads: list[Any] = [None] * len(tape)
    top = -1
    for r, s in zip(roots, seeds):
        old = grads[r]
        grads[r] = s if old is None else old + s
        if r > top:
            top = r
    previous = BATCH.axes
    BATCH.axes = batch
    try:
        for i in range(top, -1, -1):
            g = grads[i]
            if g is None:
                continue
            entry = tape[i]
            if entry is None:
                continue
            grads[i] = None
            if not keep:
                tape[i] = None
            p, args, ans, kw, parents = entry
            for k, j in ((0, parents),) if isinstance(parents, int) else enumerate(parents):
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
    finally:
        BATCH.axes = previous
    return grads
