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

__all__ = ["forward", "missing_tangent_rule"]


def missing_tangent_rule(trace: Trace) -> str | None:
    """The name of a primitive on ``trace``'s tape without a tangent rule, if any."""
    for entry in trace.tape:
        if entry is not None and entry[0].jvp is None:
            return str(entry[0].name)
    return None


def forward(
    trace: Trace,
    leaves: Sequence[int],
    tangents: Sequence[Any],
    wanted: Sequence[int],
    batch: int = 0,
) -> dict[int, Any]:
    """Push ``tangents`` (one per leaf slot in ``leaves``) through ``trace``'s tape and
    return the tangent of each slot in ``wanted`` (``None`` where no tangent reached it).

    Each entry is freed once its tangent is computed, and each tangent once its last
    reader has run (the wanted ones are kept): memory as in the backward sweep.

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
    # the last entry reading each slot: a tangent is dropped right after it
    last = list(range(n))
    for i, entry in enumerate(tape):
        if entry is not None:
            parents = entry[4]
            for j in (parents,) if isinstance(parents, int) else parents:
                if j is not None:
                    last[j] = i
    for j in wanted:
        last[j] = n
    start = min(leaves, default=n)
    previous = BATCH.axes
    BATCH.axes = batch
    try:
        for i in range(start, n):
            entry = tape[i]
            if entry is None:
                continue
            p, args, ans, kw, parents = entry
            if isinstance(parents, int):
                t = pushed[parents]
                if t is None:
                    continue
                ts: tuple[Any, ...] = (t,) + (None,) * (len(args) - 1)
                if last[parents] == i:
                    pushed[parents] = None
            else:
                ts = tuple(None if j is None else pushed[j] for j in parents)
                if all(t is None for t in ts):
                    continue
                for j in parents:
                    if j is not None and last[j] == i:
                        pushed[j] = None
            tape[i] = None
            rule = p.jvp
            if rule is None:
                raise UnsupportedError(
                    f"tape: no tangent rule for `{p.name}`; compute the derivative in "
                    "reverse mode (ad.vjp, ad.jacobian(..., mode='reverse'))."
                )
            pushed[i] = rule(ts, ans, *args, **kw) if kw else rule(ts, ans, *args)
    finally:
        BATCH.axes = previous
    return {j: pushed[j] for j in wanted}
