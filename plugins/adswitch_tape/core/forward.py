"""The forward sweep: push tangents through a recorded tape, first entry to last.

Forward mode on the tape is "record, then push": ``f`` runs once and is recorded as for
reverse mode (so copy-on-write mutation, views, nesting -- everything recording does --
comes for free), then each entry's tangent rule maps the tangents of its arguments to
the tangent of its output. An entry keeps what its reverse rules read, and a tangent
rule is the same linear map transposed, so it needs nothing more (``rules/forward_*``).

Tangents may carry leading batch axes (``BATCH``, as in the backward sweep): every
tangent has shape ``batch + value.shape``. Tangent rules are written with primitives,
so an enclosing call records them: forward over reverse, reverse over forward, any order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from adswitch.errors import UnsupportedError

from .sweep import BATCH
from .trace import Trace

__all__ = ["NoTangentRule", "forward"]


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
    for j in wanted:
        last[j] = n
    start = min(leaves, default=n)
    previous = BATCH.axes
    BATCH.axes = batch
    try:
        for i in range(start, n):
            if not needed[i]:
                continue
            entry = tape[i]
            if entry is None:
                continue
            p, args, ans, kw, parents = entry
            if isinstance(parents, int):
                t = pushed[parents]
                if t is None:
                    continue
                ts: tuple[Any, ...] = (t,) if len(args) == 1 else (t, *_NONES[len(args) - 1])
                if last[parents] == i:
                    pushed[parents] = None
            else:
                ts = tuple([None if k is None else pushed[k] for k in parents])
                for t in ts:
                    if t is not None:
                        break
                else:  # no tangent reached any argument
                    continue
                for k in parents:
                    if k is not None and last[k] == i:
                        pushed[k] = None
            tape[i] = None
            rule = p.jvp
            pushed[i] = rule(ts, ans, *args, **kw) if kw else rule(ts, ans, *args)
    finally:
        BATCH.axes = previous
    return {j: pushed[j] for j in wanted}


_NONES = [(None,) * k for k in range(8)]
