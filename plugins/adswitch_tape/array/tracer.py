"""The traced array: the core's :class:`Tracer` given the behaviour of a numpy array.

Importing this module attaches to :class:`~adswitch_tape.core.node.Tracer` arithmetic
(reflected forms included), comparisons, bitwise operators, ``@``, indexing, in-place
writes, iteration, ``.T``/``.mT`` and the conversions; every operation on a
tracer is a recorded primitive (see ``recording``). The layers above import ``Tracer``
and ``raw`` from here, so the class they see is the whole array. (numpy's protocols and
``__array_namespace__`` are attached by ``interop``, with the namespace.)

The conversions (``int``, ``float``, ``np.asarray``, ``__dlpack__``...) are in
``conversions``: allowed where no gradient is dropped, refused with the fix where one would be.
Comparisons, bitwise operators and ``//`` have a zero derivative: they give tape arrays
without history (``conversions.constant``), so results stay in the tape's namespace.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from typing import Any

from ..core import Tracer, raw
from ..rules import primitives as P
from . import conversions as C
from .mutation import getitem_view, inplace, permuted_view, setitem, transposed_view

__all__ = ["Tracer", "raw"]


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


def _zero_derivative(op: Callable[..., Any], reflected: bool = False) -> Callable[..., Any]:
    """An operator with a zero derivative (comparisons, ``//``, bitwise): a tape array of
    numpy's result on the values, without history."""
    if reflected:

        def rop(self: Tracer, other: Any) -> Any:
            return C.constant(op(raw(other), raw(self)))

        return rop

    def zop(self: Tracer, other: Any) -> Any:
        return C.constant(op(raw(self), raw(other)))

    return zop


def _invert(self: Tracer) -> Any:
    return C.constant(operator.invert(raw(self)))


# -- writes: recorded copy-on-write (``mutation``) ------------------------------------------
# An integer or boolean array holds what is written into it truncated (numpy's casting):
# a zero derivative, so a traced value written into one is written as its value.
def _untraced(value: Any) -> Any:
    if type(value) is Tracer:
        return raw(value)
    if isinstance(value, (list, tuple)):
        return [_untraced(v) for v in value]
    return value


def _setitem(self: Tracer, key: Any, value: Any) -> None:
    if self.dtype.kind in "biu" and (type(value) is Tracer or isinstance(value, (list, tuple))):
        value = _untraced(value)
    setitem(self, key, value)


def _in_place(op: Callable[..., Any]) -> Callable[[Tracer, Any], Tracer]:
    """``x op= other``: recorded copy-on-write, the tracer keeps its identity (``mutation``)."""

    def in_place(self: Tracer, other: Any) -> Tracer:
        if type(other) is Tracer and self.dtype.kind in "biu":
            other = raw(other)
        return inplace(self, op, other)

    return in_place


_BEHAVIOUR: dict[str, Any] = {
    "T": property(_transpose),
    "mT": property(transposed_view),
    "__len__": _len,
    "__iter__": _iter,
    "__array__": C.array,
    "__float__": C.to_float,
    "__complex__": C.to_complex,
    "__int__": C.to_int,
    "__index__": C.to_index,
    "__bool__": C.to_bool,
    "__dlpack__": C.dlpack,
    "__dlpack_device__": C.dlpack_device,
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
    "__floordiv__": _zero_derivative(operator.floordiv),
    "__rfloordiv__": _zero_derivative(operator.floordiv, reflected=True),
    "__eq__": _zero_derivative(operator.eq),
    "__ne__": _zero_derivative(operator.ne),
    "__lt__": _zero_derivative(operator.lt),
    "__le__": _zero_derivative(operator.le),
    "__gt__": _zero_derivative(operator.gt),
    "__ge__": _zero_derivative(operator.ge),
    "__invert__": _invert,
    "__and__": _zero_derivative(operator.and_),
    "__rand__": _zero_derivative(operator.and_, reflected=True),
    "__or__": _zero_derivative(operator.or_),
    "__ror__": _zero_derivative(operator.or_, reflected=True),
    "__xor__": _zero_derivative(operator.xor),
    "__rxor__": _zero_derivative(operator.xor, reflected=True),
    "__lshift__": _zero_derivative(operator.lshift),
    "__rlshift__": _zero_derivative(operator.lshift, reflected=True),
    "__rshift__": _zero_derivative(operator.rshift),
    "__rrshift__": _zero_derivative(operator.rshift, reflected=True),
    # indexing and in-place writes: recorded copy-on-write (see ``mutation``)
    "__getitem__": getitem_view,
    "__setitem__": _setitem,
    "__iadd__": _in_place(P.add),
    "__isub__": _in_place(P.subtract),
    "__imul__": _in_place(P.multiply),
    "__itruediv__": _in_place(P.divide),
    "__ipow__": _in_place(P.pow),
    "__imatmul__": _in_place(P.matmul),
    "__imod__": _in_place(P.remainder),
    "__ifloordiv__": _in_place(_zero_derivative(operator.floordiv)),
    "__iand__": _in_place(_zero_derivative(operator.and_)),
    "__ior__": _in_place(_zero_derivative(operator.or_)),
    "__ixor__": _in_place(_zero_derivative(operator.xor)),
    "__ilshift__": _in_place(_zero_derivative(operator.lshift)),
    "__irshift__": _in_place(_zero_derivative(operator.rshift)),
}

for _name, _member in _BEHAVIOUR.items():
    setattr(Tracer, _name, _member)
