"""GuardedBox's writing and power operators, attached to the class when this is imported.

``y[i] = v`` and the in-place operators (``y += v``, ``y @= v``...) are recorded by
:mod:`.writes` with numpy's semantics, or refused with a clear error. ``b ** e``,
``2.0 ** e`` and ``b **= e`` are :func:`.power.pow`, exact for nested derivatives in a
traced exponent at ``e == 0`` (autograd's own ``power`` rule is not). The engine imports
this module, so they are in force in every trace that makes GuardedBoxes.
"""

from __future__ import annotations

from typing import Any

import autograd.numpy as anp
import numpy as np

from ..mutation.writes import write
from ..xp.power import pow as exact_pow
from . import box_methods  # noqa: F401  (attaches the rest of the standard's array object)
from .boxes import GuardedBox, raw_value

__all__: list[str] = []

_INPLACE = {
    "__iadd__": ("+=", "add"),
    "__isub__": ("-=", "subtract"),
    "__imul__": ("*=", "multiply"),
    "__itruediv__": ("/=", "true_divide"),
    "__ifloordiv__": ("//=", "floor_divide"),
    "__imod__": ("%=", "mod"),
    "__ipow__": ("**=", "power"),
    "__imatmul__": ("@=", "matmul"),
}


def _setitem(self: GuardedBox, index: Any, value: Any) -> None:
    write(self, index, value, "y[index] = value")


# ``b ** e`` and ``2.0 ** e``: ArrayBox's operators call ``anp.power``, whose rule is
# wrong for nested derivatives in a traced exponent at ``e == 0``; ``power.pow`` is exact
# there and is ``anp.power`` for a constant exponent.
def _pow(self: GuardedBox, other: Any) -> Any:
    return exact_pow(self, other)


def _rpow(self: GuardedBox, other: Any) -> Any:
    return exact_pow(other, self)


def _inplace_method(symbol: str, function_name: str) -> Any:
    def inplace(self: GuardedBox, other: Any) -> Any:
        if function_name == "power":  # exact in a traced exponent, as ``**``
            result = exact_pow(self, other)
        else:
            result = getattr(anp, function_name)(self, other)
        raw = raw_value(self)
        if type(raw) is not np.ndarray:
            return result  # numpy scalars are immutable: Python rebinds, so do we
        if not np.can_cast(result.dtype, raw.dtype, casting="same_kind"):
            # numpy's in-place ufunc rule; a plain write would cast silently instead
            raise TypeError(
                f"Cannot cast {function_name} output from {result.dtype} to {raw.dtype} "
                f"with casting rule 'same_kind' (as numpy's `y {symbol} value`)"
            )
        write(self, Ellipsis, result, f"y {symbol} value")
        return self

    inplace.__name__ = function_name
    return inplace


GuardedBox.__setitem__ = _setitem
GuardedBox.__pow__ = _pow
GuardedBox.__rpow__ = _rpow
for _name, (_symbol, _function) in _INPLACE.items():
    setattr(GuardedBox, _name, _inplace_method(_symbol, _function))
