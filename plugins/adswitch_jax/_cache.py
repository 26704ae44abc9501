"""A small thread-safe LRU cache of compiled programs, and the guard on what they baked in.

No jax import here: the cache only stores and compares Python objects.
"""

from __future__ import annotations

import threading
import types
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["LRUCache", "captured_values", "same_captures"]


class LRUCache:
    """A bounded mapping that forgets the least recently used entry first.

    Args:
        maxsize: the most entries kept.

    Example:
        >>> cache = LRUCache(maxsize=1)
        >>> cache.put("a", 1); cache.put("b", 2)
        >>> cache.get("a") is None, cache.get("b")
        (True, 2)
    """

    def __init__(self, maxsize: int = 256) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any | None:
        """The entry for ``key`` (marked as just used), or ``None``."""
        with self._lock:
            entry = self._data.get(key)
            if entry is not None:
                self._data.move_to_end(key)
            return entry

    def put(self, key: Hashable, entry: Any) -> None:
        """Store ``entry`` under ``key``, evicting the oldest entry when full."""
        with self._lock:
            self._data[key] = entry
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def discard(self, key: Hashable) -> None:
        """Forget ``key`` if present."""
        with self._lock:
            self._data.pop(key, None)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


def _is_arraylike(value: Any) -> bool:
    # Arrays (numpy, jax) are what a trace bakes in as constants; scalars and functions
    # captured from closures are almost always constants the user means to keep.
    if isinstance(value, type):
        return False
    return hasattr(value, "__array__") or hasattr(value, "__array_namespace__")


def captured_values(func: Callable[..., Any] | None) -> tuple[Any, ...]:
    """The arrays ``func`` reads from its closure cells and from globals it names.

    A compiled program bakes these in at trace time, so a later call must recompile when
    any of them is rebound to another object. The objects are kept (not their ids) so an
    id freed and reused by a new array cannot fake a match.

    Args:
        func: the user's function, or ``None`` when unknown.

    Returns:
        A tuple of the captured array objects, in a fixed order.

    Example:
        >>> import numpy as np
        >>> w = np.ones(2)
        >>> len(captured_values(lambda x: x * w))
        1
    """
    if not isinstance(func, types.FunctionType):
        func = getattr(func, "__func__", None)  # bound methods
        if not isinstance(func, types.FunctionType):
            return ()
    found: list[Any] = []
    if func.__closure__:
        for cell in func.__closure__:
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell: the variable is not bound yet
                continue
            if _is_arraylike(value):
                found.append(value)
    names = func.__code__.co_names
    if names:
        namespace = func.__globals__
        for name in names:
            value = namespace.get(name)
            if value is not None and _is_arraylike(value):
                found.append(value)
    return tuple(found)


def same_captures(old: tuple[Any, ...], new: tuple[Any, ...]) -> bool:
    """Whether two :func:`captured_values` results hold the very same objects."""
    return len(old) == len(new) and all(a is b for a, b in zip(old, new))
