"""``strict`` mode: refuse turning a value being differentiated into a Python number.

``float(x)``, ``x.item()`` and ``x.tolist()`` on a floating tensor that requires grad
return plain Python numbers; torch then treats them as constants, so the gradient
silently misses every path through them. In ``strict`` mode a ``TorchFunctionMode``
watches those conversions while ``f`` runs and raises ``UnsupportedError`` instead.
Integer and boolean conversions stay allowed: ``int(x)``/``bool(x > 0)`` are piecewise
constant, so treating them as constants is exact. Costs ~15 µs per call on a 10-element
function (every torch call inside ``f`` passes through the mode), hence opt-in.
"""

from __future__ import annotations

from typing import Any

from adswitch.errors import UnsupportedError

from ._errors import caller_line

__all__ = ["scalar_guard"]

_MODE: Any = None


def scalar_guard(torch: Any) -> Any:
    """A context manager (a fresh ``TorchFunctionMode``) that refuses float conversions
    of tensors that require grad.

    Args:
        torch: the imported torch module.

    Returns:
        The mode, to be used in a ``with`` statement.
    """
    global _MODE
    if _MODE is None:
        _MODE = _build(torch)
    return _MODE()


def _build(torch: Any) -> Any:
    from torch.overrides import TorchFunctionMode

    tensor = torch.Tensor
    watched = {tensor.__float__: "float(x)", tensor.item: "x.item()", tensor.tolist: "x.tolist()"}

    class ScalarGuard(TorchFunctionMode):
        def __torch_function__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            what = watched.get(func)
            if what is not None and args[0].requires_grad and args[0].is_floating_point():
                raise UnsupportedError(
                    f"torch (strict mode): {what} turns a value being differentiated into "
                    f"a Python number{caller_line()}, which torch treats as a constant: the "
                    f"gradient would silently miss it. Fix: keep it an array (use xp "
                    f"functions on it, e.g. xp.where instead of Python branches on its "
                    f"value)."
                )
            return func(*args, **(kwargs or {}))

    return ScalarGuard
