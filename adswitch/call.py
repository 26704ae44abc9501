"""One differentiation call, start to end: plan, engine, run, results.

The entry points of :mod:`adswitch.api` are thin wrappers around :func:`differentiate`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adswitch import keys, selection
from adswitch.errors import ActivityError
from adswitch.leaves import describe
from adswitch.outputs import LossFunction
from adswitch.overlap import check_overlap
from adswitch.plan import Plan
from adswitch.registry import default_registry
from adswitch.results import place, restore_scalar_types, write_shadows
from adswitch.spec import Backend, CallInfo

__all__ = ["differentiate"]


def differentiate(
    f: Callable[..., Any],
    args: tuple[Any, ...],
    backend: str | Backend | None,
    zero: bool,
    entry: str,
) -> tuple[Any, tuple[Any, ...]]:
    """``(f's output, gradients)`` of one call; the output is ``None`` for
    ``entry == "gradient"`` (it is not rebuilt)."""
    if not callable(f):
        raise ActivityError(
            f"the function to differentiate must come first; got {describe(f)}. "
            "Call ad.gradient(f, *args)."
        )
    plan = Plan(args)
    engine = selection.select(backend, plan.leaves, default_registry())
    check_overlap(plan, engine)
    calls = selection.current_calls.get()
    if calls and plan.has_duplicated:
        raise ActivityError(
            "Duplicated is not allowed inside a function that is itself being differentiated: "
            "an in-place shadow cannot carry the outer derivative. Pass the argument plain and "
            "use the returned gradient."
        )
    cache_key = keys.cache_key(plan, f) if engine.capabilities.compiles else None
    fn = LossFunction(f, plan)
    token = selection.current_calls.set((*calls, engine))
    try:
        out_leaves, grads = engine.value_and_grad(
            fn, plan.leaves, plan.active, CallInfo(len(calls), cache_key, entry, f)
        )
    finally:
        selection.current_calls.reset(token)

    val = None if entry == "gradient" else fn.output(out_leaves)
    if not calls:
        grads = restore_scalar_types(plan, grads)
    results = place(plan, grads)
    if plan.has_duplicated:
        write_shadows(plan, engine, grads, zero)
    return val, results
