"""What the namespace's sections share: telling traced values from plain ones, refusing politely.

Example:
    >>> import numpy as np
    >>> is_traced(np.ones(2)), untraced(3.0)
    (False, 3.0)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autograd.tracer import Box

from adswitch.errors import UnsupportedError

__all__ = ["is_traced", "unsupported", "untraced"]

_BOX_TYPES = Box.types


def is_traced(value: Any) -> bool:
    """Whether ``value`` is an autograd box (a traced array or scalar)."""
    return type(value) in _BOX_TYPES


def untraced(value: Any) -> Any:
    """The plain value under any number of boxes (``value`` itself when it is plain)."""
    while type(value) in _BOX_TYPES:
        value = value._value
    return value


def _any_traced(values: Any) -> bool:
    for value in values:
        if type(value) in _BOX_TYPES:
            return True
        if isinstance(value, (list, tuple)) and _any_traced(value):
            return True
    return False


def unsupported(
    name: str, numpy_function: Callable[..., Any], *, differentiable_result: bool = True
) -> Callable[..., Any]:
    """A standard function autograd cannot differentiate.

    On plain arrays it is numpy's function; given a traced array it raises
    ``UnsupportedError`` naming the function -- unless its result is not differentiable
    anyway (``differentiable_result=False``, e.g. ``signbit``), in which case it computes
    on the traced array's value.

    Example:
        >>> import numpy as np
        >>> unsupported("cumulative_prod", np.cumprod)(np.asarray([2.0, 3.0]))
        array([2., 6.])
    """

    def function(*args: Any, **kwargs: Any) -> Any:
        if _any_traced(args) or _any_traced(kwargs.values()):
            if not differentiable_result:
                return numpy_function(*(untraced(a) for a in args), **kwargs)
            raise UnsupportedError(
                f"autograd (HIPS) cannot differentiate `{name}`: it has no derivative rule for "
                "it. Fix: compute it from differentiable functions of `ad.array_namespace(x)`, "
                "or use another engine: backend='tape', 'torch' or 'jax'."
            )
        return numpy_function(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"numpy's ``{name}``; not differentiable under autograd (raises)."
    return function
