"""``value_and_grad`` on the tape: the gradient of a scalar loss, one trace, one sweep.

The steps (see ``calls`` for each): the active leaves traced, ``fn(values)``, one
backward sweep from the loss that frees every entry as soon as it is used (the memory
of a plain numpy forward pass, no more), outputs unwrapped, gradients conformed; always
the locks released and mutated arguments written back. The other primitives of the
contract -- ``vjp``, ``vjp_apply``, ``jvp`` -- are in ``operators``; a prepared call's
first run is recorded here too (``recording``), then replayed by ``replay.prepared``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from adswitch.spec import CallInfo, LossFn

from .array.tracer import Tracer, raw
from .calls import conform, trace_leaves, translate, unwrap, write_back
from .core import Trace, backward, sync
from .replay.recorder import Recording, note_nested

__all__ = ["leaf_results", "unit_seed", "value_and_grad"]


def value_and_grad(
    fn: LossFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    info: CallInfo,
    recording: Recording | None = None,
) -> tuple[list[Any], list[Any | None]]:
    """Differentiate ``fn``'s loss with respect to the active leaves (see module doc);
    with a ``recording``, ``f``'s run is recorded for replay (``replay.prepared``)."""
    if info.depth:
        note_nested()
    # ``calls.TracedRun`` inline: as a context manager it measured 1.1-1.3 us (6%) of a
    # tiny gradient, this engine's hot path; the other primitives use it.
    trace, values, traced = trace_leaves(leaves, active)
    try:
        if recording is not None:
            recording.begin(trace, traced)
            loss, outs = fn(values)
            recording.end(outs, loss=loss)
        else:
            loss, outs = fn(values)
        grads = _sweep(trace, loss)
        out_leaves = list(outs)
        for k, o in enumerate(out_leaves):
            if type(o) is Tracer:
                out_leaves[k] = unwrap(o, trace)
    except ValueError as exc:
        error = translate(exc, trace)
        if error is None:
            raise
        raise error from exc
    finally:
        if recording is not None:
            recording.stop()
        trace.close()
        write_back(leaves, traced)
    found = []  # (a loop, not a comprehension: no frame of its own on this hot path)
    for i, (_, value, slot) in traced.items():
        found.append((i, value, grads[slot] if grads else None))
    return out_leaves, leaf_results(leaves, found)


def leaf_results(leaves: Sequence[Any], found: Iterable[tuple[int, Any, Any]]) -> list[Any | None]:
    """One gradient per leaf (``None`` where inactive) from ``(leaf index, the value it
    was traced with, its gradient or None)`` per active leaf: each its own writeable array
    in the leaf's dtype, zeros where nothing reached it."""
    seen: set[int] = set()
    result: list[Any | None] = [None] * len(leaves)
    for i, value, g in found:
        if (
            type(g) is np.ndarray
            and type(value) is np.ndarray
            and value is leaves[i]  # (not a Python float's 0-d stand-in)
            and g.shape == value.shape
            and g.dtype == value.dtype
            and g.base is None
            and id(g) not in seen
            and g.flags.writeable
        ):  # the common case, a fresh gradient array: handed back as it is
            seen.add(id(g))
            result[i] = g
        else:
            result[i] = conform(g, leaves[i], value, seen)
    return result


def _sweep(trace: Trace, loss: Any) -> list[Any] | None:
    if type(loss) is not Tracer:
        return None
    if loss._base is not None:
        sync(loss)
    if loss._trace is not trace or loss._idx is None:
        unwrap(loss, trace)  # a leaked tracer of a finished call raises here
        return None
    value = loss._value
    dtype = (value if type(value) is not Tracer else raw(value)).dtype
    seed = _SEEDS.get(dtype)  # (``unit_seed`` inline: the hot path of every gradient)
    return backward(trace, loss._idx, _seed(dtype) if seed is None else seed)


def unit_seed(dtype: Any) -> np.ndarray:
    """The seed of a loss of ``dtype``: ``1``, read-only (see ``_seed``)."""
    seed = _SEEDS.get(dtype)
    return _seed(dtype) if seed is None else seed


_SEEDS: dict[Any, np.ndarray] = {}


def _seed(dtype: Any) -> np.ndarray:
    """``1`` of the loss's dtype; cached read-only (``conform`` copies it if it reaches a
    gradient unchanged): np.ones costs a microsecond, a fair share of a tiny call."""
    seed = _SEEDS.get(dtype)
    if seed is None:
        seed = np.ones((), dtype=dtype)
        seed.flags.writeable = False
        _SEEDS[dtype] = seed
    return seed
