"""Warnings an engine gives once per key (the user's function and a reason), for adapters.

Re-exported by :mod:`adswitch.spec`. A plugin keeps one :class:`OnceWarner` per warning
category, module-level: ``_notices = OnceWarner(MyEngineWarning)``.
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Hashable

__all__ = ["OnceWarner"]


def _user_stacklevel() -> int:
    """The stack level of the first frame outside adswitch and its plugins."""
    level = 1
    frame = sys._getframe(1)
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if module.partition(".")[0] != "adswitch" and not module.startswith("adswitch_"):
            return level
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return 1


class OnceWarner:
    """Warns with one category, once per key, pointing at the user's line; thread-safe.

    Args:
        category: the warning class (a ``UserWarning`` subclass of the engine's).
        remember: how many keys to remember; past that all are forgotten (memory stays
            bounded in a long-running process, at the price of an occasional repeat).

    Example:
        >>> import warnings
        >>> notices = OnceWarner(UserWarning)
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     notices.warn("doc-example", "slow"); notices.warn("doc-example", "slow")
        >>> len(caught)
        1
    """

    def __init__(self, category: type[Warning], remember: int = 4096) -> None:
        self.category = category
        self._remember = remember
        self._warned: set[Hashable] = set()
        self._lock = threading.Lock()

    def warn(self, key: Hashable, message: str) -> None:
        """Warn ``message`` unless ``key`` was warned about before.

        Args:
            key: what the warning is about (usually the user's function and the reason).
            message: the text, saying what happens and the fix.
        """
        with self._lock:
            try:
                if key in self._warned:
                    return
                if len(self._warned) >= self._remember:
                    self._warned.clear()
                self._warned.add(key)
            except TypeError:  # unhashable key: warn every time rather than never
                pass
        warnings.warn(message, self.category, stacklevel=_user_stacklevel())

    def reset(self) -> None:
        """Forget which keys were warned about (for tests)."""
        with self._lock:
            self._warned.clear()
