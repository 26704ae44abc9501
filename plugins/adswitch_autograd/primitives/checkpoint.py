"""``Backend.checkpoint`` on HIPS autograd: a primitive whose rules recompute ``fn``.

autograd has ``autograd.differential_operators.checkpoint``, but it defines only a VJP,
recomputes ``fun`` once per argument and takes one output. Here each checkpointed call
is a fresh ``autograd.extend.primitive`` over the flat leaves, returning the tuple of
floating output leaves (the others -- an int, a string -- are kept aside and put back):
its forward pass runs ``fn`` on the plain values (nothing of it is traced, so only the
inputs are kept); its VJP runs ``fn`` again under this plugin's
reverse mode (``reverse.vjp``) at the saved inputs and pulls the cotangents through it,
once per cotangent for every argument (the other arguments' VJPs take the cached
result); its JVP runs ``fn`` under the plugin's forward mode (``forward.jvp``). Both
nest: on boxed inputs (a derivative of the backward pass) the recomputation is traced by
the enclosing level. A function closing over a boxed value of an enclosing call (its
plain run returns a box) is run plainly instead: the same numbers, no memory saved.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from autograd.extend import defjvp_argnums, defvjp_argnums, primitive

from adswitch.spec import CallInfo, OutputFn, leaf_kind

from ..tracing.boxes import raw_value
from . import forward, reverse
from .custom import _boxed, _zero

__all__ = ["checkpoint"]


class _Closure(Exception):
    """``fn``'s plain run returned a box: ``f`` closes over a traced value of an
    enclosing call, which a primitive over its leaves cannot stand for."""


def checkpoint(
    fn: Callable[[list[Any]], list[Any]],
    leaves: Sequence[Any],
    active: Sequence[bool],
) -> list[Any]:
    """``Backend.checkpoint`` on autograd (module doc)."""

    aside: list[Any] = []  # the output leaves of the plain run
    floating: list[int] = []  # the positions of its floating outputs (the primitive's)

    def both(flat: list[Any]) -> tuple[list[Any], list[Any]]:
        outs = list(fn(flat))
        picked = [outs[k] for k in floating]
        return picked, picked

    @primitive  # type: ignore[untyped-decorator]
    def remat(*plain: Any) -> tuple[Any, ...]:
        outs = list(fn(list(plain)))
        if _boxed(outs):  # f closes over a boxed value: not a function of its leaves
            raise _Closure
        aside[:] = outs
        floating[:] = [k for k, o in enumerate(outs) if leaf_kind(raw_value(o)) == "f"]
        return tuple(outs[k] for k in floating)

    cache: dict[str, Any] = {}

    def vjp_maker(argnums: Sequence[int], ans: Any, args: tuple[Any, ...], kwargs: Any) -> Any:
        def pull(g: Any) -> tuple[Any, ...]:
            if cache.get("g") is not g or cache.get("args") is not args:
                moving = [leaf_kind(raw_value(a)) == "f" for a in args]
                depth = 1 if _boxed(args) or _boxed(list(g)) else 0
                _, back = reverse.vjp(
                    cast(OutputFn, both), list(args), moving, CallInfo(depth=depth)
                )
                cache.update(g=g, args=args, cots=back(list(g)))
            cots = cache["cots"]
            return tuple(_zero(args[i]) if cots[i] is None else cots[i] for i in argnums)

        return pull

    def jvp_maker(
        argnums: Sequence[int], gs: Sequence[Any], ans: Any, args: tuple[Any, ...], kwargs: Any
    ) -> tuple[Any, ...]:
        moving = [False] * len(args)
        tangents: list[Any] = [None] * len(args)
        for i, t in zip(argnums, gs):
            moving[i], tangents[i] = True, t
        depth = 1 if _boxed(args) or _boxed(list(gs)) else 0
        _, out = forward.jvp(
            cast(OutputFn, both), list(args), moving, tangents, CallInfo(depth=depth)
        )
        return tuple(out)

    defvjp_argnums(remat, vjp_maker)
    defjvp_argnums(remat, jvp_maker)
    try:
        picked = remat(*leaves)
    except _Closure:  # run plainly: the same numbers, without the memory saving
        return list(fn(list(leaves)))
    result = list(aside)
    for k, value in zip(floating, picked):
        result[k] = value
    return result
