"""The adapter kit: what every engine adapter needs, written once.

Plugins import these from :mod:`adswitch.spec` (the one module of adswitch, with
``adswitch.errors``, that plugins may import).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import linecache
import os
import sys
import threading
from collections.abc import Callable, Sequence
from types import FrameType, ModuleType, TracebackType
from typing import Any

from adswitch.errors import BackendUnavailableError, UnsupportedError
from adswitch.numpy_names import method_hint

__all__ = ["EngineLoader", "MissingMethodError", "array_methods", "user_line"]


class EngineLoader:
    """Imports an adapter's heavy module (the one that imports the engine) on first use.

    A plugin module must not import its engine when it is loaded; it creates one loader
    and calls :meth:`load` when a call needs the engine, and :meth:`version` for
    ``Backend.version``. A missing engine becomes a ``BackendUnavailableError`` that says
    the install command (without the import machinery's chained traceback).

    Args:
        engine: the engine's name, for messages.
        module: the adapter module to import, e.g. ``"adswitch_torch.primitives.call"``.
        distributions: the packages the engine needs (their versions come from package
            metadata, without importing them); the first one's version is the engine's.
        install_hint: the command that installs them.

    Example:
        >>> loader = EngineLoader("nosuch", "nosuch_adapter", ("nosuch-pkg",), "pip install x")
        >>> try:
        ...     loader.version()
        ... except BackendUnavailableError as exc:
        ...     print(exc)
        engine 'nosuch' needs nosuch-pkg, which is not installed. Fix: pip install x
    """

    def __init__(
        self, engine: str, module: str, distributions: Sequence[str], install_hint: str
    ) -> None:
        self.engine = engine
        self.module_name = module
        self.distributions = tuple(distributions)
        self.install_hint = install_hint
        self._module: ModuleType | None = None
        self._lock = threading.Lock()

    def version(self) -> str:
        """The first distribution's version; every distribution must be installed."""
        versions = []
        for dist in self.distributions:
            try:
                versions.append(importlib.metadata.version(dist))
            except importlib.metadata.PackageNotFoundError:
                raise BackendUnavailableError(
                    f"engine {self.engine!r} needs {', '.join(self.distributions)}, which is "
                    f"not installed. Fix: {self.install_hint}"
                ) from None
        return versions[0] if versions else "0"

    def load(self) -> ModuleType:
        """The adapter module, imported once (thread-safe)."""
        module = self._module
        if module is None:
            with self._lock:
                if self._module is None:
                    try:
                        self._module = importlib.import_module(self.module_name)
                    except ImportError as exc:
                        raise BackendUnavailableError(
                            f"engine {self.engine!r} could not import its engine "
                            f"({type(exc).__name__}: {exc}). Fix: {self.install_hint}"
                        ) from None
                module = self._module
        return module


def user_line(tb: TracebackType | None = None, *, skip: Sequence[str] = ()) -> str:
    """``" at file.py:12: `source`"`` for the innermost frame of the user's own code.

    Frames of adswitch's front end and of the packages in ``skip`` (top-level module
    names: the adapter's own package, the engine's) are bookkeeping, not the line the
    user wants to see in an error message.

    Args:
        tb: a traceback to search (an exception's ``__traceback__``); ``None`` searches
            the current call stack instead.
        skip: top-level package names whose frames are not the user's.

    Returns:
        The text, ready to append to a message, or ``""`` when no user frame is found.

    Example:
        >>> user_line(skip=("doctest",)).startswith(" at ")
        True
    """
    internal = {"adswitch", *skip}
    found = ""
    if tb is not None:
        while tb is not None:
            if not _is_internal(tb.tb_frame, internal):
                found = _where(tb.tb_frame.f_code.co_filename, tb.tb_lineno)
            tb = tb.tb_next
        return found
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if not _is_internal(frame, internal):
            return _where(frame.f_code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return found


def _is_internal(frame: FrameType, internal: set[str]) -> bool:
    module = str(frame.f_globals.get("__name__", ""))
    return module.partition(".")[0] in internal


def _where(filename: str, lineno: int) -> str:
    source = linecache.getline(filename, lineno).strip()
    found = f" at {os.path.basename(filename)}:{lineno}"
    return found + f": `{source}`" if source else found


# -- array methods: what torch and jax arrays have and Array API arrays need not ----------
class MissingMethodError(UnsupportedError, AttributeError):
    """A method an engine's traced arrays do not have (the message names the ``xp``
    function to use); also an ``AttributeError``, so ``hasattr`` stays False."""


def _shape_args(shape: tuple[Any, ...]) -> tuple[int, ...]:
    """``x.reshape(2, 3)`` and ``x.reshape((2, 3))`` alike."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)


def array_methods(xp: Any, engine: str) -> dict[str, Callable[..., Any]]:
    """The methods users reach for out of habit -- ``x.sum()``, ``x.reshape(2, 3)``,
    ``x.dot(y)`` -- written with the Array API namespace ``xp`` (so differentiated as its
    functions are), with numpy's argument names (``axis``, ``keepdims``, ``ddof``); and a
    ``__getattr__`` refusing any other public name with a :class:`MissingMethodError`
    that names the ``xp`` function to use. An adapter attaches those its traced array
    type lacks.

    Example:
        >>> import numpy as np
        >>> methods = array_methods(np, "example")
        >>> methods["reshape"](np.arange(6.0), 2, 3).shape, "sum" in methods
        ((2, 3), True)
    """

    def reduction(name: str) -> Callable[..., Any]:
        fn = getattr(xp, name)

        def method(self: Any, axis: Any = None, keepdims: bool = False) -> Any:
            return fn(self, axis=axis, keepdims=keepdims)

        return method

    def spread(name: str) -> Callable[..., Any]:
        fn = getattr(xp, name)

        def method(self: Any, axis: Any = None, ddof: float = 0, keepdims: bool = False) -> Any:
            return fn(self, axis=axis, correction=ddof, keepdims=keepdims)

        return method

    def summed(name: str) -> Callable[..., Any]:
        fn = getattr(xp, name)

        def method(self: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
            return fn(self, axis=axis, dtype=dtype, keepdims=keepdims)

        return method

    def reshape(self: Any, *shape: Any) -> Any:
        return xp.reshape(self, _shape_args(shape))

    def flatten(self: Any) -> Any:
        return xp.reshape(xp.asarray(self, copy=True), (-1,))

    def ravel(self: Any) -> Any:
        return xp.reshape(self, (-1,))

    def transpose(self: Any, *axes: Any) -> Any:
        order = _shape_args(axes) if axes else tuple(range(self.ndim - 1, -1, -1))
        return xp.permute_dims(self, order)

    def swapaxes(self: Any, axis1: int, axis2: int) -> Any:
        order = list(range(self.ndim))
        order[axis1], order[axis2] = order[axis2], order[axis1]
        return xp.permute_dims(self, tuple(order))

    def squeeze(self: Any, axis: Any = None) -> Any:
        if axis is None:
            axis = tuple(i for i, n in enumerate(self.shape) if n == 1)
        return xp.squeeze(self, axis)

    def dot(self: Any, other: Any) -> Any:
        if self.ndim > 2 or getattr(other, "ndim", 0) > 2:
            raise UnsupportedError(
                f"{engine}: x.dot(y) of arrays with more than two axes (numpy's dot contracts "
                "the last axis of x with the second-to-last of y); use xp.matmul or "
                "xp.tensordot, which say what they contract."
            )
        return xp.matmul(self, other)

    def clip(self: Any, min: Any = None, max: Any = None) -> Any:
        return xp.clip(self, min, max)

    def cumsum(self: Any, axis: Any = None) -> Any:
        if axis is None:
            return xp.cumulative_sum(xp.reshape(self, (-1,)), axis=0)
        return xp.cumulative_sum(self, axis=axis)

    def astype(self: Any, dtype: Any, copy: bool = True) -> Any:
        return xp.astype(self, dtype, copy=copy)

    def copy(self: Any) -> Any:
        return xp.asarray(self, copy=True)

    def item(self: Any) -> Any:
        # float()/int() of the one element: allowed where no derivative is dropped and
        # refused with the fix where one would be, by the array's own conversions
        value = xp.reshape(self, ())
        return float(value) if xp.isdtype(self.dtype, "real floating") else int(value)

    def missing(self: Any, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)  # protocols numpy and array-api-compat probe for
        raise MissingMethodError(
            f"{engine}: traced arrays have no attribute or method {name!r}. "
            + method_hint(name, xp)
        )

    methods: dict[str, Callable[..., Any]] = {
        "sum": summed("sum"),
        "prod": summed("prod"),
        "mean": reduction("mean"),
        "max": reduction("max"),
        "min": reduction("min"),
        "argmax": reduction("argmax"),
        "argmin": reduction("argmin"),
        "all": reduction("all"),
        "any": reduction("any"),
        "var": spread("var"),
        "std": spread("std"),
        "reshape": reshape,
        "flatten": flatten,
        "ravel": ravel,
        "transpose": transpose,
        "swapaxes": swapaxes,
        "squeeze": squeeze,
        "dot": dot,
        "clip": clip,
        "cumsum": cumsum,
        "astype": astype,
        "copy": copy,
        "item": item,
        "__getattr__": missing,
    }
    for name, method in methods.items():
        method.__name__ = method.__qualname__ = name
    return methods
