"""Refuse in-place operators whose numpy meaning jax cannot follow.

jax arrays define no ``__iadd__``: ``y += 1`` rebinds ``y`` to a new array. For a fresh
array that is what numpy computes too, but not when ``y`` is a view (``head = x[:2];
head *= 3`` changes ``x`` in numpy) or an argument the caller passed as a numpy array
(numpy changes the caller's array). There jax would silently give another number, so
while the jax engine traces a function called with numpy arrays, in-place operators on
such values raise :class:`MutationError` instead.

How: while a trace runs (and only then), ``jax.core.Tracer`` gets in-place operators and
a ``__getitem__``/``.T``/``.mT`` that remember their results as views. The added operators
behave exactly like Python's fallback (``y = y + 1``) for every value not flagged by the
current thread's trace, so other jax code running meanwhile is unaffected. Views made by
other means (``reshape``, ``permute_dims``) and aliases made by plain assignment
(``b = a; b += 1``) are not recognised. Imported only once jax is in use.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from jax.core import Tracer

from adswitch.errors import MutationError

__all__ = ["watching"]

_INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "__iadd__": operator.add,
    "__isub__": operator.sub,
    "__imul__": operator.mul,
    "__itruediv__": operator.truediv,
    "__ifloordiv__": operator.floordiv,
    "__imod__": operator.mod,
    "__ipow__": operator.pow,
    "__imatmul__": operator.matmul,
    "__iand__": operator.and_,
    "__ior__": operator.or_,
    "__ixor__": operator.xor,
    "__ilshift__": operator.lshift,
    "__irshift__": operator.rshift,
}
_VIEW_PROPERTIES = ("T", "mT")

_local = threading.local()
_lock = threading.Lock()
_installed = 0
_saved: dict[str, Any] = {}


class _Frame:
    """One trace of one call: whether numpy semantics apply, and the flagged values."""

    __slots__ = ("flagged", "keep", "numpy_semantics")

    def __init__(self, numpy_semantics: bool) -> None:
        self.numpy_semantics = numpy_semantics
        self.flagged: dict[int, str] = {}
        self.keep: list[Any] = []  # flagged values stay alive, so their ids stay theirs

    def flag(self, value: Any, what: str) -> None:
        if isinstance(value, Tracer):
            self.flagged[id(value)] = what
            self.keep.append(value)


def _stack() -> list[_Frame]:
    stack: list[_Frame] | None = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def _watching_frame() -> _Frame | None:
    stack = getattr(_local, "stack", None)
    if stack and stack[-1].numpy_semantics:
        return stack[-1]  # type: ignore[no-any-return]
    return None


def _is_basic(index: Any) -> bool:
    # numpy returns a view for basic indexing only (ints, slices, ..., None).
    parts = index if isinstance(index, tuple) else (index,)
    return all(part is None or part is Ellipsis or isinstance(part, (int, slice)) for part in parts)


def _getitem(self: Any, index: Any) -> Any:
    out = _saved["__getitem__"](self, index)
    frame = _watching_frame()
    if frame is not None and _is_basic(index) and getattr(out, "ndim", 0) > 0:
        frame.flag(out, "a slice of another array (a view in numpy)")
    return out


def _view_property(name: str) -> property:
    original: property = _saved[name]

    def get(self: Any) -> Any:
        out = original.fget(self)  # type: ignore[misc]
        frame = _watching_frame()
        if frame is not None:
            frame.flag(out, f"x.{name} of another array (a view in numpy)")
        return out

    return property(get)


def _inplace(name: str, binary: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def method(self: Any, other: Any) -> Any:
        frame = _watching_frame()
        if frame is not None and id(self) in frame.flagged:
            symbol = name[3:-2]
            raise MutationError(
                f"jax engine: an in-place operator ({name}, y {symbol}= ...) on "
                f"{frame.flagged[id(self)]}: numpy would write through to that array, but "
                "jax arrays are immutable and jax would silently rebind y to a new array "
                "instead, which gives a different result. Fix: write it out of place "
                "(y = y * 3), updating the array you mean explicitly, e.g. "
                "x = x.at[:2].multiply(3); or choose an engine that supports mutation "
                "(see ad.backends(), capability 'mutation')."
            )
        return binary(self, other)

    method.__name__ = name
    return method


def _install() -> None:
    # Only what this jax version defines on Tracer itself is wrapped (and later restored);
    # in-place operators are added only where Tracer has none of its own.
    own = Tracer.__dict__
    if "__getitem__" in own:
        _saved["__getitem__"] = own["__getitem__"]
        Tracer.__getitem__ = _getitem  # type: ignore[method-assign]
    for name in _VIEW_PROPERTIES:
        if isinstance(own.get(name), property):
            _saved[name] = own[name]
            setattr(Tracer, name, _view_property(name))
    for name, binary in _INPLACE.items():
        if not hasattr(Tracer, name):
            _saved[name] = None
            setattr(Tracer, name, _inplace(name, binary))


def _uninstall() -> None:
    for name, original in list(_saved.items()):
        if original is None:
            delattr(Tracer, name)
        else:
            setattr(Tracer, name, original)
    _saved.clear()


@contextmanager
def watching(numpy_semantics: bool | None, arguments: Iterable[Any]) -> Iterator[None]:
    """Refuse in-place operators on ``arguments`` and on views while the block traces.

    Args:
        numpy_semantics: whether the call has numpy semantics (its arrays came as numpy
            arrays); ``None`` inherits the enclosing trace's (jax semantics outside any).
        arguments: the traced values standing for numpy arguments.

    Example:
        >>> import jax, numpy as np
        >>> def f(x):
        ...     with watching(True, [x]):
        ...         x += 1
        ...     return x.sum()
        >>> try:
        ...     jax.grad(f)(np.ones(2))
        ... except MutationError:
        ...     print("refused")
        refused
    """
    global _installed
    stack = _stack()
    if numpy_semantics is None:
        numpy_semantics = bool(stack) and stack[-1].numpy_semantics
    frame = _Frame(numpy_semantics)
    if numpy_semantics:
        for value in arguments:
            frame.flag(value, "an argument given as a numpy array (numpy changes the caller's)")
        with _lock:
            if _installed == 0:
                _install()
            _installed += 1
    stack.append(frame)
    try:
        yield
    finally:
        stack.pop()
        if numpy_semantics:
            with _lock:
                _installed -= 1
                if _installed == 0:
                    _uninstall()
