"""The warning the jax engine gives, once per function, when it cannot use a compiled program.

No jax import here, so ``from adswitch_jax.notices import JaxFallbackWarning`` is cheap
(for ``warnings.filterwarnings`` or ``pytest.warns``).
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Hashable

__all__ = ["JaxFallbackWarning", "warn_once", "reset_warnings"]


class JaxFallbackWarning(UserWarning):
    """The jax engine runs a function eagerly (slower) instead of as a compiled program.

    Example:
        >>> import warnings
        >>> warnings.simplefilter("ignore", JaxFallbackWarning)
    """


_warned: set[Hashable] = set()
_lock = threading.Lock()
_MAX_REMEMBERED = 4096
# Frames of these packages are skipped so the warning points at the user's call.
_INTERNAL = ("adswitch", "jax", "jaxlib", "contextlib")


def _user_stacklevel() -> int:
    level = 1
    frame = sys._getframe(1)
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if module.partition(".")[0] not in _INTERNAL and not module.startswith("adswitch_"):
            return level
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return 1


def warn_once(key: Hashable, message: str) -> None:
    """Warn ``message`` with :class:`JaxFallbackWarning` unless ``key`` was warned before.

    Args:
        key: what the warning is about (usually the user's function).
        message: the text, saying what happens and the fix.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     warn_once("doc-example", "slow"); warn_once("doc-example", "slow")
        >>> len(caught)
        1
    """
    with _lock:
        try:
            if key in _warned:
                return
            if len(_warned) >= _MAX_REMEMBERED:
                _warned.clear()
            _warned.add(key)
        except TypeError:  # unhashable key: warn every time rather than never
            pass
    warnings.warn(message, JaxFallbackWarning, stacklevel=_user_stacklevel())


def reset_warnings() -> None:
    """Forget which functions were warned about (for tests)."""
    with _lock:
        _warned.clear()
