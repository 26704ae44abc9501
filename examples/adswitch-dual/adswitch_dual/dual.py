"""``DualArray``: a numpy value carrying one tangent per active input scalar.

The tangent of an array of shape ``S`` is stored as one numpy array of shape
``S + (N,)``, where ``N`` is the number of active input scalars of the current
``value_and_grad`` call: column ``j`` is the derivative of every element with respect
to input scalar ``j``. One forward pass therefore yields the whole gradient of a scalar
loss (its tangent, of shape ``(N,)``). The trailing layout lets the tangent follow the
value through any numpy indexing and broadcasting unchanged: indices address the
leading axes, the tangent axis rides along at the end.

Basic indexing returns views of both the value and the tangent, so writes through a
view (``x[0][...] = v``) update the base's value *and* derivative, exactly like numpy.
That is why forward mode handles mutation for free: every array always holds the
derivative of what it holds now.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from adswitch.errors import MutationError, UnsupportedError

__all__ = ["DualArray", "binary", "combine", "parts", "unary", "width"]

# How many tangent columns arrays created from nothing (``xp.zeros``) get. Set by the
# engine for the duration of one call; a contextvar keeps threads apart.
_WIDTH: contextvars.ContextVar[int] = contextvars.ContextVar("adswitch_dual_width", default=0)

Scalar = bool | int | float


def width() -> int:
    """The number of tangent columns of the call in progress (0 outside any call)."""
    return _WIDTH.get()


class DualArray:
    """A floating numpy array ``value`` with tangents ``tangent`` (``value.shape + (N,)``).

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
        from adswitch_dual import namespace

        return namespace.matrix_transpose(self)

    def __array_namespace__(self, api_version: str | None = None) -> Any:
        from adswitch_dual import namespace

        return namespace

    def __repr__(self) -> str:
        return f"DualArray({self.value!r}, tangents={self.tangent.shape[-1]})"

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
        # numpy calls this for `ndarray + dual` (then we compute it) and for writes into
        # a numpy array (`ndarray += dual`, `out=`), which would lose the derivative
        # unless every dual operand is a constant.
        if kwargs.get("out") is not None:
            duals = [x for x in inputs if isinstance(x, DualArray)]
            if not any(d.tangent.any() for d in duals):
                values = [x.value if isinstance(x, DualArray) else x for x in inputs]
                return getattr(ufunc, method)(*values, **kwargs)
            raise MutationError(
                f"dual engine: in-place numpy operation {ufunc.__name__} writes a traced "
                "value into a plain numpy array, which would drop its derivative. Create the "
                "buffer with the namespace instead: xp = ad.array_namespace(x); "
                "buf = xp.zeros_like(x)."
            )
        from adswitch_dual import namespace

        name = _UFUNC_NAMES.get(ufunc.__name__, ufunc.__name__)
        function = getattr(namespace, name, None) if method == "__call__" else None
        if function is None or kwargs:
            raise UnsupportedError(
                f"dual engine: numpy's {ufunc.__name__}.{method} cannot differentiate dual "
                "numbers; use the Array API namespace: xp = ad.array_namespace(x)."
            )
        return function(*inputs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        raise UnsupportedError(
            f"dual engine: numpy.{func.__name__} cannot differentiate dual numbers; use "
            f"xp = ad.array_namespace(x) and xp.{func.__name__} (if the namespace has it)."
        )

    # --- arithmetic ---------------------------------------------------------------
    def __neg__(self) -> DualArray:
        return DualArray(-self.value, -self.tangent)

    def __pos__(self) -> DualArray:
        return DualArray(+self.value, self.tangent.copy())

    def __abs__(self) -> DualArray:
        return unary(self, np.abs, lambda v, o: np.sign(v))

    def __add__(self, other: Any) -> DualArray:
        return _add(self, other)

    def __radd__(self, other: Any) -> DualArray:
        return _add(other, self)

    def __sub__(self, other: Any) -> DualArray:
        return _subtract(self, other)

    def __rsub__(self, other: Any) -> DualArray:
        return _subtract(other, self)

    def __mul__(self, other: Any) -> DualArray:
        return _multiply(self, other)

    def __rmul__(self, other: Any) -> DualArray:
        return _multiply(other, self)

    def __truediv__(self, other: Any) -> DualArray:
        return _divide(self, other)

    def __rtruediv__(self, other: Any) -> DualArray:
        return _divide(other, self)

    def __pow__(self, other: Any) -> DualArray:
        return power(self, other)

    def __rpow__(self, other: Any) -> DualArray:
        return power(other, self)

    def __matmul__(self, other: Any) -> DualArray:
        return matmul(self, other)

    def __rmatmul__(self, other: Any) -> DualArray:
        return matmul(other, self)

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

    # --- in place: value and tangent are updated in their own memory, so views see it
    def __iadd__(self, other: Any) -> DualArray:
        value, tangent = parts(other)
        self.value += value
        if tangent is not None:
            self.tangent += tangent
        return self

    def __isub__(self, other: Any) -> DualArray:
        value, tangent = parts(other)
        self.value -= value
        if tangent is not None:
            self.tangent -= tangent
        return self

    def __imul__(self, other: Any) -> DualArray:
        value, tangent = parts(other)
        new = self.tangent * np.asarray(value)[..., None]
        if tangent is not None:
            new = new + self.value[..., None] * tangent
        self.tangent[...] = new
        self.value *= value
        return self

    def __itruediv__(self, other: Any) -> DualArray:
        value, tangent = parts(other)
        value = np.asarray(value)
        new = self.tangent / value[..., None]
        if tangent is not None:
            new = new - (self.value / value**2)[..., None] * tangent
        self.tangent[...] = new
        self.value /= value
        return self

    # --- indexing -------------------------------------------------------------------
    def __getitem__(self, key: Any) -> DualArray:
        key = _check_key(key)
        value = self.value[key]
        tangent = self.tangent[_tangent_key(key, self.ndim)]
        if not isinstance(value, np.ndarray):
            # A full integer index gives a numpy scalar: a copy, so copy the tangent too.
            return DualArray(np.asarray(value), tangent.copy())
        return DualArray(value, tangent)

    def __setitem__(self, key: Any, other: Any) -> None:
        key = _check_key(key)
        value, tangent = parts(other)
        self.value[key] = value
        self.tangent[_tangent_key(key, self.ndim)] = 0.0 if tangent is None else tangent


_UFUNC_NAMES = {
    "true_divide": "divide",
    "power": "pow",
    "arcsin": "asin",
    "arccos": "acos",
    "arctan": "atan",
    "arctan2": "atan2",
    "arcsinh": "asinh",
    "arccosh": "acosh",
    "arctanh": "atanh",
}


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


def combine(out: Any, terms: list[tuple[Any, np.ndarray | None]]) -> DualArray:
    """A ``DualArray`` of value ``out`` whose tangent is ``sum(factor * tangent)``.

    Args:
        out: the result's value.
        terms: ``(factor, tangent)`` pairs; a ``None`` factor means 1, a ``None``
            tangent (a constant operand) contributes nothing.

    Returns:
        A new ``DualArray`` owning its tangent (never a view of an operand's).
    """
    out = np.asarray(out)
    total: np.ndarray | None = None
    for factor, tangent in terms:
        if tangent is None:
            continue
        term = tangent if factor is None else np.asarray(factor)[..., None] * tangent
        total = term if total is None else total + term
    if total is None:
        return DualArray(out)
    result = np.empty((*out.shape, total.shape[-1]), dtype=out.dtype)
    result[...] = total
    return DualArray(out, result)


def unary(x: Any, f: Callable[[Any], Any], df: Callable[[Any, Any], Any]) -> DualArray:
    """Apply the elementwise ``f``; ``df(value, out)`` is its derivative."""
    value, tangent = parts(x)
    out = np.asarray(f(value))
    return combine(out, [(df(value, out) if tangent is not None else None, tangent)])


def binary(
    a: Any,
    b: Any,
    f: Callable[[Any, Any], Any],
    da: Callable[[Any, Any, Any], Any] | None,
    db: Callable[[Any, Any, Any], Any] | None,
) -> DualArray:
    """Apply the broadcasting ``f(a, b)``; ``da``/``db(a, b, out)`` are its partials
    (``None`` means 1). A partial is only evaluated when that operand has a tangent."""
    av, at = parts(a)
    bv, bt = parts(b)
    out = np.asarray(f(av, bv))
    terms = [
        (da(av, bv, out) if da is not None and at is not None else None, at),
        (db(av, bv, out) if db is not None and bt is not None else None, bt),
    ]
    return combine(out, terms)


def _add(a: Any, b: Any) -> DualArray:
    return binary(a, b, np.add, None, None)


def _subtract(a: Any, b: Any) -> DualArray:
    return binary(a, b, np.subtract, None, lambda a, b, o: -1.0)


def _multiply(a: Any, b: Any) -> DualArray:
    return binary(a, b, np.multiply, lambda a, b, o: b, lambda a, b, o: a)


def _divide(a: Any, b: Any) -> DualArray:
    return binary(a, b, np.divide, lambda a, b, o: 1.0 / b, lambda a, b, o: -o / b)


def power(a: Any, b: Any) -> DualArray:
    """``a ** b``; the partial in ``b`` (``log(a) * out``) only when ``b`` is traced."""
    return binary(
        a, b, np.power, lambda a, b, o: b * np.power(a, b - 1), lambda a, b, o: np.log(a) * o
    )


def matmul(a: Any, b: Any) -> DualArray:
    """``a @ b`` for vectors, matrices and broadcast batches of matrices."""
    av, at = parts(a)
    bv, bt = parts(b)
    av, bv = np.asarray(av), np.asarray(bv)
    out = np.asarray(av @ bv)
    # Promote vectors to matrices, put the tangent axis first as an extra batch axis,
    # multiply, then undo the promotion: one code path for every shape combination.
    a2 = av[None, :] if av.ndim == 1 else av
    b2 = bv[:, None] if bv.ndim == 1 else bv
    rank = max(a2.ndim, b2.ndim)

    def front(t: np.ndarray, like: np.ndarray, vector_axis: int | None) -> np.ndarray:
        t = np.moveaxis(t, -1, 0)
        if vector_axis is not None:
            t = np.expand_dims(t, vector_axis)
        return t.reshape((t.shape[0],) + (1,) * (rank - like.ndim) + t.shape[1:])

    terms: list[np.ndarray] = []
    if at is not None:
        terms.append(front(at, a2, 1 if av.ndim == 1 else None) @ b2)
    if bt is not None:
        terms.append(a2 @ front(bt, b2, -1 if bv.ndim == 1 else None))
    if not terms:
        return DualArray(out)
    total = sum(terms[1:], terms[0])
    if bv.ndim == 1:
        total = total[..., 0]
    if av.ndim == 1:
        total = total[..., 0, :] if bv.ndim != 1 else total[..., 0]
    total = total.reshape((total.shape[0], *out.shape))
    return combine(out, [(None, np.moveaxis(total, 0, -1))])
