"""The rest of the Array API's array object on GuardedBox, attached when this is imported:
the namespace, conversions to Python numbers, the operators autograd's ``ArrayBox``
lacks, ``device``/``to_device``/``mT`` and DLPack.

A conversion hands out a concrete value and keeps nothing of the trace, so it is allowed
exactly where there is no gradient to drop: integer and boolean arrays, and the
constants the namespace makes inside ``f`` (``xp.asarray(c)``). A floating traced value
is refused with the fix: ``float(x)``, ``math.exp(x)``, ``int(x)``, ``complex(x)`` name
the user's line (``UnsupportedError``); ``numpy_array[i] = x`` -- numpy calls
``float(x)`` for it -- is reported as the write into plain numpy it is (``MutationError``).
``bool(x)`` is always allowed: branching on a value is piecewise differentiation.

The bitwise operators and shifts act on integer and boolean arrays, which carry no
gradient: they compute on the value (a floating one raises numpy's ``TypeError``); so
does indexing a traced integer array (``x.astype(int)``, numpy's method, makes one).
"""

from __future__ import annotations

import dis
import operator
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError
from adswitch.spec import user_line

from .. import namespace
from ..mutation.writes import write
from ..xp.support import check_device, is_constant
from .boxes import GuardedBox, raw_value

__all__: list[str] = []

_VERSIONS = (None, "2021.12", "2022.12", "2023.12")
_STORE_SUBSCR = dis.opmap["STORE_SUBSCR"]
_NOT_USER = ("adswitch_autograd", "autograd", "numpy")
_TO_NUMBER = (
    "autograd (HIPS) via adswitch: a traced floating value was converted to a Python "
    "number ({how}){line}; that drops its gradient (Python's math functions, float() and "
    "int() see only the number). Fix: keep it an array and use xp's functions -- "
    "`xp.exp(x)`, not `math.exp(x)` -- where `xp = ad.array_namespace(x)`; to look at the "
    "value, return it as an auxiliary output (`return loss, {{'value': x}}`)."
)


def _carries_gradient(box: Any) -> bool:
    value = raw_value(box)
    return np.result_type(value).kind in "fc" and not is_constant(box)


def _refuse(how: str) -> UnsupportedError:
    return UnsupportedError(_TO_NUMBER.format(how=how, line=user_line(skip=_NOT_USER)))


def _float(self: GuardedBox) -> float:
    if not _carries_gradient(self):
        return float(raw_value(self))
    caller = sys._getframe(1)
    if caller.f_code.co_code[caller.f_lasti] == _STORE_SUBSCR:
        # numpy_array[i] = traced: numpy turns this into its "setting an array element with
        # a sequence", which the engine reports as the write into plain numpy it is.
        raise TypeError("float() argument must be a real number, not a traced array")
    raise _refuse("float(), or a math function")


def _number(how: str, convert: Callable[[Any], Any]) -> Callable[[GuardedBox], Any]:
    def to_number(self: GuardedBox) -> Any:
        if _carries_gradient(self):
            raise _refuse(how)
        return convert(raw_value(self))

    to_number.__name__ = f"__{how.partition('(')[0]}__"
    return to_number


_GETITEM = GuardedBox.__getitem__


def _getitem(self: GuardedBox, index: Any) -> Any:
    value = raw_value(self)
    if np.result_type(value).kind in "biu":
        return value[index]  # no derivative; autograd cannot box an integer scalar
    return _GETITEM(self, index)


def _index(self: GuardedBox) -> int:
    return operator.index(raw_value(self))


def _array_namespace(self: GuardedBox, /, *, api_version: str | None = None) -> Any:
    if api_version not in _VERSIONS:
        raise ValueError(
            f"the autograd namespace implements Array API versions up to 2023.12; "
            f"api_version={api_version!r} is not one of them"
        )
    return namespace


def _to_device(self: GuardedBox, device: Any, /, *, stream: Any = None) -> GuardedBox:
    check_device(device)
    return self


def _dlpack(
    self: GuardedBox,
    /,
    *,
    stream: Any = None,
    max_version: tuple[int, int] | None = None,
    dl_device: Any = None,
    copy: bool | None = None,
) -> Any:
    if _carries_gradient(self):
        raise UnsupportedError(
            "autograd (HIPS) via adswitch: a traced array was exported through DLPack "
            f"(`__dlpack__`, e.g. np.from_dlpack(x)){user_line(skip=_NOT_USER)}; that drops "
            "its gradient. Fix: use `xp.from_dlpack` of `xp = ad.array_namespace(x)` (it "
            "keeps the engine's arrays traced), or xp's functions instead of another library's."
        )
    value = np.asarray(raw_value(self))
    kwargs: dict[str, Any] = {"stream": stream}
    if max_version is not None:
        kwargs.update(max_version=max_version, dl_device=dl_device, copy=copy)
    return value.__dlpack__(**kwargs)


def _dlpack_device(self: GuardedBox) -> tuple[int, int]:
    return (1, 0)  # kDLCPU, device 0


def _matrix_transpose(self: GuardedBox) -> Any:
    return namespace.matrix_transpose(self)


def _on_value(function: Callable[..., Any], reflected: bool = False) -> Callable[..., Any]:
    """An operator computed on the values (integer and boolean arrays: no gradient)."""
    if reflected:
        return lambda self, other: function(raw_value(other), raw_value(self))
    return lambda self, other: function(raw_value(self), raw_value(other))


def _inplace_on_value(symbol: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def inplace(self: GuardedBox, other: Any) -> Any:
        result = function(raw_value(self), raw_value(other))
        raw = raw_value(self)
        if type(raw) is not np.ndarray:
            return result  # numpy scalars are immutable: Python rebinds, so do we
        if not np.can_cast(result.dtype, raw.dtype, casting="same_kind"):
            raise TypeError(
                f"Cannot cast the result of `y {symbol} value` from {result.dtype} to "
                f"{raw.dtype} with casting rule 'same_kind' (as numpy's)"
            )
        write(self, Ellipsis, result, f"y {symbol} value")
        return self

    return inplace


_BITWISE = {
    "and": ("&", np.bitwise_and),
    "or": ("|", np.bitwise_or),
    "xor": ("^", np.bitwise_xor),
    "lshift": ("<<", np.left_shift),
    "rshift": (">>", np.right_shift),
}

GuardedBox.__getitem__ = _getitem  # type: ignore[method-assign]
GuardedBox.__array_namespace__ = _array_namespace
GuardedBox.__float__ = _float
GuardedBox.__int__ = _number("int()", int)
GuardedBox.__complex__ = _number("complex()", complex)
GuardedBox.__index__ = _index
GuardedBox.__bool__ = lambda self: bool(raw_value(self))
GuardedBox.__pos__ = lambda self: namespace.positive(self)
GuardedBox.__floordiv__ = lambda self, other: namespace.floor_divide(self, other)
GuardedBox.__rfloordiv__ = lambda self, other: namespace.floor_divide(other, self)
GuardedBox.__invert__ = lambda self: np.invert(raw_value(self))
GuardedBox.device = property(lambda self: "cpu")
GuardedBox.mT = property(_matrix_transpose)
GuardedBox.to_device = _to_device
GuardedBox.__dlpack__ = _dlpack
GuardedBox.__dlpack_device__ = _dlpack_device
for _name, (_symbol, _function) in _BITWISE.items():
    setattr(GuardedBox, f"__{_name}__", _on_value(_function))
    setattr(GuardedBox, f"__r{_name}__", _on_value(_function, reflected=True))
    setattr(GuardedBox, f"__i{_name}__", _inplace_on_value(f"{_symbol}=", _function))
