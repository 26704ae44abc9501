"""``DualArray``: a numpy value carrying a batch of tangents, and its arithmetic.

The tangents of an array of shape ``S`` are one numpy array of shape ``S + (B,)``: entry
``[..., j]`` is the derivative of every element along tangent direction ``j`` of the
``jvp`` call in progress. One forward pass therefore pushes ``B`` directions at once
(a whole Jacobian, when the directions are a basis). The trailing layout lets the
tangents follow the value through any numpy indexing and broadcasting unchanged:
indices address the leading axes, the tangent axis rides along at the end.

Basic indexing returns views of both the value and the tangents, so writes through a
view (``x[0][...] = v``) update the base's value *and* derivative, exactly like numpy.
That is why forward mode handles mutation for free: every array always holds the
derivative of what it holds now.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from adswitch.errors import MutationError, UnsupportedError
from adswitch_dual import chain
from adswitch_dual.rules import BINARY, PLAIN, UFUNC_NAMES, UNARY

__all__ = ["DualArray", "parts", "tangent_width", "width"]

# How many tangent directions arrays created from nothing (``xp.zeros``) get. Set by the
# engine for the duration of one call; a contextvar keeps threads apart.
_WIDTH: contextvars.ContextVar[int] = contextvars.ContextVar("adswitch_dual_width", default=0)


def width() -> int:
    """The number of tangent directions of the call in progress (0 outside any call)."""
    return _WIDTH.get()


@contextmanager
def tangent_width(directions: int) -> Iterator[None]:
    """Give arrays created inside the block ``directions`` tangent directions."""
    token = _WIDTH.set(directions)
    try:
        yield
    finally:
        _WIDTH.reset(token)


Operator = Callable[["DualArray", Any], "DualArray"]


def _operators(name: str) -> tuple[Operator, Operator]:
    """The operator for the binary rule ``name`` and its reflected form."""

    def forward(self: DualArray, other: Any) -> DualArray:
        return DualArray(*chain.binary(parts(self), parts(other), *BINARY[name]))

    def reflected(self: DualArray, other: Any) -> DualArray:
        return DualArray(*chain.binary(parts(other), parts(self), *BINARY[name]))

    return forward, reflected


class DualArray:
    """A floating numpy array ``value`` with tangents ``tangent`` (``value.shape + (B,)``).

    Args:
        value: the primal values (a floating numpy array; not copied).
        tangent: the tangents; ``None`` gives zeros (a constant).

    Example:
        >>> import numpy as np
        >>> x = DualArray(np.array([1.0, 2.0]), np.eye(2))
        >>> (x * x).tangent.tolist()
        [[2.0, 0.0], [0.0, 4.0]]
    """

    __slots__ = ("tangent", "value")

    def __init__(self, value: Any, tangent: np.ndarray | None = None) -> None:
        value = np.asarray(value)
        if tangent is None:
            tangent = np.zeros((*value.shape, width()), dtype=value.dtype)
        self.value: np.ndarray = value
        self.tangent: np.ndarray = tangent

    # --- array attributes -------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape

    @property
    def ndim(self) -> int:
        return self.value.ndim

    @property
    def size(self) -> int:
        return self.value.size

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.value.dtype

    @property
    def device(self) -> str:
        return "cpu"

    @property
    def T(self) -> DualArray:
        return DualArray(self.value.T, self.tangent.transpose((*reversed(range(self.ndim)), -1)))

    @property
    def mT(self) -> DualArray:
        return DualArray(np.swapaxes(self.value, -1, -2), np.swapaxes(self.tangent, -2, -3))

    def __repr__(self) -> str:
        return f"DualArray({self.value!r}, directions={self.tangent.shape[-1]})"

    # --- conversions: lossless for constants, refused where a derivative would be lost
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if self.tangent.any():
            raise _dropped("converting it to a numpy array (np.asarray, or a write into one)")
        return self.value if dtype is None else self.value.astype(dtype)

    def __float__(self) -> float:
        if self.tangent.any():
            raise _dropped("float()")
        return float(self.value)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __int__(self) -> int:
        return int(self.value)

    def __len__(self) -> int:
        return len(self.value)

    def __iter__(self) -> Iterator[DualArray]:
        for i in range(len(self)):
            yield self[i]

    __hash__ = None  # type: ignore[assignment]

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        # numpy calls this for `ndarray + dual` and `np.sin(dual)` (then we compute it),
        # and for writes into a numpy array (`ndarray += dual`, `out=`), which would lose
        # the derivative unless every dual operand is a constant.
        if kwargs.get("out") is not None:
            if not any(isinstance(x, DualArray) and x.tangent.any() for x in inputs):
                values = [x.value if isinstance(x, DualArray) else x for x in inputs]
                return getattr(ufunc, method)(*values, **kwargs)
            raise MutationError(
                f"dual engine: in-place numpy operation {ufunc.__name__} writes a traced "
                "value into a plain numpy array, which would drop its derivative. Create the "
                "buffer with the namespace instead: xp = ad.array_namespace(x); "
                "buf = xp.zeros_like(x)."
            )
        name = UFUNC_NAMES.get(ufunc.__name__, ufunc.__name__)
        operands = [parts(x) for x in inputs]
        if method == "__call__" and not kwargs:
            if name in UNARY and len(operands) == 1:
                return DualArray(*chain.unary(operands[0], *UNARY[name]))
            if name in BINARY and len(operands) == 2:
                return DualArray(*chain.binary(operands[0], operands[1], *BINARY[name]))
            if name == "matmul" and len(operands) == 2:
                return DualArray(*chain.matmul(operands[0], operands[1]))
            if name in PLAIN:
                return PLAIN[name](*(value for value, _ in operands))
        raise UnsupportedError(
            f"dual engine: numpy's {ufunc.__name__}.{method} cannot differentiate dual "
            "numbers; use the Array API namespace: xp = ad.array_namespace(x)."
        )

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        raise UnsupportedError(
            f"dual engine: numpy.{func.__name__} cannot differentiate dual numbers; use "
            f"xp = ad.array_namespace(x) and xp.{func.__name__} (if the namespace has it)."
        )

    # --- arithmetic: each operator is the rule of the same name (operands swapped for the
    # reflected one, which numpy and Python call for `2.0 * dual`)
    def __neg__(self) -> DualArray:
        return DualArray(-self.value, -self.tangent)

    def __pos__(self) -> DualArray:
        return DualArray(+self.value, self.tangent.copy())

    def __abs__(self) -> DualArray:
        return DualArray(*chain.unary(parts(self), *UNARY["abs"]))

    __add__, __radd__ = _operators("add")
    __sub__, __rsub__ = _operators("subtract")
    __mul__, __rmul__ = _operators("multiply")
    __truediv__, __rtruediv__ = _operators("divide")
    __pow__, __rpow__ = _operators("pow")

    def __matmul__(self, other: Any) -> DualArray:
        return DualArray(*chain.matmul(parts(self), parts(other)))

    def __rmatmul__(self, other: Any) -> DualArray:
        return DualArray(*chain.matmul(parts(other), parts(self)))

    # Comparisons compare values and give plain boolean numpy arrays.
    def __lt__(self, other: Any) -> Any:
        return self.value < parts(other)[0]

    def __le__(self, other: Any) -> Any:
        return self.value <= parts(other)[0]

    def __gt__(self, other: Any) -> Any:
        return self.value > parts(other)[0]

    def __ge__(self, other: Any) -> Any:
        return self.value >= parts(other)[0]

    def __eq__(self, other: object) -> Any:
        return self.value == parts(other)[0]

    def __ne__(self, other: object) -> Any:
        return self.value != parts(other)[0]

    # --- in place: the result is written into the array's own value and tangent memory,
    # so views of it see the change, as in numpy
    def __iadd__(self, other: Any) -> DualArray:
        self[...] = self + other
        return self

    def __isub__(self, other: Any) -> DualArray:
        self[...] = self - other
        return self

    def __imul__(self, other: Any) -> DualArray:
        self[...] = self * other
        return self

    def __itruediv__(self, other: Any) -> DualArray:
        self[...] = self / other
        return self

    def __ipow__(self, other: Any) -> DualArray:
        self[...] = self**other
        return self

    def __imatmul__(self, other: Any) -> DualArray:
        self[...] = self @ other
        return self

    # --- indexing -------------------------------------------------------------------
    def __getitem__(self, key: Any) -> DualArray:
        value = self.value[_check_key(key)]
        tangent = self.tangent[_tangent_key(key, self.ndim)]
        if not isinstance(value, np.ndarray):
            # A full integer index gives a numpy scalar: a copy, so copy the tangent too.
            return DualArray(np.asarray(value), tangent.copy())
        return DualArray(value, tangent)

    def __setitem__(self, key: Any, other: Any) -> None:
        value, tangent = parts(other)
        self.value[_check_key(key)] = value
        self.tangent[_tangent_key(key, self.ndim)] = 0.0 if tangent is None else tangent


def _dropped(what: str) -> MutationError:
    return MutationError(
        f"dual engine: {what} on a traced value would drop its derivative and give a wrong "
        "gradient. Keep traced values in arrays of the namespace: "
        "xp = ad.array_namespace(x); buf = xp.zeros_like(x); buf[...] = value."
    )


def _check_key(key: Any) -> Any:
    items = key if isinstance(key, tuple) else (key,)
    if any(isinstance(item, DualArray) for item in items):
        raise UnsupportedError(
            "dual engine: indexing with a traced (floating) array; index with integer or "
            "boolean arrays (comparisons of dual arrays give boolean numpy arrays)."
        )
    return key


def _tangent_key(key: Any, ndim: int) -> Any:
    """The index for the tangent: ``key`` with its ellipsis spelled out, so that it
    addresses the value's axes and leaves the trailing tangent axis alone."""
    items = key if isinstance(key, tuple) else (key,)
    if not any(item is Ellipsis for item in items):
        return items
    used = 0
    for item in items:
        if item is None or item is Ellipsis:
            continue
        is_mask = isinstance(item, np.ndarray) and item.dtype == np.bool_
        used += item.ndim if is_mask else 1
    at = next(i for i, item in enumerate(items) if item is Ellipsis)
    return (*items[:at], *(slice(None),) * (ndim - used), *items[at + 1 :])


def parts(x: Any) -> tuple[Any, np.ndarray | None]:
    """Split an operand into ``(value, tangent)``; constants have tangent ``None``.

    Python scalars stay Python scalars so that numpy's promotion rules (a float32 array
    times a Python float stays float32) are the same as in a plain numpy call.
    """
    if isinstance(x, DualArray):
        return x.value, x.tangent
    if isinstance(x, (bool, int, float, np.ndarray, np.generic)):
        return x, None
    raise UnsupportedError(
        f"dual engine: cannot compute with a {type(x).__module__}.{type(x).__name__}; "
        "use numpy arrays, Python numbers or arrays of the dual namespace."
    )
