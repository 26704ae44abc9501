"""The jax engine's primitives, as :class:`adswitch.spec.Backend` names them.

Imported lazily by :mod:`adswitch_jax.plugin` the first time jax is used (it imports jax).
See :mod:`adswitch_jax.primitives.dispatch` for how a call runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
from jax.core import Tracer

from adswitch.spec import CallInfo, LossFn, OutputFn, Pullback, SeedFn
from adswitch_jax.closures.captures import configure, unbake
from adswitch_jax.closures.recall import forget
from adswitch_jax.primitives.dispatch import CACHE, Request, run
from adswitch_jax.programs.entries import forget_compiles
from adswitch_jax.programs.keys import ArrayImpl

__all__ = ["CACHE", "jvp", "reset", "value_and_grad", "vjp", "vjp_apply"]

configure(ArrayImpl, Tracer)
assert issubclass(ArrayImpl, jax.Array)


def reset() -> None:
    """Forget every compiled program and compile count (for tests)."""
    CACHE.clear()
    forget_compiles()
    forget()
    unbake()


def value_and_grad(
    fn: LossFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
) -> tuple[list[Any], list[Any | None]]:
    """:meth:`adswitch.spec.Backend.value_and_grad` (see there)."""
    return run(Request("value_and_grad", fn, leaves, active, info))


def vjp(
    fn: OutputFn, leaves: Sequence[Any], active: Sequence[bool], info: CallInfo
) -> tuple[list[Any], Pullback]:
    """:meth:`adswitch.spec.Backend.vjp` (see there): the pullback is compiled too."""
    return run(Request("vjp", fn, leaves, active, info))


def vjp_apply(
    fn: OutputFn, leaves: Sequence[Any], active: Sequence[bool], seed: SeedFn, info: CallInfo
) -> tuple[list[Any], list[Any | None]]:
    """:meth:`adswitch.spec.Backend.vjp_apply` (see there): the seed is baked in."""
    return run(Request("vjp_apply", fn, leaves, active, info, seed=seed))


def jvp(
    fn: OutputFn,
    leaves: Sequence[Any],
    active: Sequence[bool],
    tangents: Sequence[Any],
    info: CallInfo,
) -> tuple[list[Any], list[Any]]:
    """:meth:`adswitch.spec.Backend.jvp` (see there)."""
    return run(Request("jvp", fn, leaves, active, info, tangents=tangents))
