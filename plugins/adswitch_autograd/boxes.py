"""A guarded ArrayBox: autograd's traced array, minus its silent in-place rebinding.

HIPS autograd boxes have no ``__iadd__``, so ``y += 1`` on a traced array quietly
rebinds ``y`` to a new box. When another name still refers to the old object (``z = y``)
or the argument belongs to the caller, numpy would have changed both, autograd changes
one: a silently wrong number. While an adswitch trace is active every box autograd
creates is a :class:`GuardedBox`, whose in-place operators and item assignment raise
:class:`~adswitch.errors.MutationError` instead. Outside adswitch autograd is untouched.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

from autograd.numpy.numpy_boxes import ArrayBox
from autograd.tracer import Box

from adswitch.errors import MutationError

__all__ = ["GuardedBox", "guarded_boxes", "mutation_message"]

_INPLACE = {
    "__iadd__": "+=",
    "__isub__": "-=",
    "__imul__": "*=",
    "__itruediv__": "/=",
    "__ifloordiv__": "//=",
    "__imod__": "%=",
    "__ipow__": "**=",
    "__imatmul__": "@=",
}


def mutation_message(operation: str) -> str:
    """The one explanation every refused write carries: the engine, the operation, the fix."""
    return (
        f"autograd (HIPS) cannot differentiate the in-place write `{operation}` on a traced "
        "array: its arrays are immutable and it records values by reference, so the gradient "
        "would be wrong. Fix: build a new array instead (`y = y + v`, `xp.where(mask, v, y)`, "
        "`xp.concat`/`xp.stack` of the pieces), or use an engine that records mutation: "
        "backend='tape'."
    )


def _refuse_inplace(symbol: str) -> Any:
    def inplace(self: GuardedBox, other: Any) -> NoReturn:
        raise MutationError(mutation_message(f"x {symbol} y"))

    inplace.__name__ = f"refused {symbol}"
    return inplace


class GuardedBox(ArrayBox):  # type: ignore[misc]
    """An ``ArrayBox`` whose in-place writes raise ``MutationError`` instead of rebinding."""

    __slots__: list[str] = []

    def __setitem__(self, index: Any, value: Any) -> NoReturn:
        raise MutationError(mutation_message("x[index] = value"))

    for _name, _symbol in _INPLACE.items():
        locals()[_name] = _refuse_inplace(_symbol)
    del _name, _symbol


# Registered as a box type (``isbox``, trace-level lookup) but mapped to no value type:
# autograd only creates GuardedBoxes while :func:`guarded_boxes` has swapped them in.
Box.types.add(GuardedBox)
Box.type_mappings[GuardedBox] = GuardedBox

_ARRAY_TYPES = tuple(t for t, box in Box.type_mappings.items() if box is ArrayBox)
_depth = 0


@contextmanager
def guarded_boxes() -> Iterator[None]:
    """Make autograd box every array as a :class:`GuardedBox` for the duration.

    Re-entrant (nested adswitch calls): only the outermost level swaps and restores.
    """
    global _depth
    if _depth:
        _depth += 1
        try:
            yield
        finally:
            _depth -= 1
        return
    mappings = Box.type_mappings
    for array_type in _ARRAY_TYPES:
        mappings[array_type] = GuardedBox
    _depth = 1
    try:
        yield
    finally:
        _depth = 0
        for array_type in _ARRAY_TYPES:
            mappings[array_type] = ArrayBox
