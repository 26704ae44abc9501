"""``Backend.checkpoint`` on jax: ``jax.checkpoint`` (``jax.remat``) around the flat ``fn``.

jax's own mechanism wherever the call runs -- traced into a compiled program (prepared
calls), eager, nested, under ``vmap``: the backward pass recomputes ``fn``'s
intermediates from its inputs. Its arguments are the leaves that are jax values (a
tracer must not be closed over); numpy arrays, Python numbers and other leaves are
constants closed over. Its outputs are the output leaves that are jax values; the
others (a constant ``f`` returned, a string) are kept aside from the trace and put back,
as in ``integrations.custom``.

Imported only once jax is in use (it imports jax at the top).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax

__all__ = ["checkpoint"]


def _is_jax(value: Any) -> bool:
    return isinstance(value, jax.Array)


def checkpoint(
    fn: Callable[[list[Any]], list[Any]],
    leaves: Sequence[Any],
    active: Sequence[bool],
) -> list[Any]:
    """``Backend.checkpoint`` on jax (module doc)."""
    slots = [i for i, v in enumerate(leaves) if _is_jax(v)]
    base = list(leaves)
    aside: list[list[Any]] = []  # the output leaves, non-jax ones as fn returned them
    kept: list[list[int]] = []  # the positions of the jax output leaves

    def run(*arrays: Any) -> tuple[Any, ...]:
        flat = list(base)
        for i, a in zip(slots, arrays):
            flat[i] = a
        outs = list(fn(flat))
        aside[:] = [outs]
        kept[:] = [[k for k, o in enumerate(outs) if _is_jax(o)]]
        return tuple(outs[k] for k in kept[0])

    arrays = jax.checkpoint(run)(*[leaves[i] for i in slots])
    result = list(aside[0])
    for k, a in zip(kept[0], arrays):
        result[k] = a
    return result
