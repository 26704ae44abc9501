"""A backward pass along cotangents, batched or not, torch's errors translated.

A batch of cotangents (a Jacobian's identity basis, a batch of tangents pushed through the
pullback) is one backward pass under vmap (``backward.make_batched``), which measured 3x
faster than ``is_grads_batched`` (torch's older vmap) on a 64 x 64 Jacobian; should torch
fail to batch an operation's backward, the batch runs as a loop of single passes (the same
numbers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from adswitch.errors import MutationError

from ..refusals.errors import translate_backward
from .backward import Passes

__all__ = ["batched_pull", "pull_grads", "translated_backward"]

_AFTER = (
    "torch: a value this pullback needs was overwritten in place (torch says: {detail}) -- "
    "either inside f after f used it, or after ad.vjp returned: an argument, a Const, or an "
    "output of the call was written into. The result would be wrong, so none is returned. "
    "Fix: write into a copy (x = xp.asarray(x, copy=True)), or call ad.vjp again after "
    "the write."
)


def translated_backward(exc: RuntimeError, after: bool) -> Exception | None:
    """The adswitch error for torch's error in a backward pass (``None``: not ours);
    ``after``: the graph was recorded by an earlier call (a ``vjp``'s pullback)."""
    translated = translate_backward(exc)
    if translated is None or not after:
        return translated
    detail = str(exc).split("Hint:")[0].strip()
    return MutationError(_AFTER.format(detail=detail))


def batched_pull(
    torch: Any,
    passes: Passes,
    outs: Sequence[Any],
    cotangents: Sequence[Any],
    inputs: Sequence[Any],
    create_graph: bool,
    plain: bool,
) -> list[Any]:
    """One backward pass per row of the cotangents (each with a leading batch axis of
    the same length), under vmap; a loop of single passes if torch cannot batch it.
    Returns per input a batched gradient, or ``None`` where unused."""
    pull = passes.pull

    def one(*rows: Any) -> tuple[Any, ...]:
        return tuple(pull(outs, rows, inputs, True, create_graph, plain))

    n = int(cotangents[0].shape[0])
    try:
        return passes.batched(one, cotangents, n)
    except RuntimeError as exc:
        if translate_backward(exc) is not None:
            raise
    # torch cannot batch some operation's backward: the same numbers, one row at a time
    rows = [one(*[c[b] for c in cotangents]) for b in range(n)]
    stacked: list[Any] = []
    for k, x in enumerate(inputs):
        column = [r[k] for r in rows]
        if all(g is None for g in column):
            stacked.append(None)
        else:
            zeros = torch.zeros_like(x, requires_grad=False)
            stacked.append(torch.stack([zeros if g is None else g for g in column]))
    return stacked


def pull_grads(
    torch: Any,
    passes: Passes,
    outs: Sequence[Any],
    cots: Sequence[Any],
    inputs: Sequence[Any],
    nested: bool,
    plain: bool,
    batched: bool,
    after: bool,
) -> list[Any | None]:
    """The backward pass of ``outs`` along ``cots`` (batched or not), torch's errors
    translated (``after``: the graph was recorded by an earlier call, a ``vjp``)."""
    if not outs or not inputs:
        return [None] * len(inputs)
    try:
        if batched:
            return batched_pull(torch, passes, outs, cots, inputs, nested, plain)
        return list(passes.pull(outs, cots, inputs, True, nested, plain))
    except RuntimeError as exc:
        translated = translated_backward(exc, after)
        if translated is None:
            raise
        raise translated from exc
