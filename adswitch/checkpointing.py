"""Rematerialisation: ``ad.checkpoint(f)`` recomputes ``f``'s intermediates in the
backward pass instead of keeping them (``jax.checkpoint``, ``torch.utils.checkpoint``).

The front end differentiates nothing. Inside an adswitch call on engine ``E`` it
flattens the arguments (positional and keyword, one tree), builds a *flat* callable
``fn(leaves) -> out_leaves`` around ``f`` and hands it to ``E``'s optional hook
``E.checkpoint(fn, leaves, active)`` (see :class:`adswitch.spec.Backend`), which returns
the output leaves. Only the inputs are kept for the backward pass, where ``fn`` runs
again.

Checkpointing saves memory; it never changes a number. So an engine without the hook
(forward-mode engines such as the dual example, finite differences) runs ``f`` plainly,
and outside any adswitch call ``ad.checkpoint(f)(*args)`` is ``f(*args)``.

Example:
    >>> import adswitch as ad, numpy as np
    >>> @ad.checkpoint
    ... def layer(h):
    ...     return ad.array_namespace(h).tanh(h)
    >>> ad.gradient(lambda x: ad.array_namespace(x).sum(layer(layer(x))), np.zeros(2))
    (array([1., 1.]),)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adswitch import trees
from adswitch.rule_args import active_leaves
from adswitch.selection import enclosing

__all__ = ["checkpoint"]


class checkpoint:  # (lower case: used as a decorator, named like jax's)
    """``f`` whose intermediates are recomputed in the backward pass (module doc).

    ``ad.checkpoint(f)`` or ``@ad.checkpoint``; the result is called like ``f``
    (positional and keyword arguments, trees in and out).
    """

    def __init__(self, fun: Callable[..., Any]) -> None:
        if not callable(fun):
            from adswitch.errors import UsageError

            raise UsageError(
                f"ad.checkpoint(f): f must be a callable, got {type(fun).__name__}; "
                "use it as ad.checkpoint(f) or as the decorator @ad.checkpoint."
            )
        self.fun = fun
        self.__name__: str = getattr(fun, "__name__", type(self).__name__)
        self.__doc__ = getattr(fun, "__doc__", None)
        self.__wrapped__ = fun

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        engine = enclosing()
        hook = None if engine is None else getattr(engine, "checkpoint", None)
        if engine is None or hook is None:  # outside a call, or no hook: same numbers
            return self.fun(*args, **kwargs)
        leaves, in_td = trees.flatten((args, kwargs))
        active = active_leaves(engine, leaves)
        if not any(active):  # nothing to differentiate through f: nothing to keep
            return self.fun(*args, **kwargs)
        fun = self.fun
        out_td: list[trees.TreeDef] = []  # set by every run of fn (the same each time)

        def fn(flat: list[Any]) -> list[Any]:
            a, kw = trees.unflatten(in_td, list(flat))
            out_leaves, td = trees.flatten(fun(*a, **kw))
            out_td[:] = [td]
            return out_leaves

        out = hook(fn, leaves, active)
        if not out_td:  # an engine that built the output without calling fn here
            fn(list(leaves))
        return trees.unflatten(out_td[0], list(out))
