"""Remembering the walk of a function between its calls.

Walking ``f`` (:mod:`adswitch_jax.closures.captures`) on every call costs microseconds; a
function called again and again -- a loss in a training loop, a prepared call's -- reads
the same objects each time. :func:`recall` keeps, per plain function object, what its
last walk found and what every function in it read, and hands the walk out again while
all of those reads are the same objects (checked by identity, one pass). The lifted
arrays are read afresh from their closure cells and defaults every time.

What is kept holds none of the caller's arrays: numbers, strings, modules and code are
held, everything else is remembered by weak reference where Python allows one (arrays,
functions, objects; a tuple item by item), and an entry goes when its function does. No jax
import here.
"""

from __future__ import annotations

import operator
import types
import weakref
from collections.abc import Callable
from typing import Any

from adswitch_jax.closures.captures import Walk
from adswitch_jax.closures.reads import MISSING, known_names
from adswitch_jax.closures.swaps import stable_walk, swaps

__all__ = ["forget", "memory_of", "recall"]

_MAX_REMEMBERED = 256


class _Held:
    """A strong reference with a weak one's call signature (what cannot be weakly held)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self) -> Any:
        return self.value


class _Items:
    """A tuple remembered item by item (a tuple cannot be weakly referenced)."""

    __slots__ = ("items",)

    def __init__(self, items: tuple[Any, ...]) -> None:
        self.items = items


def _remember(value: Any) -> Any:
    if type(value) is tuple:
        return _Items(tuple(_remember(item) for item in value))
    try:
        return weakref.ref(value)
    except TypeError:
        return _Held(value)


def _same(memory: Any, value: Any) -> bool:
    if type(memory) is _Items:
        items = memory.items
        return type(value) is tuple and len(value) == len(items) and all(map(_same, items, value))
    return memory() is value


# Held as they are: what no user data lives in (and the walk's key holds anyway).
_PLAIN = frozenset(
    (int, float, bool, str, bytes, complex, type(None), types.ModuleType, types.CodeType)
)
_OTHER: Any = object()  # stands for a read compared through its memory


class _Reads:
    """What one function read, remembered for a fast check: reads of the types in
    ``_PLAIN`` (the most of them) held and compared by identity in one C-level pass, the
    others (arrays, functions, objects, tuples) through their weak memories."""

    __slots__ = ("fn", "get", "missing", "n_cells", "others", "plain", "simple")

    def __init__(self, fn: types.FunctionType, reads: list[Any]) -> None:
        self.fn = weakref.ref(fn)
        # ``reads`` is ``reads_now(fn)``: code, defaults, kwdefaults, the cells' contents,
        # then the globals in ``known_names`` order. The globals defined now are read back
        # by one C-level getter; those not defined (builtins) are checked to stay so.
        names = known_names(fn.__code__)
        n_fixed = len(reads) - len(names)
        self.n_cells = n_fixed - 3
        present = [i for i, value in enumerate(reads[n_fixed:]) if value is not MISSING]
        self.missing = tuple(names[i] for i in range(len(names)) if i not in set(present))
        ordered = reads[:n_fixed] + [reads[n_fixed + i] for i in present]
        picked = tuple(names[i] for i in present)
        getter: Callable[[Any], Any] | None = operator.itemgetter(*picked) if picked else None
        if len(picked) == 1:  # (itemgetter of one name gives the value, not a tuple)
            one = getter
            assert one is not None
            getter = lambda g: (one(g),)  # noqa: E731
        self.get = getter
        self.plain: list[Any] = []
        self.others: list[tuple[int, Any]] = []
        for i, value in enumerate(ordered):
            if type(value) in _PLAIN:
                self.plain.append(value)
            else:
                self.plain.append(_OTHER)
                self.others.append((i, _remember(value)))

        # no cells, no builtins, nothing but plain reads: three identities and one pass
        self.simple = (
            tuple(self.plain[3:])
            if not self.n_cells and not self.missing and not self.others and self.get
            else None
        )

    def same(self) -> bool:
        fn = self.fn()
        if fn is None:
            return False
        plain = self.plain
        if fn.__code__ is not plain[0]:
            return False
        simple = self.simple
        if simple is not None and fn.__closure__ is None:
            try:
                got = self.get(fn.__globals__)  # type: ignore[misc]
            except KeyError:
                return False
            return (
                fn.__defaults__ is plain[1]
                and fn.__kwdefaults__ is plain[2]
                and all(map(operator.is_, got, simple))
            )
        # what ``reads_now(fn)`` gives, in the order ``__init__`` kept
        now: list[Any] = [plain[0], fn.__defaults__, fn.__kwdefaults__]
        closure = fn.__closure__
        if closure:
            if len(closure) != self.n_cells:
                return False
            now += [cell.cell_contents for cell in closure]  # ValueError: an empty cell
        elif self.n_cells:
            return False
        g = fn.__globals__
        if self.get is not None:
            try:
                now += self.get(g)
            except KeyError:  # a global it read is gone
                return False
        if self.missing and any(map(g.__contains__, self.missing)):
            return False  # a global now shadows what was a builtin
        if len(now) != len(plain):
            return False
        for i, memory in self.others:
            if not _same(memory, now[i]):
                return False
            now[i] = _OTHER
        return all(map(operator.is_, now, plain))


def _lifted(template: Any, value: Any, out: list[Any]) -> None:
    """Put the arrays ``template`` says ``value`` holds at their places in ``out``."""
    tag = template[0]
    if tag == "L":
        out[template[1]] = value
    elif tag == "T":
        for sub, item in zip(template[1], value):
            _lifted(sub, item, out)


class _Memory:
    """What :func:`recall` keeps of one function's walk."""

    __slots__ = ("func", "held", "key", "lifted", "reads", "roots", "slots", "wide")

    def __init__(self, func: types.FunctionType, walk: Walk) -> None:
        key = id(func)
        self.func = weakref.ref(func, lambda _: _forget_id(key))
        self.key = walk.key
        self.held = walk.held
        self.wide = walk.wide
        self.reads = [_Reads(fn, reads) for fn, reads in walk.reads]
        self.roots = [_remember(root) for root in walk.roots]
        # (kind, the cell or (weakly) the function holding a lifted array, template)
        self.slots: list[tuple[str, Any, Any]] = [
            (kind, holder if kind == "cell" else weakref.ref(holder), template)
            for kind, holder, template in walk.slots
        ]
        self.lifted = [(a.shape, a.dtype) for a in walk.lifted]  # arrays can be reshaped in place

    def revive(self) -> Walk | None:
        """The walk again, if everything read is still the same objects, else ``None``."""
        for reads in self.reads:
            if not reads.same():
                return None
        walk = Walk()
        walk.key, walk.held, walk.wide = self.key, self.held, self.wide
        walk.roots = self.roots_now()
        lifted, slots = self._lift()
        if lifted is None:
            return None
        walk.lifted, walk.slots = lifted, slots
        return walk

    def lifted_now(self) -> list[Any] | None:
        """:meth:`revive`'s check alone: the lifted arrays read afresh, if everything read
        is still the same objects, else ``None`` (``ValueError``: an empty cell)."""
        for reads in self.reads:
            if not reads.same():
                return None
        return self._lift()[0] if self.slots else []

    def roots_now(self) -> list[Any]:
        """The roots of the walk (alive while :meth:`lifted_now` says they are read)."""
        return [memory() for memory in self.roots]

    def _lift(self) -> tuple[list[Any] | None, list[tuple[Any, ...]]]:
        lifted: list[Any] = [None] * len(self.lifted)
        slots: list[tuple[Any, ...]] = []
        for kind, holder, template in self.slots:
            if kind == "cell":
                value = holder.cell_contents
            else:
                holder = holder()  # alive: among the reads
                value = holder.__defaults__
            _lifted(template, value, lifted)
            slots.append((kind, holder, template))
        for array, (shape, dtype) in zip(lifted, self.lifted):
            if array.shape != shape or array.dtype != dtype:
                return None, slots
        return lifted, slots


_memories: dict[int, _Memory] = {}
_seen: dict[int, weakref.ref[Any]] = {}  # functions walked once (id -> weak reference)


def _forget_id(key: int) -> None:
    _memories.pop(key, None)


def forget(func: Any = None) -> None:
    """Forget the remembered walk of ``func``, or of every function (for tests)."""
    if func is None:
        _memories.clear()
        _seen.clear()
    else:
        _memories.pop(id(func), None)


def memory_of(func: Any) -> _Memory | None:
    """What is remembered of ``func``'s walk (its :meth:`_Memory.revive` hands the walk
    out again while still valid), or ``None``."""
    memory = _memories.get(id(func))
    return memory if memory is not None and memory.func() is func else None


def recall(func: Any) -> Walk:
    """The walk of ``func``: remembered from its last call while still valid, else new.

    Example:
        >>> import numpy as np
        >>> def scaled(w):
        ...     return lambda x: x * w
        >>> w = np.ones(2)
        >>> f = scaled(w)
        >>> recall(f) is not recall(f), recall(f).key == recall(f).key, recall(f).lifted[0] is w
        (True, True, True)
    """
    if type(func) is not types.FunctionType:
        return stable_walk(func)  # a bound method is a new object on every access
    memory = _memories.get(id(func))
    if memory is not None and memory.func() is func:
        before = swaps()
        if not before & 1:
            try:
                walk = memory.revive()
            except ValueError:
                walk = None
            if walk is not None and swaps() == before:
                return walk
    walk = stable_walk(func)
    if walk.reusable:
        # Remembered from its second call on: a lambda made anew for each call (the
        # commonest one-off function) dies before it could be called again.
        seen = _seen.pop(id(func), None)
        first_call = seen is None or seen() is not func
        if first_call:
            if len(_seen) >= _MAX_REMEMBERED:
                _seen.pop(next(iter(_seen)), None)
            key = id(func)
            _seen[key] = weakref.ref(func, lambda _: _seen.pop(key, None))
        else:
            if len(_memories) >= _MAX_REMEMBERED:
                _memories.pop(next(iter(_memories)), None)
            _memories[id(func)] = _Memory(func, walk)
    return walk
