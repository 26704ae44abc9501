"""The traced array: a value, the trace that records it, and its slot on that trace's tape.

A :class:`Tracer` behaves like a numpy array under the Array API: arithmetic (reflected
forms included), comparisons (plain boolean arrays), ``@``, indexing, in-place writes and
``__array_namespace__``. Every operation on it is recorded by its trace (see ``core``).

Nesting: the value of a tracer of an inner differentiation is itself a tracer of the
enclosing one (or a numpy array at the outermost level), so any order of derivatives is
the same machinery applied once per level.

Conversions that would silently drop the trace -- ``float(t)``, ``np.asarray(t)``, and
the writes of a tracer into a plain numpy array that numpy performs through them -- raise
:class:`~adswitch.errors.MutationError` / :class:`~adswitch.errors.UnsupportedError` saying
the fix. ``bool(t)`` is allowed: branching on a value is piecewise differentiation, as in
torch, jax (without jit) and autograd.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from adswitch.errors import MutationError, UnsupportedError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from .core import Trace

__all__ = ["Tracer", "raw"]

_TO_NUMPY = (
    "tape: a traced value was converted to a plain number or numpy array ({how}); that "
    "drops its gradient, and writing it into a plain numpy array would make the gradient "
    "wrong. Fix: keep traced values in arrays built by the namespace -- a traced buffer "
    "from `xp.zeros_like(x)` (then `buf[i] = value`), or `xp.stack`/`xp.concat` of the "
    "pieces -- where `xp = ad.array_namespace(x)`; use xp functions, not numpy's."
)


class Tracer:
    """An array recorded on a trace. Users never build one; the engine hands them to ``f``.

    Attributes:
        _value: the value at this level: a numpy array (or numpy scalar), or a tracer of
            an enclosing level.
        _trace: the :class:`~adswitch_tape.core.Trace` recording operations on it.
        _idx: its slot on the trace's tape, or ``None`` for a value without history at
            this level (a traced buffer from ``zeros_like``, written to later).
        _base, _view, _seen: for a view -- ``x[1:3]``, ``x.T``, ``xp.reshape(x, ...)``, as
            numpy returns views for them -- the tracer it views, ``(derive, put)`` (how
            to read the view from the base, how to write it back), and the base's value
            when the view was last read: writes go through to the base, and reads see
            the base's later writes, as with numpy views.
    """

    __slots__ = ("_base", "_idx", "_seen", "_trace", "_value", "_view")
    _view: tuple[Any, Any]
    _seen: Any
    __array_priority__ = 100.0
    __hash__ = None  # type: ignore[assignment]  # like ndarray: == is elementwise

    def __init__(self, value: Any, trace: Trace, idx: int | None) -> None:
        self._value = value
        self._trace = trace
        self._idx = idx
        self._base: Tracer | None = None

    # -- array attributes -------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._value.shape  # type: ignore[no-any-return]

    @property
    def dtype(self) -> Any:
        return self._value.dtype

    @property
    def ndim(self) -> int:
        return len(self._value.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self._value.shape))

    @property
    def device(self) -> str:
        return "cpu"

    def to_device(self, device: Any, /, *, stream: Any = None) -> Tracer:
        if device != "cpu":
            raise UnsupportedError(f"tape: to_device({device!r}): the tape computes on 'cpu' only")
        return self

    @property
    def T(self) -> Any:
        from .shapes import permute_dims

        return permute_dims(self, tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self) -> Any:
        from .shapes import matrix_transpose

        return matrix_transpose(self)

    def __array_namespace__(self, api_version: str | None = None) -> Any:
        from . import namespace

        return namespace

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d traced array")
        return self.shape[0]

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        return f"Tracer(level={self._trace.level}, value={raw(self)!r})"

    # -- conversions ------------------------------------------------------------------
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if self._trace.level == 0:  # a fresh buffer holding constants: nothing to drop
            return np.asarray(raw(self), dtype=dtype)
        raise MutationError(_TO_NUMPY.format(how="np.asarray, or `numpy_array[...] = traced`"))

    def __float__(self) -> float:
        if self._trace.level == 0:
            return float(raw(self))
        raise MutationError(_TO_NUMPY.format(how="float(), or `numpy_array[i] = traced`"))

    def __complex__(self) -> complex:
        raise UnsupportedError(_TO_NUMPY.format(how="complex()"))

    def __int__(self) -> int:
        raise UnsupportedError(_TO_NUMPY.format(how="int()"))

    def __index__(self) -> int:
        raise UnsupportedError(_TO_NUMPY.format(how="use as an index"))

    def __bool__(self) -> bool:
        return bool(raw(self))

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        from .interop import array_ufunc

        return array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        from .interop import array_function

        return array_function(func, args, kwargs)

    # -- arithmetic (each one a recorded primitive) -----------------------------------
    def __neg__(self) -> Any:
        return _ops.negative(self)

    def __pos__(self) -> Any:
        return _ops.positive(self)

    def __abs__(self) -> Any:
        return _ops.abs(self)

    def __add__(self, other: Any) -> Any:
        return _ops.add(self, other)

    def __radd__(self, other: Any) -> Any:
        return _ops.add(other, self)

    def __sub__(self, other: Any) -> Any:
        return _ops.subtract(self, other)

    def __rsub__(self, other: Any) -> Any:
        return _ops.subtract(other, self)

    def __mul__(self, other: Any) -> Any:
        return _ops.multiply(self, other)

    def __rmul__(self, other: Any) -> Any:
        return _ops.multiply(other, self)

    def __truediv__(self, other: Any) -> Any:
        return _ops.divide(self, other)

    def __rtruediv__(self, other: Any) -> Any:
        return _ops.divide(other, self)

    def __pow__(self, other: Any) -> Any:
        return _ops.pow(self, other)

    def __rpow__(self, other: Any) -> Any:
        return _ops.pow(other, self)

    def __matmul__(self, other: Any) -> Any:
        return _ops.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Any:
        return _ops.matmul(other, self)

    def __mod__(self, other: Any) -> Any:
        return _ops.remainder(self, other)

    def __rmod__(self, other: Any) -> Any:
        return _ops.remainder(other, self)

    def __floordiv__(self, other: Any) -> Any:  # piecewise constant: no gradient
        return raw(self) // raw(other)

    def __rfloordiv__(self, other: Any) -> Any:
        return raw(other) // raw(self)

    # -- comparisons: plain boolean arrays (no gradient flows through them) ----------
    def __eq__(self, other: Any) -> Any:
        return raw(self) == raw(other)

    def __ne__(self, other: Any) -> Any:
        return raw(self) != raw(other)

    def __lt__(self, other: Any) -> Any:
        return raw(self) < raw(other)

    def __le__(self, other: Any) -> Any:
        return raw(self) <= raw(other)

    def __gt__(self, other: Any) -> Any:
        return raw(self) > raw(other)

    def __ge__(self, other: Any) -> Any:
        return raw(self) >= raw(other)

    # -- indexing and in-place writes (recorded copy-on-write, see ``mutation``) ------
    def __getitem__(self, key: Any) -> Any:
        return _mutation.getitem_view(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        _mutation.setitem(self, key, value)

    def __iadd__(self, other: Any) -> Tracer:
        return _mutation.inplace(self, _ops.add, other)

    def __isub__(self, other: Any) -> Tracer:
        return _mutation.inplace(self, _ops.subtract, other)

    def __imul__(self, other: Any) -> Tracer:
        return _mutation.inplace(self, _ops.multiply, other)

    def __itruediv__(self, other: Any) -> Tracer:
        return _mutation.inplace(self, _ops.divide, other)

    def __ipow__(self, other: Any) -> Tracer:
        return _mutation.inplace(self, _ops.pow, other)

    def __imatmul__(self, other: Any) -> Tracer:
        return _mutation.inplace(self, _ops.matmul, other)


def raw(x: Any) -> Any:
    """The concrete numpy value under every trace level (constants pass through)."""
    while type(x) is Tracer:
        if x._base is not None:
            _mutation.sync(x)
        x = x._value
    return x


# Imported last: the primitives and the write machinery need the class defined above.
from . import mutation as _mutation  # noqa: E402
from . import prims as _ops  # noqa: E402
