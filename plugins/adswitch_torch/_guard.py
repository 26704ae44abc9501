"""Refuse turning a value being differentiated into a Python number.

``float(x)``, ``x.item()`` and ``x.tolist()`` on a floating tensor that requires grad
return plain Python numbers; torch then treats them as constants (it only warns), so
the gradient silently misses every path through them. Every other engine refuses, and
so does this one: while ``f`` runs in an adswitch call (tracked per thread), those three
methods raise ``UnsupportedError`` for such tensors.

How: the three methods of ``torch.Tensor`` are wrapped once, when the torch engine is
first used. Outside adswitch calls (and for tensors that do not require grad) the
wrappers call torch's own methods unchanged, so the only cost elsewhere is one Python
call on these conversions; inside a call the check is a thread-local read -- unlike a
``TorchFunctionMode``, which would tax every torch operation in ``f``.
Integer and boolean conversions stay allowed: ``int(x)``/``bool(x > 0)`` are piecewise
constant, so treating them as constants is exact.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from adswitch.errors import UnsupportedError

from ._errors import caller_line

__all__ = ["scalar_guard"]

_state = threading.local()
_installed = False
_install_lock = threading.Lock()


@contextmanager
def scalar_guard(torch: Any) -> Iterator[None]:
    """While active (in this thread), float conversions of tensors that require grad raise.

    Args:
        torch: the imported torch module.
    """
    if not _installed:
        _install(torch)
    _state.depth = getattr(_state, "depth", 0) + 1
    try:
        yield
    finally:
        _state.depth -= 1


def _install(torch: Any) -> None:
    global _installed
    with _install_lock:
        if _installed:
            return
        tensor = torch.Tensor
        for name, what in (
            ("__float__", "float(x)"),
            ("item", "x.item()"),
            ("tolist", "x.tolist()"),
        ):
            setattr(tensor, name, _guarded(getattr(tensor, name), what))
        _installed = True


def _guarded(original: Any, what: str) -> Any:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(_state, "depth", 0) and self.requires_grad and self.is_floating_point():
            raise UnsupportedError(
                f"torch: {what} turns a value being differentiated into a Python "
                f"number{caller_line()}, which torch treats as a constant: the gradient would "
                "silently miss it. Fix: keep it an array (use xp functions on it, e.g. "
                "xp.where instead of Python branches on its value)."
            )
        return original(self, *args, **kwargs)

    method.__name__ = getattr(original, "__name__", what)
    method.__doc__ = getattr(original, "__doc__", None)
    method.__wrapped__ = original  # type: ignore[attr-defined]
    return method
