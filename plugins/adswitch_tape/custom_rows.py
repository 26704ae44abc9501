"""The batch helpers of the rule hooks (``custom``): a user's ``bwd`` or jvp ``rule`` is
written for one cotangent or tangent, so under a batched sweep (``BATCH.axes``) it runs
once per row, outside the sweep's batch axes, and the rows are stacked back."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .array.tracer import Tracer, raw
from .core import BATCH

__all__ = ["batch_shape", "cotangent", "filled", "per_row", "stacked", "unbatched"]


def unbatched(call: Callable[[], Any]) -> Any:
    """Run the user's code outside the sweep's batch axes (it is written unbatched)."""
    previous = BATCH.axes
    BATCH.axes = 0
    try:
        return call()
    finally:
        BATCH.axes = previous


def batch_shape(values: Sequence[Any], b: int) -> tuple[int, ...]:
    """The leading ``b`` axes of the first value given (``None``: not given)."""
    for v in values:
        if v is not None:
            return tuple(v.shape[:b])
    return ()


def filled(items: Sequence[Any], outs: Sequence[Any], batch: tuple[int, ...]) -> list[Any]:
    """The outputs' cotangents, zeros where none reached (the contract's ``cotangents``);
    ``outs``: each output's ``(shape, dtype)``, ``None`` where it is not floating."""
    return [
        np.zeros(batch + s[0], dtype=s[1]) if c is None and s is not None else c
        for c, s in zip(items, outs)
    ]


def per_row(
    pull: Callable[[list[Any]], list[Any]],
    cts: list[Any],
    batch: tuple[int, ...],
    args: Sequence[Any],
) -> list[Any]:
    """``pull`` (one cotangent per output -> one per argument) of ``cts``, whose leading
    axes are ``batch`` under the sweep's ``BATCH.axes``: once when there are none, else
    once per row, the rows stacked (``None``: a zero)."""
    if not BATCH.axes:
        return list(unbatched(functools.partial(pull, cts)))
    rows = []
    for r in np.ndindex(*batch):
        row = [None if c is None else c[r] for c in cts]
        rows.append(unbatched(functools.partial(pull, row)))
    return [
        stacked([row[k] for row in rows], batch, tuple(np.shape(a)), _dtype(a))
        for k, a in enumerate(args)
    ]


def _dtype(a: Any) -> Any:
    return getattr(a, "dtype", np.dtype(np.float64))


def stacked(rows: list[Any], batch: tuple[int, ...], shape: tuple[int, ...], dtype: Any) -> Any:
    """Rows (``None``: zero) as one array of shape ``batch + shape``; ``None`` if all are."""
    if all(r is None for r in rows):
        return None
    full = [np.zeros(shape, dtype=dtype) if r is None else r for r in rows]
    if not any(type(r) is Tracer for r in full):
        return np.stack([np.asarray(r) for r in full]).reshape(batch + shape)
    from .xp.shapes import reshape, stack  # (traced rows: a nested sweep records them)

    return reshape(stack(full), batch + shape)


def cotangent(c: Any, arg: Any, batch: tuple[int, ...]) -> Any:
    """A result the sweep can accumulate: zeros for ``None`` (the sweep adds what a rule
    returns), a Python number as an array of the argument's dtype."""
    if c is None:
        return np.zeros(batch + tuple(np.shape(arg)), dtype=_dtype(arg))
    if type(c) is Tracer:
        # a tracer in a sweep that is not recorded (``arg`` plain) came from a constant
        # the rule closes over (an ``ad.stop_gradient`` value: traced non-differentiated
        # arguments are refused by the front end): its value, not a leaked tracer
        return c if type(arg) is Tracer else np.asarray(raw(c))
    if type(c) is np.ndarray:
        return c
    return np.asarray(c, dtype=_dtype(arg))
