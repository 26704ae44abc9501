"""The traced array: the core's :class:`Tracer` given the behaviour of a numpy array.

Importing this module attaches to :class:`~adswitch_tape.core.node.Tracer` arithmetic
(reflected forms included), comparisons (plain boolean arrays), ``@``, indexing,
in-place writes, iteration, ``.T``/``.mT`` and the conversions; every operation on a
tracer is a recorded primitive (see ``recording``). The layers above import ``Tracer``
and ``raw`` from here, so the class they see is the whole array. (numpy's protocols and
``__array_namespace__`` are attached by ``interop``, with the namespace.)

Conversions that would silently drop the trace -- ``float(t)``, ``np.asarray(t)``, and
the writes of a tracer into a plain numpy array that numpy performs through them -- raise
:class:`~adswitch.errors.MutationError` / :class:`~adswitch.errors.UnsupportedError` saying
the fix. ``bool(t)`` is allowed: branching on a value is piecewise differentiation, as in
torch, jax (without jit) and autograd.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from adswitch.errors import MutationError, UnsupportedError

from .core import Tracer, raw
from .mutation import getitem_view, inplace, permuted_view, setitem, transposed_view
from .rules import primitives as P

__all__ = ["Tracer", "raw"]

_TO_NUMPY = (
    "tape: a traced value was converted to a plain number or numpy array ({how}); that "
    "drops its gradient, and writing it into a plain numpy array would make the gradient "
    "wrong. Fix: keep traced values in arrays built by the namespace -- a traced buffer "
    "from `xp.zeros_like(x)` (then `buf[i] = value`), or `xp.stack`/`xp.concat` of the "
    "pieces -- where `xp = ad.array_namespace(x)`; use xp functions, not numpy's."
)


# -- array attributes ------------------------------------------------------------------
def _transpose(self: Tracer) -> Any:
    return permuted_view(self, tuple(range(self.ndim - 1, -1, -1)))


def _len(self: Tracer) -> int:
    if not self.shape:
        raise TypeError("len() of a 0-d traced array")
    return self.shape[0]


def _iter(self: Tracer) -> Iterator[Any]:
    for i in range(_len(self)):
        yield getitem_view(self, i)


# -- conversions ------------------------------------------------------------------------
def _array(self: Tracer, dtype: Any = None, copy: Any = None) -> np.ndarray:
    if self._trace.level == 0:  # a fresh buffer holding constants: nothing to drop
        return np.asarray(raw(self), dtype=dtype)
    raise MutationError(_TO_NUMPY.format(how="np.asarray, or `numpy_array[...] = traced`"))


def _float(self: Tracer) -> float:
    if self._trace.level == 0:
        return float(raw(self))
    raise MutationError(_TO_NUMPY.format(how="float(), or `numpy_array[i] = traced`"))


def _refuse(how: str) -> Callable[[Tracer], Any]:
    def refuse(self: Tracer) -> Any:
        raise UnsupportedError(_TO_NUMPY.format(how=how))

    return refuse


def _bool(self: Tracer) -> bool:
    return bool(raw(self))


# -- arithmetic: each one a recorded primitive ---------------------------------------------
# Where the operator is the primitive applied to ``(self, other)`` the primitive itself is
# the method (one Python call less per operation). Addition and multiplication commute
# exactly in floating point, so the reflected forms share them.
def _rsub(self: Tracer, other: Any) -> Any:
    return P.subtract(other, self)


def _rtruediv(self: Tracer, other: Any) -> Any:
    return P.divide(other, self)


def _rpow(self: Tracer, other: Any) -> Any:
    return P.pow(other, self)


def _rmatmul(self: Tracer, other: Any) -> Any:
    return P.matmul(other, self)


def _rmod(self: Tracer, other: Any) -> Any:
    return P.remainder(other, self)


def _floordiv(self: Tracer, other: Any) -> Any:  # piecewise constant: no gradient
    return raw(self) // raw(other)


def _rfloordiv(self: Tracer, other: Any) -> Any:
    return raw(other) // raw(self)


def _compare(op: Callable[[Any, Any], Any]) -> Callable[[Tracer, Any], Any]:
    """A comparison: a plain boolean array of the values (no gradient flows through it)."""

    def compare(self: Tracer, other: Any) -> Any:
        return op(raw(self), raw(other))

    return compare


def _in_place(op: Callable[..., Any]) -> Callable[[Tracer, Any], Tracer]:
    """``x op= other``: recorded copy-on-write, the tracer keeps its identity (``mutation``)."""

    def in_place(self: Tracer, other: Any) -> Tracer:
        return inplace(self, op, other)

    return in_place


_BEHAVIOUR: dict[str, Any] = {
    "T": property(_transpose),
    "mT": property(transposed_view),
    "__len__": _len,
    "__iter__": _iter,
    "__array__": _array,
    "__float__": _float,
    "__complex__": _refuse("complex()"),
    "__int__": _refuse("int()"),
    "__index__": _refuse("use as an index"),
    "__bool__": _bool,
    "__neg__": P.negative,
    "__pos__": P.positive,
    "__abs__": P.abs,
    "__add__": P.add,
    "__radd__": P.add,
    "__sub__": P.subtract,
    "__rsub__": _rsub,
    "__mul__": P.multiply,
    "__rmul__": P.multiply,
    "__truediv__": P.divide,
    "__rtruediv__": _rtruediv,
    "__pow__": P.pow,
    "__rpow__": _rpow,
    "__matmul__": P.matmul,
    "__rmatmul__": _rmatmul,
    "__mod__": P.remainder,
    "__rmod__": _rmod,
    "__floordiv__": _floordiv,
    "__rfloordiv__": _rfloordiv,
    "__eq__": _compare(operator.eq),
    "__ne__": _compare(operator.ne),
    "__lt__": _compare(operator.lt),
    "__le__": _compare(operator.le),
    "__gt__": _compare(operator.gt),
    "__ge__": _compare(operator.ge),
    # indexing and in-place writes: recorded copy-on-write (see ``mutation``)
    "__getitem__": getitem_view,
    "__setitem__": setitem,
    "__iadd__": _in_place(P.add),
    "__isub__": _in_place(P.subtract),
    "__imul__": _in_place(P.multiply),
    "__itruediv__": _in_place(P.divide),
    "__ipow__": _in_place(P.pow),
    "__imatmul__": _in_place(P.matmul),
}

for _name, _member in _BEHAVIOUR.items():
    setattr(Tracer, _name, _member)
