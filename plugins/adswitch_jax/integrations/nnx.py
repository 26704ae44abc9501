"""flax ``nnx`` specifics: modules that are no jax pytree, and writes into Variables.

An ``nnx`` module is a mutable object: a call may write into its Variables (BatchNorm's
running statistics, an ``Rngs`` counter, ``self.count[...] += 1``). adswitch, like
``jax.grad``, hands ``f`` a copy of each argument rebuilt from its leaves, so such a write
lands in the copy and is lost -- the caller's module keeps its old statistics, and dropout
draws the same mask on every step. :func:`record` lists the Variables rebuilt for one call
of ``f``; :func:`refuse_lost_writes` raises when ``f`` wrote into one of them without
returning the new value. No jax or flax import here: both are read from ``sys.modules``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from adswitch.errors import MutationError

__all__ = ["is_graph_node", "note_rebuilt", "record", "refuse_lost_writes"]

# (variable, the value it was rebuilt with) for the call of f running in this context.
_REBUILT: ContextVar[list[tuple[Any, Any]] | None] = ContextVar("adswitch_jax_nnx", default=None)


def is_graph_node(cls: type) -> bool:
    """Whether ``cls`` is a flax ``nnx`` object class (``nnx.Pytree``: modules, ``Rngs``).

    Example:
        >>> is_graph_node(dict)
        False
    """
    pytree = getattr(sys.modules.get("flax.nnx"), "Pytree", None)
    return isinstance(pytree, type) and issubclass(cls, pytree)


def note_rebuilt(obj: Any) -> None:
    """Remember ``obj`` if it is an ``nnx`` Variable rebuilt while :func:`record` runs."""
    rebuilt = _REBUILT.get()
    if rebuilt is None:
        return
    variable = getattr(sys.modules.get("flax.nnx"), "Variable", None)
    if isinstance(variable, type) and issubclass(type(obj), variable):
        rebuilt.append((obj, obj.get_raw_value()))


@contextmanager
def record() -> Iterator[list[tuple[Any, Any]]]:
    """List the ``nnx`` Variables rebuilt inside the block (one call of ``f``).

    Example:
        >>> with record() as rebuilt:
        ...     pass
        >>> rebuilt
        []
    """
    rebuilt: list[tuple[Any, Any]] = []
    token = _REBUILT.set(rebuilt)
    try:
        yield rebuilt
    finally:
        _REBUILT.reset(token)


def refuse_lost_writes(rebuilt: list[tuple[Any, Any]], out_leaves: Iterable[Any]) -> None:
    """Raise :class:`MutationError` if ``f`` wrote into a rebuilt Variable and the value
    written is not among its output leaves (returned, it can be put back after the call).

    Args:
        rebuilt: what :func:`record` listed during the call.
        out_leaves: ``f``'s flat output leaves.
    """
    if not rebuilt:
        return
    returned = {id(leaf) for leaf in out_leaves}
    for variable, before in rebuilt:
        now = variable.get_raw_value()
        if now is not before and id(now) not in returned:
            kind = type(variable).__name__
            raise MutationError(
                f"jax engine: f writes into a flax nnx {kind} of its arguments (BatchNorm "
                "statistics, an Rngs counter, a Variable it sets); adswitch, like jax.grad, "
                "differentiates a copy of the module rebuilt from its leaves, so the write "
                "would be lost and your module would keep its old state. Fix: return that "
                "state and put it back after the call: (loss, state), grads = "
                "ad.withgradient(lambda m, x: (loss_fn(m, x), nnx.state(m, "
                "nnx.Not(nnx.Param))), model, x); nnx.update(model, state). Or make f "
                "stateless (BatchNorm(use_running_average=True), Dropout(deterministic=True))."
            )
