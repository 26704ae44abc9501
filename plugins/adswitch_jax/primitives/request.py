"""One primitive call as the engine contract hands it over, and its eager run.

Imported only once jax is in use (it imports jax through its imports).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from adswitch.spec import CallInfo
from adswitch_jax.notices import warn_once
from adswitch_jax.primitives import eager
from adswitch_jax.primitives.pullback import Pullback, eager_apply
from adswitch_jax.primitives.results import Kinds, outputs, per_leaf
from adswitch_jax.programs.entries import name_of, warning_key
from adswitch_jax.programs.keys import Scan

__all__ = ["Request", "eager_run", "finish", "unkeyed"]


class Request:
    """One primitive call, as the engine contract hands it over."""

    __slots__ = (
        "active",
        "batched",
        "fn",
        "info",
        "leaves",
        "primitive",
        "seed",
        "tangents",
    )

    def __init__(
        self,
        primitive: str,
        fn: Any,
        leaves: Sequence[Any],
        active: Sequence[bool],
        info: CallInfo,
        seed: Callable[[Sequence[Any]], list[Any]] | None = None,
        tangents: Sequence[Any] | None = None,
    ) -> None:
        self.primitive = primitive
        self.fn = fn
        self.leaves = leaves
        self.active = active
        self.info = info
        self.seed = seed
        # only the active leaves' tangents go into a program
        self.tangents = None if tangents is None else [t for t, a in zip(tangents, active) if a]
        self.batched = info.batched and primitive in ("vjp_apply", "jvp")


def unkeyed(request: Request, found: Scan, x64: bool) -> tuple[list[Any], Any]:
    """The call run eagerly because it cannot be keyed (said once per function)."""
    func = request.info.func
    warn_once(
        warning_key("unkeyed", func),
        f"jax engine: {name_of(func)} cannot be compiled because an argument leaf is "
        "unhashable (a non-numeric array, or a non-array value used as a constant), so it "
        "runs eagerly (much slower). Fix: pass numeric arrays, or hashable constants.",
    )
    return eager_run(request, found, not found.jax_kind, x64)


def eager_run(
    request: Request, found: Scan, semantics: bool | None, x64: bool
) -> tuple[list[Any], Any]:
    """The call run without ``jit`` (:mod:`adswitch_jax.primitives.eager`), results finished."""
    fn, leaves, active = request.fn, request.leaves, request.active
    primitive = request.primitive
    if primitive == "value_and_grad":
        out_leaves, result = eager.value_and_grad(fn, leaves, active, semantics)
    elif primitive == "vjp_apply":
        assert request.seed is not None
        out_leaves, result = eager.vjp_apply(
            fn, leaves, active, semantics, request.seed, request.batched
        )
    elif primitive == "jvp":
        assert request.tangents is not None
        out_leaves, result = eager.jvp(
            fn, leaves, active, semantics, request.tangents, request.batched
        )
    else:
        out_leaves, residuals, how = eager.vjp(fn, leaves, active, semantics)
        pullback = Pullback(eager_apply(how), residuals, Kinds(leaves, active), x64)
        return outputs(out_leaves, found.jax_kind), pullback
    return finish(request, found, out_leaves, result, Kinds(leaves, active))


def finish(
    request: Request, found: Scan, out_leaves: list[Any], result: Any, kinds: Kinds
) -> tuple[list[Any], Any]:
    """Outputs and gradients (or tangents) in the caller's kinds."""
    jax_kind = found.jax_kind
    # (the caller reads only the outputs' shapes: no copies to numpy)
    outs = outputs(out_leaves, jax_kind) if request.info.wants_outputs else list(out_leaves)
    if request.primitive == "jvp":
        return outs, outputs(list(result), jax_kind)
    return outs, per_leaf(result, kinds, request.batched)
