"""The forward sweep: push tangents through a recorded tape, first entry to last.

Forward mode on the tape is "record, then push": ``f`` runs once and is recorded as for
reverse mode (so copy-on-write mutation, views, nesting -- everything recording does --
comes for free), then each entry's tangent rule maps the tangents of its arguments to
the tangent of its output. An entry keeps what its reverse rules read, and a tangent
rule is the same linear map transposed, so it needs nothing more (``rules/forward_*``).

Tangents may carry leading batch axes (``BATCH``, as in the backward sweep): every
tangent has shape ``batch + value.shape``. Tangent rules are written with primitives,
so an enclosing call records them: forward over reverse, reverse over forward, any order.

A tangent whose last reader is the running rule and that nothing else holds (a large
plain array owning its memory, no other slot, view or caller referring to it) is
*donated* to that rule (:data:`DONATED`): the rules of the hottest primitives write
their result into its memory instead of a fresh temporary -- the same numbers, computed
by the same ufuncs, without the page faults a large temporary costs.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError

from .sweep import BATCH, IN_PLACE_FROM
from .trace import Trace

__all__ = ["DONATED", "NoTangentRule", "forward"]


class _Donated(threading.local):
    """The ids of the argument tangents donated to the tangent rule running in this
    thread (empty outside a forward sweep)."""

    ids: frozenset[int] = frozenset()


DONATED = _Donated()
"""``DONATED.ids``: the argument tangents the running tangent rule may overwrite."""


def _alone() -> int:
    """``sys.getrefcount`` of an array held by one local only, measured (it varies
    across Pythons)."""
    a = np.empty(1)
    return sys.getrefcount(a)


_ALONE = _alone()


def _owned(t: Any, held: int) -> bool:
    """Whether the tangent ``t``, just dropped from the sweep's slots, is a large plain
    array that owns its memory and that nothing but the caller's local and ``held``
    known references refer to."""
    return (
        type(t) is np.ndarray
        and t.size >= IN_PLACE_FROM
        and t.base is None
        and t.flags.writeable
        and sys.getrefcount(t) == _ALONE + 1 + held  # + the argument of this call
    )


class NoTangentRule(UnsupportedError):
    """A primitive on the way from the leaves to a wanted output has no tangent rule;
    raised before the tape is touched, so that the caller can sweep it otherwise."""


def forward(
    trace: Trace,
    leaves: Sequence[int],
    tangents: Sequence[Any],
    wanted: Sequence[int],
    batch: int = 0,
) -> dict[int, Any]:
    """Push ``tangents`` (one per leaf slot in ``leaves``) through ``trace``'s tape and
    return the tangent of each slot in ``wanted`` (``None`` where no tangent reached it).
    Raises :class:`NoTangentRule`, the tape untouched, if an entry it needs has none.

    Only entries on a path to a wanted slot run; each is freed once its tangent is
    computed, and each tangent once its last reader has run (the wanted ones are kept):
    memory as in the backward sweep.

    Args:
        trace: the recorded trace.
        leaves: leaf slots to seed (a slot given twice gets the sum).
        tangents: one tangent per leaf slot, with ``batch`` leading batch axes.
        wanted: the slots whose tangents to return.
        batch: the number of leading batch axes of the tangents.
    """
    tape = trace.tape
    n = len(tape)
    pushed: list[Any] = [None] * n
    for slot, t in zip(leaves, tangents):
        old = pushed[slot]
        pushed[slot] = t if old is None else old + t
    # Backwards once: which entries lead to a wanted slot (the others -- the loss of a
    # gradient that is differentiated, say -- are skipped), and the last entry reading
    # each slot (its tangent is dropped right after).
    needed = [False] * n
    for j in wanted:
        needed[j] = True
    last = [n] * n
    for i in range(n - 1, -1, -1):
        entry = tape[i]
        if entry is None or not needed[i]:
            continue
        if entry[0].jvp is None:
            raise NoTangentRule(
                f"tape: no tangent rule for `{entry[0].name}`; compute the derivative in "
                "reverse mode (ad.vjp, ad.jacobian(..., mode='reverse'))."
            )
        parents = entry[4]
        for k in (parents,) if isinstance(parents, int) else parents:
            if k is not None:
                needed[k] = True
                if last[k] == n:
                    last[k] = i
    # Off every path to a wanted slot (the loss of a differentiated gradient): the saved
    # values go now, before the tangents take their memory (after the scan, which may
    # raise with the tape untouched).
    for i in range(n):
        if not needed[i]:
            tape[i] = None
    for j in wanted:
        last[j] = n
    start = min(leaves, default=n)
    previous, donated = BATCH.axes, DONATED.ids
    BATCH.axes = batch
    none: frozenset[int] = frozenset()
    try:
        for i in range(start, n):
            if not needed[i]:
                continue
            entry = tape[i]
            if entry is None:
                continue
            p, args, ans, kw, parents = entry
            gift = none
            if isinstance(parents, int):
                t = pushed[parents]
                if t is None:
                    continue
                if last[parents] == i:
                    pushed[parents] = None
                    if _owned(t, 0):
                        gift = frozenset((id(t),))
                ts: tuple[Any, ...] = (t,) if len(args) == 1 else (t, *_NONES[len(args) - 1])
            else:
                ts = tuple([None if k is None else pushed[k] for k in parents])
                for t in ts:
                    if t is not None:
                        break
                else:  # no tangent reached any argument
                    continue
                for k in parents:
                    if k is not None and last[k] == i:
                        t = pushed[k]
                        if t is not None:  # (None: k is read twice, already dropped)
                            pushed[k] = None
                            if _owned(t, 1):  # (+ ts; an array read twice is held twice)
                                gift = gift | {id(t)}
                t = None
            tape[i] = None
            rule = p.jvp
            DONATED.ids = gift
            pushed[i] = rule(ts, ans, *args, **kw) if kw else rule(ts, ans, *args)
            DONATED.ids = none
    finally:
        BATCH.axes = previous
        DONATED.ids = donated
    return {j: pushed[j] for j in wanted}


_NONES = [(None,) * k for k in range(8)]
