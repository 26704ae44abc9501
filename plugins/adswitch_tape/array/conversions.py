"""What a traced array may become outside the tape: Python numbers, numpy arrays, DLPack.

A conversion hands out the concrete value and keeps nothing of the trace, so it is
allowed exactly when there is no gradient to drop: for integer and boolean arrays
(they carry none), and for arrays without history at every trace level (fresh buffers,
results of zero-derivative functions, constants). A floating value that does carry a
gradient is refused with the fix: ``float(t)``, ``math.exp(t)``, ``int(t)``,
``complex(t)`` say it is a conversion to a Python number and name the user's line
(:class:`~adswitch.errors.UnsupportedError`); ``numpy_array[i] = t`` -- numpy calls
``float(t)`` for it -- and ``np.asarray(t)`` are writes of a traced value into plain
numpy (:class:`~adswitch.errors.MutationError`), as the gradient would come out wrong. Each
refusal names the line: the innermost frame outside the tape and numpy -- the user's, or
a library's that converts to numpy (scipy's fallback for special functions the tape's
``xp.special`` does not have).
``bool(t)`` is always allowed: branching on a value is piecewise differentiation, as
in torch, jax (without jit) and autograd.

:func:`constant` makes a tape array of a value with no history (level 0, see
``core.trace.FREE``): the namespace returns one for every result that carries no
gradient, so code that asks for the namespace of its arrays sees the tape's only.
"""

from __future__ import annotations

import dis
import operator
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from adswitch.errors import MutationError, UnsupportedError
from adswitch.spec import user_line

from ..core import FREE, Tracer, raw, sync

__all__ = [
    "TO_NUMPY", "array", "carries_gradient", "constant", "dlpack", "dlpack_device",
    "to_bool", "to_complex", "to_float", "to_index", "to_int",
]  # fmt: skip

TO_NUMPY = (
    "tape: a traced value was converted to a plain number or numpy array ({how}){line}; "
    "that drops its gradient, and writing it into a plain numpy array would make the "
    "gradient wrong. Fix: keep traced values in arrays built by the namespace -- a traced "
    "buffer from `xp.zeros_like(x)` (then `buf[i] = value`), or `xp.stack`/`xp.concat` of "
    "the pieces -- where `xp = ad.array_namespace(x)`; use xp functions, not numpy's. "
    "Where that line is in another library, the library converts the tape's arrays to "
    "numpy (it has no Array API path for this function): call it on constants only, or "
    "choose backend='torch' or 'jax' for f."
)

_TO_NUMBER = (
    "tape: a traced floating value was converted to a Python number ({how}){line}; that "
    "drops its gradient (Python's math functions, float() and int() see only the number). "
    "Fix: keep it an array and use xp's functions -- `xp.exp(x)`, not `math.exp(x)` -- "
    "where `xp = ad.array_namespace(x)`; to look at the value, return it as an auxiliary "
    "output (`return loss, {{'value': x}}`)."
)

_NOT_USER = ("adswitch_tape", "numpy")
_STORE_SUBSCR = dis.opmap["STORE_SUBSCR"]


def constant(value: Any) -> Tracer:
    """A tape array of ``value`` without history (level 0): a constant, or a fresh buffer."""
    if not isinstance(value, (np.ndarray, np.generic)):  # (a Python bool from `t == "a"`)
        value = np.asarray(value)
    return Tracer(value, FREE, None)


def carries_gradient(x: Any) -> bool:
    """Whether ``x`` is a tracer with history at some trace level (so a gradient can flow
    through it); constants, fresh buffers nothing traced was written into, and
    non-floating arrays carry none."""
    if type(x) is not Tracer:
        return False
    if np.dtype(raw(x).dtype).kind in "biu":
        return False
    while type(x) is Tracer:
        if x._base is not None:
            sync(x)
        if x._idx is not None:
            return True
        x = x._value
    return False


def _number(how: str, convert: Callable[[Any], Any]) -> Callable[[Tracer], Any]:
    """``__int__``/``__complex__``: the number when ``x`` carries no gradient."""

    def to_number(self: Tracer) -> Any:
        if carries_gradient(self):
            raise UnsupportedError(_TO_NUMBER.format(how=how, line=user_line(skip=_NOT_USER)))
        return convert(raw(self))

    to_number.__name__ = f"__{how.partition('(')[0]}__"
    return to_number


to_int = _number("int()", int)
to_complex = _number("complex()", complex)


def to_float(self: Tracer) -> float:
    """``float(t)``; numpy calls it for ``numpy_array[i] = t``, which is reported as the
    write it is (the caller's instruction tells the two apart)."""
    if not carries_gradient(self):
        return float(raw(self))
    caller = sys._getframe(1)
    if caller.f_code.co_code[caller.f_lasti] == _STORE_SUBSCR:
        raise MutationError(
            TO_NUMPY.format(how="`numpy_array[i] = traced`", line=user_line(skip=_NOT_USER))
        )
    raise UnsupportedError(
        _TO_NUMBER.format(how="float(), or a math function", line=user_line(skip=_NOT_USER))
    )


def to_index(self: Tracer) -> int:
    """``operator.index(t)`` (``lst[t]``, ``range(t)``): integer arrays only, as numpy."""
    return operator.index(raw(self))


def to_bool(self: Tracer) -> bool:
    """``bool(t)``: always allowed (branching is piecewise differentiation)."""
    return bool(raw(self))


def _shares_memory_safely(x: Tracer) -> bool:
    """Whether numpy may see ``x``'s memory: a constant or fresh buffer of level 0, or a
    non-floating array. (A buffer made like a traced array, ``xp.zeros_like(x)``, is
    meant to be written with traced values -- writes a numpy alias would not see.)"""
    return x._trace.level == 0 or np.dtype(raw(x).dtype).kind in "biu"


def array(self: Tracer, dtype: Any = None, copy: Any = None) -> np.ndarray:
    """``np.asarray(t)``: the value, for a constant (see :func:`_shares_memory_safely`)."""
    if not _shares_memory_safely(self):
        how = "np.asarray, or `numpy_array[...] = traced`"
        raise MutationError(TO_NUMPY.format(how=how, line=user_line(skip=_NOT_USER)))
    value = raw(self)
    if copy:
        return np.array(value, dtype=dtype, copy=True)
    return np.asarray(value, dtype=dtype)


def dlpack(
    self: Tracer,
    /,
    *,
    stream: Any = None,
    max_version: tuple[int, int] | None = None,
    dl_device: Any = None,
    copy: bool | None = None,
) -> Any:
    """``t.__dlpack__()``: the value's memory, for a constant (as :func:`array`)."""
    if not _shares_memory_safely(self):
        raise UnsupportedError(
            TO_NUMPY.format(
                how="__dlpack__, e.g. another library's from_dlpack",
                line=user_line(skip=_NOT_USER),
            )
        )
    value = np.asarray(raw(self))
    kw: dict[str, Any] = {"stream": stream}
    if max_version is not None:
        kw["max_version"] = max_version
    if dl_device is not None:
        kw["dl_device"] = dl_device
    if copy is not None:
        kw["copy"] = copy
    return value.__dlpack__(**kw)


def dlpack_device(self: Tracer, /) -> tuple[Any, int]:
    """``(kDLCPU, 0)``: the tape computes on the CPU."""
    device: tuple[Any, int] = np.asarray(raw(self)).__dlpack_device__()
    return device
