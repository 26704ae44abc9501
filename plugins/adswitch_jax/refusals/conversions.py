"""Refuse conversions of a differentiated value to a Python number in the eager fallback.

Without ``jit``, jax's tracers hold concrete values, and some conversions hand them out:
``x.item()`` returns the number and ``int(x)`` truncates it, both silently dropping the
gradient (``x[0].item() * xp.sum(x)`` would differentiate as if ``x[0]`` were a constant).
``float``, ``complex`` and ``.tolist()`` raise jax's ``ConcretizationTypeError`` there, a
message that names neither the conversion nor the user's line. So while the eager
fallback runs ``f`` (and only then, on this thread), these conversions of a floating or
complex tracer raise :class:`UnsupportedError` naming the conversion, the line and the
fix, as the tape and torch do. Integer and boolean values carry no gradient and convert
as before; ``bool(x)`` (branching: piecewise differentiation) and printing are untouched.
``np.asarray(x)`` is refused by jax itself (see :mod:`adswitch_jax.refusals.errors`).

How: as in :mod:`adswitch_jax.refusals.inplace`, ``jax.core.Tracer`` gets wrappers while some
thread runs an eager call; they behave exactly like jax's own methods for every other
thread and outside such a call. Imported only once jax is in use.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from jax.core import Tracer

from adswitch.errors import UnsupportedError
from adswitch.spec import user_line

__all__ = ["NOT_USER", "TO_NUMBER", "refusing"]

#: Top-level packages whose frames are not the user's line.
NOT_USER = ("adswitch_jax", "jax", "jaxlib", "numpy")

TO_NUMBER = (
    "jax engine: {how} turns a value being differentiated into a Python number{line}, "
    "which jax treats as a constant: the gradient would silently miss it. Fix: keep it "
    "traced -- use xp functions on the array (xp = ad.array_namespace(x); e.g. xp.where "
    "instead of Python branches on its value) -- or pass the argument as ad.Const(value) "
    "if it is not to be differentiated; to look at the value, print it or return it as an "
    "auxiliary output (return loss, {{'value': x}})."
)

# The conversion methods wrapped, and how a message names each.
_NAMES = {
    "item": "x.item()",
    "tolist": "x.tolist()",
    "__int__": "int(x)",
    "__float__": "float(x)",
    "__complex__": "complex(x)",
}

_local = threading.local()
_lock = threading.Lock()
_installed = 0
_saved: dict[str, Any] = {}


def _carries_gradient(value: Any) -> bool:
    # Every tracer f sees in an eager call belongs to a differentiation (the arguments
    # not differentiated are plain arrays); only floating and complex ones carry a gradient.
    try:
        kind = np.dtype(value.dtype).kind
    except (AttributeError, TypeError):  # (an extended dtype: a PRNG key, a token)
        return False
    return kind in "fc"


def _refusing(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(_local, "depth", 0) and _carries_gradient(self):
            line = user_line(skip=NOT_USER)
            raise UnsupportedError(TO_NUMBER.format(how=_NAMES[name], line=line))
        return original(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = original.__doc__
    return method


def _install() -> None:
    own = Tracer.__dict__
    for name in _NAMES:
        if name in own:  # only what this jax version defines on Tracer itself
            _saved[name] = own[name]
            setattr(Tracer, name, _refusing(name, own[name]))


def _uninstall() -> None:
    for name, original in _saved.items():
        setattr(Tracer, name, original)
    _saved.clear()


@contextmanager
def refusing() -> Iterator[None]:
    """Refuse conversions of differentiated values to Python numbers while the block runs.

    Example:
        >>> import jax
        >>> def f(x):
        ...     with refusing():
        ...         return x * x.item()
        >>> try:
        ...     jax.grad(f)(1.0)
        ... except UnsupportedError:
        ...     print("refused")
        refused
    """
    global _installed
    with _lock:
        if _installed == 0:
            _install()
        _installed += 1
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        yield
    finally:
        _local.depth -= 1
        with _lock:
            _installed -= 1
            if _installed == 0:
                _uninstall()
