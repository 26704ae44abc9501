"""A prepared sparse Hessian's seeds as inputs of its shortcut's program
(``adswitch.shortcut``).

The full path hands the colors' seeds (numpy) to the engine's compiled pushforwards as
arguments; a shortcut that traced them as constants would let the compiler fold them in,
which for a Hessian's forward-over-reverse program measured slower (Rosenbrock n =
10,000 on jax: 1.11-1.21x asdex against 1.07-1.12x) and rounds otherwise. So the full
path records its setup in the prepared call's slot (:func:`record`), the shortcut passes
the seeds as one more input of its program, and while it is traced the sparse operators
read that input in their place (:func:`seeds_of`). A sparse Jacobian records none: its
program is faster with the seeds folded in (``adswitch.shortcut``).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

__all__ = ["SEEDS", "record", "reset", "seeds_of", "standing_in"]

#: The slot key of the setup (its ``seeds``) of a prepared sparse call's last full call.
SEEDS = "adswitch.sparse.seeds"

# (the setup, and the traced value standing for its seeds) while a shortcut is traced
_STAND_IN: ContextVar[tuple[Any, Any] | None] = ContextVar("adswitch_sparse_seeds", default=None)


def record(slot: dict[Any, Any] | None, setup: Any) -> None:
    """Keep ``setup`` in a prepared call's ``slot`` (``None``: not prepared, nothing kept)."""
    if slot is not None:
        slot[SEEDS] = setup


def seeds_of(setup: Any) -> Any:
    """``setup.seeds``, or the value standing for them in a shortcut's trace."""
    found = _STAND_IN.get()
    if found is not None and found[0] is setup:
        return found[1]
    return setup.seeds


def standing_in(setup: Any, value: Any) -> Any:
    """Let ``value`` stand for ``setup.seeds``; returns the token to reset (``reset``)."""
    return _STAND_IN.set((setup, value))


def reset(token: Any) -> None:
    """End what :func:`standing_in` began."""
    _STAND_IN.reset(token)
