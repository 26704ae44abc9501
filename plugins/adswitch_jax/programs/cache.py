"""A small thread-safe LRU cache of compiled programs (no jax import here)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Hashable
from typing import Any

__all__ = ["LRUCache"]


class LRUCache:
    """A bounded mapping that forgets the least recently used entry first.

    Args:
        maxsize: the most entries kept.

    Example:
        >>> cache = LRUCache(maxsize=2)
        >>> cache.put("a", 1); cache.put("b", 2); _ = cache.get("a"); cache.put("c", 3)
        >>> cache.get("a"), cache.get("b"), cache.get("c")
        (1, None, 3)
    """

    def __init__(self, maxsize: int = 256) -> None:
        self.maxsize = maxsize
        # key -> [last use, entry]: a hit only stamps the item (one hash, no reordering);
        # the scan for the oldest happens when an insert overflows, i.e. on a compile.
        self._data: dict[Hashable, list[Any]] = {}
        self._clock = itertools.count()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any | None:
        """The entry for ``key`` (marked as just used), or ``None``."""
        item = self._data.get(key)
        if item is None:
            return None
        item[0] = next(self._clock)
        return item[1]

    def put(self, key: Hashable, entry: Any) -> None:
        """Store ``entry`` under ``key``, evicting the least recently used when full."""
        with self._lock:
            self._data[key] = [next(self._clock), entry]
            while len(self._data) > self.maxsize:
                oldest = min(self._data.items(), key=lambda kv: kv[1][0])[0]
                del self._data[oldest]

    def items(self) -> list[tuple[Hashable, Any]]:
        """A snapshot of ``(key, entry)`` pairs."""
        return [(key, item[1]) for key, item in list(self._data.items())]

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
