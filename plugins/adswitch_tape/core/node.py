"""The traced node: a value, the trace that records it, its tape slot and its view links.

:class:`Tracer` here is bare: what the core layers read (value, trace, slot, ``shape``,
``dtype``). Its array behaviour -- operators, indexing, conversions -- is attached by
``adswitch_tape.array.tracer``, and numpy's and the Array API's protocols by
``adswitch_tape.array.interop``, so this module needs nothing above it. Import the class
from ``adswitch_tape.array.tracer`` outside the lower layers: importing that module is what
makes it an array.

Nesting: the value of a tracer of an inner differentiation is itself a tracer of the
enclosing one (or a numpy array at the outermost level), so any order of derivatives is
the same machinery applied once per level.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

from adswitch.errors import UnsupportedError

from .trace import Trace

__all__ = ["Tracer", "raw", "sync", "watch"]


class Tracer:
    """An array recorded on a trace. Users never build one; the engine hands them to ``f``.

    Attributes:
        _value: the value at this level: a numpy array (or numpy scalar), or a tracer of
            an enclosing level.
        _trace: the :class:`~adswitch_tape.core.trace.Trace` recording operations on it.
        _idx: its slot on the trace's tape, or ``None`` for a value without history at
            this level (a traced buffer from ``zeros_like``, written to later).
        _base, _view, _seen: for a view -- ``x[1:3]``, ``x.T``, ``xp.reshape(x, ...)``, as
            numpy returns views for them -- the tracer it views, ``(derive, put)`` (how
            to read the view from the base, how to write it back), and the base's value
            when the view was last read: writes go through to the base, and reads see
            the base's later writes, as with numpy views (see ``array.mutation``).
    """

    __slots__ = ("_base", "_idx", "_seen", "_trace", "_value", "_view")
    _view: tuple[Any, Any]
    _seen: Any
    __hash__ = None  # type: ignore[assignment]  # like ndarray: == is elementwise

    def __init__(self, value: Any, trace: Trace, idx: int | None) -> None:
        self._value = value
        self._trace = trace
        self._idx = idx
        self._base: Tracer | None = None

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

    def __repr__(self) -> str:
        return f"Tracer(level={self._trace.level}, value={raw(self)!r})"


def sync(view: Tracer) -> None:
    """Refresh ``view`` if its base was written since it was last read (it re-derives
    itself from the base with the closure it stores, see ``mutation.view_of``)."""
    base = view._base
    assert base is not None
    if base._base is not None:
        sync(base)
    if base._value is not view._seen:
        fresh = view._view[0](base)
        view._value, view._trace, view._idx = fresh._value, fresh._trace, fresh._idx
        view._seen = base._value


def raw(x: Any) -> Any:
    """The concrete numpy value under every trace level (constants pass through).

    While a recording watches its trace (:func:`watch`), each call on one of its tracers
    is reported to it with the caller's frame: a read of a traced value outside the
    recorded primitives, unless the caller only looks at the shape or dtype."""
    while type(x) is Tracer:
        if x._base is not None:
            sync(x)
        if watching and x._trace.recording is not None:
            x._trace.recording.read(sys._getframe(1))
        x = x._value
    return x


# How many recordings watch their trace (any thread): ``raw`` looks no further while none
# does. Changed under the lock; read without it (a stale count only costs a look).
watching = 0
_watching_lock = threading.Lock()


def watch(delta: int) -> None:
    """Count a recording starting (``+1``) or ending (``-1``) to watch reads."""
    global watching
    with _watching_lock:
        watching += delta
