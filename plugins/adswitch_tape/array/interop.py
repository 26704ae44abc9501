"""How numpy and Array API code find the tape: ``x.__array_namespace__()``, and what numpy
does when it meets a tracer (``ndarray ⊕ traced``, ``np.sin(traced)``, ``np.sum(traced)``,
``numpy_array += traced``).

The namespace module calls :func:`attach` with itself when it is imported, which gives
:class:`Tracer` ``__array_namespace__``, ``__array_ufunc__`` and ``__array_function__``
(this module sits below the namespace, so it is handed the namespace rather than
importing it). numpy's calls are sent to the namespace: ufunc calls and a few common
numpy functions (so ``numpy_array + traced`` and ``np.exp(traced)`` are recorded); an
``out=`` into a numpy array -- which is what ``numpy_array += traced`` is -- raises
``MutationError``, and anything else raises ``UnsupportedError`` naming the numpy
function and the fix.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from adswitch.errors import MutationError, UnsupportedError

from .tracer import Tracer

__all__ = ["array_function", "array_ufunc", "attach"]

ns: Any = None  # the namespace module, once it has called ``attach``

_UFUNC_NAMES = {
    "absolute": "abs",
    "arccos": "acos",
    "arccosh": "acosh",
    "arcsin": "asin",
    "arcsinh": "asinh",
    "arctan": "atan",
    "arctanh": "atanh",
    "arctan2": "atan2",
    "power": "pow",
    "true_divide": "divide",
    "invert": "bitwise_invert",
    "left_shift": "bitwise_left_shift",
    "right_shift": "bitwise_right_shift",
}

_API_VERSIONS = ("2021.12", "2022.12", "2023.12")

_USE_XP = "Fix: use `xp = ad.array_namespace(x)` and xp's functions on traced values."


def array_ufunc(ufunc: Any, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Handle ``numpy.<ufunc>(..., traced, ...)``."""
    name = ufunc.__name__
    if kwargs.get("out") is not None:
        raise MutationError(
            f"tape: numpy.{name} with out= -- e.g. `numpy_array += traced` -- would write a "
            "traced value into a plain numpy array, dropping its gradient. Fix: rebind "
            "instead (`buf = buf + traced`), or make the buffer traced with "
            "`buf = xp.zeros_like(x)` so that in-place writes are differentiated."
        )
    fn = getattr(ns, _UFUNC_NAMES.get(name, name), None) if method == "__call__" else None
    if fn is None or kwargs:
        what = f"numpy.{name}" + ("" if method == "__call__" else f".{method}")
        extra = f" with {sorted(kwargs)}" if kwargs else ""
        raise UnsupportedError(f"tape: {what}{extra} is not supported on traced values. {_USE_XP}")
    return fn(*inputs)


def _transpose(a: Any, axes: Any = None) -> Any:
    return ns.permute_dims(a, tuple(reversed(range(a.ndim))) if axes is None else axes)


def _var(a: Any, axis: Any = None, ddof: float = 0, keepdims: bool = False) -> Any:
    return ns.var(a, axis=axis, correction=ddof, keepdims=keepdims)


def _std(a: Any, axis: Any = None, ddof: float = 0, keepdims: bool = False) -> Any:
    return ns.std(a, axis=axis, correction=ddof, keepdims=keepdims)


# numpy functions whose meaning and keyword names match the namespace's.
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sum": lambda a, axis=None, keepdims=False: ns.sum(a, axis=axis, keepdims=keepdims),
    "mean": lambda a, axis=None, keepdims=False: ns.mean(a, axis=axis, keepdims=keepdims),
    "prod": lambda a, axis=None, keepdims=False: ns.prod(a, axis=axis, keepdims=keepdims),
    "max": lambda a, axis=None, keepdims=False: ns.max(a, axis=axis, keepdims=keepdims),
    "min": lambda a, axis=None, keepdims=False: ns.min(a, axis=axis, keepdims=keepdims),
    "amax": lambda a, axis=None, keepdims=False: ns.max(a, axis=axis, keepdims=keepdims),
    "amin": lambda a, axis=None, keepdims=False: ns.min(a, axis=axis, keepdims=keepdims),
    "var": _var,
    "std": _std,
    "reshape": lambda a, shape: ns.reshape(
        a, shape if isinstance(shape, tuple | list) else (shape,)
    ),
    "transpose": _transpose,
    "concatenate": lambda arrays, axis=0: ns.concat(arrays, axis=axis),
    "stack": lambda arrays, axis=0: ns.stack(arrays, axis=axis),
    "where": lambda c, x, y: ns.where(c, x, y),
    "clip": lambda a, a_min=None, a_max=None: ns.clip(a, a_min, a_max),
    "expand_dims": lambda a, axis: ns.expand_dims(a, axis=axis),
    "squeeze": lambda a, axis=None: ns.squeeze(
        a, tuple(i for i, n in enumerate(a.shape) if n == 1) if axis is None else axis
    ),
    "broadcast_to": lambda a, shape: ns.broadcast_to(a, shape),
    "cumsum": lambda a, axis=None: ns.cumulative_sum(a, axis=axis),
    "zeros_like": lambda a, dtype=None: ns.zeros_like(a, dtype=dtype),
    "ones_like": lambda a, dtype=None: ns.ones_like(a, dtype=dtype),
    "empty_like": lambda a, dtype=None: ns.empty_like(a, dtype=dtype),
    "full_like": lambda a, fill_value, dtype=None: ns.full_like(a, fill_value, dtype=dtype),
    "any": lambda a, axis=None, keepdims=False: ns.any(a, axis=axis, keepdims=keepdims),
    "all": lambda a, axis=None, keepdims=False: ns.all(a, axis=axis, keepdims=keepdims),
    "count_nonzero": lambda a, axis=None, *, keepdims=False: ns.count_nonzero(
        a, axis=axis, keepdims=keepdims
    ),
    "nonzero": lambda a: ns.nonzero(a),
    "argmax": lambda a, axis=None, *, keepdims=False: ns.argmax(a, axis=axis, keepdims=keepdims),
    "argmin": lambda a, axis=None, *, keepdims=False: ns.argmin(a, axis=axis, keepdims=keepdims),
    "round": lambda a, decimals=0: ns.round(a) if decimals == 0 else _unsupported("round"),
    "shape": lambda a: a.shape,
    "ndim": lambda a: a.ndim,
    "size": lambda a: a.size,
}


def _unsupported(name: str) -> Any:
    raise UnsupportedError(
        f"tape: numpy.{name} with these arguments is not supported on traced values. {_USE_XP}"
    )


def array_function(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Handle ``numpy.<function>(traced, ...)``."""
    fn = _FUNCTIONS.get(func.__name__)
    if fn is None:
        where = getattr(func, "__module__", None) or "numpy"
        raise UnsupportedError(
            f"tape: {where}.{func.__name__} is not supported on traced values. {_USE_XP}"
        )
    return fn(*args, **kwargs)


def attach(namespace: ModuleType) -> None:
    """Make ``namespace`` the Array API namespace of every tracer and the target of numpy's
    calls on tracers (``__array_priority__``: numpy's binary operators defer to them)."""
    global ns
    ns = namespace

    def array_namespace(self: Tracer, /, *, api_version: str | None = None) -> Any:
        if api_version is not None and api_version not in _API_VERSIONS:
            raise ValueError(
                f"tape: Array API version {api_version!r} is not supported; the tape's "
                f"namespace implements {namespace.__array_api_version__} (and the versions "
                f"before it: {', '.join(_API_VERSIONS)})"
            )
        return namespace

    def on_ufunc(self: Tracer, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return array_ufunc(ufunc, method, inputs, kwargs)

    def on_function(self: Tracer, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return array_function(func, args, kwargs)

    protocols = {
        "__array_namespace__": array_namespace,
        "__array_ufunc__": on_ufunc,
        "__array_function__": on_function,
        "__array_priority__": 100.0,
    }
    for name, member in protocols.items():
        setattr(Tracer, name, member)
