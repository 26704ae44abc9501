"""What the namespace's sections share: telling traced values from plain ones, making
constants of the engine's array type inside a trace, refusing politely.

Example:
    >>> import numpy as np
    >>> is_traced(np.ones(2)), untraced(3.0)
    (False, 3.0)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from autograd.tracer import Box, trace_stack

from adswitch.errors import MutationError, UnsupportedError

from ..tracing import levels
from ..tracing.boxes import GuardedBox, tracing

__all__ = [
    "ConstantBox", "check_device", "constant", "is_constant", "is_traced", "unsupported",
    "untraced",
]  # fmt: skip

_BOX_TYPES = Box.types


class ConstantBox(GuardedBox):
    """A traced array without a derivative, made by :func:`constant`: ``root`` is the
    node it was made with (a write of a traced value into it gives it another).

    numpy may see its value (``np.asarray(xp.eye(2))``, numpy functions of constants),
    as long as nothing traced was written into it.
    """

    __slots__ = ["root"]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if self._node is not self.root:
            raise MutationError(
                "autograd (HIPS) via adswitch: an array a traced value was written into was "
                "converted to a numpy array (np.asarray, or a numpy function of it); that "
                "drops its gradient. Fix: use the functions of `xp = ad.array_namespace(x)` "
                "on it, not numpy's."
            )
        value = np.asarray(untraced(self))
        if copy:
            return np.array(value, dtype=dtype, copy=True)
        return value if dtype is None else value.astype(dtype, copy=copy is not False)


# A box type like GuardedBox; boxed again by a nested call, it becomes a GuardedBox.
Box.types.add(ConstantBox)
Box.type_mappings[ConstantBox] = GuardedBox


def constant(value: Any, *, new: bool = False) -> Any:
    """``value`` (a numpy array) as the engine's array type inside an adswitch trace: a
    box without a derivative, so that code asking for the namespace of its arrays
    (``array_api_compat.array_namespace(x, c)``) sees one namespace. Outside a trace, and
    for integer and boolean arrays (never differentiated; they must stay usable as
    indices and masks, which autograd's boxes are not), ``value`` itself.

    ``new``: ``value`` is an array nothing else refers to (a creation function's), and
    the box may be written like any traced array (``buf[i] = v``, see :mod:`.writes`).
    Otherwise the box holds a read-only view: a write into it, which numpy would make
    into the memory it shares with ``value``, is refused (``MutationError``) rather than
    made into a copy.

    Example:
        >>> constant(np.ones(2))  # outside a trace: the array itself
        array([1., 1.])
    """
    if not tracing() or not isinstance(value, np.ndarray) or value.dtype.kind not in "fc":
        return value
    if new:
        value = value if value.flags.c_contiguous else value.copy(order="C")  # keeps 0-d
    else:
        value = value.view()
        value.flags.writeable = False
    box = ConstantBox(value, trace_stack.top, levels.constant_root())
    box.root = box._node
    return box


def is_constant(value: Any) -> bool:
    """Whether ``value`` is a box :func:`constant` made that nothing traced was written
    into since (it carries no gradient)."""
    return type(value) is ConstantBox and value._node is value.root


def check_device(device: Any) -> None:
    """Refuse a device other than the CPU (the engine's only one).

    Example:
        >>> check_device("cpu")
    """
    if device is not None and device != "cpu":
        raise ValueError(f"autograd arrays live on the CPU only; got device={device!r}")


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
